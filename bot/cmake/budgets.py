"""The limits one CMake evaluation runs under.

CMake files come from pull requests, so evaluating them must end, and end small, whatever
they say: `set(x ${x}${x})` in a loop doubles a string each time, and a regular expression
such as `(a|a)*$` backtracks for ever on a long enough subject. Every limit that runs out is
recorded on the model (`CMakeModel.limits`, each also a problem with file and line) and
becomes a finding (checks/cmake_eval_limit.py): a model that stopped early must not read as a
clean one. The step limit lives beside the loop it counts (`interpreter._MAX_STEPS`).
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_LOOP_ITERATIONS = 10_000
MAX_DEPTH = 64

# Nesting the evaluator follows by recursion (a Python frame or two per level), bounded so
# that all of it together stays far inside Python's recursion limit: blocks open at once
# (if, foreach, while, block; across files and calls alike), and within one command
# `${}` references, `$<>` generator expressions and if() parentheses. ExecuTorch's main
# (Aug 2026) opens at most 4 blocks at once and nests parentheses one deep. A block opened
# past the limit is not evaluated (the commands after it are); a command nested past it is
# skipped. Either is a limit at its line.
MAX_BLOCK_DEPTH = 32
MAX_NESTING = 32

# The largest CMake file evaluated (ExecuTorch's largest, the root CMakeLists.txt, is 61 KB);
# a bigger one is a limit on that file and is not read, as the C++ layer does with its sources.
MAX_FILE_BYTES = 4 * 1024 * 1024

# One value (an expanded argument, a variable built by string() or list()). ExecuTorch's
# largest is a few kilobytes; a file(READ) of a big source stays well under this.
MAX_VALUE_CHARS = 4 * 1024 * 1024
# Everything one evaluation expands, together. ExecuTorch's main (Aug 2026) expands about
# 390 thousand characters per profile in about 9,100 steps, so this leaves a margin of over a
# hundred, and it bounds the copying a doubling loop does once its value is truncated.
MAX_EXPANDED_CHARS = 64 * 1024 * 1024

# List elements: one value split into more than MAX_LIST_ITEMS is cut (ExecuTorch's longest
# list has about 200), and all expansions of one evaluation together may make
# MAX_EXPANDED_ITEMS (ExecuTorch's main makes about 11 thousand per profile). A list that
# doubles stays small in characters long after its element count makes every command slow.
MAX_LIST_ITEMS = 20_000
MAX_EXPANDED_ITEMS = 1_000_000

# Regular expressions run with a time bound (the `regex` package's timeout): per match, and
# for all matching in one evaluation together. ExecuTorch's main spends a few milliseconds.
REGEX_SECONDS_PER_MATCH = 0.5
REGEX_SECONDS = 2.0


class BudgetExhausted(Exception):
    """A budget that ends the whole evaluation ran out; args are (path, line, message)."""


class NestingTooDeep(Exception):
    """A command's arguments nest past MAX_NESTING; the one arg is the message. The command is
    skipped (a block opener with its block) and reported as a limit at its line."""


def joined_size(glue: str, items: Iterable[str]) -> int:
    """The length of `glue.join(items)`, without building it."""
    count = 0
    total = 0
    for item in items:
        total += len(item)
        count += 1
    return total + len(glue) * max(0, count - 1)
