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

Each fact is one of a configuration: where a `select()` chooses T's deps (`deps = select({
"ovr_config//cuda:has_cuda": [...], "DEFAULT": []})`), the exported closure, the private deps,
the exported headers and the flags are taken per platform the cell builds for. A finding that
holds on only some of the platforms T builds on names them (an owner exported with CUDA and
private without it breaks dependents on xplat's CPU-only platforms); one that holds on all of
them reads as before.

Like is compared with like: in a cell whose plain `headers` are seen by dependents (fbcode), a
plain header is as exported as one in `exported_headers`, at base and at head, so moving a header
from one list to the other there changes nothing and is not reported (#24817: "fbcode already
exports both"). And the gap is reported only where it breaks something: a dependent of the target
(named in the finding) includes the header, where that include is compiled for it, and does not
reach the owner another way. Where every dependent that includes it reaches the owner through
another dep (19d22ab8de: `op_stack` has `kernel_includes` of its own), the gap is latent and
reported at info; where no dependent includes it, it is not reported. Minor: the dependent's compile fails, but only the
dependent's, and its fix is one line of the target's deps.

Confirmed before posting: with the compiled tier on, the dependents' sources that include the
header are compiled as the cell gives them; a gap the compiler confirms carries its own line, the
configuration and the build that fails, and one where every such compile finds the header is not
posted (no configuration fails, so nothing is called a compile failure).

Example (bad): `exported_headers = ["stack_util.h"]`, `deps = [":kernel_includes"]`, and
`stack_util.h` includes `<executorch/runtime/kernel/kernel_includes.h>`.

Use instead: move the dep to `exported_deps`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from bot.buck.cells import CELLS, cell_named
from bot.buck.targets import BuckTarget, Platform
from bot.check import BUCK_FILES, CPP_FILES, Check, Example, Share
from bot.cpp.declarations import SourceFacts
from bot.cpp.preprocessor import Include
from bot.facts import verdicts, xref
from bot.facts.header_deps import DependencyIndex, include_is_active
from bot.facts.header_graph import HeaderGraph, header_graph
from bot.model import Evidence, Hit, ReviewMode, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line, item_line
from checks.support.compiler_confirmation import confirmed, new_hits

# Rules whose outputs are loaded or run, never linked or compiled against by another C++ target.
_LEAF_KINDS = frozenset({"cxx_python_extension", "python_extension", "cxx_binary", "cxx_test"})


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    hits = verdicts.whole_tree(snap.head, "dep-private-for-exported-header", lambda: _hits(snap.head))
    if snap.mode is ReviewMode.BASELINE:
        yield from hits
        return
    base = (
        ()
        if snap.is_scan
        else verdicts.whole_tree(snap.base, "dep-private-for-exported-header", lambda: _hits(snap.base))
    )
    new, old = new_hits(snap, hits, base)
    yield from old
    # A dependent that breaks is predicted: the compiler is asked (refuted: not posted). A latent
    # gap (info: every includer reaches the owner another way) predicts no failure today.
    yield from (hit for hit in new if hit.at_most is Severity.INFO)
    yield from confirmed(snap.head, [hit for hit in new if hit.at_most is not Severity.INFO], own=False)


def _hits(model: BuildModel) -> tuple[Hit, ...]:
    """Hits of one revision: per target, header and include, the first cell's that has it."""
    found: dict[str, Hit] = {}
    for cell in CELLS:
        for key, hit in cell_hits(model, cell).items():
            found.setdefault(key, hit)
    return tuple(found[key] for key in sorted(found))


def cell_hits(model: BuildModel, cell: str) -> dict[str, Hit]:
    """The cell's hits by target, header and include: on the platforms where each holds, or, where
    it holds on every platform the target builds on (or deps do not vary), as in any configuration."""
    found: dict[str, Hit] = {}
    graph = header_graph(model, cell)
    for label, target in sorted(graph.targets.items()):
        if label not in graph.files_of:
            continue  # not a C++ target
        if target.kind in _LEAF_KINDS:
            continue  # nothing compiles against a Python extension or a binary: no dependent sees its headers
        views = graph.index.views_of(label)
        visible_lists = (
            ("exported_headers", "headers") if cell_named(cell).headers_visible_to_dependents else ("exported_headers",)
        )
        exported_on = {
            view.platform.name: {
                path
                for attribute in visible_lists
                for _name, path in xref.header_entries(target, attribute, view.platform)
            }
            for view in views or ()
        }
        headers = dict.fromkeys(
            path for attribute in visible_lists for _n, path in xref.header_entries(target, attribute)
        )
        for header in headers:
            facts = model.source_facts(header)
            if facts is None:
                continue
            for include in facts.includes:
                key = f"{target.primary_label}:{header}<-{include.target_text}"
                owners = graph.owner_labels.get(include.target_text)
                if key in found or not owners or label in owners or not include.target_text.startswith("executorch/"):
                    continue
                # Reported only where it breaks: a dependent includes the header without reaching the owner.
                if views is None:  # what the target sees is the same on every platform
                    route = _private_route(graph.index, label, owners, include, facts)
                    broken = _broken_dependent(model, graph, graph.index, label, header, owners) if route else None
                    if route is not None and broken is not None:
                        found[key] = _hit(model, cell, target, header, include, *route, broken=broken)
                    continue
                holding = [
                    (view.platform.name, route, broken)
                    for view in views
                    if header in exported_on[view.platform.name]
                    for route in [_private_route(view.index, label, owners, include, facts, view.platform)]
                    if route is not None
                    for broken in [_broken_dependent(model, graph, view.index, label, header, owners, view.platform)]
                    if broken is not None
                ]
                if holding:
                    # Holding on every platform the target builds on, it is the finding of any configuration.
                    platforms = () if len(holding) == len(views) else tuple(name for name, _r, _b in holding)
                    _name, route, broken = holding[0]
                    found[key] = _hit(model, cell, target, header, include, *route, platforms, broken=broken)
    return found


def _broken_dependent(
    model: BuildModel,
    graph: HeaderGraph,
    index: DependencyIndex,
    label: str,
    header: str,
    owners: tuple[str, ...],
    platform: Platform | None = None,
) -> Includer | None:
    """The dependent of `label` (in this configuration) whose own file includes `header` where the
    include is active for it: the first that does not reach any of `owners` itself (it breaks),
    else the first that does (it builds only through its other deps); None when none includes it."""
    texts = {header, f"executorch/{header}"}
    own = set(graph.files_of.get(label, ()))
    latent: Includer | None = None
    for dependent in graph.dependents.get(label, ()):
        if label not in index.deps_of(dependent):
            continue  # not a dependent here: a select() drops the dep
        breaks = not index.reaches(dependent, owners)
        if not breaks and latent is not None:
            continue
        for path in graph.files_of.get(dependent, ()):
            facts = model.source_facts(path) if path not in own else None
            if facts is None:
                continue
            for include in facts.includes:
                if include.target_text not in texts:
                    continue
                if include.conditions:
                    defines = index.defines(dependent, index.visible(dependent), platform)
                    if not include_is_active(include, facts, defines):
                        continue  # `#ifdef CUDA_AVAILABLE` where the dependent does not define it
                if breaks:
                    return Includer(dependent, path, include.line, True)
                latent = latent or Includer(dependent, path, include.line, False)
    return latent


