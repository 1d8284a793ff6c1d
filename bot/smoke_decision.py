"""Is a change CUDA-touching? The reasons decide whether the GPU smoke job is asked for (design 8)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.snapshot import Snapshot

_CUDA_CMAKE = re.compile(r"\bCUDA\b|cuda|nvcc|--export-dynamic|whole-archive")


@dataclass(frozen=True, slots=True)
class SmokeDecision:
    """Whether the GPU smoke job is required, and every reason found."""

    required: bool
    reasons: tuple[str, ...]

    def to_json(self) -> dict:
        return {"required": self.required, "reasons": list(self.reasons)}


def classify(snap: Snapshot) -> SmokeDecision:
    """CUDA-touching when a path, a file type, a CUDA Buck target or a CMake CUDA line changed."""
    reasons: list[str] = []
    settings = snap.config.smoke
    for change in snap.changes.files:
        path = change.path
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
    for cell in CELLS:
        cuda = snap.head.cuda_reasons(cell)
        graph = snap.head.cell(cell)
        for label in sorted(cuda):
            target = graph.targets[label]
            change = changed_paths.get(target.path)
            if change and any(target.line <= n <= target.end_line for n in change.added):
                reasons.append(f"{label}: CUDA target changed in the `{cell}` cell")
    unique = tuple(dict.fromkeys(reasons))
    return SmokeDecision(bool(unique), unique)
