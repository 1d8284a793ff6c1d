"""Python imports a target's sources make that nothing in its dependency closure provides.

Per cell: which targets ship each module (the owners), what every Python target's sources import
(kept per blob), which modules its closure provides; a gap is an import of a module some target
owns and none in the closure ships. Whether the change made a gap (it wrote the import, or a
target that shipped the file at base had the module in its closure then) is asked per gap.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, CellGraph, flatten
from bot.facts import revision
from bot.snapshot import BuildModel, Snapshot
from bot.store import memo as facts

# `python_pytest` and `python_unittest` are internal macros (fbcode_macros): the model records their
# calls under those names, with the deps as written.
PYTHON_KINDS = frozenset({"python_library", "python_test", "python_binary", "python_pytest", "python_unittest"})


_ROOT_PACKAGE = "executorch"


@dataclass(frozen=True, slots=True)
class _Import:
    """One unconditional import of a module of this repository's namespace, as written."""

    line: int
    end_line: int  # the last line of a parenthesized `from m import (\n a,\n b)`
    module: str  # dotted, absolute (`executorch.backends.arm.foo`)
    names: tuple[str, ...]  # `from module import a, b`: a and b (each may be a submodule)


@dataclass(frozen=True, slots=True)
class ImportGap:
    """One import, in a file some targets ship, of a module their closures lack."""

    path: str
    module_path: str
    found: _Import
    targets: tuple[BuckTarget, ...]
    owners: tuple[str, ...]  # labels of the targets that list the module; () when none does


_PACKAGES = "\0packages"  # the key under which `closures` keeps a cell's packages (no label looks like it)


def packaged_deps(target: BuckTarget) -> tuple[str, ...]:
    """The labels whose sources buck2 packages with `target`: `deps`, `exported_deps` and
    `preload_deps` (loaded first, packaged like any dep)."""
    return target.labels("deps") + target.labels("exported_deps") + target.labels("preload_deps")


def internal_only(package: str) -> bool:
    """A package under an `fb/` directory: Meta-internal, absent from the open tree, so what its
    targets bring is unknown (not outside the repository)."""
    return "fb" in package.split("/")


def _internal_home(package: str) -> str:
    """The open directory an internal package extends: the path above its `fb` component."""
    parts = package.split("/")
    return "/".join(parts[: parts.index("fb")])


def brought_internally(path: str, internal: frozenset[str]) -> bool:
    """Whether one of the internal packages a closure reaches may bring what `path` imports: one
    that extends a directory holding `path` (`backends/arm/_passes/fb` for the Arm passes, the fb
    variant of the importer's own code). One that extends another directory serves that code
    (`exir/program/fb:logger`, reached by nearly every Python target through `//exir:lib`): the
    closure the open tree shows is the one that counts for the importer."""
    return any(not (home := _internal_home(package)) or path.startswith(home + "/") for package in internal)


def made_by_change(snap: Snapshot, gap: ImportGap, closures: dict[str, dict[str, frozenset[str] | None]]) -> bool:
    """Did this change make the gap? It wrote the import (a line of it is added), or a target that
    shipped the file at base had the module in its closure then (a dep dropped, a module moved
    to a target it does not depend on). A gap the change only brings into view is not its doing:
    an old file first shipped by a new target, a package whose `__init__.py` a target now lists
    (f01198f285 gives the Arm `debug/schema.py` a target and `tosa/__init__.py` an owner)."""
    change = snap.changes.get(gap.path)
    if change is not None and any(line in change.added for line in range(gap.found.line, gap.found.end_line + 1)):
        return True
    for target in gap.targets:
        graph = snap.base.cell(target.cell)
        if target.label not in graph.targets:
            continue
        memo = closures.setdefault(target.cell, {})
        # The base's packages, once per cell and review (not once per gap: 20,000 targets each time).
        unknown = memo.get(_PACKAGES)
        if unknown is None:
            unknown = frozenset(error.package for error in graph.errors) | frozenset(
                t.package for t in graph.targets.values()
            )
            memo[_PACKAGES] = unknown
        provided = _provided(graph, target.label, unknown, snap.base.tree.is_dir, memo)
        if provided is not None and gap.module_path in provided:
            return True
    return False


def import_gaps(model: BuildModel) -> tuple[ImportGap, ...]:
    """The revision's gaps: kept in the store under the tree's digest (one pass over every
    Python target's imports costs more than reading it back)."""
    # The key's version: stored gaps of an older reading (fb/ closures all unknown) are not served.
    return revision.tree_memo(model, ("python-import-undeclared", 2), lambda: _gaps(model), persist=True)


