"""Stage 3, metadata: each file's DEFAULT entry (:mod:`.defaults`; for PDFs the
bibliographic cascade of :mod:`.biblio`), the metadata map keyed by heading chains
(:mod:`.map`), its export and import (:mod:`.map_io`) and its checks (:mod:`.map_lint`)."""
