"""How far apart two names are: what makes a name a likely misspelling of another."""

from __future__ import annotations


def edit_distance(first: str, second: str, limit: int = 2) -> int:
    """Levenshtein distance, or `limit + 1` as soon as it is certain to exceed `limit`."""
    if abs(len(first) - len(second)) > limit:
        return limit + 1
    previous = list(range(len(second) + 1))
    for row, a in enumerate(first, start=1):
        current = [row]
        for column, b in enumerate(second, start=1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (a != b)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def within_two_edits(first: str, second: str) -> bool:
    """Different names one or two edits apart (a typo, not a different name)."""
    return first != second and edit_distance(first, second) <= 2
