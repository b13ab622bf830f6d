import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from domains import embeddings


class Command(BaseCommand):
    help = (
        "Build the int8 ONNX embedding model into KLEA_EMBEDDING_CACHE_DIR when it is missing "
        "(once; minutes), so that no server, worker or test builds it; `make run` and `make test` "
        "run it. --check also loads the query and passage models and prints how long that takes."
    )

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="also load the model (what a server does at start)")

    def handle(self, *args, check=False, **options):
        try:
            backend = embeddings.backend()
            if backend == "onnx-int8":
                self.build_int8()
            else:
                self.stdout.write(f"passage model: {settings.KLEA_EMBEDDING_MODEL} (torch), nothing to build")
            seconds = embeddings.warm_up() if check else None
        except (embeddings.EmbeddingError, ImportError, OSError) as exc:
            raise CommandError(f"the embedding models cannot be prepared: {exc}") from None
        if seconds is not None:
            self.stdout.write(f"the embedding model loads in {seconds:.1f} s")

    def build_int8(self) -> None:
        from domains.onnx_int8 import cached_model, model_file

        model_dir, cache_dir = Path(embeddings.model_path()), Path(settings.KLEA_EMBEDDING_CACHE_DIR)
        path = model_file(model_dir, cache_dir)
        if path.is_file():
            self.stdout.write(f"passage model: {path} (already built)")
            return
        self.stdout.write(f"passage model: building {path} (once; this takes a few minutes)")
        started = time.perf_counter()
        cached_model(model_dir, cache_dir)
        self.stdout.write(f"passage model: built in {time.perf_counter() - started:.0f} s")
