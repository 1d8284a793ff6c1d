"""A target's link finds a symbol defined twice that it did not at base.

The compiled tier links each target the change touches with its dependency closure as static
archives, as a real link does: an archive member is pulled only when some reference needs it, so
a duplicate is reported only where the build would really see both definitions. The classic case
is two variants of one library in one binary (the portable runtime and its ATen twin, a shim
source compiled into two libraries that are both force-linked): each defines the same strong
symbols. The message is the linker's own line and the configurations it shows in.

A blocker where a cell or profile builds the configuration; major where it is derived.

Example (bad): `app` depends on `:core` and `:core_aten`, both defining `et_init()`:
`multiple definition of 'et_init()'`.

Use instead: depend on one variant (`deps = [":core_aten"]`), or select the variant per build.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.facts.compiled import compiled_review
from bot.model import Hit, Severity
from bot.snapshot import Snapshot
from checks.link_undefined_symbol import link_hit


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for failure in compiled_review(snap).links:
        if failure.problem.kind == "duplicate":
            yield link_hit(snap, failure, "finds two definitions of", "The same link found one definition at base.")


_CORE = (
    'cxx_library(name = "core", srcs = ["core.cpp"], visibility = ["PUBLIC"])\n'
    'cxx_library(name = "core_aten", srcs = ["core_aten.cpp"], visibility = ["PUBLIC"])\n'
)
_BASE = {
    "runtime/BUCK": _CORE,
    "runtime/core.cpp": "int et_init() { return 0; }\nint et_core_only() { return 3; }\n",
    "runtime/core_aten.cpp": "int et_init() { return 1; }\nint et_aten_only() { return 2; }\n",
    "app/BUCK": 'cxx_library(name = "app", srcs = ["app.cpp"], deps = ["//runtime:core"])\n',
    "app/app.cpp": "int et_init();\nint run() { return et_init(); }\n",
}
_BOTH = "int et_core_only();\nint et_aten_only();\nint run() { return et_core_only() + et_aten_only(); }\n"
_ATEN = "int et_init();\nint et_aten_only();\nint run() { return et_init() + et_aten_only(); }\n"

CHECK = Check(
    id="link-duplicate-definition",
    severity=Severity.BLOCKER,
    title="A target's link finds a symbol defined twice",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base=_BASE,
            head={
                **_BASE,
                "app/app.cpp": _BOTH,
                "app/BUCK": (
                    'cxx_library(name = "app", srcs = ["app.cpp"], deps = ["//runtime:core", "//runtime:core_aten"])'
                    "  # expect: link-duplicate-definition\n"
                ),
            },
        ),
    ),
    good=(
        Example(
            base=_BASE,
            head={
                **_BASE,
                "app/app.cpp": _ATEN,
                "app/BUCK": 'cxx_library(name = "app", srcs = ["app.cpp"], deps = ["//runtime:core_aten"])\n',
            },
        ),
    ),
    inputs=(*CPP_FILES, *BUCK_FILES, *CMAKE_FILES),
)
