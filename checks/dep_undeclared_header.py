"""A target includes a header whose owning target is not among its dependencies.

Buck puts on a target's include path the exported headers of its `deps` and `exported_deps`,
and, through each of those, of their `exported_deps` transitively; nothing else. An include
of a header owned by a target outside that closure compiles only while some other path
happens to bring the header in (a sibling's dependency, a dependent that declares it), and
breaks when that path goes away: a build of the target on its own, a new consumer, a
refactor elsewhere. For a header, every dependent inherits the gap.

A target without sources compiles nothing itself: its headers are compiled in its dependents,
with their include paths. Its gap is raised only where a compiling dependent (reached directly
or through source-less dependents that export it) lacks the owner too, and names that
dependent; where every one of them has it, the header builds (irunner.h including
runtime/core/error.h, used only by runners that depend on runtime/core). A bundle's private
deps pass nothing on: a target that reaches a header only through `deps` of a dependency
(`all_deps` listing its members as `deps`, before 4014cc613d exported them) has the gap.

What counts: the sources and headers of a C++ target, those given as labels of an
`export_file` included (`//executorch/extension/pybindings:pybindings.cpp`), and the repository
headers no target owns that they pull in, with the target's preprocessor flags applied, including the flags a
macro adds (`use_cuda = True` adding `-DEXECUTORCH_PYBINDINGS_CUDA`): an include under an `#if`
is considered only when the target's flags make the condition provably true. Targets whose
closure runs through a label the cell does not define are skipped, as are headers no target
owns (system and third-party headers). The internal cells fold in the dependencies
ExecuTorch's wrapper adds, as seen where it is evaluated (OSS), and skip targets made by
macros the repository does not contain. Every cell is held to the same rule, fbcode too: a
header reached only through a chain of private deps builds there today by accident (the seed
review of #24643: "builds only because cuda_backend re-exports it through slimtensor ->
storage"), and the real tree fixed such gaps later (cfd51c25b9, fixed by 12d7518d3a).

Example (bad): with `use_cuda = True`, `pybindings_cuda.h` includes
`<executorch/extension/cuda/cuda_allocator.h>`, but the macro adds only `:caller_stream`,
which does not export `:cuda_allocator`.

Deps are a fact of a configuration: an owner the target sees only through a dep a `select()`
leaves out on some platform of the cell (`select({"ovr_config//cuda:has_cuda": [":guard"],
"DEFAULT": []})`) is a gap on that platform, named in the finding, where the target builds
and compiles the including file (a source under the same `select()` is not built there).

A header-only target that gains a source is blamed for the old gaps of its headers: they are
compiled in the target itself from then on (ca39d86f4f, fixed by 48e866b90e).

Use instead: add the owning target (`//executorch/extension/cuda:cuda_allocator`) to the
deps the macro or the target declares (to `exported_deps` when a public header includes it).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from bot.buck import edits
from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, Platform
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import revision, xref
from bot.facts.header_deps import CXX_KINDS, include_is_active, recorded_as_written
from bot.facts.header_graph import HeaderGraph, header_graph, target_files
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from bot.store.memo import current
from bot.tree import missing_reads
from checks.support.callsite import attribute_line, call_of, item_line

_FOLLOW_DEPTH = 4  # own and unowned headers followed this deep for their includes
_CONDITIONAL = re.compile(r"^\s*#\s*if", re.M)


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    hits = revision.tree_memo(snap.head, ("dep-undeclared-header",), lambda: _undeclared(snap.head), persist=True)
    activated = _activated(snap) if snap.base is not snap.head else {}
    for hit in hits:
        sources = activated.get(hit.target or "")
        if sources and hit.path not in sources:
            yield _blamed_on_activation(hit, sources)
        else:
            yield hit


def _activated(snap: Snapshot) -> dict[str, tuple[str, ...]]:
    """Header-only C++ targets at base that compile sources at head: label -> the new sources.

    A header of a header-only target is compiled only by its dependents, which may bring in
    what it includes; once the target has a source of its own, the header's includes must
    resolve through the target's own deps. A gap there that existed at base is new at head:
    the change made it take effect (binary_ops gaining binary_ops.cpp, ca39d86f4f).
    """
    found: dict[str, tuple[str, ...]] = {}
    for cell in CELLS:
        before = snap.base.cell(cell).targets
        for label, target in snap.head.cell(cell).targets.items():
            if label in found or not CXX_KINDS.search(target.kind):
                continue
            earlier = before.get(label)
            sources = xref.source_paths(target)
            if earlier is not None and sources and not xref.source_paths(earlier):
                found[target.primary_label] = sources
    return found


def _blamed_on_activation(hit: Hit, sources: tuple[str, ...]) -> Hit:
    """The gap, named as this change's doing: the target now compiles the header itself."""
    named = ", ".join(f"`{path}`" for path in sources[:3])
    return dataclasses.replace(
        hit,
        key=f"{hit.key}|activated",
        message=(
            f"{hit.message} The gap predates this change, but `{hit.target}` was header-only and now "
            f"compiles {named}, so `{hit.path}` is built with the target's own deps: this change makes it "
            "a build error."
        ),
    )


