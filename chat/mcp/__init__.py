"""MCP tools per domain: live data for the answer, chosen by the model, read-only, bounded.

- :mod:`.catalog`: the tools a turn may offer (allowed + read-only, routed domains only)
  as plain specs the backends send to the model;
- :mod:`.plan`: the model's requests checked against what was offered and the tools'
  JSON schemas, before anything is called;
- :mod:`.session`: one connection to a server through the official ``mcp`` SDK
  (``stdio_client`` or ``streamable_http_client`` + ``ClientSession``);
- :mod:`.calls`: running the checked calls with a per-call timeout and a total budget,
  results capped and secrets masked;
- :mod:`.discovery`: fetching a server's tool list into the admin.

The pipeline side is :mod:`chat.pipeline.nodes.tools`; the guide is docs/mcp.md.
"""
