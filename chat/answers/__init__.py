"""The answer core: one way to write a cited answer from numbered material, shared by
the chat pipeline (its ``answer`` and ``general_chat`` nodes) and the Python API
(``chat.rag``: ``RAG.query``, ``stream``, ...). docs/pipeline.md, "The answer core".

- :class:`~chat.answers.material.Material`: the text a model reads and the numbered
  sources behind it (the pipeline's reference material, or ``chat.rag``'s context);
- :class:`~chat.answers.compose.Composition`: asks the backend for the answer (the
  one place that does) and passes its text through
- :class:`~chat.answers.citations.AnswerCleaner`: ``<think>`` removed, citations of
  sources that were not given dropped and counted, optionally renumbered.
"""
