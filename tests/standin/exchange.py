"""One request and its answer, GitHub's error bodies, and Link-header pagination."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

DOCS = "https://docs.github.com/rest"


@dataclass
class Call:
    """A parsed request, plus who made it once authentication has run."""

    method: str
    path: str  # without the base path prefix and without the query
    query: dict[str, str]  # last value wins, as GitHub's parameter parsing does
    headers: dict[str, str]  # lower-case names
    body: bytes
    params: dict[str, str] = field(default_factory=dict)  # from the route pattern
    installation_id: int | None = None
    permissions: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The JSON body ({} when empty); Abort(400) when it does not parse, like GitHub."""
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body)
        except ValueError:
            raise Abort(error(400, "Problems parsing JSON")) from None


@dataclass
class Reply:
    status: int
    body: Any = None  # JSON-able value, or str for text/plain, or None for no body
    headers: dict[str, str] = field(default_factory=dict)


class Abort(Exception):
    """Raised by a route to answer with `reply` at once."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


def error(status: int, message: str, documentation_url: str = DOCS, errors: list[Any] | None = None) -> Reply:
    body: dict[str, Any] = {"message": message}
    if errors is not None:
        body["errors"] = errors
    body["documentation_url"] = documentation_url
    body["status"] = str(status)
    return Reply(status, body)


def not_found() -> Abort:
    return Abort(error(404, "Not Found"))


def validation_failed(documentation_url: str, *errors: Any) -> Abort:
    return Abort(error(422, "Validation Failed", documentation_url, list(errors)))


def invalid_request(detail: str, documentation_url: str) -> Abort:
    """GitHub's schema-validation 422: "Invalid request.\\n\\n<detail>", no `errors` list."""
    body = {"message": f"Invalid request.\n\n{detail}", "documentation_url": documentation_url, "status": "422"}
    return Abort(Reply(422, body))


def page(
    call: Call, items: list[Any], api_base: str, *, wrap: str | None = None, extra: dict[str, Any] | None = None
) -> Reply:
    """One page of `items` per `per_page`/`page`, with GitHub's Link header.

    `wrap` names the key of an object response ({"total_count": N, wrap: [...]}) as the check-run and
    workflow-run lists use.
    """
    per_page = _int(call.query.get("per_page"), 30)
    per_page = min(max(per_page, 1), 100)
    number = max(_int(call.query.get("page"), 1), 1)
    last = max((len(items) + per_page - 1) // per_page, 1)
    chunk = items[(number - 1) * per_page : number * per_page]
    headers: dict[str, str] = {}
    if last > 1:

        def url(n: int) -> str:
            params = {k: v for k, v in call.query.items() if k != "page"}
            params["page"] = str(n)
            return f"{api_base}{call.path}?{urlencode(params)}"

        links: list[tuple[str, int]] = []
        if number > 1:
            links.append(("prev", min(number - 1, last)))
        if number < last:
            links += [("next", number + 1), ("last", last)]
        if number > 1:
            links.append(("first", 1))
        headers["Link"] = ", ".join(f'<{url(n)}>; rel="{rel}"' for rel, n in links)
    body: Any = chunk
    if wrap is not None:
        body = {"total_count": len(items), wrap: chunk, **(extra or {})}
    return Reply(200, body, headers)


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
