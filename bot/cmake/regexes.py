"""CMake's regular expressions, run under a time bound.

CMake's own engine backtracks, and so does Python's `re`: `(a|a)*$` on forty `a`s and a `b`
would run for hours in either. Matching here goes through the `regex` package, whose matcher
takes a timeout (and handles `(a+)+$` without backtracking at all). A match that runs out of
time raises RegexTimeout; once the evaluation's total regex time is spent, every later match
does at once. Callers report either as a limit on the model.

Time here is the matching thread's CPU time, not the wall clock: on a loaded machine a thread
waits for a core, and a wall-clock budget then ran out on ordinary CMake files, so one tree gave
different models (and findings) at different loads. The `regex` package's timeout is wall time,
so a match it stops is retried with the CPU time it has left when the thread was not the one
spending it (never past RETRY_WALL_FACTOR times the per-match bound).
"""

from __future__ import annotations

import time

import regex

from bot.cmake.budgets import REGEX_SECONDS, REGEX_SECONDS_PER_MATCH

RETRY_WALL_FACTOR = 20  # a match may wait this many times its CPU bound on a busy machine

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
        bound = min(REGEX_SECONDS_PER_MATCH, self.seconds_left)
        cpu_started, wall_started = time.thread_time(), time.perf_counter()
        attempt_wall = bound
        try:
            while True:
                try:
                    return action(attempt_wall)
                except TimeoutError:
                    spent = time.thread_time() - cpu_started
                    wall_left = RETRY_WALL_FACTOR * bound - (time.perf_counter() - wall_started)
                    if spent >= bound or wall_left <= 0:
                        raise RegexTimeout(f"matching ran past {bound:g} s") from None
                    # Stopped while waiting for a core, not while matching: try again with more
                    # wall time; the CPU bound above still holds across the attempts.
                    attempt_wall = min(2 * attempt_wall, wall_left)
        finally:
            self.seconds_left -= time.thread_time() - cpu_started
