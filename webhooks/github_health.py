"""Whether GitHub's API answers the workers, for /healthz: marked by a failed call, cleared by the
next call that succeeds. The mark lives in the shared store, so the web process (which never calls
GitHub) can say `degraded` while the workers' jobs wait for GitHub."""

from __future__ import annotations

import json
import threading
import time

from webhooks.namespaces import Namespace
from webhooks.store import StateStore

GITHUB_KEY = "github"  # in Namespace.HEALTH
MARK_TTL_S = 900.0  # a worker that stopped calling (or died) leaves no stale mark behind for long
REMARK_AFTER_S = 30.0  # while failing, the mark is renewed at most this often


def _state_of(status: str) -> str | None:
    """The mark a call's status label (webhooks/github_calls.py) stands for; None: GitHub answered."""
    if status == "network":
        return "unreachable"
    if status.isdigit() and int(status) >= 500:
        return "failing"
    if status == "401":
        return "refusing the App's credentials: check the App id and private key"
    return None


class GitHubHealth:
    """One worker process's view of GitHub, written to the store when it changes."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._state: str | None = "unknown"  # None: GitHub answers; a mark is cleared on the first answer
        self._since = 0.0
        self._written = 0.0

    def observe(self, operation: str, status: str) -> None:
        """A call's status (a CallObserver): mark GitHub failing, or clear the mark."""
        if status in ("403", "404", "409", "422", "429"):  # answers about a request, not GitHub's health
            return
        state = _state_of(status)
        now = time.time()
        with self._lock:
            if state is None:
                if self._state is None:
                    return
                self._state = None
                write = None
            else:
                if state == self._state and now - self._written < REMARK_AFTER_S:
                    return
                if state != self._state:
                    self._since = now
                self._state, self._written = state, now
                write = json.dumps(
                    {"state": state, "since": self._since, "reason": f"{operation}: {status}"}, sort_keys=True
                )
        if write is None:
            self.store.delete(Namespace.HEALTH, GITHUB_KEY)
        else:
            self.store.put(Namespace.HEALTH, GITHUB_KEY, write, ttl_s=MARK_TTL_S)


def github_status(store: StateStore, now: float | None = None) -> dict | None:
    """What /healthz says of GitHub: None while it answers, else its state, since when, and why."""
    text = store.get(Namespace.HEALTH, GITHUB_KEY)
    if not text:
        return None
    mark = json.loads(text)
    now = time.time() if now is None else now
    return {"state": mark["state"], "for_s": round(now - float(mark["since"]), 1), "reason": mark["reason"]}
