"""Redeliver failed webhook deliveries: GitHub records them but never retries by itself.

Deliveries are grouped by GUID (a redelivery keeps the GUID). A GUID is redelivered once, when none
of its attempts succeeded, the service never accepted it, and it is inside GitHub's window.
"""

from __future__ import annotations

import logging
import time

from webhooks.github_api import AppClient, GitHubError, HookDelivery
from webhooks.namespaces import Namespace
from webhooks.store import StateStore

log = logging.getLogger("pr_check.redelivery")

WINDOW_S = 3 * 24 * 3600.0  # github.com keeps deliveries for three days
RECORD_TTL_S = 7 * 24 * 3600.0


def deliveries_to_redeliver(deliveries: list[HookDelivery], already_handled: set[str]) -> list[HookDelivery]:
    """The newest attempt of each GUID that never succeeded and was not handled yet. Pure."""
    by_guid: dict[str, list[HookDelivery]] = {}
    for delivery in deliveries:
        by_guid.setdefault(delivery.guid, []).append(delivery)
    chosen = []
    for guid, attempts in by_guid.items():
        if not guid or guid in already_handled or any(a.succeeded for a in attempts):
            continue
        chosen.append(max(attempts, key=lambda a: (a.delivered_at, a.id)))
    return sorted(chosen, key=lambda d: d.delivered_at)


def redeliver_failed(github: AppClient, store: StateStore, now: float | None = None) -> list[str]:
    """Ask GitHub to redeliver every failed delivery once; returns the GUIDs asked for."""
    now = time.time() if now is None else now
    deliveries = github.hook_deliveries(since=now - WINDOW_S)
    handled = {
        d.guid
        for d in deliveries
        if store.get(Namespace.JOB, d.guid) is not None or store.get(Namespace.REDELIVERED, d.guid) is not None
    }
    asked = []
    for delivery in deliveries_to_redeliver(deliveries, handled):
        # Recorded first: asking twice would make GitHub deliver twice (we would drop it, but still).
        if not store.put(
            Namespace.REDELIVERED, delivery.guid, str(delivery.id), only_if_absent=True, ttl_s=RECORD_TTL_S
        ):
            continue
        try:
            github.redeliver(delivery.id)
        except GitHubError as error:
            log.warning("redelivery of %s failed: %s", delivery.guid, error)
            continue
        asked.append(delivery.guid)
    return asked
