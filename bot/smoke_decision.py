"""Is a change CUDA-touching? The reasons decide whether the GPU smoke job is asked for (design 8)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.buck.cells import CELLS

if TYPE_CHECKING:  # a stored review unpickles SmokeDecision: serving it must not import the build models
    from bot.snapshot import Snapshot

_CUDA_CMAKE = re.compile(r"\bCUDA\b|cuda|nvcc|--export-dynamic|whole-archive")
# Files no build reads: a change to them under a CUDA path cannot change what the GPU job tests.
_DOCUMENTATION_SUFFIXES = (".md", ".rst", ".markdown", ".adoc", ".png", ".jpg", ".jpeg", ".gif", ".svg")
_DOCUMENTATION_NAMES = frozenset({"LICENSE", "OWNERS", "CODEOWNERS", ".gitignore"})
_STATIC_TWIN = "_static"


@dataclass(frozen=True, slots=True)
class SmokeDecision:
    """Whether the GPU smoke job is required, and every reason found."""

    required: bool
    reasons: tuple[str, ...]

    def to_json(self) -> dict:
        return {"required": self.required, "reasons": list(self.reasons)}


def classify(snap: Snapshot) -> SmokeDecision:
    """CUDA-touching when a path, a file type, a CUDA Buck target or a CMake CUDA line changed."""
    from bot.facts import revision

    reasons: list[str] = []
    settings = snap.config.smoke
    for change in snap.changes.files:
        path = change.path
        if is_documentation(path) and (change.old_path is None or is_documentation(change.old_path)):
            continue
        if path.endswith((".cu", ".cuh")):
            reasons.append(f"{path}: CUDA source changed")
        elif any(path.startswith(prefix) for prefix in settings.cuda_paths):
            reasons.append(f"{path}: under a CUDA path ({next(p for p in settings.cuda_paths if path.startswith(p))})")
        elif path.endswith(("CMakeLists.txt", ".cmake")):
            text = snap.head.text(path) or ""
            lines = text.splitlines()
            if any(0 < n <= len(lines) and _CUDA_CMAKE.search(lines[n - 1]) for n in change.added):
                reasons.append(f"{path}: CMake lines mentioning CUDA or link flags changed")
    changed_paths = {c.path: c for c in snap.changes.files}
    # One reason per target: the same label evaluated in several cells, and its `_static` twin,
    # are one change to a reader.
    targets: dict[str, tuple[set[str], set[str]]] = {}
    for cell in CELLS:
        cuda = revision.cuda_reasons(snap.head, cell)
        graph = snap.head.cell(cell)
        for label in sorted(cuda):
            target = graph.targets[label]
            change = changed_paths.get(target.path)
            if change and any(target.line <= n <= target.end_line for n in change.added):
                stem = label[: -len(_STATIC_TWIN)] if label.endswith(_STATIC_TWIN) else label
                cells, labels = targets.setdefault(stem, (set(), set()))
                cells.add(cell)
                labels.add(label)
    for cells, labels in targets.values():
        names = " and ".join(f"`{label}`" for label in sorted(labels))
        where = ", ".join(f"`{cell}`" for cell in CELLS if cell in cells)
        reasons.append(f"{names}: CUDA target changed in the {where} cell{'s' if len(cells) > 1 else ''}")
    unique = tuple(dict.fromkeys(reasons))
    return SmokeDecision(bool(unique), unique)


def is_documentation(path: str) -> bool:
    """A file no build reads (Markdown, images, licences)."""
    name = path.rsplit("/", 1)[-1]
    return name in _DOCUMENTATION_NAMES or name.lower().endswith(_DOCUMENTATION_SUFFIXES)
