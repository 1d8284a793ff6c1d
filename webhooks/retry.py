"""What the job queue does with a job that failed: wait for GitHub, stop, or retry as usual. Pure.

GitHub away (no answer, 5xx after the request's own retries, a long rate limit) is no reason to
lose a review: the job is run again with backoff until the operator's horizon has passed since its
first such failure (`PR_CHECK_GITHUB_RETRY_HORIZON_S`, six hours by default). GitHub refusing the
App's own credentials will not change by waiting: the job stops at once and says which settings to
check. Anything else gets the queue's few ordinary retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from webhooks.github_values import GitHubError, GitHubFailure

DEFAULT_HORIZON_S = 6 * 3600.0
DEFAULT_MAX_DELAY_S = 300.0
FIRST_DELAY_SHARE = 1 / 32  # the first wait, as a share of the longest: 9.4 s of 5 minutes


class Next(Enum):
    """What follows a failed attempt."""

    WAIT_FOR_GITHUB = "wait-for-github"  # run again after a backoff delay, until the horizon
    STOP = "stop"  # no retry can help: fail now, with the reason
    RETRY = "retry"  # the queue's ordinary bounded retries


_WAITED_FOR = frozenset({GitHubFailure.UNREACHABLE, GitHubFailure.SERVER, GitHubFailure.RATE_LIMITED})


def next_step(error: BaseException) -> Next:
    """What to do after `error` ended an attempt."""
    if isinstance(error, GitHubError):
        if error.kind in _WAITED_FOR:
            return Next.WAIT_FOR_GITHUB
        if error.kind is GitHubFailure.CREDENTIALS:
            return Next.STOP
    return Next.RETRY


@dataclass(frozen=True, slots=True)
class RetryHorizon:
    """How long a job waits for GitHub, and how its waits grow (doubling up to `max_delay_s`)."""

    horizon_s: float = DEFAULT_HORIZON_S
    max_delay_s: float = DEFAULT_MAX_DELAY_S

    def delay(self, waits: int) -> float:
        """The pause before the next attempt, after `waits` earlier waits of this job."""
        first = self.max_delay_s * FIRST_DELAY_SHARE
        return min(self.max_delay_s, first * 2 ** min(waits, 32))

    def next_attempt_at(self, waiting_since: float, waits: int, now: float) -> float | None:
        """When to try again, or None when that would be past the horizon (the job is given up)."""
        at = now + self.delay(waits)
        return at if at <= waiting_since + self.horizon_s else None
