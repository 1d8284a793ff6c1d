"""The App's configuration, read once from the environment and validated at startup."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from bot.errors import PrCheckError
from webhooks.retry import DEFAULT_HORIZON_S, DEFAULT_MAX_DELAY_S

DEFAULT_API_URL = "https://api.github.com"


class SettingsError(PrCheckError):
    """The App cannot start: its environment is incomplete or wrong."""


class MissingSetting(SettingsError):
    """A required environment variable is not set."""


class InvalidSetting(SettingsError):
    """An environment variable is set to something unusable."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the service and its workers are configured with. Secrets never appear in repr."""

    webhook_secret: bytes = field(repr=False)
    app_id: str
    private_key_pem: str = field(repr=False)
    github_api_url: str
    data_dir: Path
    queue_url: str  # sqlite:///path or redis://host:port/db
    smoke_workflow: str = "gpu-smoke.yml"
    smoke_timeout_s: float = 3600.0
    write_pause_s: float = 1.0  # GitHub asks for at least a second between mutating requests
    job_lease_s: float = 120.0  # a job whose worker stops renewing this long is run again
    maintenance_interval_s: float = 15.0
    redelivery_interval_s: float = 300.0
    worker_threads: int = 2
    max_rate_limit_wait_s: float = 900.0
    review_deadline_s: float = 600.0  # wall clock for one review's evaluation, in its child process
    review_memory_bytes: int = 4 << 30  # address space of that child
    # A job whose heartbeat has renewed its lease this long stops renewing: the lease runs out and the
    # job is reaped (counted as a crash), so a stuck thread cannot hold a pull request forever.
    job_max_s: float = 1800.0
    allow_volatile_redis: bool = False  # run on a Redis without appendonly (accepted jobs may be lost)
    # `/pr-check fix` pushes a commit of fixes to the pull request's branch; needs contents: write.
    fix_push: bool = False
    # A job that finds GitHub away is run again, with pauses doubling up to the second figure, until
    # the first has passed since its first such failure (webhooks/retry.py).
    github_retry_horizon_s: float = DEFAULT_HORIZON_S
    github_retry_max_delay_s: float = DEFAULT_MAX_DELAY_S

    @property
    def mirrors_dir(self) -> Path:
        return self.data_dir / "mirrors"

    @property
    def reports_dir(self) -> Path:
        return self.data_dir / "reports"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read and validate PR_CHECK_* variables; raise a SettingsError naming the variable at fault."""
    env = os.environ if environ is None else environ

    def required(name: str) -> str:
        value = env.get(name, "").strip()
        if not value:
            raise MissingSetting(f"{name} is not set")
        return value

    def number(name: str, default: float, minimum: float = 0.0) -> float:
        raw = env.get(name, "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise InvalidSetting(f"{name}={raw!r} is not a number") from None
        if value < minimum:
            raise InvalidSetting(f"{name}={raw!r} must be at least {minimum:g}")
        return value

    def flag(name: str) -> bool:
        raw = env.get(name, "").strip().lower()
        if raw in ("", "0", "no", "false", "off"):
            return False
        if raw in ("1", "yes", "true", "on"):
            return True
        raise InvalidSetting(f"{name}={raw!r} is not one of 1, 0, yes, no, true, false, on, off")

    secret = required("PR_CHECK_WEBHOOK_SECRET")
    app_id = required("PR_CHECK_APP_ID")
    key_file = Path(required("PR_CHECK_PRIVATE_KEY_FILE"))
    try:
        private_key = key_file.read_text()
    except OSError as error:
        raise InvalidSetting(f"PR_CHECK_PRIVATE_KEY_FILE: cannot read {key_file}: {error.strerror}") from None
    if "PRIVATE KEY-----" not in private_key:
        raise InvalidSetting(f"PR_CHECK_PRIVATE_KEY_FILE: {key_file} is not a PEM private key")

    api_url = env.get("PR_CHECK_GITHUB_API_URL", "").strip() or DEFAULT_API_URL
    parsed = urlparse(api_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InvalidSetting(f"PR_CHECK_GITHUB_API_URL={api_url!r} is not an http(s) URL")

    data_dir = writable_data_dir(env.get("PR_CHECK_DATA_DIR", "").strip())
    queue_url = env.get("PR_CHECK_QUEUE", "").strip() or f"sqlite:///{data_dir / 'queue.sqlite3'}"
    validate_queue_url(queue_url)

    workflow = env.get("PR_CHECK_SMOKE_WORKFLOW", "").strip() or "gpu-smoke.yml"
    if "/" in workflow:
        raise InvalidSetting(f"PR_CHECK_SMOKE_WORKFLOW={workflow!r} must be a workflow file name, not a path")

    review_deadline = number("PR_CHECK_REVIEW_DEADLINE_S", 600.0, 1.0)
    return Settings(
        webhook_secret=secret.encode(),
        app_id=app_id,
        private_key_pem=private_key,
        github_api_url=api_url.rstrip("/"),
        data_dir=data_dir,
        queue_url=queue_url,
        smoke_workflow=workflow,
        smoke_timeout_s=number("PR_CHECK_SMOKE_TIMEOUT_S", 3600.0, 1.0),
        write_pause_s=number("PR_CHECK_WRITE_PAUSE_S", 1.0),
        job_lease_s=number("PR_CHECK_JOB_LEASE_S", 120.0, 1.0),
        maintenance_interval_s=number("PR_CHECK_MAINTENANCE_INTERVAL_S", 15.0, 0.1),
        redelivery_interval_s=number("PR_CHECK_REDELIVERY_INTERVAL_S", 300.0, 1.0),
        worker_threads=int(number("PR_CHECK_WORKER_THREADS", 2, 1)),
        max_rate_limit_wait_s=number("PR_CHECK_MAX_RATE_LIMIT_WAIT_S", 900.0),
        review_deadline_s=review_deadline,
        review_memory_bytes=int(number("PR_CHECK_REVIEW_MEMORY_MB", 4096, 256) * (1 << 20)),
        job_max_s=number("PR_CHECK_JOB_MAX_S", max(1800.0, 3 * review_deadline), review_deadline),
        allow_volatile_redis=env.get("PR_CHECK_ALLOW_VOLATILE_REDIS", "").strip().lower() in ("1", "yes", "true"),
        fix_push=flag("PR_CHECK_FIX_PUSH"),
        github_retry_horizon_s=number("PR_CHECK_GITHUB_RETRY_HORIZON_S", DEFAULT_HORIZON_S, 1.0),
        github_retry_max_delay_s=number("PR_CHECK_GITHUB_RETRY_MAX_DELAY_S", DEFAULT_MAX_DELAY_S, 0.01),
    )


DEFAULT_DATA_DIR = Path("/var/lib/pr-check")


def writable_data_dir(configured: str) -> Path:
    """PR_CHECK_DATA_DIR (else the default), made if missing and probed with a write; an
    InvalidSetting that says which variable to set when this user cannot write there."""
    data_dir = Path(configured) if configured else DEFAULT_DATA_DIR
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / f".pr-check-write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        why = error.strerror or type(error).__name__
        if configured:
            raise InvalidSetting(
                f"PR_CHECK_DATA_DIR={configured!r}: cannot write there ({why}); "
                "set PR_CHECK_DATA_DIR to a directory this user can write"
            ) from None
        raise InvalidSetting(
            f"PR_CHECK_DATA_DIR is not set, and its default {DEFAULT_DATA_DIR} cannot be written ({why}): "
            "set PR_CHECK_DATA_DIR to a directory this user can write (queue, state, mirrors)"
        ) from None
    return data_dir


def validate_queue_url(url: str) -> None:
    """`sqlite:///absolute/path` or `redis://host:port/db`; anything else is an InvalidSetting."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        if not parsed.path or parsed.path == "/":
            raise InvalidSetting(f"PR_CHECK_QUEUE={url!r}: sqlite needs a file path (sqlite:///path/queue.sqlite3)")
    elif parsed.scheme in ("redis", "rediss"):
        if not parsed.hostname:
            raise InvalidSetting(f"PR_CHECK_QUEUE={url!r}: redis needs a host (redis://host:6379/0)")
        db = parsed.path.strip("/")
        if db and not db.isdigit():
            raise InvalidSetting(f"PR_CHECK_QUEUE={url!r}: the redis database must be a number")
    else:
        raise InvalidSetting(f"PR_CHECK_QUEUE={url!r}: use sqlite:///path or redis://host:port/db")