@dataclass(frozen=True, slots=True)
class _Gap:
    """One include of a header owned outside the including target's closure, in one cell."""

    cell: str
    target: BuckTarget
    path: str
    line: int
    include: str
    owner: BuckTarget
    owner_attribute: str
    conditions: tuple[str, ...]
    chain: tuple[tuple[str, int, str], ...]  # (path, line, include) from the target's own file
    # For a header-only target: the compiling dependent that lacks the owner (None otherwise).
    dependent: BuckTarget | None = None
    platform: str = ""  # the platform it breaks on, where another configuration has the owner


def _undeclared(model: BuildModel) -> tuple[Hit, ...]:
    """Hits of one revision."""
    gaps: dict[tuple[str, str, str], list[_Gap]] = {}
    for cell in CELLS:
        for gap in _gaps_in_cell(model, cell):
            gaps.setdefault((gap.target.primary_label, gap.path, gap.include), []).append(gap)
    return tuple(_hit(model, found) for _key, found in sorted(gaps.items()))


def _gaps_in_cell(model: BuildModel, cell: str) -> list[_Gap]:
    """The cell's gaps. Per target, the answer is kept with the blob of every file it read
    (a table per cell state, in the fact cache): a target none of whose files changed costs a
    lookup, in this review's other revision and in later reviews."""
    state = header_graph(model, cell)
    owners = revision.header_owners(model, cell)
    tree = model.tree
    facts = current()
    table = facts.load("dep-undeclared-header:gaps", state.key) or {}
    updated = dict(table)
    changed = False
    missing_before = missing_reads()
    includes: dict[str, tuple[tuple[str, int], ...]] | None = None
    found: list[_Gap] = []
    for label, files in sorted(state.files_of.items()):
        kept = table.get(label)
        if kept is not None and all(tree.blob_id(path) == blob for path, blob in kept[0]):
            gaps = kept[1]
        else:
            if includes is None:  # read only when some target needs it
                every = {path for listed in state.files_of.values() for path in listed}
                includes = revision.includes(model, every)
            read: set[str] = set()
            gaps = _target_gaps(
                model, state.index, state.targets[label], files, includes, owners, state.owner_labels, cell, read
            )
            if gaps and cell != "oss":
                read.add(state.targets[label].path)  # recorded_as_written reads the build file
            updated[label] = (tuple((path, tree.blob_id(path)) for path in sorted(read)), gaps)
            changed = True
        if gaps and cell != "oss" and not recorded_as_written(state.targets[label], model.text):
            continue
        if gaps and label not in state.compiling:
            gaps = _gaps_of_dependents(model, state, label, gaps, cell)
        elif gaps:
            # An exported header none of the target's own sources include is compiled only by
            # dependents that include it, as a header-only target's (6e63c47354: Cadence's
            # quantize_per_tensor exports quantized_ops.h, which its .cpp never includes).
            compiled = _compiled_by_sources(model, state.targets[label])
            own = [gap for gap in gaps if (gap.chain[0][0] if gap.chain else gap.path) in compiled]
            passed_on = [gap for gap in gaps if gap not in own]
            gaps = own + (_gaps_of_dependents(model, state, label, passed_on, cell) if passed_on else [])
        found.extend(gaps)
    if changed:
        facts.save("dep-undeclared-header:gaps", state.key, updated, complete=missing_reads() == missing_before)
    return found


