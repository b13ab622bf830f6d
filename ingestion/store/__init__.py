"""Stage 4, store: the target store (:mod:`.target`), staged chunks embedded and written
as Documents, map rows and Chunks (:mod:`.step`, ``stores store``), and the store's
checks (:mod:`.lint`)."""
