"""MCP servers in the admin: validation, secrets kept out of lists, fetching a server's
tool list (the real test server over stdio), and the catalog of offered tools."""

from __future__ import annotations

import sys

import pytest
from django.core.exceptions import ValidationError

from chat.mcp.catalog import ServerSpec, offered_tools
from chat.mcp.discovery import refresh_tools
from chat.models import McpServer, McpTool
from domains.models import Domain

from .mcp_helpers import LAB_TOKEN, SERVER_SCRIPT, add_lab_server


# --- models, admin, tool lists -------------------------------------------------------


@pytest.mark.django_db
def test_server_validation_names_what_is_wrong():
    domain = Domain.objects.create(name="neuro", description="d")
    server = McpServer(domain=domain, name="lab db", transport="stdio", args=["a", 1], env={"KEY": 1}, headers=[])
    with pytest.raises(ValidationError) as info:
        server.full_clean()
    assert info.value.message_dict == {
        "name": ["Server name: a letter or digit, then letters, digits, '-' or '_'."],
        "command": ["A stdio server needs the command that starts it."],
        "args": ['Arguments must be a JSON list of strings, e.g. ["--port", "8000"].'],
        "env": ['Env must be a JSON object of strings, e.g. {"API_KEY": "..."}.'],
        "headers": ['Headers must be a JSON object of strings, e.g. {"API_KEY": "..."}.'],
    }
    with pytest.raises(ValidationError) as info:
        McpServer(domain=domain, name="lab", transport="http").full_clean()
    assert info.value.message_dict == {"url": ["An HTTP server needs its URL."]}
    McpServer(domain=domain, name="lab", transport="http", url="http://127.0.0.1:9/mcp").full_clean()


def test_server_spec_keeps_secrets_out_of_its_repr():
    spec = ServerSpec(name="lab", domain="neuro", transport="http", url="http://x/mcp",
                      env={"SHORT": "1", "TOKEN": "abcdefgh"}, headers={"Authorization": "Bearer s3cret-token"})
    assert "abcdefgh" not in repr(spec) and "s3cret" not in repr(spec)
    assert spec.secrets() == ["Bearer s3cret-token", "abcdefgh"]  # longest first; "1" is too short to mask


@pytest.mark.django_db
def test_fetching_the_tool_list_keeps_the_administrators_choices(tmp_path):
    domain = Domain.objects.create(name="neuro", description="d")
    server = McpServer.objects.create(domain=domain, name="neuro-lab", command=sys.executable, args=[SERVER_SCRIPT])
    McpTool.objects.create(server=server, name="channel_density", description="Mine.", allowed=True, read_only=True)
    McpTool.objects.create(server=server, name="retired_tool", allowed=True, read_only=True)
    report = refresh_tools(server)
    assert (report.added, report.updated, report.gone) == (
        ["delete_model", "flaky_lookup", "slow_lookup", "big_table", "lab_token", "whoami"],
        ["channel_density"],
        ["retired_tool"],
    )
    assert report.summary() == (
        "6 new (delete_model, flaky_lookup, slow_lookup, big_table, lab_token, whoami), 1 updated, "
        "1 no longer listed (retired_tool)"
    )
    rows = {t.name: t for t in server.tools.all()}
    assert [(n, t.allowed, t.read_only, t.on_server) for n, t in sorted(rows.items())] == [
        ("big_table", False, True, True),
        ("channel_density", True, True, True),
        ("delete_model", False, False, True),
        ("flaky_lookup", False, True, True),
        ("lab_token", False, True, True),
        ("retired_tool", True, True, False),
        ("slow_lookup", False, True, True),
        ("whoami", False, True, True),
    ]
    assert rows["channel_density"].description == "Mine."
    assert rows["channel_density"].input_schema["required"] == ["channel"]
    assert rows["delete_model"].annotations == {"readOnlyHint": False, "destructiveHint": True}
    server.refresh_from_db()
    assert server.tools_listed_at is not None
    assert [t.function for t in offered_tools([domain])] == ["channel_density"]  # retired_tool is gone


@pytest.mark.django_db
def test_a_tool_that_stops_declaring_itself_read_only_is_no_longer_offered():
    domain = Domain.objects.create(name="neuro", description="d")
    server = McpServer.objects.create(domain=domain, name="neuro-lab", command=sys.executable, args=[SERVER_SCRIPT])
    # first discovered while the server said read-only; the server now says destructive
    McpTool.objects.create(server=server, name="delete_model", allowed=True, read_only=True,
                           annotations={"readOnlyHint": True})
    McpTool.objects.create(server=server, name="channel_density", allowed=True, read_only=True,
                           annotations={"readOnlyHint": True})
    report = refresh_tools(server)
    assert report.no_longer_read_only == ["delete_model"]
    assert report.summary().endswith(", 1 no longer read-only, not offered (delete_model)")
    assert McpTool.objects.get(server=server, name="delete_model").read_only is False
    assert [t.function for t in offered_tools([domain])] == ["channel_density"]


@pytest.mark.django_db
def test_catalog_offers_allowed_read_only_tools_of_routed_active_servers():
    neuro = Domain.objects.create(name="neuro", description="d")
    arrays = Domain.objects.create(name="arrays", description="d")
    lab = McpServer.objects.create(domain=neuro, name="lab", command="lab-mcp", env={"K": "secret-value"})
    other = McpServer.objects.create(domain=neuro, name="other", command="other-mcp")
    off = McpServer.objects.create(domain=neuro, name="off", command="off-mcp", active=False)
    away = McpServer.objects.create(domain=arrays, name="away", command="away-mcp")
    for server, name, allowed, read_only in [
        (lab, "lookup", True, True), (lab, "lab.status", True, True), (lab, "drop", True, False),
        (lab, "hidden", False, True), (other, "lookup", True, True), (off, "ping", True, True),
        (away, "ping", True, True),
    ]:
        McpTool.objects.create(server=server, name=name, allowed=allowed, read_only=read_only)
    tools = offered_tools([neuro])
    assert [(t.function, t.tool, t.server.name) for t in tools] == [
        ("lab_status", "lab.status", "lab"), ("lab__lookup", "lookup", "lab"), ("other__lookup", "lookup", "other"),
    ]
    assert tools[0].input_schema == {"type": "object", "properties": {}}
    assert tools[0].server.env == {"K": "secret-value"}
    assert tools[0].spec() == {
        "type": "function",
        "function": {"name": "lab_status", "description": "", "parameters": {"type": "object", "properties": {}}},
    }
    assert [t.function for t in offered_tools([arrays, neuro])][0] == "ping"


@pytest.mark.django_db
def test_admin_lists_servers_without_secrets_and_fetches_tool_lists(admin_client):
    domain = Domain.objects.create(name="neuro", description="d")
    server = add_lab_server(domain)
    broken = McpServer.objects.create(domain=domain, name="broken", command="/nonexistent/mcp")
    page = admin_client.get("/admin/chat/mcpserver/").content.decode()
    assert "neuro-lab" in page and "big_table, channel_density, flaky_lookup, lab_token, slow_lookup" in page
    assert LAB_TOKEN not in page
    form = admin_client.get(f"/admin/chat/mcpserver/{server.pk}/change/").content.decode()
    assert "readOnlyHint=True" in form and "destructiveHint=True" in form
    response = admin_client.post(
        "/admin/chat/mcpserver/",
        {"action": "fetch_tool_list", "_selected_action": [server.pk, broken.pk]},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [  # servers in admin order: broken, neuro-lab
        "server 'broken' (/nonexistent/mcp) did not start: "
        "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/mcp'",
        "neuro-lab: 0 new, 7 updated",
    ]
