"""Which head commit a maintainer's `/pr-check smoke` approves. Pure over the state store.

The GPU smoke job runs the pull request's code on a self-hosted runner, so a maintainer's approval
must cover exactly the code they looked at: a push that lands after the comment (or while the job
waits in the queue) must not ride on it. The App records every head it sees for a pull request with
the time it appeared (GitHub's `updated_at` of the push, or the App's clock when a review first saw
it); an approval names the head that was current when the comment was written, or a head given
explicitly as `/pr-check smoke <sha>`. That commit is dispatched, whatever the head is by then.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhooks.jobs import RepoRef, pull_request_key
from webhooks.store import StateStore

HEADS_TTL_S = 30 * 24 * 3600.0


def _namespace(repo: RepoRef, number: int) -> str:
    return "pr-heads:" + pull_request_key(repo, number)


def record_head_seen(store: StateStore, repo: RepoRef, number: int, head_sha: str, when: float) -> None:
    """Remember that `head_sha` was a head of the pull request at `when` (the first sighting wins)."""
    if head_sha:
        store.put(_namespace(repo, number), head_sha, repr(float(when)), only_if_absent=True, ttl_s=HEADS_TTL_S)


@dataclass(frozen=True, slots=True)
class Approved:
    head_sha: str


@dataclass(frozen=True, slots=True)
class NotApproved:
    reason: str  # the reply to the maintainer


def approved_head(
    store: StateStore, repo: RepoRef, number: int, commented_at: float, named: str | None
) -> Approved | NotApproved:
    """The head a smoke approval written at `commented_at` covers; `named` is a sha (prefix) it gave."""
    seen = {}
    for sha, when in store.items(_namespace(repo, number)).items():
        try:
            seen[sha] = float(when)
        except ValueError:
            continue
    if named:
        matches = [sha for sha in seen if sha.startswith(named.lower())]
        if len(matches) != 1:
            return NotApproved(
                f"`{named}` is not {'one' if not matches else 'exactly one'} of the head commits "
                "pr-check has seen on this pull request."
            )
        return Approved(matches[0])
    before = [(when, sha) for sha, when in seen.items() if when <= commented_at]
    if not before:
        return NotApproved(
            "no head commit of this pull request is known from before your comment (a push may "
            "have landed since); comment `/pr-check smoke <sha>` naming the commit you reviewed."
        )
    return Approved(max(before)[1])