@dataclass(frozen=True, slots=True)
class Includer:
    """A dependent whose own file includes the exported header, and whether it reaches the owner."""

    label: str
    path: str
    line: int
    breaks: bool  # it does not reach the owner itself: its compile fails


def _private_route(
    index: DependencyIndex,
    label: str,
    owners: tuple[str, ...],
    include: Include,
    facts: SourceFacts,
    platform: Platform | None = None,
) -> tuple[str, str] | None:
    """(owner, private dep) by which `label` sees an owner of the include without passing it on
    to its dependents, where the include is active for it; None where it exports an owner, sees
    none (dep-undeclared-header says so) or the include is inactive there."""
    exported = index.exported_closure(label)
    if any(owner in exported for owner in owners):
        return None
    route = None
    for dep in index.deps_of(label):
        closure = index.exported_closure(dep)
        owner = dep if dep in owners else next((o for o in owners if o in closure), None)
        if owner is not None:
            route = (owner, dep)
            break
    if route is None:
        return None
    if include.conditions:
        defines = index.defines(label, index.visible(label), platform)
        if not include_is_active(include, facts, defines):
            return None
    return route


def _hit(
    model: BuildModel,
    cell: str,
    target: BuckTarget,
    header: str,
    include: Include,
    owner: str,
    via: str,
    platforms: tuple[str, ...] = (),
    *,
    broken: Includer,
) -> Hit:
    """The finding; `platforms` names where it holds when that is not every platform the target builds on."""
    text = model.text(target.path) or ""
    deps_line = item_line(text, target, via) or attribute_line(text, target, "deps") or target.line
    name = header.rsplit("/", 1)[-1]
    if platforms:
        named = ", ".join(f"`{platform}`" for platform in platforms)
        message = (
            f"`{header}` is exported by `{target.primary_label}` and includes `{include.target_text}`, owned by "
            f"`{owner}`, which on {named} (in `{cell}`) `{target.primary_label}` gets only through its private dep "
            f"`{via}`: a `select()` chooses its deps there. {_consequence(broken, name, owner)} Move `{via}` to "
            "`exported_deps` in the branch taken there."
        )
    else:
        message = (
            f"`{header}` is exported by `{target.primary_label}` and includes `{include.target_text}`, owned by "
            f"`{owner}`, which `{target.primary_label}` gets only through its private dep `{via}`. "
            f"{_consequence(broken, name, owner)} Move `{via}` to `exported_deps`."
        )
    where = f" on {', '.join(f'`{platform}`' for platform in platforms)}" if platforms else ""
    return Hit(
        path=header,
        line=include.line,
        message=message,
        key=f"{target.primary_label}<-{include.target_text}" + (f"|{platforms[0]}" if platforms else ""),
        target=target.primary_label,
        cell=cell,
        offending_text=include.target_text,
        evidence=(
            Evidence(target.path, deps_line, f"`{via}` is a private dep of `{target.primary_label}`{where}"),
            Evidence(broken.path, broken.line, f"`{broken.label}` includes `{name}` here"),
        ),
        # No dependent breaks yet: every includer reaches the owner through another dep. Latent, so info.
        at_most=None if broken.breaks else Severity.INFO,
    )