def _compiled_by_sources(model: BuildModel, target: BuckTarget) -> frozenset[str]:
    """The repository files a target's own sources compile: the sources and what they include,
    transitively (to the rule's walking depth)."""
    reached = {*xref.source_paths(target), *xref.label_source_paths(target, model.cell(target.cell))}
    frontier = sorted(reached)
    for _depth in range(_FOLLOW_DEPTH):
        listed = revision.includes(model, frontier)
        following = []
        for path in frontier:
            for include, _line in listed.get(path, ()):
                candidate = _repo_candidate(path, include)
                if candidate not in reached and not candidate.startswith("..") and model.tree.exists(candidate):
                    reached.add(candidate)
                    following.append(candidate)
        frontier = following
        if not frontier:
            break
    return frozenset(reached)


def _gaps_of_dependents(model: BuildModel, state: HeaderGraph, label: str, gaps: list[_Gap], cell: str) -> list[_Gap]:
    """The gaps of a header-only target that some build hits.

    A target without sources compiles nothing: its headers are compiled by its dependents,
    with their include path. An include it does not declare breaks only a compiling dependent
    that lacks the owner in its own closure; where every one of them has it, the header builds
    (irunner.h including runtime/core/error.h, used only by runners that depend on
    runtime/core). Dependents without sources that export the target pass the header on to
    theirs (a private dep of a bundle such as `all_deps` reaches no further). Each gap kept
    names the first dependent (by label) that lacks the owner; one that gains sources is
    blamed by `_activated`.
    """
    kept = []
    for gap in gaps:
        dependent = _dependent_without(model, state, label, state.owner_labels[gap.include], cell)
        if dependent is not None:
            kept.append(dataclasses.replace(gap, dependent=dependent))
    return kept


def _dependent_without(model, state: HeaderGraph, label: str, owners: tuple[str, ...], cell: str) -> BuckTarget | None:
    """The first compiling dependent of `label` (through dependents without sources) that does
    not see any of `owners`; None when every one does, or none exists."""
    index = state.index
    seen = {label}
    frontier = [label]
    lacking = []
    while frontier:
        following = []
        for reached in frontier:
            for dependent in state.dependents.get(reached, ()):
                if dependent in seen or dependent not in state.targets:
                    continue
                seen.add(dependent)
                if dependent not in state.compiling:
                    # Its dependents see the header only if it passes the target on (exported).
                    if label in index.exported_closure(dependent):
                        following.append(dependent)
                    continue
                if index.reaches(dependent, owners):
                    continue
                target = state.targets[dependent]
                if index.dangling(index.visible(dependent)):
                    continue  # its closure runs through something this cell does not define
                if cell != "oss" and not recorded_as_written(target, model.text):
                    continue  # a macro the repository lacks may add the owner
                lacking.append(target)
        frontier = following
    return min(lacking, key=lambda t: t.label) if lacking else None


def _target_gaps(model, index, target, files, includes, owners, owner_labels, cell, read: set) -> list[_Gap]:
    """Walk a target's files, and the unowned repository headers they pull in, for gaps.
    Every file whose contents the answer depends on is added to `read`."""
    found: list[_Gap] = []
    frontier = [(path, ()) for path in files]
    seen = set(files)
    read.update(files)
    visible = defines = None
    files_on: dict[str, frozenset[str]] = {}  # platform name -> the target's files there
    for _depth in range(_FOLLOW_DEPTH):
        following = []
        for path, chain in frontier:
            listed = includes.get(path)
            if listed is None:
                listed = includes[path] = _includes(model, path)
            for include, line in listed:
                if not include.startswith("executorch/"):
                    continue  # vendored third-party namespaces (`c10/...`) also resolve outside the repo
                owning = owners.get(include)
                if owning is None:
                    repo_path = _repo_candidate(path, include)
                    read.add(repo_path)  # its absence counts too: a header added later changes the walk
                    if repo_path in seen or not _followable(model, owners, include, repo_path):
                        continue
                    seen.add(repo_path)
                    following.append((repo_path, (*chain, (path, line, include))))
                    continue
                if index.reaches(target.label, owner_labels[include]):
                    # In some configuration; a platform that lacks the owner (a dep under select()) may still break,
                    # where it compiles the file (a source under the same select() does not build there).
                    root = chain[0][0] if chain else path
                    for view in index.unreached_on(target.label, owner_labels[include]):
                        if root not in _files_on(model, target, view.platform, files_on):
                            continue
                        visible_there = view.index.visible(target.label)
                        if view.index.dangling(visible_there):
                            continue
                        there = view.index.defines(target.label, visible_there, view.platform)
                        gap = _confirmed_gap(model, target, path, line, include, chain, there, owning, cell)
                        if gap is not None:
                            found.append(dataclasses.replace(gap, platform=view.platform.name))
                            break
                    continue
                if visible is None:
                    visible = index.visible(target.label)
                if index.dangling(visible):
                    return []  # the closure runs through something this cell does not define
                if defines is None:
                    defines = index.defines(target.label, visible)
                gap = _confirmed_gap(model, target, path, line, include, chain, defines, owning, cell)
                if gap is not None:
                    found.append(gap)
        frontier = following
        if not frontier:
            break
    return found


