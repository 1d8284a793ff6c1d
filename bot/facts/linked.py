"""Linking a target's closure: undefined and duplicate symbols, in the linker's own words.

For a target the change touches (one compiling a changed source, or one whose sources or deps
changed), in each configuration: every source of the target and of its dependency closure is
compiled to an object (`-c -fPIC`, each with what its own target's configuration gives it), each
dependency becomes a static archive (a `link_whole` one is taken whole), and the target's objects
are linked with them into a shared object with `-z defs`: as a real link, an archive member is
pulled only when needed, so only symbols the build would really miss or see twice are reported.
A closure that links a library outside the tree (external deps, system libraries other than the C
and C++ runtimes), holds a CUDA source, or has a source that does not compile is not verified.
Problems at head that the same link at base did not have are the pull request's.

API: `link_review(snap, toolchain) -> (tuple[LinkFailure], tuple[Unverified])`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bot.facts import xref
from bot.facts.compile_units import (
    TU_SUFFIXES,
    CompileSetup,
    Configuration,
    buck_owners,
    buck_setup,
    cmake_model_of,
    cmake_owners,
    cmake_setup,
)
from bot.facts.header_deps import CXX_KINDS
from bot.store import memo as facts
from bot.toolchain.diagnostics import LinkProblem, defined_symbols, link_problems
from bot.toolchain.runner import LIMITS, Limits, Toolchain, run_confined

MAX_LINKS = 4  # link units per review
MAX_LINK_SOURCES = 24  # sources in one closure; a larger one is not verified
OBJECT = ("-c", "-fPIC", "-o", "unit.o")


@dataclass(frozen=True, slots=True)
class LinkUnit:
    """One target's link in one configuration: its own compiles and each dep's, by archive."""

    owner: str
    configuration: Configuration
    own: tuple[CompileSetup, ...]
    archives: tuple[tuple[str, bool, tuple[CompileSetup, ...]], ...]  # (dep, whole, its compiles)


@dataclass(frozen=True, slots=True)
class LinkOutcome:
    linked: bool
    problems: tuple[LinkProblem, ...]
    failed_compile: str | None  # why a source did not compile: the link is not verified
    excerpt: str
    failed_source: str | None = None  # that source's repository path
    defined: frozenset[str] = frozenset()  # symbols the closure's objects define (demangled)


@dataclass(frozen=True, slots=True)
class LinkUnverified:
    """A link that says nothing: why, and the source whose compile stopped it (if one did)."""

    owner: str
    configuration: str
    reason: str
    blocking_source: str | None = None


@dataclass(frozen=True, slots=True)
class LinkFailure:
    """A symbol the link of `owner` misses (or finds twice) at head and did not at base."""

    owner: str
    configurations: tuple[Configuration, ...]
    problem: LinkProblem
    source: str | None  # the repository source whose object the linker named
    new_owner: bool


def link_units(model, configuration: Configuration, owners: Iterable[str]) -> dict[str, LinkUnit | str]:
    """owner -> its link unit in `configuration`, or why it cannot be linked here."""
    if configuration.cell is not None and configuration.platform is not None:
        return {owner: _buck_unit(model, configuration, owner) for owner in owners}
    assert configuration.profile is not None
    cmake_model = cmake_model_of(model, configuration)
    return {owner: _cmake_unit(model, cmake_model, configuration, owner) for owner in owners}


def _buck_unit(model, configuration: Configuration, label: str) -> LinkUnit | str:
    cell, platform = configuration.cell or "", configuration.platform
    graph = model.cell(cell)
    if label not in graph.targets:
        return "not defined in this cell"
    closure, order, pending = set(), [], [label]
    while pending:
        current = pending.pop()
        if current in closure:
            continue
        target = graph.targets.get(current)
        # A library outside the tree (third-party, a label this cell leaves undefined), a file, a
        # Python library: nothing of the tree's own the link takes. Its symbols stay undefined at
        # base and head alike, and only symbols the base closure defined are reported.
        if target is None or not CXX_KINDS.search(target.kind):
            continue
        closure.add(current)
        order.append(current)
        pending.extend(xref.dependency_labels(target, platform))

    def compiles(owner: str) -> tuple[CompileSetup, ...] | str:
        sources = xref.source_paths(graph.targets[owner], platform)
        if any(not s.endswith(TU_SUFFIXES) for s in sources if not s.endswith((".h", ".hpp"))):
            return f"`{owner}` has a source the host compiler does not build (CUDA or assembly)"
        return tuple(buck_setup(model, configuration, owner, s) for s in sources if s.endswith(TU_SUFFIXES))

    return _unit(label, configuration, order, compiles, lambda dep: bool(graph.targets[dep].attr("link_whole")))


def _cmake_unit(model, cmake_model, configuration: Configuration, name: str) -> LinkUnit | str:
    closure, order, pending = set(), [], [name]
    while pending:
        current = pending.pop()
        if current in closure:
            continue
        target = cmake_model.targets.get(current)
        if target is None or target.imported:
            continue  # a library outside the tree: see _buck_unit
        if target.alias_of:
            pending.append(target.alias_of)
            continue
        closure.add(current)
        order.append(current)
        for library in target.link_libraries:
            value = library.value
            if value.startswith("-"):
                continue
            pending.append(value)

    def compiles(owner: str) -> tuple[CompileSetup, ...] | str:
        target = cmake_model.targets[owner]
        sources = [s.path_repo_relative for s in target.sources]
        if any(s.endswith((".cu", ".S", ".s", ".asm")) for s in sources):
            return f"`{owner}` has a source the host compiler does not build (CUDA or assembly)"
        return tuple(
            cmake_setup(model, cmake_model, configuration, owner, s) for s in sources if s.endswith(TU_SUFFIXES)
        )

    whole = {pair.library for pair in cmake_model.targets[name].whole_archive}
    return _unit(name, configuration, order, compiles, lambda dep: dep in whole)


def _unit(owner, configuration, order, compiles, whole) -> LinkUnit | str:
    own = compiles(owner)
    if isinstance(own, str):
        return own
    archives = []
    count = len(own)
    for dep in order[1:]:
        found = compiles(dep)
        if isinstance(found, str):
            return found
        count += len(found)
        if count > MAX_LINK_SOURCES:
            return f"its closure compiles more than {MAX_LINK_SOURCES} sources"
        if found:
            archives.append((dep, whole(dep), found))
    if not own:
        return "it compiles no source of its own"
    return LinkUnit(owner, configuration, own, tuple(archives))


@dataclass(frozen=True, slots=True)
class ObjectFile:
    """One compiled object, kept by the digest of its compile's inputs: shared by every link (and
    every later review) that takes the same source with the same flags."""

    data: bytes | None  # None: it did not compile
    failure: str = ""


def _object_key(model, setup: CompileSetup, toolchain: Toolchain) -> str:
    from bot.facts.compiled import compile_flags

    blobs = tuple((p, model.tree.blob_id(r) or "") for p, r in setup.layout)
    return facts.digest(toolchain.identity, "object", compile_flags(model, setup, toolchain, OBJECT), blobs)


def _objects(model, setups: list[CompileSetup], toolchain: Toolchain) -> dict[str, ObjectFile]:
    """Every distinct object these setups need, the missing ones compiled on a small pool."""
    from bot.facts.compiled import compile_flags, compile_object, materialized_files

    by_key = {_object_key(model, s, toolchain): s for s in setups}

    def run(missing: list[str]) -> dict[str, ObjectFile]:
        jobs = {
            key: (materialized_files(model, by_key[key]), compile_flags(model, by_key[key], toolchain, OBJECT))
            for key in missing
        }

        def one(key: str) -> tuple[str, ObjectFile]:
            data, failure = compile_object(toolchain, *jobs[key], by_key[key].unit_path)
            return key, ObjectFile(data, failure)

        with ThreadPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1, 4))) as pool:
            return dict(pool.map(one, jobs))

    return facts.many("object", sorted(by_key), run, persist=True) if by_key else {}


def link_key(model, unit: LinkUnit, toolchain: Toolchain) -> str:
    """The digest of everything the link reads: its objects' keys, archive by archive."""

    def part(setups: tuple[CompileSetup, ...]) -> tuple[str, ...]:
        return tuple(_object_key(model, s, toolchain) for s in setups)

    archives = tuple((w, part(c)) for _d, w, c in unit.archives)
    return facts.digest(toolchain.identity, "link", unit.configuration.cuda, part(unit.own), archives)


