"""An exported header includes a header its target gets only through a private dependency.

Buck gives a dependent the exported headers of its deps and, through them, of their
`exported_deps`; a target's private `deps` stay private. When target T exports `a.h` and
`a.h` includes `b.h`, owned by U, T itself compiles (U is among its deps), but every
dependent that includes `a.h` must find `b.h` too, and it does only if U is in T's
`exported_deps` closure. Otherwise each dependent breaks, or builds only while it happens to
depend on U for another reason. The real tree repaired such a case in 397b8df215:
`stack_util.h` is exported and includes `kernel_includes.h`, which `stack_util` got only
through `deps` (introduced by 19d22ab8de).

Only unconditional includes (or ones the target's own flags make active) are considered; an
include whose owner T does not reach at all is `dep-undeclared-header`'s, not this rule's.

Minor: the rule does not yet look for a dependent that includes the header without reaching the
owner another way, which is when the build breaks; most such headers build while every dependent
also depends on the owner (#24817 rebuilt on the Aug 2026 tree shows several).

Example (bad): `exported_headers = ["stack_util.h"]`, `deps = [":kernel_includes"]`, and
`stack_util.h` includes `<executorch/runtime/kernel/kernel_includes.h>`.

Use instead: move the dep to `exported_deps`.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import xref
from bot.facts.header_deps import include_is_active
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.dep_undeclared_header import _cell_state
from checks.support.callsite import attribute_line, item_line

# Rules whose outputs are loaded or run, never linked or compiled against by another C++ target.
_LEAF_KINDS = frozenset({"cxx_python_extension", "python_extension", "cxx_binary", "cxx_test"})


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from snap.head.memo(("dep-private-for-exported-header",), lambda: _hits(snap.head), persist=True)


def _hits(model: BuildModel) -> tuple[Hit, ...]:
    found: dict[str, Hit] = {}
    for cell in CELLS:
        state = _cell_state(model, cell)
        for label, target in sorted(state.targets.items()):
            if label not in state.files_of:
                continue  # not a C++ target
            if target.kind in _LEAF_KINDS:
                continue  # nothing compiles against a Python extension or a binary: no dependent sees its headers
            exported = state.index.exported_closure(label)
            for _name, header in xref.header_entries(target, "exported_headers"):
                facts = model.source_facts(header)
                if facts is None:
                    continue
                for include in facts.includes:
                    owners = state.owner_labels.get(include.target_text)
                    if not owners or label in owners or not include.target_text.startswith("executorch/"):
                        continue
                    if any(owner in exported for owner in owners):
                        continue
                    if not state.index.reaches(label, owners):
                        continue  # not reached at all: dep-undeclared-header says so
                    via = [
                        dep
                        for dep in state.index.deps_of(label)
                        if dep in owners or any(o in state.index.exported_closure(dep) for o in owners)
                    ]
                    if not via or (
                        include.conditions
                        and not include_is_active(
                            include, facts, state.index.defines(label, state.index.visible(label))
                        )
                    ):
                        continue
                    key = f"{target.primary_label}:{header}<-{include.target_text}"
                    if key not in found:
                        dep = via[0]
                        closure = state.index.exported_closure(dep)
                        owner = dep if dep in owners else next(o for o in owners if o in closure)
                        found[key] = _hit(model, cell, target, header, include, owner, dep)
    return tuple(found[key] for key in sorted(found))


def _hit(model: BuildModel, cell, target, header: str, include, owner: str, via: str) -> Hit:
    text = model.text(target.path) or ""
    deps_line = item_line(text, target, via) or attribute_line(text, target, "deps") or target.line
    return Hit(
        path=header,
        line=include.line,
        message=(
            f"`{header}` is exported by `{target.primary_label}` and includes `{include.target_text}`, owned by "
            f"`{owner}`, which `{target.primary_label}` gets only through its private dep `{via}`. Every dependent "
            f"that includes `{header.rsplit('/', 1)[-1]}` needs that header too and does not get it. "
            f"Move `{via}` to `exported_deps`."
        ),
        key=f"{target.primary_label}<-{include.target_text}",
        target=target.primary_label,
        cell=cell,
        offending_text=include.target_text,
        evidence=(Evidence(target.path, deps_line, f"`{via}` is a private dep of `{target.primary_label}`"),),
    )


_KERNEL = {
    "runtime/kernel/BUCK": (
        'cxx_library(name = "kernel_includes", exported_headers = ["kernel_includes.h"], visibility = ["PUBLIC"])\n'
    ),
    "runtime/kernel/kernel_includes.h": "int k();\n",
}

CHECK = Check(
    id="dep-private-for-exported-header",
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MINOR,
    title="Exported header includes through a private dep",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                **_KERNEL,
                "util/BUCK": (
                    'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], exported_headers = ["stack_util.h"],\n'
                    '    deps = ["//runtime/kernel:kernel_includes"])\n'
                ),
                "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
                "util/stack_util.h": "#include <executorch/runtime/kernel/kernel_includes.h>  // expect: dep-private-for-exported-header\n",
            }
        ),
    ),
    good=(
        Example(
            head={
                **_KERNEL,
                "util/BUCK": (
                    'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], exported_headers = ["stack_util.h"],\n'
                    '    exported_deps = ["//runtime/kernel:kernel_includes"])\n'
                ),
                "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
                "util/stack_util.h": "#include <executorch/runtime/kernel/kernel_includes.h>\n",
            }
        ),
        # The private header may include through a private dep.
        Example(
            head={
                **_KERNEL,
                "util/BUCK": (
                    'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], headers = ["impl.h"],\n'
                    '    deps = ["//runtime/kernel:kernel_includes"])\n'
                ),
                "util/stack_util.cpp": "#include <executorch/util/impl.h>\n",
                "util/impl.h": "#include <executorch/runtime/kernel/kernel_includes.h>\n",
            }
        ),
    ),
)
