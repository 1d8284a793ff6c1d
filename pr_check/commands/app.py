"""`pr-check serve` and `pr-check worker`: the GitHub App's service and queue worker (webhooks/cli.py).

`pip install pr-check` is the CLI alone; the App's packages come with the `app` extra, and
without them these commands say how to install them instead of failing with a traceback.
"""

from __future__ import annotations

import sys

from webhooks import cli as service

# Import names of the `app` extra's packages (pyproject.toml), which `pip install pr-check` leaves out.
APP_MODULES = frozenset(
    {"huey", "redis", "github", "jwt", "fastapi", "starlette", "uvicorn", "httpx", "prometheus_client"}
)


def run_serve(argv: list[str]) -> int:
    """Run the webhook service."""
    return _with_app_packages("serve", lambda: service.serve(argv))


def run_worker(argv: list[str]) -> int:
    """Run a queue worker."""
    return _with_app_packages("worker", lambda: service.worker(argv))


def _with_app_packages(command: str, start) -> int:
    try:
        return start()
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in APP_MODULES:
            raise
        print(
            f"pr-check {command}: the GitHub App needs its own packages (missing: {error.name}); "
            "install them with: pip install 'pr-check[app]'",
            file=sys.stderr,
        )
        return 2
