"""Every namespace of the App's state store, in one place, with what it holds.

A `StrEnum`, so a member is the very string both back ends store (SQLite's `namespace` column, the
Redis key prefix) and existing data stays readable; a misspelt namespace is now an AttributeError at
import instead of a key nobody reads. Lease names are not namespaces (the store keys them itself).
"""

from __future__ import annotations

from enum import StrEnum


class Namespace(StrEnum):
    JOB = "job"  # job id -> its ledger record (JSON), for a while after it ends
    ACTIVE = "active"  # job id -> "1" while queued or running: what the reaper and the drain watch
    LATEST_PUSH = "latest-push"  # pull request -> (pushed at, head sha): a review of an older push is dropped
    POSTED = "posted"  # pull request @ head -> head: the review of that head was posted
    REDELIVERED = "redelivered"  # delivery guid -> id: asked GitHub to redeliver it once
    COMMAND_SMOKE = "command-smoke"  # comment -> head: a `smoke` command was acted on
    COMMAND_REPLY = "command-reply"  # comment -> "1": the command was answered
    COMMAND_FIX = "command-fix"  # pull request @ head -> the commit `/pr-check fix` pushed on it
    SMOKE = "smoke"  # correlation id -> the smoke run (JSON)
    SMOKE_OPEN = "smoke-open"  # correlation id -> "1" while the run has no conclusion
    SMOKE_NOTE = "smoke-note"  # pull request @ head -> the note posted about its smoke run (JSON)
    SMOKE_REASONS = "smoke-reasons"  # pull request @ head -> why the smoke job is wanted (JSON list)
    SMOKE_HEAD = "smoke-head"  # pull request @ head -> correlation id (or "waiting")
    SMOKE_RUN = "smoke-run"  # workflow run -> correlation id
    METRICS = "metrics"  # counter -> value, shared by every process
    WORKERS = "workers"  # worker name -> last sign of life (expires): read by /healthz
    HEALTH = "health"  # /healthz reads and writes a probe to see the store answer and take writes
