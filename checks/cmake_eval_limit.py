"""Evaluating the CMake files ran past a limit: steps, loop iterations, nesting, value size or regex time.

pr-check evaluates CMake files under bounds, because they come from pull requests and must
never hang or exhaust the reviewer: a loop that never ends, a `set(x ${x}${x})` that doubles a
string each time, a regular expression that backtracks for ever, blocks nested thousands deep,
a file of many megabytes. When a bound runs out, the CMake model stops there (or the loop is
cut short, or the over-deep block or file is left out) and every CMake finding that depends on
what was not evaluated is missing, so a review that says nothing would be a false all-clear.
CMake itself would hang, or take the same memory, at configure time; nesting that deep is no
build file anyone can review.

Example (bad): `while(TRUE)` whose body never `break()`s.

Use instead: loops with an end; `foreach(item IN LISTS ...)`; values that do not double.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import CMAKE_FILES, Check, Example
from bot.facts import cmake_models
from bot.model import Hit, Severity
from bot.snapshot import Snapshot


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    seen: set[tuple[str, int, str]] = set()
    for profile in snap.config.cmake_profiles:
        for limit in cmake_models.cmake_model(snap.head, profile).limits:
            stable = _stable(limit.message)
            if (limit.path, limit.line, stable) in seen:
                continue
            seen.add((limit.path, limit.line, stable))
            yield Hit(
                path=limit.path,
                line=limit.line,
                message=(
                    f"Evaluating the CMake files under the `{profile}` profile ran past a limit here: {limit.message}. "
                    "What was not evaluated is missing from the CMake model, so CMake findings that depend on it are "
                    "missing from this review."
                ),
                key=stable,
                offending_text=stable,
            )


def _stable(message: str) -> str:
    # Limit messages carry sizes and counts; keep the fingerprint free of them.
    return "".join(ch for ch in message if not ch.isdigit())[:200]


CHECK = Check(
    id="cmake-eval-limit",
    inputs=CMAKE_FILES,
    severity=Severity.MAJOR,
    title="CMake evaluation ran past a limit",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "CMakeLists.txt": (
                    "set(count 0)\n"
                    "while(TRUE)  # expect: cmake-eval-limit\n"
                    '  math(EXPR count "${count} + 1")\n'
                    "endwhile()\n"
                )
            }
        ),
    ),
    good=(
        Example(
            head={
                "CMakeLists.txt": ('set(count 0)\nwhile(count LESS 3)\n  math(EXPR count "${count} + 1")\nendwhile()\n')
            }
        ),
    ),
)
