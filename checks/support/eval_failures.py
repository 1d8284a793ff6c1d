"""Evaluation failures of Buck packages as hits: shared by the four eval-error checks."""

from __future__ import annotations

from typing import Iterator

from bot.buck.cells import CELLS
from bot.buck.evaluation import EvalError
from bot.buck.buckconfig import BuckConfig
from bot.buck.evaluation import load_buckconfig
from bot.model import Evidence, Hit
from bot.snapshot import Snapshot


def failure_hits(snap: Snapshot, kinds: frozenset[str], describe) -> Iterator[Hit]:
    """One hit per package that fails at head, with a failure of the given kinds, in any cell.

    A package that already failed at base is not newly broken, whatever it fails on now: a
    package that could not load one missing file and now stops at the next, or moved from
    TARGETS to BUCK with the same failure, was broken before the change.
    """
    config = load_buckconfig(snap.head.tree)
    macro_roots = _macro_roots(config)
    for cell in CELLS:
        graph = snap.head.cell(cell)
        base_packages = snap.base.cell(cell).packages if snap.base is not snap.head else {}
        for error in graph.errors:
            if error.kind not in kinds:
                continue
            before = base_packages.get(error.package)
            if before is not None and before.error is not None:
                continue
            path, line = error_site(error, macro_roots)
            evidence = tuple(
                Evidence(frame.path, frame.line, f"in `{frame.function}`")
                for frame in error.frames
                if (frame.path, frame.line) != (path, line)
            )
            yield Hit(
                path=path,
                line=line,
                message=describe(error, graph),
                key=f"{error.package}:{error.kind}",
                cell=cell,
                target=f"//{error.package}",
                offending_text=error.message,
                evidence=evidence[-4:],
            )


def error_site(error: EvalError, macro_roots: tuple[str, ...]) -> tuple[str, int]:
    """The innermost traceback frame in the repository's own files (not in a macro library)."""
    if not error.path.startswith(macro_roots):
        return error.path, error.line  # where the interpreter stopped, in the repository's own code
    for frame in reversed(error.frames):
        if not frame.path.startswith(macro_roots):
            return frame.path, frame.line
    return error.path, error.line


def _macro_roots(config: BuckConfig) -> tuple[str, ...]:
    return tuple(r.strip("/") + "/" for r in config.cells.values() if r not in (".", "./", ""))

