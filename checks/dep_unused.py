"""A Buck target declares a dep none of whose headers its files include.

Depend-on-what-you-use (DWYU, for Bazel) holds a C++ target to the deps its includes need. A
dep whose headers no file of the target includes (sources, private and exported headers, and
the unlisted repository headers they pull in), nor any header of a target it re-exports, does
nothing for the target's compilation: it only lengthens every build and link of the target and
its dependents, and hides where the real dependencies are (the gap `dep-undeclared-header` finds
shows up only once the stray dep is gone).

Reported, in every cell that defines the target, for a dep written in its own `deps` or
`exported_deps` list (an exported one only when no dependent includes its headers either: a
re-export is an interface) that is a C++ library listing headers, and not one needed for another
reason: a force-linked library (`link_whole`, kept for its registrations), one that passes
preprocessor or linker flags on, one whose sources implement a header the target includes
from another target, a Python or other non-C++ dep (see `bot/facts/dep_usage.py`). An
include under any `#if` counts as a use. Info: the build is right either way.

In a review only the targets the change touches are judged (their call, a macro on their stack,
one of their own files); `pr-check scan` judges every target.

Example (bad): `deps = [":util", ":log"]` while no file of the target includes a header of
`:log`.

Use instead: drop the dep (`deps = [":util"]`).
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck import edits
from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example, Share
from bot.facts import dep_usage
from bot.facts.dep_usage import CellView, WrittenDep
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    model = snap.head
    users_of = {cell: dep_usage.dependents(dep_usage.cell_view(model, cell)) for cell in CELLS}
    for _label, defined in sorted(dep_usage.judged_targets(model, snap.changes.paths or None).items()):
        verdicts: dict[tuple[str, str], list[bool]] = {}
        first: dict[tuple[str, str], tuple[CellView, BuckTarget, WrittenDep]] = {}
        for view, target in defined:
            written = dep_usage.written_deps(model, target, ("deps", "exported_deps"))
            if not written:
                continue
            files = dep_usage.usage(model, target)
            if not files.complete:
                continue  # files of a submodule: what they include is unknown
            if not files.private_sources and not files.public and not files.private:
                continue  # no files: an aggregate whose deps are its purpose
            used = files.public | files.private
            for dep in written:
                key = (dep.label, dep.attribute)
                names = view.names_of(view.closure(dep.label))
                unused = view.judgeable(model, dep.label, files) and not names & used
                if unused and dep.attribute == "exported_deps":
                    # A re-export some dependent includes through: the target's interface.
                    users = users_of[view.cell].get(target.label, ())
                    unused = not dep_usage.dependent_includes(model, view, users, names)
                verdicts.setdefault(key, []).append(unused)
                first.setdefault(key, (view, target, dep))
        for key, unused in sorted(verdicts.items()):
            if all(unused):
                view, target, dep = first[key]
                yield _hit(snap, view, target, dep, len(unused))


def _hit(snap: Snapshot, view: CellView, target: BuckTarget, dep: WrittenDep, cells: int) -> Hit:
    owner = view.targets[dep.label]
    return Hit(
        path=target.path,
        line=dep.element.span.line,
        message=(
            f"`{target.primary_label}` lists `{dep.element.string}` in `{dep.attribute}`, but none of its files "
            f"includes a header of `{dep.label}` or of a target it re-exports (checked in {cells} cell(s)): the dep "
            "does nothing for its compilation. Drop it."
        ),
        key=f"{target.primary_label}|{dep.label}",
        target=target.primary_label,
        cell=view.cell,
        offending_text=dep.element.string or dep.label,
        evidence=(
            Evidence(target.path, dep.element.span.line, f"`{dep.label}` is listed in `{dep.attribute}`"),
            Evidence(owner.path, owner.line, f"`{dep.label}` is defined here, with its headers"),
        ),
        fix=_drop(snap, target, dep),
    )


def _drop(snap: Snapshot, target: BuckTarget, dep: WrittenDep) -> Fix | None:
    text = snap.head.text(target.path) or ""
    literal = dep.keyword.value_list
    if literal is None or len(literal.elements) < 2:
        return None  # `deps = []` left behind is for the author to remove with the keyword
    return fix_between(target.path, text, edits.remove_list_element(text, literal, dep.index), f"drop `{dep.label}`")


_LOG = "#pragma once\nvoid log_line(const char* text);\n"
_UTIL = "#pragma once\nint add(int a, int b);\n"
_USER = "#include <executorch/lib/util/util.h>\n\nint twice(int a) { return add(a, a); }\n"


def _package(deps: str, source: str = _USER, log_extra: str = "") -> dict[str, str]:
    return {
        "lib/util/BUCK": (
            'cxx_library(name = "util", srcs = ["util.cpp"], exported_headers = ["util.h"])\n'
            f'cxx_library(name = "log", srcs = ["log.cpp"], exported_headers = ["log.h"]{log_extra})\n'
        ),
        "lib/util/util.h": _UTIL,
        "lib/util/util.cpp": "#include <executorch/lib/util/util.h>\nint add(int a, int b) { return a + b; }\n",
        "lib/util/log.h": _LOG,
        "lib/util/log.cpp": "#include <executorch/lib/util/log.h>\nvoid log_line(const char*) {}\n",
        "app/BUCK": f'cxx_library(\n    name = "twice",\n    srcs = ["twice.cpp"],\n    deps = [\n{deps}    ],\n)\n',
        "app/twice.cpp": source,
    }


CHECK = Check(
    id="dep-unused",
    share=Share.WORKER,
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.INFO,
    title="Buck dep whose headers the target never includes",
    fixable=True,
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head=_package('        "//lib/util:util",\n        "//lib/util:log",  # expect: dep-unused\n'),
            fixed={
                "app/BUCK": 'cxx_library(\n    name = "twice",\n    srcs = ["twice.cpp"],\n    deps = [\n'
                '        "//lib/util:util",\n    ],\n)\n'
            },
        ),
    ),
    good=(
        Example(head=_package('        "//lib/util:util",\n')),
        # Used under an #if: some configuration needs it.
        Example(
            head=_package(
                '        "//lib/util:util",\n        "//lib/util:log",\n',
                _USER + "#ifdef VERBOSE\n#include <executorch/lib/util/log.h>\n#endif\n",
            )
        ),
        # Force-linked for its registrations; passing a flag on: needed without an include.
        Example(
            head=_package('        "//lib/util:util",\n        "//lib/util:log",\n', log_extra=", link_whole = True")
        ),
        Example(
            head=_package(
                '        "//lib/util:util",\n        "//lib/util:log",\n',
                log_extra=', exported_preprocessor_flags = ["-DET_LOG_ENABLED=1"]',
            )
        ),
        # Seen through a re-export: `:log` re-exports `:util`, whose header the target includes.
        Example(
            head={
                **_package('        "//lib/util:log",\n', log_extra=', exported_deps = [":util"]'),
                "lib/util/log.h": "#pragma once\n#include <executorch/lib/util/util.h>\n" + _LOG,
            }
        ),
    ),
)