def link_all(model, units: list[LinkUnit], toolchain: Toolchain) -> dict[LinkUnit, LinkOutcome]:
    """Each distinct link once, kept by content; objects shared between links."""
    keys = {unit: link_key(model, unit, toolchain) for unit in units}
    by_key = {key: unit for unit, key in keys.items()}

    def run(missing: list[str]) -> dict[str, LinkOutcome]:
        needed = [
            s for key in missing for s in (*by_key[key].own, *(x for _d, _w, c in by_key[key].archives for x in c))
        ]
        objects = _objects(model, needed, toolchain)

        def named(setups: tuple[CompileSetup, ...]) -> tuple[tuple[str, ObjectFile], ...]:
            return tuple((s.source, objects[_object_key(model, s, toolchain)]) for s in setups)

        jobs = {
            key: (
                named(by_key[key].own),
                tuple((w, named(c)) for _d, w, c in by_key[key].archives),
                by_key[key].configuration.cuda,
            )
            for key in missing
        }
        with ThreadPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1, 4))) as pool:
            return dict(pool.map(lambda key: (key, link_files(toolchain, *jobs[key])), jobs))

    outcomes = facts.many("link", sorted(by_key), run, persist=True) if by_key else {}
    return {unit: outcomes[key] for unit, key in keys.items()}


