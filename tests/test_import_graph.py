"""The floor plan holds: no product module imports a higher layer, no two folders import each other,
and the README's layout section lists the same layers as this test.

The import graph is read from the source with ast (nothing is imported): every `import` and
`from ... import` of a product package, at module level or inside a function; imports under
`if TYPE_CHECKING:` are left out (they name types for the checker and run nothing).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "checks", "pr_check", "webhooks", "smoke")

# The layers, lowest first. A module belongs to the layer of the longest entry that names it or a
# package above it; a module may import its own layer and those below, never one above. Every
# product module must belong to one (a new top-level module of bot/ is placed here on purpose).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("values", ("bot.errors", "bot.model", "bot.tree", "bot.diff", "bot.patch", "bot.repo")),
    ("store", ("bot.store",)),
    ("parallel", ("bot.parallel",)),
    ("models", ("bot.buck", "bot.cmake", "bot.cpp", "bot.config", "bot.config_schema", "bot.check", "bot.snapshot")),
    ("facts", ("bot.facts",)),
    (
        "review",
        ("bot.engine", "bot.pipeline", "bot.review_stats", "bot.smoke_decision", "bot.fixes", "bot.fix_commit"),
    ),
    ("render", ("bot.render",)),
    ("rules", ("checks",)),
    ("binding", ("pr_check",)),
    ("apps", ("webhooks", "smoke")),
    ("command line", ("pr_check.cli", "pr_check.commands")),
)

# Imports that cross the floor plan today, each with why; the test fails on one that is no longer
# made, so the list only shrinks.
KNOWN_CROSSINGS: Mapping[tuple[str, str], str] = {
    # Which checks read Buck files and which cells to derive before the fork: the share of the
    # checks becomes a field of `Check`, and the engine hands the split what it needs.
    ("bot.parallel.check_split", "bot.check"): "the check split still reads the checks' inputs itself",
    ("bot.parallel.check_split", "bot.buck.cells"): "the check split still derives the head's cells itself",
}

_README_BLOCK = re.compile(r"<!-- layers:begin -->\n(.*?)<!-- layers:end -->", re.S)
_README_LAYER = re.compile(r"^\d+\. \*\*(?P<name>[^*]+)\*\*: (?P<entries>.+)$")


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the product packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:`."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for statement in node.body for child in ast.walk(statement))
    return inside


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the product modules it imports (a name imported from a package that is one of
    its modules counts as that module; any other name as the module it comes from)."""
    modules = _modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported: set[str | None] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.Import):
                imported.update(resolve(alias.name) for alias in node.names if alias.name.split(".")[0] in PACKAGES)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                if source.split(".")[0] not in PACKAGES:
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    imported.add(full if full in modules else resolve(source))
        graph[name] = {module for module in imported if module is not None and module != name}
    return graph


def layer_of(module: str, layers: Iterable[tuple[str, tuple[str, ...]]] = LAYERS) -> int | None:
    """The index of the module's layer (its longest matching entry), or None when none names it."""
    best: tuple[int, int] | None = None
    for index, (_name, entries) in enumerate(layers):
        for entry in entries:
            if (module == entry or module.startswith(entry + ".")) and (best is None or len(entry) > best[1]):
                best = (index, len(entry))
    return None if best is None else best[0]


def upward_imports(graph: Mapping[str, set[str]], layers=LAYERS) -> list[str]:
    """Every import of a higher layer, and every module no layer names that imports or is
    imported (an empty package marker such as bot/__init__.py is in none)."""
    found = []
    imported_anywhere = {target for targets in graph.values() for target in targets}
    for module, imported in sorted(graph.items()):
        here = layer_of(module, layers)
        if here is None:
            if imported or module in imported_anywhere:
                found.append(f"{module}: in no layer")
            continue
        for target in sorted(imported):
            there = layer_of(target, layers)
            if there is not None and there > here:
                found.append(f"{module} ({layers[here][0]}) imports {target} ({layers[there][0]})")
    return found


def _unit(module: str, path: Path, root: Path, layer_modules: set[str]) -> str:
    """The folder a module counts for: its package folder, except that a module a layer names
    by itself, or one lying beside sub-packages (bot/'s own modules, bot/cmake/interpreter.py
    beside commands/), counts on its own: such a folder composes its sub-folders."""
    if module in layer_modules:
        return module
    folder = path.parent
    has_subpackages = any((child / "__init__.py").is_file() for child in folder.iterdir() if child.is_dir())
    if has_subpackages and path.name != "__init__.py":
        return module
    return ".".join(folder.relative_to(root).parts)