def _files_on(model: BuildModel, target: BuckTarget, platform: Platform, known: dict[str, frozenset[str]]):
    """The target's sources and headers on `platform`, kept in `known`."""
    if platform.name not in known:
        known[platform.name] = frozenset(target_files(target, model.cell(target.cell), platform))
    return known[platform.name]


def _confirmed_gap(model, target, path, line, include, chain, defines, owning, cell) -> _Gap | None:
    """A gap when every include on the way is active under the target's defines."""
    conditions: list[str] = []
    for step_path, step_line, step_include in (*chain, (path, line, include)):
        if not _CONDITIONAL.search(model.text(step_path) or ""):
            continue  # no #if anywhere in the file: the include is unconditional
        facts = model.source_facts(step_path)
        if facts is None:
            return None
        entry = next((i for i in facts.includes if i.line == step_line and i.target_text == step_include), None)
        if entry is None or not include_is_active(entry, facts, defines):
            return None
        conditions.extend(entry.conditions)
    owner, attribute = _preferred_owner(owning)
    return _Gap(cell, target, path, line, include, owner, attribute, tuple(conditions), chain)


def _includes(model: BuildModel, path: str) -> tuple[tuple[str, int], ...]:
    return revision.includes(model, [path]).get(path, ())


def _repo_candidate(including: str, include: str) -> str:
    """The repository path an include names: `executorch/...` from the root, else relative."""
    if include.startswith("executorch/"):
        return include[len("executorch/") :]
    return posixpath.normpath(posixpath.join(posixpath.dirname(including), include))


def _followable(model: BuildModel, owners, include: str, candidate: str) -> bool:
    """Whether an include no target of the cell owns names a repository file to walk into."""
    if not include.startswith("executorch/") and f"executorch/{candidate}" in owners:
        return False  # another target's header, reached by a relative path: not followed
    return not candidate.startswith("..") and model.tree.exists(candidate)


def _preferred_owner(owning) -> tuple[BuckTarget, str]:
    """The owner to name: an exported owner, the primary (not `_static`) one, not an ATen variant."""
    return min(
        owning,
        key=lambda pair: (
            pair[1] != "exported_headers",
            pair[0].primary_label != pair[0].label,
            "_aten" in pair[0].name,
            pair[0].label,
        ),
    )