def link_files(
    toolchain: Toolchain, own: tuple, archives: tuple, cuda: bool = False, limits: Limits = LIMITS
) -> LinkOutcome:
    """Archive each dep's objects, link the owner's objects with them under `-z defs`."""
    with tempfile.TemporaryDirectory(prefix="pr-check-link-") as directory:
        root = Path(directory)
        counter = 0

        def written(objects: tuple[tuple[str, ObjectFile], ...]) -> list[str] | LinkOutcome:
            nonlocal counter
            made = []
            for source, obj in objects:
                if obj.data is None:
                    return LinkOutcome(False, (), f"`{source}` does not compile: {obj.failure}", "", source)
                counter += 1
                name = f"o{counter}-{Path(source).stem}.o"
                (root / name).write_bytes(obj.data)
                made.append(name)
            return made

        own_objects = written(own)
        if isinstance(own_objects, LinkOutcome):
            return own_objects
        link = [toolchain.cxx, "-shared", "-Wl,-z,defs", "-o", "out.so", *own_objects, "-Wl,--start-group"]
        for index, (whole, objects) in enumerate(archives):
            made = written(objects)
            if isinstance(made, LinkOutcome):
                return made
            archive = f"lib{index}.a"
            result = run_confined(toolchain, ("ar", "rcs", archive, *made), root, limits)
            if result.returncode != 0:
                return LinkOutcome(False, (), f"ar failed: {result.output[:200]}", "")
            link += ["-Wl,--whole-archive", archive, "-Wl,--no-whole-archive"] if whole else [archive]
        link.append("-Wl,--end-group")
        if cuda and toolchain.cuda_include:  # the CUDA runtime, as a CUDA configuration links it
            libraries = str(Path(toolchain.cuda_include).parent / "lib64")
            link += [f"-L{libraries}", "-lcudart"]
        result = run_confined(toolchain, tuple(link), root, limits)
        objects_made = sorted(str(p.name) for p in root.glob("*.o"))
        listed = run_confined(toolchain, ("nm", "-C", "--defined-only", *objects_made), root, limits)
    defined = defined_symbols(listed.output)
    excerpt = "\n".join(result.output.splitlines()[:20])
    if result.timed_out:
        return LinkOutcome(False, (), "the link ran out of its time or memory", excerpt)
    return LinkOutcome(True, link_problems(result.output) if result.returncode else (), None, excerpt, None, defined)


def owners_to_link(snap, configuration: Configuration, sources: tuple[str, ...]) -> tuple[str, ...]:
    """The targets compiling a changed source here, and those whose sources or deps changed."""
    found: list[str] = []
    head, base = snap.head, snap.base
    if configuration.cell is not None and configuration.platform is not None:
        owners = buck_owners(head, configuration.cell, configuration.platform)
        found += [label for source in sources for label in owners.get(source, ())]
        head_graph, base_graph = head.cell(configuration.cell), base.cell(configuration.cell)
        for label, target in sorted(head_graph.targets.items()):
            before = base_graph.targets.get(label)
            if not CXX_KINDS.search(target.kind) or not xref.source_paths(target, configuration.platform):
                continue
            if before is not None and all(
                target.attrs.get(a) == before.attrs.get(a) for a in ("srcs", "deps", "exported_deps", "link_whole")
            ):
                continue
            found.append(label)
    elif configuration.profile is not None:
        head_model, base_model = cmake_model_of(head, configuration), cmake_model_of(base, configuration)
        owners = cmake_owners(head_model)
        found += [name for source in sources for name in owners.get(source, ())]
        for name, target in sorted(head_model.targets.items()):
            before = base_model.targets.get(name)
            if target.imported or target.alias_of or not target.sources:
                continue
            mine = (
                tuple(sorted(s.path_repo_relative for s in target.sources)),
                tuple(lib.value for lib in target.link_libraries),
            )
            theirs = (
                (
                    tuple(sorted(s.path_repo_relative for s in before.sources)),
                    tuple(lib.value for lib in before.link_libraries),
                )
                if before is not None
                else None
            )
            if mine != theirs:
                found.append(name)
    return tuple(dict.fromkeys(found))