def _gaps(model: BuildModel) -> tuple[ImportGap, ...]:
    owners = _owners(model)
    # Packages that failed to evaluate in any cell: a target of theirs may list a module we see as unowned.
    failed_anywhere = frozenset(error.package for cell in CELLS for error in model.cell(cell).errors)
    # (importing file, module file) -> the targets shipping the file without the module, and the import
    gaps: dict[tuple[str, str], tuple[list[BuckTarget], _Import]] = {}
    # (module, names) -> the files an import of them loads: the same in every cell, asked per target.
    module_files: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
    for cell in CELLS:
        graph = model.cell(cell)
        failed = frozenset(error.package for error in graph.errors)
        packages = frozenset(t.package for t in graph.targets.values())
        python = {label: t for label, t in graph.targets.items() if t.kind in PYTHON_KINDS}
        files = sorted({path for target in python.values() for path in _sources(target)})
        imports = _imports(model, files)
        closure: dict[str, frozenset[str] | None] = {}
        internal: dict[str, frozenset[str]] = {}  # label -> the fb/ packages its closure names
        dangling: dict[str, frozenset[str]] = {}  # label -> packages whose targets are unknown to it
        for label, target in sorted(python.items()):
            if target.attr("base_module") is not None:
                continue
            for path in _sources(target):
                for found in imports.get(path, ()):
                    loaded = module_files.get((found.module, found.names))
                    if loaded is None:
                        loaded = module_files[found.module, found.names] = tuple(_module_files(model, found))
                    for module_path in loaded:
                        if module_path.endswith("__init__.py") and module_path not in owners:
                            continue  # a package no target lists: a namespace, not a missing source
                        lacking = gaps.get((path, module_path))
                        if lacking is not None and any(t.label == label for t in lacking[0]):
                            continue
                        provided = _provided(graph, label, failed | packages, model.tree.is_dir, closure)
                        if provided is None:
                            if module_path in owners:
                                continue
                            if label not in dangling:
                                dangling[label] = failed_anywhere | _dangling_packages(graph, label, packages)
                            if not _unlistable(module_path, owners, dangling[label]):
                                continue
                        if provided is not None and module_path in provided:
                            continue
                        if module_path in owners and brought_internally(path, internal_reached(graph, label, internal)):
                            continue  # an owner may come through the importer's own internal (fb/) variant
                        gaps.setdefault((path, module_path), ([], found))[0].append(target)
    return tuple(
        ImportGap(path, module_path, found, tuple(targets), owners.get(module_path, ()))
        for (path, module_path), (targets, found) in sorted(gaps.items(), key=lambda item: item[0])
    )


def _unlistable(module_path: str, owners: Mapping[str, tuple[str, ...]], unknown: frozenset[str]) -> bool:
    """No closure can bring this module, known or not: no target of any cell lists it, and no
    package whose targets are unknown lies above it (one that failed to evaluate, or the package
    of an undefined dep, whose build file may live only in Meta's tree: 8806e896ad's
    `//executorch/examples/models:model_base` ships `examples/models/model_base.py`). An unknown
    dep elsewhere then changes nothing (c1dba0fb6b: `decoder_utils.py` imported by `llama_lib`,
    whose deps name an undefined `//examples/models:models`)."""
    if module_path in owners:
        return False
    return not any(package == "" or module_path.startswith(package + "/") for package in unknown)


def _dangling_packages(graph: CellGraph, label: str, defined_packages: frozenset[str]) -> frozenset[str]:
    """Packages of this repository that `label`'s closure names but the cell does not define
    (their targets, and the modules they list, are unknown)."""
    found: set[str] = set()
    seen = {label}
    frontier = [label]
    while frontier:
        current = graph.targets[frontier.pop()]
        for dep in packaged_deps(current):
            if not dep.startswith("//") or dep in seen:
                continue
            seen.add(dep)
            if dep in graph.targets:
                frontier.append(dep)
            else:
                found.add(dep[2:].split(":", 1)[0])
    return frozenset(found) - defined_packages


def _sources(target: BuckTarget) -> tuple[str, ...]:
    """Repository paths of the Python files a target ships (a dict's values are its sources)."""
    value = target.attrs.get("srcs")
    items = value.values() if isinstance(value, dict) else flatten(value)
    return tuple(
        posixpath.normpath(posixpath.join(target.package, item))
        for item in items
        if isinstance(item, str)
        and item.endswith(".py")
        and not item.startswith((":", "/", "@", "$"))
        and "//" not in item
    )


def _owners(model: BuildModel) -> Mapping[str, tuple[str, ...]]:
    """Python file -> labels of the Python targets (any cell) that list it."""
    found: dict[str, list[str]] = {}
    for cell in CELLS:
        for label, target in model.cell(cell).targets.items():
            if target.kind in PYTHON_KINDS:
                for path in _sources(target):
                    if label not in found.setdefault(path, []):
                        found[path].append(label)
    return {path: tuple(labels) for path, labels in found.items()}