def _hit(model: BuildModel, gaps: list[_Gap]) -> Hit:
    gap = min(gaps, key=lambda g: CELLS.index(g.cell))
    cells = sorted({g.cell for g in gaps}, key=CELLS.index)
    target, owner = gap.target, gap.owner
    owner_label = owner.primary_label
    owner_text = model.text(owner.path) or ""
    header_name = gap.include.rsplit("/", 1)[-1]
    evidence = [
        Evidence(
            owner.path,
            item_line(owner_text, owner, _listed_name(owner, gap.include)) or owner.line,
            f"`{owner_label}` owns `{header_name}` (`{gap.owner_attribute}`)",
        ),
    ]
    for step_path, step_line, step_include in gap.chain:
        evidence.append(
            Evidence(step_path, step_line, f"`{target.primary_label}` reaches `{gap.path}` through `{step_include}`")
        )
    flag_origin = _flag_origin(model, target, gap.conditions)
    if flag_origin is not None:
        evidence.append(flag_origin)
    target_text = model.text(target.path) or ""
    deps_line = attribute_line(target_text, target, "deps") or target.line
    evidence.append(
        Evidence(target.path, deps_line, f"`{target.primary_label}` declares its deps here, without `{owner_label}`")
    )
    dependent = gap.dependent
    if dependent is not None:
        evidence.append(
            Evidence(
                dependent.path,
                attribute_line(model.text(dependent.path) or "", dependent, "deps") or dependent.line,
                f"`{dependent.primary_label}` compiles `{gap.path}` and does not see `{owner_label}` either",
            )
        )
    active = f" (active for it: `{' && '.join(gap.conditions)}`)" if gap.conditions else ""
    # A header-only target's headers compile in its dependents, which see only its exported deps.
    attribute = "exported_deps" if dependent is not None else "deps"
    compiled_by = (
        f" `{target.primary_label}` has no sources: its headers compile in its dependents, and "
        f"`{dependent.primary_label}` does not have `{owner_label}` either."
        if dependent is not None
        else " It compiles only while something else brings the header in."
    )
    if gap.platform:
        return _configured_hit(gap, target, owner_label, active, evidence)
    message = (
        f"`{target.primary_label}` includes `{gap.include}`{active}, owned by `{owner_label}`, which none of its "
        f"dependencies provides (not in its `deps` or, through them, their `exported_deps`; "
        f"in {', '.join(f'`{c}`' for c in cells)})."
        f"{compiled_by} Add `{owner_label}` to the {attribute}"
        + (" the macro adds with that flag." if flag_origin is not None else ".")
    )
    fix = None if gap.conditions else _add_dep_fix(target_text, target, owner_label, attribute)
    return Hit(
        path=gap.path,
        line=gap.line,
        message=message,
        key=f"{target.primary_label}<-{gap.include}",
        target=target.primary_label,
        cell=gap.cell,
        offending_text=gap.include,
        evidence=tuple(evidence),
        fix=fix,
    )


def _configured_hit(gap: _Gap, target: BuckTarget, owner_label: str, active: str, evidence: list) -> Hit:
    """A gap on one platform only: the owner comes through a dependency chosen by a select()."""
    message = (
        f"`{target.primary_label}` includes `{gap.include}`{active}, owned by `{owner_label}`, but on "
        f"`{gap.platform}` (in `{gap.cell}`) none of its dependencies provides it: the owner is reached only "
        "through a dependency a `select()` leaves out there, and the target still builds there. Put the include "
        f"under the same condition as the dependency, depend on `{owner_label}` outside the `select()`, or make "
        f"`{target.primary_label}` incompatible with `{gap.platform}`."
    )
    deps = evidence[-1]
    evidence = [*evidence[:-1], Evidence(deps.path, deps.line, f"`{target.primary_label}` declares its deps here")]
    return Hit(
        path=gap.path,
        line=gap.line,
        message=message,
        key=f"{target.primary_label}<-{gap.include}|{gap.platform}",
        target=target.primary_label,
        cell=gap.cell,
        offending_text=gap.include,
        evidence=tuple(evidence),
    )


def _listed_name(owner: BuckTarget, include: str) -> str:
    for attribute in ("exported_headers", "headers"):
        for include_name, repo_path in xref.header_entries(owner, attribute):
            if include_name == include:
                return posixpath.relpath(repo_path, owner.package) if owner.package else repo_path
    return include.rsplit("/", 1)[-1]


_DEFINED = re.compile(r"defined\s*\(?\s*(\w+)")


def _flag_origin(model: BuildModel, target: BuckTarget, conditions: tuple[str, ...]) -> Evidence | None:
    """Where the `-D` flag that makes the include active is written (often inside a macro)."""
    for condition in conditions:
        for macro in _DEFINED.findall(condition) or re.findall(r"\w+", condition)[:1]:
            for frame in reversed(target.stack):
                text = model.text(frame.path) or ""
                for number, line in enumerate(text.splitlines(), start=1):
                    if f"-D{macro}" in line:
                        return Evidence(frame.path, number, f"`-D{macro}` is added here for `{target.primary_label}`")
    return None


