"""A target's link misses a symbol it did not miss at base: an undefined reference.

The compiled tier links, for each target the change touches (a changed source, or a changed list
of sources or deps), the target's objects with its dependency closure as static archives, as a
real link does (`-shared -z defs`: every reference must resolve). A symbol undefined at head and
resolved at base is the pull request's: a function moved to a new source that one build's
hand-written list lacks, an implementation macro that no translation unit defines any more
(a header-only library's `#define LIB_IMPLEMENTATION`), a source dropped from one build only. The
message is the linker's own line and the configurations it shows in. A closure that links a
library outside the tree, or has a source that does not compile, is not verified.

A blocker where a cell or profile builds the configuration; major where it is derived.

Example (bad): `helper()` moves from `a.cpp` to a new `c.cpp`, and the target's list keeps
`srcs = ["a.cpp", "b.cpp"]`; `b.cpp` calls it: `undefined reference to 'helper()'`.

Use instead: list the new source where the function went: `srcs = ["a.cpp", "b.cpp", "c.cpp"]`.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.facts.compiled import compiled_review, owner_location
from bot.facts.linked import LinkFailure
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot

KIND = "undefined"


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for failure in compiled_review(snap).links:
        if failure.problem.kind == KIND:
            yield link_hit(snap, failure, "cannot resolve", "The same link resolved it at base.")


def link_hit(snap: Snapshot, failure: LinkFailure, verb: str, at_base: str) -> Hit:
    """One hit for a link problem, at the owner's definition (shared with link-duplicate-definition)."""
    first = failure.configurations[0]
    path, line = owner_location(snap.head, first, failure.owner)
    configurations = ", ".join(f"`{c.name}`" for c in failure.configurations)
    since = "The target is new at head." if failure.new_owner else at_base
    where = f" (referenced from `{failure.source}`)" if failure.source and KIND in failure.problem.kind else ""
    evidence = (Evidence(failure.source, 1, "the object the linker named"),) if failure.source else ()
    return Hit(
        path=path or (failure.source or ""),
        line=line or 1,
        message=(
            f"Linking `{failure.owner}` with its dependency closure {verb} `{failure.problem.symbol}`{where} in "
            f"{configurations}; the linker says: `{failure.problem.text}`. {since}"
        ),
        key=f"{failure.owner}|{failure.problem.kind}|{failure.problem.symbol}",
        target=failure.owner if first.cell else None,
        cell=first.cell,
        offending_text=failure.problem.symbol,
        evidence=evidence,
        at_most=None if any(c.built for c in failure.configurations) else Severity.MAJOR,
    )


_A = "int helper() { return 1; }\nint a() { return 2; }\n"
_B = "int helper();\nint use() { return helper(); }\n"
_BASE = {
    "lib/BUCK": 'cxx_library(name = "m", srcs = ["a.cpp", "b.cpp"], visibility = ["PUBLIC"])\n',
    "lib/a.cpp": _A,
    "lib/b.cpp": _B,
}
_MOVED = {"lib/a.cpp": "int a() { return 2; }\n", "lib/c.cpp": "int helper() { return 1; }\n"}

CHECK = Check(
    id="link-undefined-symbol",
    severity=Severity.BLOCKER,
    title="A target's link misses a symbol it resolved at base",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base=_BASE,
            head={
                **_BASE,
                **_MOVED,
                "lib/BUCK": (
                    'cxx_library(name = "m", srcs = ["a.cpp", "b.cpp"], visibility = ["PUBLIC"])'
                    "  # expect: link-undefined-symbol\n"
                ),
            },
        ),
    ),
    good=(
        Example(
            base=_BASE,
            head={
                **_BASE,
                **_MOVED,
                "lib/BUCK": 'cxx_library(name = "m", srcs = ["a.cpp", "b.cpp", "c.cpp"], visibility = ["PUBLIC"])\n',
            },
        ),
    ),
    inputs=(*CPP_FILES, *BUCK_FILES, *CMAKE_FILES),
)