def _provided(
    graph: CellGraph,
    label: str,
    unknown: frozenset[str],
    is_dir: Callable[[str], bool],
    memo: dict[str, frozenset[str] | None],
) -> frozenset[str] | None:
    """The Python files in the package of `label` (its srcs and its deps', transitively); None
    when a dep names a target the cell does not define in a package of this repository (one
    where the cell defines targets, one that failed to evaluate, any directory of the tree):
    what it brings is unknown."""
    if label in memo:
        return memo[label]
    memo[label] = frozenset()  # a cycle adds nothing new
    target = graph.targets[label]
    files = set(_sources(target))
    for dep in packaged_deps(target):
        if not dep.startswith("//"):
            continue  # another cell (`fbsource//third-party/...`): not this repository's modules
        package = dep[2:].split(":", 1)[0]
        if dep not in graph.targets:
            if package in unknown or is_dir(package):
                memo[label] = None
                return None
            continue  # outside the repository (`//caffe2:torch`, `//pytorch/ao:torchao`), or internal: `internal_reached`
        below = _provided(graph, dep, unknown, is_dir, memo)
        if below is None:
            memo[label] = None
            return None
        files |= below
    memo[label] = frozenset(files)
    return memo[label]


def internal_reached(graph: CellGraph, label: str, memo: dict[str, frozenset[str]]) -> frozenset[str]:
    """The Meta-internal (`fb/`) packages that `label`'s packaged closure names: the cell does not
    define them, so what they bring is unknown (`brought_internally` says to which importers)."""
    if label in memo:
        return memo[label]
    memo[label] = frozenset()  # a cycle adds nothing new
    found: set[str] = set()
    for dep in packaged_deps(graph.targets[label]):
        if not dep.startswith("//"):
            continue
        if dep in graph.targets:
            found |= internal_reached(graph, dep, memo)
        elif internal_only(package := dep[2:].split(":", 1)[0]):
            found.add(package)
    memo[label] = frozenset(found)
    return memo[label]


def _module_files(model: BuildModel, found: _Import) -> Iterator[str]:
    """The repository Python files an import loads by name: `from a import b` loads `a/b.py` or
    `a/b/__init__.py` when b is a module, else `a.py` or `a/__init__.py` (b is a name in it)."""
    parts = found.module.split(".")
    if parts[0] != _ROOT_PACKAGE:
        return
    base = "/".join(parts[1:])
    present = []
    for name in found.names:
        module = f"{base}/{name}" if base else name
        present.extend(path for path in (f"{module}.py", f"{module}/__init__.py") if model.tree.exists(path))
    if present:
        yield from dict.fromkeys(present)
    elif base:
        yield from (path for path in (f"{base}.py", f"{base}/__init__.py") if model.tree.exists(path))


def _imports(model: BuildModel, paths: list[str]) -> dict[str, tuple[_Import, ...]]:
    """path -> its unconditional imports of the repository's namespace; kept per blob."""
    blobs = {path: model.tree.blob_id(path) for path in paths}
    blobs = {p: b for p, b in blobs.items() if b is not None}
    by_blob: dict[str, str] = {}
    for path, blob in blobs.items():
        by_blob.setdefault(blob, path)

    def scan(missing: list) -> dict:
        model.tree.prefetch(by_blob[b] for b, _ in missing)
        return {(b, p): imports_of(model.tree.read_text_by_blob(b) or "", p) for b, p in missing}

    # Relative imports resolve against the file's own package: the path is part of the key.
    keys = [(blob, path) for path, blob in blobs.items()]
    found = facts.many("python-imports", keys, scan, persist=True)
    return {path: found.get((blob, path), ()) for path, blob in blobs.items()}


def imports_of(text: str, path: str) -> tuple[_Import, ...]:
    """The imports of `text` (the file at `path`) that run whenever the module is imported: outside
    functions, `try:` bodies and `if TYPE_CHECKING:` blocks."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    package = [_ROOT_PACKAGE, *posixpath.dirname(path).split("/")] if posixpath.dirname(path) else [_ROOT_PACKAGE]
    found: list[_Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return  # a lazy import: how a module uses one its target cannot depend on (a cycle)
        if isinstance(node, ast.Try | ast.TryStar):
            for handler in node.handlers:
                visit_all(handler.body)
            visit_all(node.orelse)
            visit_all(node.finalbody)
            return
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            visit_all(node.orelse)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == _ROOT_PACKAGE:
                    found.append(_Import(node.lineno, node.end_lineno or node.lineno, alias.name, ()))
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level > len(package):
                    return
                module = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] == _ROOT_PACKAGE:
                names = tuple(a.name for a in node.names if a.name != "*")
                found.append(_Import(node.lineno, node.end_lineno or node.lineno, module, names))
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    def visit_all(nodes: list[ast.stmt]) -> None:
        for child in nodes:
            visit(child)

    visit(tree)
    return tuple(found)
