"""Runs of the stages under an IngestionJob: the one entry point "ingest files and folders
into a store" (:func:`.ingest.ingest`), the ``stores`` step runs and the work of one
queued file (:mod:`.steps`), job bookkeeping (:mod:`.jobs`), admin uploads
(:mod:`.uploads`) and the command's progress output (:mod:`.progress`)."""