def folder_cycles(graph: Mapping[str, set[str]], root: Path, layers=LAYERS) -> list[list[str]]:
    """The cycles between folders: strongly connected sets of more than one unit, each with the
    module imports that close it."""
    modules = _modules(root)
    layer_modules = {entry for _name, entries in layers for entry in entries if entry in modules}
    layer_modules = {entry for entry in layer_modules if modules[entry].name != "__init__.py"}
    unit = {name: _unit(name, path, root, layer_modules) for name, path in modules.items()}
    edges: dict[str, set[str]] = {}
    for module, imported in graph.items():
        for target in imported:
            if unit[module] != unit[target] and (module, target) not in KNOWN_CROSSINGS:
                edges.setdefault(unit[module], set()).add(unit[target])
    return [sorted(component) for component in _components(edges) if len(component) > 1]


def _components(edges: Mapping[str, set[str]]) -> list[set[str]]:
    """Strongly connected components (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def readme_layers(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The layers the README's layout section lists between its markers."""
    block = _README_BLOCK.search(text)
    assert block is not None, "README.md has no <!-- layers:begin --> ... <!-- layers:end --> block"
    layers = []
    for line in block.group(1).splitlines():
        match = _README_LAYER.match(line.strip())
        if match:
            entries = tuple(re.findall(r"`([^`]+)`", match.group("entries")))
            layers.append((match.group("name"), entries))
    return layers


def test_no_module_imports_a_higher_layer():
    crossings = {found for pair in KNOWN_CROSSINGS for found in upward_imports({pair[0]: {pair[1]}})}
    assert [found for found in upward_imports(import_graph(ROOT)) if found not in crossings] == []


def test_the_known_crossings_are_still_made():
    graph = import_graph(ROOT)
    assert [pair for pair in KNOWN_CROSSINGS if pair[1] not in graph.get(pair[0], set())] == []


def test_no_two_folders_import_each_other():
    assert folder_cycles(import_graph(ROOT), ROOT) == []


def test_the_core_never_imports_the_rules_the_apps_or_the_entry_points():
    outside = ("checks", "webhooks", "smoke", "pr_check")
    graph = import_graph(ROOT)
    assert [
        f"{module} imports {target}"
        for module, imported in sorted(graph.items())
        if module.split(".")[0] == "bot"
        for target in sorted(imported)
        if target.split(".")[0] in outside
    ] == []


def test_the_readme_lists_the_same_layers():
    assert readme_layers((ROOT / "README.md").read_text(encoding="utf-8")) == [
        (name, entries) for name, entries in LAYERS
    ]


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for package in PACKAGES:
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    return root


def test_the_detector_finds_an_upward_import_and_a_cycle_between_folders(tmp_path):
    # A tree made for the detector itself: the store reaches up into the facts, and the facts
    # and the store import each other (at module level in one, inside a function in the other).
    root = _tree(
        tmp_path,
        {
            "bot/store/__init__.py": "",
            "bot/store/memo.py": "def fact():\n    from bot.facts.xref import owners\n    return owners\n",
            "bot/facts/__init__.py": "",
            "bot/facts/xref.py": "from bot.store.memo import fact\n\nowners = fact\n",
            "bot/tree.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bot.facts import xref\n",
        },
    )
    graph = import_graph(root)
    assert graph["bot.store.memo"] == {"bot.facts.xref"}
    assert graph["bot.tree"] == set()  # a TYPE_CHECKING import runs nothing
    assert upward_imports(graph) == ["bot.store.memo (store) imports bot.facts.xref (facts)"]
    assert folder_cycles(graph, root) == [["bot.facts", "bot.store"]]


def test_the_detector_lets_a_folder_compose_its_sub_folders(tmp_path):
    # bot/cmake/interpreter.py imports commands/, whose modules import bot/cmake/state.py: no
    # cycle, each module beside a sub-package counts on its own. Anything else is a cycle.
    root = _tree(
        tmp_path,
        {
            "bot/cmake/__init__.py": "",
            "bot/cmake/state.py": "",
            "bot/cmake/interpreter.py": "from bot.cmake.commands import HANDLERS\n",
            "bot/cmake/commands/__init__.py": "from bot.cmake.state import Frame\nHANDLERS = {}\n",
        },
    )
    assert folder_cycles(import_graph(root), root) == []
    (root / "bot/cmake/state.py").write_text("from bot.cmake.interpreter import run\n")
    assert folder_cycles(import_graph(root), root) == [
        ["bot.cmake.commands", "bot.cmake.interpreter", "bot.cmake.state"]
    ]


def test_the_readme_block_is_read_as_written():
    text = "## Layout\n<!-- layers:begin -->\nLowest first:\n1. **values**: `bot.tree`, `bot.model`\n2. **rules**: `checks`\n<!-- layers:end -->\n"
    assert readme_layers(text) == [("values", ("bot.tree", "bot.model")), ("rules", ("checks",))]
