"""Macros a library defines privately that gate the declarations of a header it exports.

A dependent that includes the header without the macro sees other declarations than the library
was compiled with. Found textually first (a PRIVATE definition above a header that tests the
macro around declarations), then in the CMake models that can show it (the default, and one per
option that is off and encloses a written definition), and per platform of each Buck cell
(private against exported `preprocessor_flags`, the dependents as configured there).
"""

from __future__ import annotations

import posixpath
import re

from bot.buck.targets import BuckTarget, Platform
from bot.cmake import edits as cmake_edits
from bot.facts import gating, linkage, revision, xref
from bot.facts.header_deps import CXX_KINDS, DependencyIndex, configured_table
from bot.facts.header_graph import dependency_table
from bot.snapshot import BuildModel


def _gating_declarations(model: BuildModel, header: str, macro: str):
    """The `#if` group testing the macro when it changes declarations, else None."""
    facts = model.source_facts(header)
    if facts is None or gating.export_macro_blocks(facts, macro):
        return None
    if not any(any(gating.mentions(c, macro) for c in d.conditions) for d in facts.declarations):
        return None
    return gating.first_block_testing(facts, macro)


def _cmake_models(model: BuildModel, written) -> list:
    """The default model, and one per option that is off and encloses one of the written
    PRIVATE definitions, which only that model would show."""
    default = gating.cmake_model(model)
    if default is None:
        return []
    models = [default]
    off = gating.off_options(model)
    options = sorted({o for w in written for c in w.conditions for o in re.findall(r"[A-Za-z_]\w*", c) if o in off})
    for option in options:
        with_option = gating.option_model(model, option)
        if with_option is not None:
            models.append(with_option)
    return models


def cmake_gate_gaps(model: BuildModel) -> list[tuple]:
    """(library, its PRIVATE definition, macro, header, #if block, consumer) per library and macro:
    a consumer that links the library includes a header whose declarations the macro gates."""
    # Textual first: a PRIVATE definition written in a CMake file at or above a header that
    # tests the macro around declarations. Only then is CMake evaluated.
    written = gating.private_definitions_written(model)
    tested = gating.headers_testing(model, {w.macro for w in written})
    candidates = [
        w
        for w in written
        if any(
            w.macro in macros
            and header.startswith(_directory_prefix(w.path))
            and _gating_declarations(model, header, w.macro)
            for header, macros in tested.items()
        )
    ]
    if not candidates:
        return []
    relevant = frozenset(w.macro for w in candidates)
    hits: dict[str, tuple] = {}
    for cmake_model in _cmake_models(model, candidates):
        private = []
        for target in cmake_model.targets.values():
            for definition in target.compile_definitions:
                macro = definition.value.split("=", 1)[0]
                if definition.scope != "PRIVATE" or macro not in relevant:
                    continue
                if any(d.value.split("=", 1)[0] == macro and d.scope != "PRIVATE" for d in target.compile_definitions):
                    continue
                if (
                    cmake_edits.invocation_at(
                        model.text(definition.path) or "", definition.line, ("target_compile_definitions",)
                    )
                    is None
                ):
                    continue  # a directory-wide definition reaches the directory's dependents too
                private.append((target, definition, macro))
        if not private:
            continue
        tested = gating.headers_testing(model, {macro for _t, _d, macro in private})
        for target, definition, macro in private:
            home = posixpath.dirname(target.path)
            for header, macros in sorted(tested.items()):
                if macro not in macros or not (header.startswith(home + "/") or not home):
                    continue
                block = _gating_declarations(model, header, macro)
                if block is None:
                    continue
                consumer = _cmake_consumer(model, cmake_model, target, header, macro)
                if consumer is None:
                    continue
                key = f"{target.name}:{macro}"
                if key in hits:
                    continue
                hits[key] = (target, definition, macro, header, block, consumer)
    return list(hits.values())


def _cmake_consumer(model: BuildModel, cmake_model, library, header: str, macro: str):
    """(target, source, line) of a target linking `library` whose source includes the header
    without the macro defined."""
    include = f"executorch/{header}"
    names = {library.name} | {n for n, t in cmake_model.targets.items() if t.alias_of == library.name}
    for target in cmake_model.targets.values():
        if target is library or not any(item.value in names for item in target.link_libraries):
            continue
        if _cmake_defines(cmake_model, target, macro):
            continue
        sources = [s.path_repo_relative for s in target.sources]
        for path, found in revision.includes(model, sources).items():
            for included, line in found:
                if (
                    included == include
                    or posixpath.normpath(posixpath.join(posixpath.dirname(path), included)) == header
                ):
                    return target, path, line
    return None


