"""Text every output can carry: a file name that is not UTF-8 shown with its bytes escaped.

Inside pr-check a path keeps such bytes as lone surrogates (bot/tree.py), which no encoder
writes: stdout, a JSON file and GitHub's API all need UTF-8. Every output passes through
`printable` on its way out, so `pkg-\\xff/BUCK` reads the same in text, JSON, SARIF and on GitHub.
"""

from __future__ import annotations

from typing import Any

from bot.tree import shown_path


def printable(value: Any) -> Any:
    """`value` (text, or JSON-shaped lists and dicts of it) with undecodable bytes as `\\xNN`."""
    if isinstance(value, str):
        return shown_path(value)
    if isinstance(value, dict):
        return {printable(key): printable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable(item) for item in value]
    return value


def is_printable_path(path: str) -> bool:
    """Whether GitHub can name `path` as it is (a file name that is valid UTF-8)."""
    return shown_path(path) == path
