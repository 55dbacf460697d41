"""Engram settings, read from the environment with defaults that let a fresh checkout run.

Every variable is documented in the README's configuration table. A malformed value stops
start-up with an ImproperlyConfigured error naming the variable.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import Env, database_from_url
from config.logs import logging_config
from memories import boosting as _boosting
from memories import decay as _decay
from recall import scoring as _recall_scoring

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = Env()

# --- Core -------------------------------------------------------------------------------

DEBUG = env.bool("DEBUG", True)

_DEV_SECRET_KEY = "django-insecure-engram-development-key-never-use-in-production"
SECRET_KEY = env.str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. With DEBUG off a secret key is required: "
            'generate one with  python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", [])

TIME_ZONE = env.str("TIME_ZONE", "UTC")
try:
    import zoneinfo

    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(f"TIME_ZONE={TIME_ZONE!r} is not a known time zone.") from None
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "en-us"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_htmx",
    "template_partials",
    "django_q",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "memories",
    "review",
    "recall",
    "benchmarks",
]

MIDDLEWARE = [
    # First, so every answer (redirects and errors too) has its X-Request-ID, is timed for
    # /metrics and logged once (config/request_id.py).
    "config.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.api.ApiNotFoundMiddleware",
    "config.api.ApiBodyLimitMiddleware",
    "config.api.DatabaseGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.web.HtmxLoginRedirectMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it answers a locked-out login (config/accounts.py).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # `ago` ("3 hours ago", "just now"), on every page.
            "builtins": ["memories.templatetags.when"],
        },
    },
]

# --- Database ---------------------------------------------------------------------------

_DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'engram.sqlite3'}"
DATABASE_URL = env.str("DATABASE_URL") or _DEFAULT_DATABASE_URL
_database = database_from_url("DATABASE_URL", DATABASE_URL)
if _database["ENGINE"] == "django.db.backends.sqlite3":
    _path = Path(_database["NAME"])
    if not _path.is_absolute():
        _path = BASE_DIR / _path
    _path.parent.mkdir(parents=True, exist_ok=True)
    _database["NAME"] = str(_path)
    # WAL lets the web server and the worker read while the other writes; IMMEDIATE
    # transactions take the write lock up front instead of failing at upgrade time.
    _database["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    _database["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
    _database["CONN_HEALTH_CHECKS"] = True
    # Session settings sent at connect. The data of a memory service is mostly in RAM, so
    # random reads cost about what sequential ones do: without this the planner prefers a
    # sequential scan to the full-text index for any word in a few percent of the rows.
    # JIT compilation costs more than it saves on the short queries of a request.
    _database.setdefault("OPTIONS", {})["options"] = env.str(
        "DATABASE_PG_OPTIONS", "-c random_page_cost=1.1 -c jit=off"
    )
DATABASES = {"default": _database}
# Web requests only (config.api.DatabaseGuardMiddleware; never the worker or manage.py
# commands, whose long statements are legitimate), PostgreSQL only; 0 disables. Below
# gunicorn's 30 s worker timeout, so a runaway query ends as a 503 before the worker is
# killed, and far above any request's normal cost (tens of milliseconds).
DATABASE_STATEMENT_TIMEOUT_MS = env.int("DATABASE_STATEMENT_TIMEOUT_MS", 20_000, minimum=0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, Redis and the worker --------------------------------------------------------

REDIS_URL = env.str("REDIS_URL")
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(
        f"REDIS_URL={REDIS_URL!r} must start with redis://, rediss:// or unix://."
    )

# A cache shared by every process (throttling counts must be global): Redis when
# configured, the database otherwise. Never a per-process memory cache.
if REDIS_URL:
    CACHES = {
        # Django's, with one redis-py client per connection pool (config/cache.py).
        "default": {"BACKEND": "config.cache.RedisCache", "LOCATION": REDIS_URL}
    }
else:
    CACHES = {
        "default": {
            # Django's, with the throttle's writes committed lazily (config/cache.py).
            "BACKEND": "config.cache.DatabaseCache",
            "LOCATION": "engram_cache",
            # Above this many rows a new key first deletes the expired ones, then a third of
            # the rest. Django's 300 culled live throttle counters as soon as 300 tokens
            # called in one window (a third of them then started from zero) and cost every
            # write three more statements; at 10,000 only expired rows go in practice.
            "OPTIONS": {"MAX_ENTRIES": 10_000},
        }
    }

Q_TIMEOUT = env.int("Q_TIMEOUT", 300, minimum=1)
Q_RETRY = env.int("Q_RETRY", 360, minimum=2)
if Q_RETRY <= Q_TIMEOUT:
    raise ImproperlyConfigured(
        f"Q_RETRY={Q_RETRY} must be greater than Q_TIMEOUT={Q_TIMEOUT}, or a running task "
        "would be handed to a second worker before it times out."
    )
Q_CLUSTER = {
    "name": "engram",
    "workers": env.int("Q_WORKERS", 2, minimum=1),
    "timeout": Q_TIMEOUT,
    "retry": Q_RETRY,
    "max_attempts": env.int("Q_MAX_ATTEMPTS", 3, minimum=1),
    "ack_failures": True,
    "save_limit": 1000,
    "catch_up": False,
    "label": "Background tasks",
}
# The broker: Redis (when REDIS_URL is set) or the database. Only the database broker
# acknowledges tasks, so only it hands a task that raised or whose worker died out again
# (Q_RETRY, Q_MAX_ATTEMPTS); django-q2's Redis broker removes a task when a cluster takes
# it. TASK_BROKER=database keeps those retries with Redis as the cache (docs/scaling.md).
TASK_BROKER = env.str("TASK_BROKER", "redis" if REDIS_URL else "database")
if TASK_BROKER not in ("redis", "database"):
    raise ImproperlyConfigured(f"TASK_BROKER={TASK_BROKER!r} must be redis or database.")
if TASK_BROKER == "redis" and not REDIS_URL:
    raise ImproperlyConfigured("TASK_BROKER=redis needs REDIS_URL.")
if TASK_BROKER == "redis":
    Q_CLUSTER["redis"] = REDIS_URL
else:
    Q_CLUSTER["orm"] = "default"

# --- Static files, auth -----------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The dashboard's sign-in (django-axes): LOGIN_FAILURE_LIMIT failures of one username from
# one address lock that pair out for LOGIN_LOCKOUT_MINUTES (the admin unlocks earlier:
# Axes > Access attempts, delete the row). Other users and addresses are unaffected.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "config.accounts.locked_out"
AXES_CLIENT_IP_CALLABLE = "config.accounts.client_ip"
LOGIN_URL = "login"
CSRF_FAILURE_VIEW = "config.web.csrf_failure"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# --- Production safety (active when DEBUG is off) ---------------------------------------

if not DEBUG:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", False)
BEHIND_PROXY = env.bool("BEHIND_PROXY", False)
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Pages load scripts, styles and images from this origin only and run no inline code
# (htmx's inline indicator styles are off: templates/base.html). The API docs pages
# relax it for what Swagger UI and Redoc need (config/urls.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# --- REST API ---------------------------------------------------------------------------

API_RATE_LIMIT = env.str("API_RATE_LIMIT", "1200/min")
if not re.fullmatch(r"\d+/(s|sec|m|min|h|hour|d|day)", API_RATE_LIMIT):
    raise ImproperlyConfigured(
        f"API_RATE_LIMIT={API_RATE_LIMIT!r} must look like 600/min (per s, min, hour or day)."
    )
# Seconds a token looked up by its secret is kept in the shared cache, so a request does
# not cost a token query (memories/auth.py, docs/scaling.md). Revocation, edits and the
# owner's deactivation take effect on the next request all the same: each request checks
# the token's generation in the same cache round trip. On by default with Redis only: the
# database cache would cost the query it saves. 0 turns it off.
API_TOKEN_CACHE_SECONDS = env.int("API_TOKEN_CACHE_SECONDS", 60 if REDIS_URL else 0, minimum=0)
API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)
API_IMPORT_MAX_BYTES = env.int("API_IMPORT_MAX_BYTES", 200 * 1024 * 1024, minimum=1024)
API_MAX_CONTENT_LENGTH = env.int("API_MAX_CONTENT_LENGTH", 20_000, minimum=100)
API_DEFAULT_PAGE_SIZE = env.int("API_DEFAULT_PAGE_SIZE", 50, minimum=1)
API_MAX_PAGE_SIZE = env.int("API_MAX_PAGE_SIZE", 500, minimum=1)
API_BULK_MAX = env.int("API_BULK_MAX", 1000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES

# --- MCP (memories.mcp, served at /mcp by config/asgi.py) -----------------------------------

# The address clients reach this deployment at: MCP's protected-resource metadata and the
# WWW-Authenticate header of a 401 name it (the dashboard, where tokens are made, is the
# "authorization server" the metadata points to).
PUBLIC_URL = env.str("PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", PUBLIC_URL):
    raise ImproperlyConfigured(f"PUBLIC_URL={PUBLIC_URL!r} must be an http(s) URL.")
MCP_URL = f"{PUBLIC_URL}/mcp"
MCP_ISSUER_URL = PUBLIC_URL

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memories.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["memories.auth.ScopedAccess"],
    "DEFAULT_THROTTLE_CLASSES": ["memories.auth.TokenRateThrottle"],
    "DEFAULT_PARSER_CLASSES": ["config.api.StrictJSONParser"],
    # JSON only, whatever Accept says (an HTML client gets JSON, not a 406 or a page).
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api.JsonNegotiation",
    "DEFAULT_SCHEMA_CLASS": "config.schema.AutoSchema",
    "EXCEPTION_HANDLER": "config.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Engram API",
    "DESCRIPTION": (
        "Long-term memory for AI agents. Authenticate with `Authorization: Bearer <token>`; "
        'every error answers `{"error": {"status", "code", "message", "fields"}}`.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.add_error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "ClassificationEnum": ["public", "internal", "confidential", "restricted"],
    },
}

# --- Scoring: SM-2 (seeds 000 and 004) --------------------------------------------------

SM2_EF_CEILING = env.float("SM2_EF_CEILING", 2.5, minimum=1.3)
SM2_EF_ON_FAILURE = env.choice("SM2_EF_ON_FAILURE", "update", ("update", "keep"))
# 100 years by default, FSRS's cap too. Due dates past 9999-12-30 are held there anyway.
SM2_MAX_INTERVAL_DAYS = env.int("SM2_MAX_INTERVAL_DAYS", 36_500, minimum=1, maximum=365_000)

# --- Temporal decay (seed 003) ----------------------------------------------------------
# The defaults are declared once, by the pure dataclasses that use them (memories.decay's
# DecayParams and Thresholds, memories.boosting's CorePromotionRule and ColdStorageRule,
# recall.scoring's RecallScoringConfig); the environment overrides them here, and
# memories.sweep builds those dataclasses back from these settings.

_decay_defaults = _decay.DecayParams()
_threshold_defaults = _decay.Thresholds()

DECAY_MODEL = env.choice("DECAY_MODEL", _decay_defaults.model, _decay.DECAY_MODELS)
DECAY_HALF_LIFE_DAYS = env.float(
    "DECAY_HALF_LIFE_DAYS", _decay_defaults.half_life_days, minimum=0.001
)
DECAY_BETA = env.float("DECAY_BETA", _decay_defaults.beta, minimum=0.0, maximum=2.0)
DECAY_POWER_ALPHA = env.float("DECAY_POWER_ALPHA", _decay_defaults.power_alpha, minimum=0.01)
DECAY_FAST_HALF_LIFE_DAYS = env.float(
    "DECAY_FAST_HALF_LIFE_DAYS", _decay_defaults.fast_half_life_days, minimum=0.001
)
DECAY_SLOW_HALF_LIFE_DAYS = env.float(
    "DECAY_SLOW_HALF_LIFE_DAYS", _decay_defaults.slow_half_life_days, minimum=0.001
)
DECAY_FAST_WEIGHT = env.float(
    "DECAY_FAST_WEIGHT", _decay_defaults.fast_weight, minimum=0.0, maximum=1.0
)
if _decay.half_life_order_error(DECAY_FAST_HALF_LIFE_DAYS, DECAY_SLOW_HALF_LIFE_DAYS):
    raise ImproperlyConfigured(
        f"DECAY_FAST_HALF_LIFE_DAYS={DECAY_FAST_HALF_LIFE_DAYS} must not be above "
        f"DECAY_SLOW_HALF_LIFE_DAYS={DECAY_SLOW_HALF_LIFE_DAYS}."
    )
FORGET_THRESHOLD = env.float("FORGET_THRESHOLD", _threshold_defaults.forget, minimum=0.0)
# The about-to-forget digest lists what decay will forget within this many days.
FORGET_DIGEST_DAYS = env.int("FORGET_DIGEST_DAYS", 3, minimum=1)
# Decay fitted to each namespace's uses (memories.decay_fit; namespaces opt in with
# decay_fit suggest or auto): the use log is kept this long, the worker refits this often,
# and the last DECAY_FIT_VALIDATION_FRACTION of the history validates each fit.
DECAY_FIT_HISTORY_DAYS = env.int("DECAY_FIT_HISTORY_DAYS", 180, minimum=7, maximum=3650)
DECAY_FIT_INTERVAL_MINUTES = env.int("DECAY_FIT_INTERVAL_MINUTES", 1440, minimum=1, maximum=32767)
DECAY_FIT_VALIDATION_FRACTION = env.float(
    "DECAY_FIT_VALIDATION_FRACTION", 0.3, minimum=0.05, maximum=0.5
)
PROMOTE_THRESHOLD = env.float("PROMOTE_THRESHOLD", _threshold_defaults.promote, minimum=0.0)
PROMOTE_USE_COUNT = env.int("PROMOTE_USE_COUNT", _threshold_defaults.promote_use_count, minimum=1)
PROMOTE_TIME_WINDOW_DAYS = env.float(
    "PROMOTE_TIME_WINDOW_DAYS", _threshold_defaults.promote_window_days, minimum=0.0
)
REVIEW_BLEND_RATIO = env.float("REVIEW_BLEND_RATIO", 0.3, minimum=0.0, maximum=1.0)
REVIEW_DANGER_ZONE_MIN = env.float(
    "REVIEW_DANGER_ZONE_MIN", _threshold_defaults.danger_min, minimum=0.0
)
REVIEW_DANGER_ZONE_MAX = env.float(
    "REVIEW_DANGER_ZONE_MAX", _threshold_defaults.danger_max, minimum=0.0
)
if REVIEW_DANGER_ZONE_MIN >= REVIEW_DANGER_ZONE_MAX:
    raise ImproperlyConfigured(
        "REVIEW_DANGER_ZONE_MIN must be below REVIEW_DANGER_ZONE_MAX "
        f"(got {REVIEW_DANGER_ZONE_MIN} and {REVIEW_DANGER_ZONE_MAX})."
    )
if FORGET_THRESHOLD >= PROMOTE_THRESHOLD:
    raise ImproperlyConfigured(
        f"FORGET_THRESHOLD={FORGET_THRESHOLD} must be below PROMOTE_THRESHOLD={PROMOTE_THRESHOLD}."
    )
AUTO_REINFORCE = env.bool("AUTO_REINFORCE", True)
# A successful agent recall of a due memory counts as a review of this quality (seed 000).
IMPLICIT_REVIEW_ENABLED = env.bool("IMPLICIT_REVIEW_ENABLED", True)
IMPLICIT_REVIEW_QUALITY = env.int("IMPLICIT_REVIEW_QUALITY", 4, minimum=0, maximum=5)

# --- Recall pipeline (seed 002) ---------------------------------------------------------

MEMORY_SEARCH_MODE = env.choice("MEMORY_SEARCH_MODE", "hybrid", ("hybrid", "lexical", "semantic"))
EMBEDDING_ENABLED = env.bool("EMBEDDING_ENABLED", False)
EMBEDDING_PROVIDER = env.choice("EMBEDDING_PROVIDER", "local", ("local", "ollama", "openai"))
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", "nomic-embed-text")
EMBEDDING_URL = env.str("EMBEDDING_URL", "http://127.0.0.1:11434")
EMBEDDING_API_KEY = env.str("EMBEDDING_API_KEY")
EMBEDDING_TIMEOUT = env.float("EMBEDDING_TIMEOUT", 2.0, minimum=0.01)
EMBEDDING_SIMILARITY_THRESHOLD = env.float(
    "EMBEDDING_SIMILARITY_THRESHOLD", 0.5, minimum=-1.0, maximum=1.0
)
_recall_scoring_defaults = _recall_scoring.RecallScoringConfig()
RECALL_DECAY_DAYS = env.float(
    "RECALL_DECAY_DAYS", _recall_scoring_defaults.decay_days, minimum=0.001
)
RECALL_DECAY_FLOOR = env.float(
    "RECALL_DECAY_FLOOR", _recall_scoring_defaults.decay_floor, minimum=0.0, maximum=1.0
)
RECALL_EMOTION_BOOST = env.float(
    "RECALL_EMOTION_BOOST", _recall_scoring_defaults.emotion_boost, minimum=0.0
)
SIGNATURE_BITS = env.int("SIGNATURE_BITS", 256, minimum=64, maximum=1024)
if SIGNATURE_BITS % 64:
    raise ImproperlyConfigured(f"SIGNATURE_BITS={SIGNATURE_BITS} must be a multiple of 64.")
# Two memories are near-duplicates when both their trigram Jaccard similarity and their
# signatures' bit agreement reach these (memories.near_duplicates; docs/api.md).
NEAR_DUPLICATE_TRIGRAM = env.float("NEAR_DUPLICATE_TRIGRAM", 0.7, minimum=0.3, maximum=1.0)
NEAR_DUPLICATE_SIGNATURE = env.float("NEAR_DUPLICATE_SIGNATURE", 0.75, minimum=0.5, maximum=1.0)
# How recall fuses its stages and ranks (docs/recall.md; defaults from docs/evaluation.md).
RECALL_FUSION = env.choice("RECALL_FUSION", "penalty", ("penalty", "rrf"))
RECALL_RRF_K = env.int("RECALL_RRF_K", 60, minimum=1)
RECALL_CANDIDATE_CAP = env.int("RECALL_CANDIDATE_CAP", 200, minimum=10, maximum=5000)
RECALL_MATCH_BUDGET = env.int("RECALL_MATCH_BUDGET", 2000, minimum=100)
RECALL_MMR_LAMBDA = env.float("RECALL_MMR_LAMBDA", 0.7, minimum=0.0, maximum=1.0)
RECALL_KEYWORD_BOOST = env.float("RECALL_KEYWORD_BOOST", 0.3, minimum=0.0)
RECALL_ASSOCIATION_SPREAD = env.float("RECALL_ASSOCIATION_SPREAD", 0.5, minimum=0.0)
RECALL_EPISODE_BOOST = env.float("RECALL_EPISODE_BOOST", 0.3, minimum=0.0)
# x(1 + boost) for a memory written within a date the query names (recall.temporal).
RECALL_TEMPORAL_BOOST = env.float("RECALL_TEMPORAL_BOOST", 2.0, minimum=0.0)
RECALL_EPISODE_WINDOW_MINUTES = env.float("RECALL_EPISODE_WINDOW_MINUTES", 30.0, minimum=0.0)
RECALL_SIGNATURE_THRESHOLD = env.float("RECALL_SIGNATURE_THRESHOLD", 0.65, minimum=0.5, maximum=1.0)
RECALL_SIGNATURE_CAP = env.int("RECALL_SIGNATURE_CAP", 5, minimum=0)
RECALL_SIGNATURE_SCAN_CAP = env.int("RECALL_SIGNATURE_SCAN_CAP", 5_000, minimum=100)
# Se keeps the RECALL_VECTOR_RERANK x (its limit) memories whose sign codes are nearest the
# query's and ranks those by exact cosine (recall.stages.embeddings.embedding_search).
RECALL_VECTOR_RERANK = env.int("RECALL_VECTOR_RERANK", 30, minimum=1, maximum=1000)
# Document-frequency statistics of large namespaces (PostgreSQL; docs/recall.md).
RECALL_TERM_STATS_MIN_MEMORIES = env.int("RECALL_TERM_STATS_MIN_MEMORIES", 2_000, minimum=0)
RECALL_TERM_STATS_MIN_DOCUMENTS = env.int("RECALL_TERM_STATS_MIN_DOCUMENTS", 32, minimum=1)
RECALL_TERM_STATS_CHANGE = env.float("RECALL_TERM_STATS_CHANGE", 0.1, minimum=0.0, maximum=1.0)
RECALL_TERM_STATS_INTERVAL_MINUTES = env.int(
    "RECALL_TERM_STATS_INTERVAL_MINUTES", 60, minimum=1, maximum=32767
)
EMBEDDING_QUERY_BUDGET_MS = env.float("EMBEDDING_QUERY_BUDGET_MS", 250.0, minimum=1.0)

# --- Logging and metrics (docs/metrics.md) ----------------------------------------------

# plain: one line of text a record; json: one JSON object a line (config.logs). Either way
# every record carries the id of the request it was written in (request_id).
LOG_FORMAT = env.choice("LOG_FORMAT", "plain", ("plain", "json"))
LOGGING = logging_config(LOG_FORMAT, env.str("LOG_LEVEL", "INFO"))

# /metrics answers `Authorization: Bearer <METRICS_TOKEN>` (a Prometheus scraper) or a staff
# session; empty: staff sessions only. Not an API token: those never open it.
METRICS_TOKEN = env.str("METRICS_TOKEN")
if METRICS_TOKEN and (len(METRICS_TOKEN) < 16 or re.search(r"\s", METRICS_TOKEN)):
    raise ImproperlyConfigured(
        "METRICS_TOKEN must be at least 16 characters without spaces: generate one with  "
        'python -c "import secrets; print(secrets.token_urlsafe(32))"'
    )
# Read by prometheus_client itself when it is imported: with several processes (gunicorn's
# workers, the django-q2 cluster) each writes its metrics under this directory, which must
# exist and be emptied at start-up (`manage.py runall` does both; docs/metrics.md).
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR and not Path(PROMETHEUS_MULTIPROC_DIR).is_dir():
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={PROMETHEUS_MULTIPROC_DIR!r} is not a directory; create it "
        "(empty) before starting the web server and the worker."
    )

# --- Background work (issue 6) ----------------------------------------------------------
# What runs when, and why these defaults: docs/background.md.

# Decay sweep: promote, forget, cold storage, archive, core promotion, purge.
SWEEP_INTERVAL_MINUTES = env.int("SWEEP_INTERVAL_MINUTES", 15, minimum=1, maximum=32767)
SWEEP_BATCH_SIZE = env.int("SWEEP_BATCH_SIZE", 50_000, minimum=100)
PURGE_BATCH_SIZE = env.int("PURGE_BATCH_SIZE", 1000, minimum=1)
# Pause between batches, so other writers get the database between them (SQLite has one
# writer at a time); 0 in production on PostgreSQL.
SWEEP_BATCH_PAUSE_SECONDS = env.float("SWEEP_BATCH_PAUSE_SECONDS", 0.0, minimum=0.0, maximum=60.0)
FORGOTTEN_RETENTION_DAYS = env.float("FORGOTTEN_RETENTION_DAYS", 30.0, minimum=0.0)
COLD_FLOOR = env.float("COLD_FLOOR", FORGET_THRESHOLD, minimum=0.0)
if COLD_FLOOR >= PROMOTE_THRESHOLD:
    raise ImproperlyConfigured(
        f"COLD_FLOOR={COLD_FLOOR} must be below PROMOTE_THRESHOLD={PROMOTE_THRESHOLD}."
    )
# A long-term memory "sits at its floor" when its score is at or below COLD_FLOOR and no
# recall has reached it (even through an association) for COLD_GRACE_DAYS: a memory
# reactivated from cold storage stays hot that long before it may go cold again.
_cold_defaults = _boosting.ColdStorageRule()
_core_defaults = _boosting.CorePromotionRule()
COLD_GRACE_DAYS = env.float("COLD_GRACE_DAYS", _cold_defaults.grace_days, minimum=0.0)
ARCHIVE_COLD_AFTER_DAYS = env.float(
    "ARCHIVE_COLD_AFTER_DAYS", _cold_defaults.archive_after_days, minimum=0.0
)
# Uses a memory needs before its score alone can promote it. Seed 003 taken literally (0)
# would promote every memory at the first sweep: a fresh one scores 1.0 >= 0.65.
PROMOTE_SCORE_MIN_USES = env.int(
    "PROMOTE_SCORE_MIN_USES", _threshold_defaults.promote_score_min_uses, minimum=0
)
CORE_MIN_SESSIONS = env.int("CORE_MIN_SESSIONS", _core_defaults.min_sessions, minimum=1)
CORE_MIN_ACCESS_COUNT = env.int("CORE_MIN_ACCESS_COUNT", _core_defaults.min_access_count, minimum=0)
CORE_MIN_STABILITY = env.float(
    "CORE_MIN_STABILITY", _core_defaults.min_stability, minimum=0.0, maximum=1.0
)

# Simulated recall worker (seed 000), agent_memory namespaces only.
SIMULATED_RECALL_BATCH = env.int("SIMULATED_RECALL_BATCH", 50, minimum=1, maximum=10_000)
SIMULATED_RECALL_INTERVAL_MINUTES = env.int(
    "SIMULATED_RECALL_INTERVAL_MINUTES", 30, minimum=1, maximum=32767
)

# Consolidation digests (seed 002, stage S6).
DIGEST_INTERVAL_MINUTES = env.int("DIGEST_INTERVAL_MINUTES", 60, minimum=1, maximum=32767)
DIGEST_MAX_ITEMS = env.int("DIGEST_MAX_ITEMS", 10, minimum=1, maximum=1000)
DIGEST_EXCERPT_CHARS = env.int("DIGEST_EXCERPT_CHARS", 240, minimum=20)
DIGEST_LOOKBACK_PERIODS = env.int("DIGEST_LOOKBACK_PERIODS", 3, minimum=1, maximum=1000)

# Embedding backfill (runs only with EMBEDDING_ENABLED).
EMBEDDING_BACKFILL_INTERVAL_MINUTES = env.int(
    "EMBEDDING_BACKFILL_INTERVAL_MINUTES", 10, minimum=1, maximum=32767
)
EMBEDDING_BACKFILL_BATCH = env.int("EMBEDDING_BACKFILL_BATCH", 32, minimum=1, maximum=4096)
EMBEDDING_BACKFILL_MAX_BATCHES = env.int("EMBEDDING_BACKFILL_MAX_BATCHES", 100, minimum=1)
EMBEDDING_BACKFILL_RETRIES = env.int("EMBEDDING_BACKFILL_RETRIES", 3, minimum=0, maximum=10)
EMBEDDING_BACKFILL_BACKOFF_SECONDS = env.float(
    "EMBEDDING_BACKFILL_BACKOFF_SECONDS", 2.0, minimum=0.0, maximum=600.0
)

# Run history shown in the admin and the dashboard.
BACKGROUND_RUNS_KEEP_DAYS = env.int("BACKGROUND_RUNS_KEEP_DAYS", 90, minimum=1)

# --- Webhooks (issue 16, docs/webhooks.md) ----------------------------------------------

# Targets on loopback, private, link-local, multicast or reserved addresses are refused
# (every address the host resolves to, when a subscription is saved and at each delivery)
# unless this is on. The test settings allow loopback for their local receivers.
WEBHOOK_ALLOW_PRIVATE = env.bool("WEBHOOK_ALLOW_PRIVATE", False)
WEBHOOK_ALLOW_LOOPBACK = env.bool("WEBHOOK_ALLOW_LOOPBACK", False)
# Attempts of one delivery, then it is marked failed; the wait before attempt n + 1 is
# WEBHOOK_BACKOFF_SECONDS x WEBHOOK_BACKOFF_FACTOR^(n - 1) (60 s x 3: 1, 3, 9, 27 minutes).
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", 5, minimum=1, maximum=50)
WEBHOOK_BACKOFF_SECONDS = env.float("WEBHOOK_BACKOFF_SECONDS", 60.0, minimum=0.0, maximum=86400.0)
WEBHOOK_BACKOFF_FACTOR = env.float("WEBHOOK_BACKOFF_FACTOR", 3.0, minimum=1.0, maximum=10.0)
# A subscription is disabled (with a notice) after this many failed deliveries in a row.
WEBHOOK_DISABLE_AFTER_FAILURES = env.int("WEBHOOK_DISABLE_AFTER_FAILURES", 10, minimum=1)
# One request's time limit; redirects are never followed.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", 10.0, minimum=0.1, maximum=120.0)
# How long a worker holds a subscription while it delivers (renewed as it goes); a killed
# worker's hold ends after this, and the next run redelivers what it left.
WEBHOOK_LEASE_SECONDS = env.int("WEBHOOK_LEASE_SECONDS", 60, minimum=1, maximum=3600)
# How often the worker looks for due retries and for deliveries whose task was lost.
WEBHOOK_RETRY_INTERVAL_MINUTES = env.int(
    "WEBHOOK_RETRY_INTERVAL_MINUTES", 1, minimum=1, maximum=32767
)
# Delivery log rows older than this are deleted (delivered and failed ones) by the sweep.
WEBHOOK_DELIVERIES_KEEP_DAYS = env.int("WEBHOOK_DELIVERIES_KEEP_DAYS", 30, minimum=1)
# review.due is sent once a day per namespace (its webhook-id is the day's); the task that
# looks for due cards runs this often, so a namespace whose cards fall due later in the
# day is still told that day.
REVIEW_DUE_WEBHOOK_INTERVAL_MINUTES = env.int(
    "REVIEW_DUE_WEBHOOK_INTERVAL_MINUTES", 60, minimum=1, maximum=32767
)
# memory.about_to_forget: how often the worker looks for memories decay will forget within
# FORGET_DIGEST_DAYS; each is sent once per crossing, so a shorter interval only tells sooner.
ABOUT_TO_FORGET_INTERVAL_MINUTES = env.int(
    "ABOUT_TO_FORGET_INTERVAL_MINUTES", 1440, minimum=1, maximum=32767
)
