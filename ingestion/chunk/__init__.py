"""Stage 2, chunk: converted blocks -> chunks of at most ``max_tokens`` tokens that never
span two heading chains (:mod:`.chunker`), staged per file as StagedFile rows with a
fresh metadata map (:mod:`.step`, ``stores chunk``)."""