def _add_dep_fix(text: str, target: BuckTarget, owner_label: str, attribute: str = "deps") -> Fix | None:
    """Add the owner to the `deps = [...]` (or `exported_deps`) list written in the target's call, or
    write the keyword where the call has none; a list computed by a macro is left to its author."""
    call = call_of(text, target)
    if call is None or call.keyword("name") is None:
        return None
    written = _written_label(text, target, owner_label)
    deps = call.keyword(attribute)
    if deps is None:
        # Where build files write it: after the sources and headers (and `deps`), before the rest.
        placed_after = ("name", "srcs", "headers", "exported_headers") + (("deps",) if attribute != "deps" else ())
        written_before = [k for k in call.keywords if k.name in placed_after]
        after = max(written_before, key=lambda k: k.span.start).name
        fixed = edits.insert_keyword(text, call, attribute, f"[{edits.string_literal(text, written)}]", after=after)
    elif deps.value_list is not None:
        fixed = edits.add_list_element(text, deps.value_list, written)
    else:
        return None
    return fix_between(target.path, text, fixed, f"add `{written}` to {attribute}")


def _written_label(text: str, target: BuckTarget, label: str) -> str:
    """The label as this file writes labels: `:name` in the same package, `//executorch/...` if used."""
    package, name = label[2:].split(":", 1)
    if package == target.package:
        return f":{name}"
    if "//executorch/" in text:
        return f"//executorch/{package}:{name}"
    return label


_BUCKCONFIG = "[repositories]\n  root = .\n"
_CUDA_BUCK = (
    "cxx_library(\n"
    '    name = "runtime_api",\n'
    '    exported_headers = ["runtime_api.h"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
    "cxx_library(\n"
    '    name = "cuda_allocator",\n'
    '    srcs = ["cuda_allocator.cpp"],\n'
    '    exported_headers = ["cuda_allocator.h"],\n'
    '    exported_deps = [":runtime_api"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
    "cxx_library(\n"
    '    name = "caller_stream",\n'
    '    exported_headers = ["caller_stream.h"],\n'
    '    exported_deps = [":runtime_api"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
)


def _pybindings_macro(extra_deps: str) -> str:
    return (
        "def executorch_pybindings(name, srcs = [], deps = [], use_cuda = False):\n"
        "    preprocessor_flags = []\n"
        "    if use_cuda:\n"
        '        preprocessor_flags.append("-DEXECUTORCH_PYBINDINGS_CUDA")\n'
        f"        deps = deps + [{extra_deps}]\n"
        "    native.cxx_python_extension(\n"
        "        name = name,\n"
        "        srcs = srcs,\n"
        "        deps = deps,\n"
        "        preprocessor_flags = preprocessor_flags,\n"
        "    )\n"
    )


def _pybindings_files(extra_deps: str, marker: str, source: str = '"pybindings.cpp"') -> dict[str, str]:
    return {
        ".buckconfig": _BUCKCONFIG,
        "extension/cuda/BUCK": _CUDA_BUCK,
        "extension/cuda/runtime_api.h": "#pragma once\n",
        "extension/cuda/caller_stream.h": "#pragma once\n#include <executorch/extension/cuda/runtime_api.h>\n",
        "extension/cuda/cuda_allocator.h": "#pragma once\n#include <executorch/extension/cuda/runtime_api.h>\n",
        "extension/pybindings/pybindings.bzl": _pybindings_macro(extra_deps),
        "extension/pybindings/BUCK": (
            'load(":pybindings.bzl", "executorch_pybindings")\n'
            'executorch_pybindings(name = "portable_lib", srcs = ["pybindings.cpp"])\n'
            'native.export_file(name = "pybindings.cpp")\n'
            f'executorch_pybindings(name = "cuda_lib", srcs = [{source}], use_cuda = True)\n'
        ),
        "extension/pybindings/pybindings.cpp": (
            "#if defined(EXECUTORCH_PYBINDINGS_CUDA)\n"
            "#include <executorch/extension/cuda/caller_stream.h>\n"
            f"#include <executorch/extension/cuda/cuda_allocator.h>{marker}\n"
            "#endif\n"
        ),
    }


_RUNNER_BUCK = (
    "cxx_library(\n"
    '    name = "core",\n'
    '    exported_headers = ["error.h"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
    "cxx_library(\n"
    '    name = "result",\n'
    '    exported_headers = ["result.h"],\n'
    '    deps = [":core"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
)


