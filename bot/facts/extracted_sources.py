"""The source lists ExecuTorch's build/extract_sources.py wrote for CMake, computed from the Buck model.

Until 2a692c2da9 (2025-08-15) the root CMakeLists.txt (and some example projects) took every
`_<name>__srcs` list from `executorch_srcs.cmake`, a file extract_sources.py generated at configure
time from `cmake_deps.toml` (build/, later tools/cmake/). For each `[targets.<name>]` table, with
the lists of `[target_base]` prepended to its own:

    sources = every input file of `buck2 cquery "inputs(deps(t1)+deps(t2)+...)"` over `buck_targets`
    keep those every `filters` regular expression finds (re.search), drop those any `excludes` finds,
    remove the final sources of each list named in `deps` (computed the same way, recursively)
    set(_<name>__srcs <sorted sources>)        # one per table, in the file's order

The model runs no process: the query is answered from the open-source cell's Buck model, on the
platform that cell builds for (`deps()` follows every dependency edge: deps, exported deps, the
targets that generate a source, and the tools a genrule runs; `inputs()` are the source files of
those targets, as repository paths). The CMake evaluation receives the result by config path
(bot/cmake/commands/processes.py). Two differences from buck2 are kept visible, not guessed away:
a `buck_targets` label the model has no target for contributes nothing and is listed in
`unresolved` (buck2 would fail, or the package failed to evaluate here), and toolchain targets of
other cells are not followed (their files lie outside the repository's own cell). Android builds
passed `--target-platforms` from a6f8389313 (2024-09) on; the lists here are the cell's platform's
(Linux), which is what every other configuration got.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bot.buck.cells import cell_named
from bot.buck.targets import BuckTarget, CellGraph, Platform, normalize_label, resolve
from bot.cmake.model import ExtractedSources
from bot.facts import revision
from bot.store import memo as facts

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

CONFIG_NAME = "cmake_deps.toml"
SCRIPT_NAME = "extract_sources.py"
# The cell whose graph answers the queries: open-source buck2, as extract_sources.py ran it.
CELL = "oss"
# Attributes whose plain strings are source files (buck2's `inputs()` of the rules ExecuTorch uses).
_INPUT_ATTRIBUTES = ("srcs", "headers", "exported_headers", "raw_headers", "resources", "src")
# Attributes whose labels are dependency edges; labels inside the input attributes are edges too
# (the rule generating that file), and so are the tools a genrule's command runs.
_DEPENDENCY_ATTRIBUTES = ("deps", "exported_deps", "platform_deps", "exported_platform_deps", "exec_deps")
_COMMAND_ATTRIBUTES = ("cmd", "bash", "cmd_exe")
_COMMAND_MACRO = re.compile(r"\$\((?:exe|exe_target|location|location_exec|query_outputs)\s+([^)\s]+)\)")
_LIST_KEYS = ("buck_targets", "deps", "filters", "excludes")


@dataclass(frozen=True, slots=True)
class ListSpec:
    """One `[targets.<name>]` table, with `[target_base]`'s lists already prepended."""

    name: str
    buck_targets: tuple[str, ...] = ()
    deps: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Extraction:
    """The lists one config yields, and the `buck_targets` labels the Buck model has no target for."""

    sources: ExtractedSources
    unresolved: tuple[str, ...] = ()


