"""A Buck target re-exports a dep that only its private files use.

A dep in `exported_deps` is part of the target's interface: every dependent gets its headers
on the include path and its flags, and is rebuilt when it changes. Depend-on-what-you-use (for
Bazel: a public dep used only by private code should be an `implementation_deps` entry) asks
that a dep be exported only when an exported header includes one of its headers. When only
the sources and private headers do, the export widens every dependent's build for nothing, and
lets dependents include the dep's headers without declaring it.

Reported, in every cell that defines the target, for a dep written in the target's own
`exported_deps` list whose headers (or those of a target it re-exports) the target's private
files include and its exported headers do not (nor the unlisted repository headers those pull
in), when no dependent of the target includes one of those headers (it may be counting on the
export) and the dep is one a usage test can judge (`bot/facts/dep_usage.py`: not
force-linked, passing no flags on, a C++ library with headers). Info.

In a review only the targets the change touches are judged (their call, a macro on their stack,
one of their own files); `pr-check scan` judges every target.

Example (bad): `exported_deps = [":log"]` while only `util.cpp` includes `log.h`.

Use instead: move it to `deps`.
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
from checks.support.callsite import call_of


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    model = snap.head
    dependents = {view.cell: dep_usage.dependents(view) for view in (dep_usage.cell_view(model, c) for c in CELLS)}
    for _label, defined in sorted(dep_usage.judged_targets(model, snap.changes.paths or None).items()):
        verdicts: dict[str, list[bool]] = {}
        first: dict[str, tuple[CellView, BuckTarget, WrittenDep]] = {}
        for view, target in defined:
            written = dep_usage.written_deps(model, target, ("exported_deps",))
            if not written:
                continue
            files = dep_usage.usage(model, target)
            if not files.complete:
                continue  # files of a submodule: what they include is unknown
            for dep in written:
                names = view.names_of(view.closure(dep.label))
                private_only = (
                    view.judgeable(model, dep.label, files)
                    and bool(names & files.private)
                    and not names & files.public
                    and not dep_usage.dependent_includes(
                        model, view, dependents[view.cell].get(target.label, ()), names
                    )
                )
                verdicts.setdefault(dep.label, []).append(private_only)
                first.setdefault(dep.label, (view, target, dep))
        for dep_label, private_only in sorted(verdicts.items()):
            if all(private_only):
                view, target, dep = first[dep_label]
                yield _hit(snap, view, target, dep)


def _hit(snap: Snapshot, view: CellView, target: BuckTarget, dep: WrittenDep) -> Hit:
    return Hit(
        path=target.path,
        line=dep.element.span.line,
        message=(
            f"`{target.primary_label}` re-exports `{dep.label}` (`exported_deps`), but only its sources and private "
            f"headers include that dep's headers; no exported header does, and no dependent includes them. Move it "
            "to `deps`: dependents need not build against it."
        ),
        key=f"{target.primary_label}|{dep.label}",
        target=target.primary_label,
        cell=view.cell,
        offending_text=dep.element.string or dep.label,
        evidence=(
            Evidence(target.path, dep.element.span.line, f"`{dep.label}` is listed in `exported_deps`"),
            Evidence(view.targets[dep.label].path, view.targets[dep.label].line, f"`{dep.label}` is defined here"),
        ),
        fix=_move_to_deps(snap, target, dep),
    )


def _move_to_deps(snap: Snapshot, target: BuckTarget, dep: WrittenDep) -> Fix | None:
    text = snap.head.text(target.path) or ""
    literal = dep.keyword.value_list
    if literal is None or len(literal.elements) < 2 or dep.element.string is None:
        return None  # the keyword would be left empty: for the author to remove with it
    removed = edits.remove_list_element(text, literal, dep.index)
    call = call_of(removed, target)
    if call is None:
        return None
    deps = call.keyword("deps")
    if deps is None:
        fixed = edits.insert_keyword(
            removed, call, "deps", f"[{edits.string_literal(removed, dep.element.string)}]", after="exported_deps"
        )
    elif deps.value_list is not None:
        fixed = edits.add_list_element(removed, deps.value_list, dep.element.string)
    else:
        return None
    return fix_between(target.path, text, fixed, f"move `{dep.label}` to deps")


_LOG_H = "#pragma once\nvoid log_line(const char* text);\n"


def _tree(util_cpp_includes_log: bool = True, header_includes_log: bool = False, user: str = "") -> dict[str, str]:
    return {
        "lib/BUCK": (
            'cxx_library(name = "log", srcs = ["log.cpp"], exported_headers = ["log.h"])\n'
            "cxx_library(\n"
            '    name = "util",\n'
            '    srcs = ["util.cpp"],\n'
            '    exported_headers = ["util.h"],\n'
            '    deps = [":other"],\n'
            "    exported_deps = [\n"
            '        ":base",\n'
            '        ":log",{marker}\n'
            "    ],\n"
            ")\n"
            'cxx_library(name = "other", srcs = ["other.cpp"], exported_headers = ["other.h"])\n'
            'cxx_library(name = "base", exported_headers = ["base.h"])\n'
            'cxx_library(name = "app", srcs = ["app.cpp"], deps = [":util"])\n'
        ),
        "lib/log.h": _LOG_H,
        "lib/log.cpp": "#include <executorch/lib/log.h>\nvoid log_line(const char*) {}\n",
        "lib/base.h": "#pragma once\nusing Index = long;\n",
        "lib/other.h": "#pragma once\nint other();\n",
        "lib/other.cpp": "#include <executorch/lib/other.h>\nint other() { return 1; }\n",
        "lib/util.h": "#pragma once\n#include <executorch/lib/base.h>\n"
        + ("#include <executorch/lib/log.h>\n" if header_includes_log else "")
        + "Index add(Index a, Index b);\n",
        "lib/util.cpp": "#include <executorch/lib/util.h>\n#include <executorch/lib/other.h>\n"
        + ("#include <executorch/lib/log.h>\n" if util_cpp_includes_log else "")
        + "Index add(Index a, Index b) { return a + b + other(); }\n",
        "lib/app.cpp": "#include <executorch/lib/util.h>\n" + user + "int main() { return add(1, 2); }\n",
    }


def _written(tree: dict[str, str], marker: str = "") -> dict[str, str]:
    return {**tree, "lib/BUCK": tree["lib/BUCK"].replace("{marker}", marker)}


CHECK = Check(
    id="dep-exported-used-privately",
    share=Share.WORKER,
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.INFO,
    title="Buck exported dep that only the target's private files use",
    fixable=True,
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head=_written(_tree(), "  # expect: dep-exported-used-privately"),
            fixed={
                "lib/BUCK": _written(_tree())["lib/BUCK"]
                .replace('        ":log",\n', "")
                .replace('deps = [":other"]', 'deps = [":log", ":other"]')
            },
        ),
    ),
    good=(
        # An exported header includes it: the export is the interface.
        Example(head=_written(_tree(header_includes_log=True))),
        # A dependent includes its header, counting on the export.
        Example(head=_written(_tree(user="#include <executorch/lib/log.h>\n"))),
    ),
)