def _header_only_files(runner_deps: str, marker: str = "") -> dict[str, str]:
    return {
        ".buckconfig": _BUCKCONFIG,
        "runtime/core/BUCK": _RUNNER_BUCK,
        "runtime/core/error.h": "#pragma once\n",
        "runtime/core/result.h": "#pragma once\n",
        "runner/BUCK": (
            'cxx_library(name = "irunner", exported_headers = ["irunner.h"], visibility = ["PUBLIC"])\n'
            "cxx_library(\n"
            '    name = "text_runner",\n'
            '    srcs = ["text_runner.cpp"],\n'
            f"    deps = [{runner_deps}],\n"
            ")\n"
        ),
        "runner/irunner.h": f"#pragma once\n#include <executorch/runtime/core/error.h>{marker}\n",
        "runner/text_runner.cpp": "#include <executorch/runner/irunner.h>\n",
    }


def _slim_files(storage_flags: str, marker: str = "", condition: str = "") -> dict[str, str]:
    """SlimTensor's `storage` (#24817), whose CUDA guard dep is under select(has_cuda): absent on
    the CPU-only platforms xplat builds for, present on the CUDA one."""
    include = f"#include <executorch/slim/cuda/guard.h>{marker}\n"
    return {
        ".buckconfig": _BUCKCONFIG,
        "slim/cuda/BUCK": (
            "cxx_library(\n"
            '    name = "guard",\n'
            '    exported_headers = ["guard.h"],\n'
            '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
            '    visibility = ["PUBLIC"],\n'
            ")\n"
        ),
        "slim/cuda/guard.h": "#pragma once\n",
        "slim/core/BUCK": (
            "cxx_library(\n"
            '    name = "storage",\n'
            '    srcs = ["storage.cpp"],\n'
            '    deps = select({"ovr_config//cuda:has_cuda": ["//slim/cuda:guard"], "DEFAULT": []}),\n'
            f"{storage_flags}"
            ")\n"
        ),
        "slim/core/storage.cpp": f"#if {condition}\n{include}#endif\n" if condition else include,
    }