def _consequence(includer: Includer, name: str, owner: str) -> str:
    if includer.breaks:
        return f"`{includer.label}` includes `{name}` and does not reach `{owner}` itself, so it fails to compile."
    return (
        f"`{includer.label}` includes `{name}` and builds only because it reaches `{owner}` through another dep; "
        "the next dependent that includes it without one fails to compile (latent: reported as info)."
    )


_KERNEL = {
    "runtime/kernel/BUCK": (
        'cxx_library(name = "kernel_includes", exported_headers = ["kernel_includes.h"], visibility = ["PUBLIC"])\n'
    ),
    "runtime/kernel/kernel_includes.h": "int k();\n",
    # A dependent of stack_util that includes its exported header and has no dep on the owner.
    "app/BUCK": 'cxx_library(name = "app", srcs = ["app.cpp"], deps = ["//util:stack_util"])\n',
    "app/app.cpp": "#include <executorch/util/stack_util.h>\n",
}


def _stack_util(deps: str, marker: str = "", flags: str = "", condition: str = "") -> dict[str, str]:
    """stack_util (397b8df215) with its dependency attributes as given; the include under `#if condition`."""
    include = f"#include <executorch/runtime/kernel/kernel_includes.h>{marker}\n"
    return {
        **_KERNEL,
        "util/BUCK": (
            'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], exported_headers = ["stack_util.h"],\n'
            f"{deps}{flags})\n"
        ),
        "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
        "util/stack_util.h": f"#if {condition}\n{include}#endif\n" if condition else include,
    }


_CPU_PRIVATE = (
    '    deps = select({"ovr_config//cuda:has_cuda": [], "DEFAULT": ["//runtime/kernel:kernel_includes"]}),\n'
    '    exported_deps = select({"ovr_config//cuda:has_cuda": ["//runtime/kernel:kernel_includes"], "DEFAULT": []}),\n'
)
_CUDA_PRIVATE = (
    '    deps = select({"ovr_config//cuda:has_cuda": ["//runtime/kernel:kernel_includes"], "DEFAULT": []}),\n'
    '    exported_deps = select({"ovr_config//cuda:has_cuda": [], "DEFAULT": ["//runtime/kernel:kernel_includes"]}),\n'
)

CHECK = Check(
    id="dep-private-for-exported-header",
    share=Share.WORKER,
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
        # Exported only where CUDA is: on the CPU-only platforms the dep is private (xplat's three).
        Example(head=_stack_util(_CPU_PRIVATE, "  // expect: dep-private-for-exported-header")),
        # Private only where CUDA is: fbcode, always CUDA, has the gap on every platform it builds.
        Example(head=_stack_util(_CUDA_PRIVATE, "  // expect: dep-private-for-exported-header")),
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
        # Private on the CPU-only platforms, but the include is compiled only with CUDA, where the dep is exported.
        Example(
            head=_stack_util(
                _CPU_PRIVATE,
                flags='    exported_preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DET_USE_CUDA"], "DEFAULT": []}),\n',
                condition="defined(ET_USE_CUDA)",
            )
        ),
        # No dependent includes the header: nothing can break.
        Example(
            head={
                **_stack_util('    deps = ["//runtime/kernel:kernel_includes"],\n'),
                "app/app.cpp": "int main() { return 0; }\n",
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
