"""A webhook delivery -> the work it asks for, or why it is refused. Pure: no sockets, no clock, no log.

The transport (webhooks/app.py) reads the body (stopping at the cap), hands the headers and the
bytes here, and turns the answer into an HTTP response and a metric. Keeping the decision here lets
it be tested on GitHub's own example payloads without a server.

Nothing a sender controls is trusted before the signature holds: a rejection before that point is
labelled `unverified`, and after it an event name becomes a label only from a fixed set.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from webhooks.jobs import Ignored, Job, job_from_delivery

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub does not send payloads over 25 MB
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")
# The events a metric may be labelled with; any other (signed) name counts as "other".
KNOWN_EVENTS = frozenset(
    {
        "check_run",
        "check_suite",
        "installation",
        "installation_repositories",
        "issue_comment",
        "ping",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "push",
        "workflow_run",
    }
)
UNVERIFIED = "unverified"  # the event label of a delivery whose signature was not (yet) checked

HeaderItems = Mapping[str, str] | Iterable[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Delivery:
    """A verified delivery: its id (the ledger's key), its metric label, and the work it asks for."""

    delivery_id: str
    event_label: str
    work: Job | Ignored


@dataclass(frozen=True, slots=True)
class Rejection:
    """A delivery refused: the HTTP status, the outcome and label it is counted under, and the answer.

    `detail` is for the log only (never answered): what went wrong inside a payload reader, naming
    the delivery by its id once that id has been checked.
    """

    status: int  # 413 | 401 | 400
    outcome: str  # too_large | bad_signature | malformed
    event_label: str
    message: str = ""
    detail: str = ""


TOO_LARGE = Rejection(413, "too_large", UNVERIFIED)


def signature_is_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """`sha256=<hex HMAC-SHA256 of the raw body>`, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode(errors="replace"))


def event_label(event: str) -> str:
    """The metric label of a verified delivery's event: its name if known, else "other"."""
    return event if event in KNOWN_EVENTS else "other"


def declared_too_large(headers: HeaderItems, max_body_bytes: int = MAX_BODY_BYTES) -> Rejection | None:
    """TOO_LARGE when Content-Length already says the body passes the cap (nothing need be read)."""
    length = _lowered(headers).get("content-length", "")
    return TOO_LARGE if length.isdigit() and int(length) > max_body_bytes else None


def accept_delivery(
    secret: bytes, headers: HeaderItems, body: bytes, *, max_body_bytes: int = MAX_BODY_BYTES
) -> Delivery | Rejection:
    """Verify a delivery and read the work it asks for; any input gives a value, never an exception.

    `headers` as the server received them (names in any case; the first of a repeated name counts).
    """
    if len(body) > max_body_bytes:
        return TOO_LARGE
    fields = _lowered(headers)
    if not signature_is_valid(secret, body, fields.get("x-hub-signature-256")):
        return Rejection(401, "bad_signature", UNVERIFIED, "bad or missing X-Hub-Signature-256")
    event = fields.get("x-github-event", "")
    label = event_label(event)
    delivery_id = fields.get("x-github-delivery", "")
    if not event or not _DELIVERY_ID.match(delivery_id):
        return Rejection(400, "malformed", label, "missing X-GitHub-Event or X-GitHub-Delivery")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return Rejection(400, "malformed", label, "body is not JSON")
    if not isinstance(payload, dict):
        return Rejection(400, "malformed", label, "body is not a JSON object")
    try:
        work = job_from_delivery(event, payload)
    except Exception as error:  # job_from_delivery takes any shape (fuzzed); this is the last guard
        return Rejection(
            400,
            "malformed",
            label,
            "payload has an unexpected shape",
            f"delivery {delivery_id}: payload could not be read ({type(error).__name__})",
        )
    return Delivery(delivery_id, label, work)


def _lowered(headers: HeaderItems) -> dict[str, str]:
    """Header names in lower case; the first value of a repeated name, as Starlette's `get` gives."""
    items: Iterable[tuple[str, str]] = (
        cast("Mapping[str, str]", headers).items() if isinstance(headers, Mapping) else headers
    )
    fields: dict[str, str] = {}
    for name, value in items:
        fields.setdefault(name.lower(), value)
    return fields
