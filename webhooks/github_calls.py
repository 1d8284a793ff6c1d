"""One GitHub request with its retries: bounded backoff on 5xx and dropped connections, waits that
honour `retry-after` and the rate-limit reset, each attempt's status reported to an observer.

A request that still fails ends in a GitHubError whose kind (webhooks/github_values.py) tells the
job queue what to do next: wait for GitHub over the operator's horizon, stop and say which setting
is wrong, or retry as any failed job is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests
from github import GithubException

from webhooks.github_values import GitHubError, GitHubFailure

log = logging.getLogger("pr_check.github")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 4  # first try included
    backoff_s: float = 0.5  # doubled each retry
    max_rate_limit_wait_s: float = 900.0  # longer waits fail the call; the job is retried later


CallObserver = Callable[[str, str], None]  # (operation, status label)


class _Caller:
    """Runs one request with the retry policy, reporting each attempt's status to an observer."""

    def __init__(self, policy: RetryPolicy, observe: CallObserver | None) -> None:
        self.policy = policy
        self.observe = observe or (lambda operation, status: None)

    def __call__(self, operation: str, send: Callable[[], Any], *, idempotent: bool = True) -> Any:
        attempt = 0
        while True:
            attempt += 1
            try:
                result = send()
            except GithubException as error:
                self.observe(operation, str(error.status))
                wait = _rate_limit_wait(error, attempt)
                if wait is not None:
                    # A rate-limited request was not carried out, so even a write may be sent again.
                    if wait > self.policy.max_rate_limit_wait_s or attempt >= self.policy.attempts + 2:
                        raise GitHubError(
                            operation, error.status, f"rate limited; retry in {wait:.0f}s", GitHubFailure.RATE_LIMITED
                        ) from None
                    log.warning("GitHub %s rate limited; waiting %.1fs", operation, wait)
                    time.sleep(wait)
                    continue
                if error.status >= 500 and idempotent and attempt < self.policy.attempts:
                    time.sleep(self.policy.backoff_s * 2 ** (attempt - 1))
                    continue
                raise GitHubError(operation, error.status, _message(error)) from None
            except requests.RequestException as error:
                self.observe(operation, "network")
                if idempotent and attempt < self.policy.attempts:
                    time.sleep(self.policy.backoff_s * 2 ** (attempt - 1))
                    continue
                raise GitHubError(operation, None, type(error).__name__) from None
            self.observe(operation, "ok")
            return result


def _header(error: GithubException, name: str) -> str | None:
    headers = error.headers or {}
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _rate_limit_wait(error: GithubException, attempt: int) -> float | None:
    """Seconds to wait when GitHub says we went too fast; None for any other error."""
    if error.status not in (403, 429):
        return None
    retry_after = _header(error, "retry-after")
    remaining = _header(error, "x-ratelimit-remaining")
    message = _message(error).lower()
    if retry_after is None and remaining != "0" and "rate limit" not in message:
        return None  # a plain 403: a missing permission, not a limit
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    reset = _header(error, "x-ratelimit-reset")
    if remaining == "0" and reset is not None:
        try:
            return max(0.0, float(reset) - time.time()) + 1.0
        except ValueError:
            pass
    return 60.0 * 2 ** (attempt - 1)  # secondary limit without advice: a minute, then back off


def _message(error: GithubException) -> str:
    data = error.data
    if isinstance(data, Mapping):
        text = str(data.get("message") or "")
        errors = data.get("errors")
        if errors:
            text += f" {errors}"
        return text
    return str(data or "")