def link_review(snap, toolchain: Toolchain, configurations, sources: tuple[str, ...]):
    """(LinkFailure values new at head, (owner, configuration, why not verified, the source whose
    compile stopped the link or None) for each link that says nothing)."""
    head_units: dict[str, tuple[LinkUnit, list[Configuration]]] = {}
    unverified: list[LinkUnverified] = []
    for configuration in configurations:
        for owner, unit in link_units(snap.head, configuration, owners_to_link(snap, configuration, sources)).items():
            if isinstance(unit, str):
                unverified.append(LinkUnverified(owner, configuration.name, unit, None))
                continue
            key = link_key(snap.head, unit, toolchain)
            configs = head_units.setdefault(key, (unit, []))[1]
            if configuration not in configs:
                configs.append(configuration)
    chosen = sorted(head_units.values(), key=lambda pair: (pair[0].owner, pair[1][0].name))
    for unit, configs in chosen[MAX_LINKS:]:
        unverified.append(
            LinkUnverified(unit.owner, configs[0].name, f"over the cap of {MAX_LINKS} links per review", None)
        )
    chosen = chosen[:MAX_LINKS]
    outcomes = link_all(snap.head, [unit for unit, _c in chosen], toolchain)
    failures: list[LinkFailure] = []
    broken = [(unit, configs) for unit, configs in chosen if outcomes[unit].problems or not outcomes[unit].linked]
    for unit, configs in broken:
        if not outcomes[unit].linked:
            outcome = outcomes[unit]
            why = outcome.failed_compile or "the link did not finish"
            unverified.append(LinkUnverified(unit.owner, configs[0].name, why, outcome.failed_source))
    broken = [(unit, configs) for unit, configs in broken if outcomes[unit].linked]
    base_units: dict[LinkUnit, LinkUnit | str | None] = {}
    for unit, configs in broken:
        found = (
            link_units(snap.base, configs[0], (unit.owner,))[unit.owner]
            if _exists_at(snap.base, unit, configs[0])
            else None
        )
        base_units[unit] = found
    base_outcomes = link_all(snap.base, [u for u in base_units.values() if isinstance(u, LinkUnit)], toolchain)
    for unit, configs in broken:
        before = base_units[unit]
        if isinstance(before, str):
            unverified.append(LinkUnverified(unit.owner, configs[0].name, f"at base: {before}", None))
            continue
        known: set[tuple[str, str]] = set()
        defined_at_base: frozenset[str] = frozenset()
        if isinstance(before, LinkUnit):
            outcome = base_outcomes[before]
            if not outcome.linked:
                unverified.append(
                    LinkUnverified(unit.owner, configs[0].name, f"at base: {outcome.failed_compile}", None)
                )
                continue
            known = {(p.kind, p.symbol) for p in outcome.problems}
            defined_at_base = outcome.defined
        objects = _object_sources(unit)
        for problem in outcomes[unit].problems:
            if (problem.kind, problem.symbol) in known:
                continue
            # An undefined symbol is the change's only where the base closure defined it (a
            # function moved out, an implementation no source expands any more): a new call into
            # a library outside the tree is undefined here and resolved by the real link.
            if problem.kind == "undefined" and problem.symbol not in defined_at_base:
                continue
            source = objects.get(problem.object or "")
            failures.append(LinkFailure(unit.owner, tuple(configs), problem, source, before is None))
    # One failure per (owner, symbol), naming every configuration whose link shows it.
    merged: dict[tuple[str, str, str], LinkFailure] = {}
    for failure in failures:
        key = (failure.owner, failure.problem.kind, failure.problem.symbol)
        earlier = merged.get(key)
        if earlier is None:
            merged[key] = failure
        else:
            configurations = tuple(dict.fromkeys(earlier.configurations + failure.configurations))
            merged[key] = LinkFailure(earlier.owner, configurations, earlier.problem, earlier.source, earlier.new_owner)
    return tuple(merged.values()), tuple(unverified)


def _exists_at(base, unit: LinkUnit, configuration: Configuration) -> bool:
    if configuration.cell is not None:
        return unit.owner in base.cell(configuration.cell).targets
    assert configuration.profile is not None
    return unit.owner in cmake_model_of(base, configuration).targets


def _object_sources(unit: LinkUnit) -> dict[str, str]:
    """Object names link_files gives, back to repository sources (the same counting order)."""
    names: dict[str, str] = {}
    counter = 0
    for setups in (unit.own, *(c for _d, _w, c in unit.archives)):
        for setup in setups:
            counter += 1
            names[f"o{counter}-{Path(setup.source).stem}.o"] = setup.source
    return names
