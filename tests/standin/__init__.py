"""A local stand-in for GitHub's REST API (and helpers for keys and git repositories) for tests.

See `server.GitHubStandIn` for the test-facing API.
"""

from .keys import KeyPair, app_key_pair, sign_webhook, webhook_headers
from .server import SECONDARY_RATE_LIMIT_BODY, GitHubStandIn, Request

__all__ = [
    "SECONDARY_RATE_LIMIT_BODY",
    "GitHubStandIn",
    "KeyPair",
    "Request",
    "app_key_pair",
    "sign_webhook",
    "webhook_headers",
]