def configs(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The config files the tree can run extract_sources.py over: a cmake_deps.toml beside the script."""
    present = frozenset(paths)
    return tuple(
        path
        for path in paths
        if posixpath.basename(path) == CONFIG_NAME and posixpath.join(posixpath.dirname(path), SCRIPT_NAME) in present
    )


def parse_config(text: str) -> tuple[ListSpec, ...] | str:
    """The tables of a config in file order, or why the script would fail to read it."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return f"cmake_deps.toml: {error}"
    base = document.get("target_base", {})
    tables = document.get("targets", {})
    if not isinstance(base, dict) or not isinstance(tables, dict):
        return "cmake_deps.toml: [target_base] and [targets] must be tables"
    specs = []
    for name, table in tables.items():
        if not isinstance(table, dict):
            return f"cmake_deps.toml: targets.{name} is not a table"
        lists: dict[str, tuple[str, ...]] = {}
        for key in _LIST_KEYS:
            # The script extends a copy of the base list with the table's own (base first).
            values = [*base.get(key, []), *table.get(key, [])]
            if not all(isinstance(value, str) for value in values):
                return f"cmake_deps.toml: targets.{name}.{key} holds a value that is not a string"
            lists[key] = tuple(values)
        specs.append(ListSpec(name, **lists))
    return tuple(specs)


def extract(config: str, specs: tuple[ListSpec, ...], graph: CellGraph, platform: Platform) -> Extraction:
    """What extract_sources.py writes for `specs`, its queries answered from `graph` on `platform`."""
    by_name = {spec.name: spec for spec in specs}
    done: dict[str, frozenset[str]] = {}
    unresolved: dict[str, None] = {}

    def sources_of(spec: ListSpec, visiting: tuple[str, ...]) -> frozenset[str]:
        if spec.name in done:
            return done[spec.name]
        if spec.name in visiting:
            raise _Failure(f"cmake_deps.toml: a cycle through {' -> '.join((*visiting, spec.name))}")
        try:
            filters = [re.compile(pattern) for pattern in spec.filters]
            excludes = [re.compile(pattern) for pattern in spec.excludes]
        except re.error as error:
            raise _Failure(f"cmake_deps.toml: targets.{spec.name}: bad regular expression: {error}") from None
        roots = [normalize_label(label, "") for label in spec.buck_targets]
        unresolved.update((label, None) for label in roots if label not in graph.targets)
        found = {
            path
            for path in _inputs_of_closure(graph, roots, platform)
            if all(p.search(path) for p in filters) and not any(p.search(path) for p in excludes)
        }
        for dep in spec.deps:
            if dep not in by_name:
                raise _Failure(f"cmake_deps.toml: targets.{spec.name} names unknown deps entry {dep!r}")
            found -= sources_of(by_name[dep], (*visiting, spec.name))
        done[spec.name] = frozenset(found)
        return done[spec.name]

    try:
        lists = tuple((spec.name, tuple(sorted(sources_of(spec, ())))) for spec in specs)
    except _Failure as failure:
        return Extraction(ExtractedSources(config, failure=str(failure)))
    return Extraction(ExtractedSources(config, lists), tuple(unresolved))


class _Failure(Exception):
    """What makes the script exit non-zero (it writes nothing then)."""


def _inputs_of_closure(graph: CellGraph, roots: list[str], platform: Platform) -> set[str]:
    """`inputs(deps(r1)+deps(r2)+...)`: the source files of every target the roots reach."""
    seen: set[str] = set()
    stack = [label for label in roots if label in graph.targets]
    found: set[str] = set()
    while stack:
        label = stack.pop()
        if label in seen:
            continue
        seen.add(label)
        target = graph.targets[label]
        files, edges = _files_and_edges(target, platform)
        found.update(files)
        stack.extend(edge for edge in edges if edge in graph.targets and edge not in seen)
    return found


def _files_and_edges(target: BuckTarget, platform: Platform) -> tuple[list[str], list[str]]:
    """A target's input files (repository paths) and the labels it depends on, on `platform`."""
    files: list[str] = []
    edges: list[str] = []
    for attribute in _INPUT_ATTRIBUTES:
        for item in _strings(resolve(target.attrs.get(attribute), platform)):
            if _is_label(item):
                edges.append(_label(item, target.package))
            else:
                path = posixpath.normpath(posixpath.join(target.package, item))
                if not path.startswith("../"):
                    files.append(path)
    if target.kind == "export_file" and "src" not in target.attrs:
        files.append(posixpath.join(target.package, target.name))  # the rule exports the file it is named for
    for attribute in _DEPENDENCY_ATTRIBUTES:
        edges.extend(
            _label(item, target.package)
            for item in _strings(resolve(target.attrs.get(attribute), platform))
            if _is_label(item)
        )
    for attribute in _COMMAND_ATTRIBUTES:
        for command in _strings(resolve(target.attrs.get(attribute), platform)):
            edges.extend(_label(match, target.package) for match in _COMMAND_MACRO.findall(command))
    return files, edges


def _strings(value: Any) -> Iterator[str]:
    """The strings of a resolved attribute value; of a `(path, flags)` source pair, the path only."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
                yield item[0]  # a (path, flags) pair of `srcs`
            else:
                yield from _strings(item)


def _is_label(item: str) -> bool:
    return item.startswith(":") or "//" in item


def _label(item: str, package: str) -> str:
    """The target a label names, without a `[subtarget]` or `#flavor` suffix."""
    return normalize_label(item.split("[", 1)[0].split("#", 1)[0], package)


def extracted_sources(model: BuildModel) -> Mapping[str, Extraction]:
    """config path -> what extract_sources.py writes from it, for every config of the revision.

    Empty (and the Buck cell never evaluated for it) where the tree has no config beside the
    script: every tree from 2a692c2da9's successors on, where CMake reads build_variables.bzl.
    """
    found = revision.tree_memo(model, ("extracted-sources:configs",), lambda: configs(model.tree.paths()))
    if not found:
        return MappingProxyType({})
    blobs = tuple((path, model.tree.blob_id(path)) for path in found)
    platform = cell_named(CELL).platforms[0]

    def compute() -> Mapping[str, Extraction]:
        graph = model.cell(CELL)
        results = {}
        for path in found:
            specs = parse_config(model.tree.read_text(path) or "")
            if isinstance(specs, str):
                results[path] = Extraction(ExtractedSources(path, failure=specs))
            else:
                results[path] = extract(path, specs, graph, platform)
        return MappingProxyType(results)

    return facts.fact(("extracted-sources", platform), (model.graph_key(CELL), blobs), compute, persist=True)
