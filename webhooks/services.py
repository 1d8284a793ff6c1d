"""What a worker's jobs share: configuration, the state store, GitHub, the mirrors, the counters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from webhooks.github_api import AppClient
from webhooks.isolation import Outcome, ReviewLimits, ReviewRequest, run_review
from webhooks.metrics import WorkerMetrics
from webhooks.mirror import Mirrors
from webhooks.settings import Settings
from webhooks.store import StateStore


@dataclass(frozen=True)
class Services:
    settings: Settings
    store: StateStore
    github: AppClient
    mirrors: Mirrors
    metrics: WorkerMetrics
    # Runs one review in a supervised child; tests hand the worker one whose child misbehaves.
    review: Callable[[ReviewRequest, ReviewLimits], Outcome] = run_review
