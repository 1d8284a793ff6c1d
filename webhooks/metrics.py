"""Prometheus metrics.

The web process counts what it sees itself (deliveries, acknowledgement time). Workers may run in
other processes or on other machines, so they add their counts (jobs, job durations, GitHub calls,
errors) to the shared state store, and the web process's `/metrics` reads them back: one scrape
target shows the whole service.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

from webhooks.namespaces import Namespace
from webhooks.store import StateStore

NAMESPACE = Namespace.METRICS
WORKERS_NAMESPACE = Namespace.WORKERS
JOB_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
_SEP = "\t"


class WorkerMetrics:
    """What workers count, written to the shared store."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def job_finished(self, kind: str, outcome: str, seconds: float) -> None:
        amounts = {
            _SEP.join(("jobs", kind, outcome)): 1.0,
            _SEP.join(("job_seconds_sum", kind)): seconds,
            _SEP.join(("job_seconds_count", kind)): 1.0,
        }
        for bound in JOB_SECONDS_BUCKETS:
            if seconds <= bound:
                amounts[_SEP.join(("job_seconds_bucket", kind, repr(bound)))] = 1.0
        self.store.add(NAMESPACE, amounts)

    def github_call(self, operation: str, status: str) -> None:
        self.store.add(NAMESPACE, {_SEP.join(("github_calls", operation, status)): 1.0})

    def error(self, where: str) -> None:
        self.store.add(NAMESPACE, {_SEP.join(("errors", where)): 1.0})


class SharedMetricsCollector:
    """A prometheus collector over the counts workers left in the store."""

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def collect(self) -> Iterator:
        values = {tuple(key.split(_SEP)): float(value) for key, value in self.store.items(NAMESPACE).items()}
        jobs = CounterMetricFamily("pr_check_jobs", "Jobs finished, by kind and outcome", labels=["kind", "outcome"])
        calls = CounterMetricFamily(
            "pr_check_github_calls", "GitHub API calls, by operation and status", labels=["operation", "status"]
        )
        errors = CounterMetricFamily("pr_check_errors", "Worker errors, by where", labels=["where"])
        buckets: dict[str, dict[float, float]] = {}
        sums: dict[str, float] = {}
        for key, value in sorted(values.items()):
            if key[0] == "jobs" and len(key) == 3:
                jobs.add_metric(list(key[1:]), value)
            elif key[0] == "github_calls" and len(key) == 3:
                calls.add_metric(list(key[1:]), value)
            elif key[0] == "errors" and len(key) == 2:
                errors.add_metric([key[1]], value)
            elif key[0] == "job_seconds_bucket" and len(key) == 3:
                buckets.setdefault(key[1], {})[float(key[2])] = value
            elif key[0] == "job_seconds_sum" and len(key) == 2:
                sums[key[1]] = value
        durations = HistogramMetricFamily(
            "pr_check_job_duration_seconds", "Time to run a job, by kind", labels=["kind"]
        )
        for kind, total in sums.items():
            counts = buckets.get(kind, {})
            count = values.get(("job_seconds_count", kind), 0.0)
            series = [(repr(bound), counts.get(bound, 0.0)) for bound in JOB_SECONDS_BUCKETS] + [("+Inf", count)]
            durations.add_metric([kind], series, total)
        yield from (jobs, durations, calls, errors)


@dataclass(frozen=True)
class WebMetrics:
    """The web process's own metrics, plus the shared ones."""

    registry: CollectorRegistry
    deliveries: Counter  # by event and outcome (accepted, duplicate, ignored, bad_signature, malformed)
    ack_seconds: Histogram
    web_errors: Counter

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)


def new_web_metrics(store: StateStore | None) -> WebMetrics:
    """Metrics in a registry of their own (tests build several apps in one process)."""
    registry = CollectorRegistry()
    if store is not None:
        registry.register(SharedMetricsCollector(store))
    return WebMetrics(
        registry=registry,
        deliveries=Counter(
            "pr_check_webhook_deliveries",
            "Webhook deliveries received, by event and outcome",
            ["event", "outcome"],
            registry=registry,
        ),
        ack_seconds=Histogram(
            "pr_check_webhook_ack_seconds",
            "Time to answer a webhook delivery",
            registry=registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0),
        ),
        web_errors=Counter(
            "pr_check_webhook_errors", "Errors while accepting deliveries", ["where"], registry=registry
        ),
    )
