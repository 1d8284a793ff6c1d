"""CMake's regular expressions, run under a time bound.

CMake's own engine backtracks, and so does Python's `re`: `(a|a)*$` on forty `a`s and a `b`
would run for hours in either. Matching here goes through the `regex` package, whose matcher
takes a timeout (and handles `(a+)+$` without backtracking at all). A match that runs out of
time raises RegexTimeout; once the evaluation's total regex time is spent, every later match
does at once. Callers report either as a limit on the model.
"""

from __future__ import annotations

import time

import regex

from bot.cmake.budgets import REGEX_SECONDS, REGEX_SECONDS_PER_MATCH

RegexError = regex.error


class RegexTimeout(Exception):
    """A regular expression ran past its time bound."""


class RegexGuard:
    """Matching for one evaluation: each call bounded, all calls together bounded."""

    def __init__(self, seconds: float = REGEX_SECONDS) -> None:
        self.seconds_left = seconds

    def search(self, pattern: str, text: str) -> regex.Match | None:
        """The first match of `pattern` in `text`, or None."""
        return self._timed(lambda timeout: regex.search(pattern, text, timeout=timeout))

    def find_all(self, pattern: str, text: str) -> list[str]:
        """Every non-overlapping match's text, in order (string(REGEX MATCHALL))."""
        return self._timed(lambda timeout: [m.group(0) for m in regex.finditer(pattern, text, timeout=timeout)])

    def substitute(self, pattern: str, replacement, text: str) -> str:
        """`regex.sub` with a template string or a function of the match."""
        return self._timed(lambda timeout: regex.sub(pattern, replacement, text, timeout=timeout))

    def _timed(self, action):
        if self.seconds_left <= 0:
            raise RegexTimeout("the evaluation's time for regular expressions is spent")
        timeout = min(REGEX_SECONDS_PER_MATCH, self.seconds_left)
        started = time.perf_counter()
        try:
            return action(timeout)
        except TimeoutError:
            raise RegexTimeout(f"matching ran past {timeout:g} s") from None
        finally:
            self.seconds_left -= time.perf_counter() - started
