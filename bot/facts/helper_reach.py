"""Which cells a macro helper's result reaches: re-evaluate a package with the calls marked.

Meta-internal helpers such as `get_nvcc_arch_args()` cannot be read here: the cells record them
as stubs that return an empty list, so a target's evaluated `nvcc_flags` look the same whether
or not the helper was applied. To tell `get_nvcc_arch_args() if is_fbcode else []` from an
unconditional call, the package is evaluated again with every call to the helper extended by a
marker item (`(helper(...) + [MARKER])`), and the marker shows where the result went. The
rewrite is made in memory, on the files of the target's call stack only; nothing is cached.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from bot.buck.cell_graphs import evaluate_cell
from bot.buck.targets import BuckTarget, flatten
from bot.facts import revision

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

MARKER = "--pr-check-helper-result"


def helper_calls(name_pattern: str) -> re.Pattern[str]:
    """The regex of calls (not definitions) to helpers whose name matches `name_pattern`."""
    return re.compile(rf"(?<!def )\b({name_pattern})\s*\(([^()\n]*)\)")


def reached_attribute(
    model: BuildModel, cells: tuple[str, ...], target: BuckTarget, attribute: str, name_pattern: str
) -> dict[str, bool] | None:
    """cell -> whether a call to a matching helper contributes to `attribute` of `target` there.

    None when no file of the target's call stack calls such a helper, or when the rewritten
    package does not evaluate in one of the cells (then nothing can be concluded).
    """
    key = ("helper-reach:reached", target.label, target.path, attribute, name_pattern, cells)
    return revision.tree_memo(model, key, lambda: _reached(model, cells, target, attribute, name_pattern))


def _reached(
    model: BuildModel, cells: tuple[str, ...], target: BuckTarget, attribute: str, name_pattern: str
) -> dict[str, bool] | None:
    calls = helper_calls(name_pattern)
    files = dict.fromkeys([target.path, *(frame.path for frame in target.stack)])
    rewritten: dict[str, str] = {}
    for path in files:
        text = model.text(path)
        if text is not None and calls.search(text):
            rewritten[path] = calls.sub(lambda m: f"({m.group(1)}({m.group(2)}) + [{MARKER!r}])", text)
    if not rewritten:
        return None
    tree = _RewrittenTree(model.tree, rewritten)
    result: dict[str, bool] = {}
    for cell in cells:
        package = model.cell(cell).packages.get(target.package)
        if package is None:
            return None
        graph = evaluate_cell(tree, cell, packages={target.package: package.build_file})  # pyright: ignore[reportArgumentType] - duck-typed: forwards every FileTree read
        probed = graph.targets.get(target.label)
        if probed is None:
            return None
        result[cell] = MARKER in (str(v) for v in flatten(probed.attr(attribute)))
    return result


class _RewrittenTree:
    """A FileTree with a few files' texts replaced; everything else is the original's."""

    def __init__(self, tree: Any, replacements: dict[str, str]) -> None:
        self._tree = tree
        self._replacements = {path: text.encode() for path, text in replacements.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tree, name)

    def read(self, path: str) -> bytes | None:
        resolved = self._tree.resolve(path)
        if resolved in self._replacements:
            return self._replacements[resolved]
        return self._tree.read(path)

    def read_text(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else data.decode("utf-8", errors="replace")

    def blob_id(self, path: str) -> str | None:
        resolved = self._tree.resolve(path)
        if resolved in self._replacements:
            return "rewritten-" + hashlib.sha1(self._replacements[resolved]).hexdigest()
        return self._tree.blob_id(path)