CHECK = Check(
    id="dep-undeclared-header",
    fixable=True,
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MAJOR,
    title="Header included from a target that is not a dependency",
    doc=__doc__,
    run=run,
    bad=(
        Example(head=_pybindings_files('"//extension/cuda:caller_stream"', "  // expect: dep-undeclared-header")),
        # The guard is a dep only with CUDA, but the include is unconditional: CPU-only builds break.
        Example(head=_slim_files("", "  // expect: dep-undeclared-header")),
        # The source given as a label (`export_file`, shared by several bindings) is read the same.
        Example(
            head=_pybindings_files(
                '"//extension/cuda:caller_stream"',
                "  // expect: dep-undeclared-header",
                '"//executorch/extension/pybindings:pybindings.cpp"',
            )
        ),
        # A header-only target gains a source: its header's old gap now breaks its own compile.
        Example(
            base={
                "ops/BUCK": 'cxx_library(name = "ops", headers = ["ops.h"])\n',
                "ops/ops.h": "#include <executorch/vec/vec.h>\n",
                "vec/BUCK": 'cxx_library(name = "vec", exported_headers = ["vec.h"], visibility = ["PUBLIC"])\n',
                "vec/vec.h": "int v();\n",
            },
            head={
                "ops/BUCK": 'cxx_library(name = "ops", srcs = ["ops.cpp"], headers = ["ops.h"])\n',
                "ops/ops.cpp": "#include <executorch/ops/ops.h>\nint ops();\n",
                "ops/ops.h": "#include <executorch/vec/vec.h>  // expect: dep-undeclared-header\n",
                "vec/BUCK": 'cxx_library(name = "vec", exported_headers = ["vec.h"], visibility = ["PUBLIC"])\n',
                "vec/vec.h": "int v();\n",
            },
            # ops now compiles ops.h itself, so vec is a dep of its own.
            fixed={
                "ops/BUCK": (
                    'cxx_library(name = "ops", srcs = ["ops.cpp"], headers = ["ops.h"], deps = ["//vec:vec"])\n'
                ),
            },
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "runtime/core/BUCK": _RUNNER_BUCK,
                "runtime/core/error.h": "#pragma once\n",
                # `:core` is a private dep of `:result`: its dependents do not see error.h.
                "runtime/core/result.h": "#pragma once\n#include <executorch/runtime/core/error.h>\n",
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:result"],\n'
                    ")\n"
                ),
                "runtime/executor/program.cpp": (
                    "#include <executorch/runtime/core/result.h>\n"
                    "#include <executorch/runtime/core/error.h>  // expect: dep-undeclared-header\n"
                ),
            },
            fixed={
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:core", "//runtime/core:result"],\n'
                    ")\n"
                ),
            },
        ),
        # The same header-only target, with a dependent that lacks the owner: that build breaks.
        # Header-only: its header compiles in text_runner, which sees only irunner's exported deps.
        Example(
            head=_header_only_files('"//runner:irunner"', "  // expect: dep-undeclared-header"),
            fixed={
                "runner/BUCK": (
                    'cxx_library(name = "irunner", exported_headers = ["irunner.h"], '
                    'exported_deps = ["//runtime/core:core"], visibility = ["PUBLIC"])\n'
                    "cxx_library(\n"
                    '    name = "text_runner",\n'
                    '    srcs = ["text_runner.cpp"],\n'
                    '    deps = ["//runner:irunner"],\n'
                    ")\n"
                ),
            },
        ),
        # No `deps` at all: the fix writes the keyword.
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "runtime/core/BUCK": _RUNNER_BUCK,
                "runtime/core/error.h": "#pragma once\n",
                "runtime/core/result.h": "#pragma once\n",
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                ),
                "runtime/executor/program.cpp": "#include <executorch/runtime/core/result.h>  // expect: dep-undeclared-header\n",
            },
            fixed={
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:result"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                ),
            },
        ),
    ),
    good=(
        # The include is compiled only where the dep is there: with CUDA both, on CPU-only neither.
        Example(
            head=_slim_files(
                '    preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DCUDA_AVAILABLE=1"], "DEFAULT": []}),\n',
                condition="defined(CUDA_AVAILABLE)",
            )
        ),
        # CUDA-only itself: it never builds where the dep is absent.
        Example(head=_slim_files('    compatible_with = ["ovr_config//cuda:has_cuda"],\n')),
        # The source that includes the guard is chosen by a select() of its own: compiled only with the dep.
        Example(
            head={
                **_slim_files(""),
                "slim/core/BUCK": (
                    "cxx_library(\n"
                    '    name = "storage",\n'
                    '    srcs = ["storage.cpp"] + select({"ovr_config//cuda:has_cuda": ["storage_cuda.cpp"], "DEFAULT": []}),\n'
                    '    deps = select({"ovr_config//cuda:has_cuda": ["//slim/cuda:guard"], "DEFAULT": []}),\n'
                    ")\n"
                ),
                "slim/core/storage.cpp": "int storage();\n",
                "slim/core/storage_cuda.cpp": "#include <executorch/slim/cuda/guard.h>\n",
            }
        ),
        Example(head=_pybindings_files('"//extension/cuda:caller_stream", "//extension/cuda:cuda_allocator"', "")),
        # A header-only target compiles nothing: its header builds in every dependent, all of
        # which have the owner (irunner.h including error.h, 08c07fa1d7).
        Example(head=_header_only_files('"//runtime/core:core", "//runner:irunner"')),
        # A compiling target exports a header its own source never includes: only dependents
        # compile it, and the one that does has the owner (6e63c47354's quantized_ops.h).
        Example(
            head={
                "ops/BUCK": (
                    'cxx_library(name = "quantize", srcs = ["quantize.cpp"], exported_headers = ["quantized.h"], '
                    'visibility = ["PUBLIC"])\n'
                ),
                "ops/quantize.cpp": "int quantize();\n",
                "ops/quantized.h": "#include <executorch/vec/vec.h>\n",
                "vec/BUCK": 'cxx_library(name = "vec", exported_headers = ["vec.h"], visibility = ["PUBLIC"])\n',
                "vec/vec.h": "int v();\n",
                "linear/BUCK": 'cxx_library(name = "linear", srcs = ["linear.cpp"], deps = ["//ops:quantize", "//vec:vec"])\n',
                "linear/linear.cpp": "#include <executorch/ops/quantized.h>\n",
            }
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "runtime/core/BUCK": _RUNNER_BUCK.replace('deps = [":core"]', 'exported_deps = [":core"]'),
                "runtime/core/error.h": "#pragma once\n",
                "runtime/core/result.h": "#pragma once\n#include <executorch/runtime/core/error.h>\n",
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:result"],\n'
                    ")\n"
                ),
                "runtime/executor/program.cpp": (
                    "#include <executorch/runtime/core/result.h>\n"
                    "#include <executorch/runtime/core/error.h>\n"
                    "#include <vector>\n"
                ),
            }
        ),
    ),
)