def _cmake_defines(cmake_model, target, macro: str) -> bool:
    """Whether the target gets the macro: its own definitions or a linked target's public ones."""
    if any(d.value.split("=", 1)[0] == macro for d in target.compile_definitions):
        return True
    for item in target.link_libraries:
        linked = cmake_model.targets.get(item.value)
        if linked is not None and any(
            d.value.split("=", 1)[0] == macro and d.scope in ("PUBLIC", "INTERFACE") for d in linked.compile_definitions
        ):
            return True
    return False


def _directory_prefix(path: str) -> str:
    directory = posixpath.dirname(path)
    return directory + "/" if directory else ""


def cell_gaps(model: BuildModel, cell: str) -> dict[tuple[str, str], tuple]:
    """(library, macro) -> what makes the case, per platform of the cell where it holds.

    Every fact is one configuration's: the library's private and exported flags, its exported
    headers, the dependent's sources, its reach and the macros it gets. A macro exported only
    with CUDA is private on the CPU-only platforms; a dependent that reaches the library only
    through a select() branch of another platform is no dependent here. A target incompatible
    with a platform is not judged on it. (No platform given for the cell: any configuration.)"""
    graph = model.cell(cell)
    platforms: tuple[Platform | None, ...] = model.platforms(cell) or (None,)
    candidates = {}
    for platform in platforms:
        private = gating.cell_defines(model, cell, ("preprocessor_flags",), platform)
        exported = gating.cell_defines(model, cell, ("exported_preprocessor_flags",), platform)
        candidates[platform] = {m: labels for m, labels in private.items() if m not in exported}
    if not any(candidates.values()):
        return {}
    tested = gating.headers_testing(model, {m for found in candidates.values() for m in found})
    if not tested:
        return {}
    holding: dict[tuple[str, str], list[tuple[Platform | None, tuple]]] = {}
    for platform in platforms:
        incompatible = revision.incompatible(model, cell, platform) if platform is not None else {}
        consumers = None
        for macro, labels in sorted(candidates[platform].items()):
            for label in labels:
                target = graph.targets[label]
                key = (target.primary_label, macro)
                if label in incompatible or any(p == platform for p, _entry in holding.get(key, ())):
                    continue
                for include_name, header in xref.header_entries(target, "exported_headers", platform):
                    if macro not in tested.get(header, ()):
                        continue
                    block = _gating_declarations(model, header, macro)
                    if block is None:
                        continue
                    if consumers is None:
                        consumers = _Consumers(model, cell, platform)
                    consumer = consumers.without(target, include_name, macro)
                    if consumer is not None:
                        holding.setdefault(key, []).append((platform, (cell, target, macro, header, block, consumer)))
                        break
    found = {}
    for key, entries in holding.items():
        platform, entry = entries[0]
        target = entry[1]
        builds = linkage.built_on(model, cell, target.label)
        # Holding wherever the library builds, it is the finding of any configuration.
        named = () if len(entries) == len(builds) else tuple(p.name for p, _entry in entries if p is not None)
        found[key] = (*entry, named)
    return found


class _Consumers:
    """The cell's dependents as configured on one platform (None: any configuration)."""

    def __init__(self, model: BuildModel, cell: str, platform: Platform | None) -> None:
        graph = model.cell(cell)
        table = configured_table(model, cell, platform) if platform is not None else dependency_table(model, cell)
        self._platform = platform
        self._index = DependencyIndex.build(graph, table, None, frozenset())
        self._includers = _includers(model, graph)
        self._incompatible = revision.incompatible(model, cell, platform) if platform is not None else {}

    def without(self, library: BuckTarget, include_name: str, macro: str):
        """(target, file, line) of a dependent built here that compiles a file including the header
        and does not get the macro here."""
        index, platform = self._index, self._platform
        for target, path, line in self._includers.get(include_name, ()):
            if target.label == library.label or target.label in self._incompatible:
                continue
            if not index.reaches(target.label, [library.label]):
                continue
            if platform is not None and path not in xref.source_paths(target, platform):
                continue  # a source a select() compiles on another platform only
            if macro in index.defines(target.label, index.visible(target.label), platform):
                continue
            return target, path, line
        return None


def _includers(model: BuildModel, graph) -> dict[str, list]:
    """include path -> (target, file, line) for every C++ target's sources of the cell (in any
    configuration; a dependent's files on a platform are a subset)."""

    def compute() -> dict[str, list]:
        candidates = [t for t in graph.targets.values() if CXX_KINDS.search(t.kind)]
        files_of = {t.label: xref.source_paths(t) for t in candidates}
        includes = revision.includes(model, {p for files in files_of.values() for p in files})
        found: dict[str, list] = {}
        for target in sorted(candidates, key=lambda t: t.label):
            for path in files_of[target.label]:
                for included, line in includes.get(path, ()):
                    found.setdefault(included, []).append((target, path, line))
        return found

    return revision.tree_memo(model, ("gate-macro-not-exported:includers", graph.cell), compute)
