"""How an include reaches a header of the tree: who lists it, which flags and packages decide.

Every include path some target of some cell lists (as dependents write it); the packages whose
targets are unknown here (failed to evaluate, or named by a dep without a build file); a target's
`-I` directories (its own flags and its deps' exported ones); and which of the targets that
compile a file keeps a given include active under its own defines.
"""

from __future__ import annotations

import posixpath

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.facts import revision, symbols, xref
from bot.facts.header_deps import include_is_active
from bot.snapshot import BuildModel


def active_for(model: BuildModel, path: str, line: int, targets: list[BuckTarget]) -> BuckTarget | None:
    """The first target whose flags provably keep the include (an `#if` it leaves open: none)."""
    facts = model.source_facts(path)
    include = next((i for i in facts.includes if i.line == line), None) if facts else None
    if include is None or facts is None:
        return None
    return next((t for t in targets if include_is_active(include, facts, symbols.target_defines(t))), None)


_INCLUDE_FLAGS = ("-I", "-isystem", "-iquote")


def include_directories(model: BuildModel, target: BuckTarget) -> list[tuple[str, BuckTarget]]:
    """(directory, target whose flag names it) for the `-I` flags naming a directory of the tree:
    the target's own flags and the exported flags of its deps (through their exported deps)."""
    graph = model.cell(target.cell)
    flagged: list[tuple[BuckTarget, str]] = [
        (target, attribute) for attribute in ("preprocessor_flags", "exported_preprocessor_flags", "compiler_flags")
    ]
    queue = list(target.labels("deps") + target.labels("exported_deps"))
    seen = set(queue)
    while queue:
        dep = graph.targets.get(queue.pop())
        if dep is None:
            continue
        flagged.append((dep, "exported_preprocessor_flags"))
        for label in dep.labels("exported_deps"):
            if label not in seen:
                seen.add(label)
                queue.append(label)
    found: list[tuple[str, BuckTarget]] = []
    for owner, attribute in flagged:
        flags = [flag for flag in owner.values(attribute) if isinstance(flag, str)]
        for index, flag in enumerate(flags):
            option = next((o for o in _INCLUDE_FLAGS if flag.startswith(o)), None)
            if option is None:
                continue
            directory = flag[len(option) :] or (flags[index + 1] if index + 1 < len(flags) else "")
            relative = bool(directory) and "$" not in directory and not directory.startswith(("/", ".."))
            if relative and model.tree.is_dir(posixpath.normpath(directory)):
                found.append((posixpath.normpath(directory), owner))
    return found


def is_cpp(target: BuckTarget) -> bool:
    return ("cxx" in target.kind or "cpp" in target.kind) and not target.kind.startswith("python")


def target_files(target: BuckTarget) -> tuple[str, ...]:
    listed = [
        repo_path
        for attribute in ("exported_headers", "headers")
        for _name, repo_path in xref.header_entries(target, attribute)
    ]
    return tuple(dict.fromkeys([*xref.source_paths(target), *listed]))


def failed_packages(model: BuildModel) -> frozenset[str]:
    """Packages whose targets, and so the headers they list, are unknown: those that failed to
    parse or evaluate in some cell (`buck-eval-error`'s and `parse-error`'s to report), and those
    that a dep names but that have no build file here, whose build file lives only in Meta's
    tree (8b56743a46 adds `backends/cadence/common/xt_macros.h` and deps on
    `//executorch/backends/cadence/common:xt_macros`; the open repository got that package's
    BUCK file in 73c561cf32). The root package is never taken as unknown from a dep: one
    dangling `//:x` would hide every header."""

    def compute() -> frozenset[str]:
        unknown = {error.package for cell in CELLS for error in model.cell(cell).errors}
        for cell in CELLS:
            graph = model.cell(cell)
            defined = {target.package for target in graph.targets.values()}
            for target in graph.targets.values():
                for dep in target.labels("deps") + target.labels("exported_deps"):
                    if dep.startswith("//") and dep not in graph.targets:
                        package = dep[2:].split(":", 1)[0]
                        if package and package not in defined and model.tree.is_dir(package):
                            unknown.add(package)
        return frozenset(unknown)

    return revision.tree_memo(model, ("header-unowned:unknown-packages",), compute)


def under(path: str, packages: frozenset[str]) -> bool:
    directory = posixpath.dirname(path)
    while True:
        if directory in packages:
            return True
        if not directory:
            return False
        directory = posixpath.dirname(directory)


def owned_anywhere(model: BuildModel) -> frozenset[str]:
    """Every include path some target of some cell lists, as dependents write it."""
    return revision.tree_memo(
        model,
        ("header-unowned:owned",),
        lambda: frozenset(include for cell in CELLS for include in revision.header_owners(model, cell)),
    )
