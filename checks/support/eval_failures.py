"""Evaluation failures of Buck packages as hits: shared by the four eval-error checks."""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.buckconfig import BuckConfig
from bot.buck.cells import CELLS, cell_named
from bot.buck.packages import load_buckconfig
from bot.buck.targets import EvalError, EvalErrorKind
from bot.facts.build_scope import scope_of
from bot.model import Evidence, Hit, ReviewMode
from bot.snapshot import Snapshot


def failure_hits(snap: Snapshot, kinds: frozenset[EvalErrorKind], describe) -> Iterator[Hit]:
    """One hit per package that fails at head, with a failure of the given kinds, in any cell.

    A package that already failed at base is not newly broken, whatever it fails on now: a
    package that could not load one missing file and now stops at the next, or moved from
    TARGETS to BUCK with the same failure, was broken before the change.

    In a cell whose builds are the CI's commands (open-source buck2), a package that no such
    command loads breaks no CI job, but it is broken all the same for anyone who queries or
    builds it: reported, at minor, naming the command that fails, never dropped.
    """
    config = load_buckconfig(snap.head.tree)
    macro_roots = _macro_roots(config)
    for cell in CELLS:
        graph = snap.head.cell(cell)
        scope = scope_of(snap.head, cell) if cell_named(cell).is_oss else None
        base_packages = snap.base.cell(cell).packages if snap.mode is not ReviewMode.BASELINE else {}
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
            unloaded = scope is not None and not scope.evaluates(error.package)
            yield Hit(
                path=path,
                line=line,
                message=describe(error, graph) + (_unloaded_note(error) if unloaded else ""),
                key=f"{error.package}:{error.kind.value}",
                cell=cell,
                target=f"//{error.package}",
                offending_text=error.message,
                evidence=evidence[-4:],
                outside_build_scope=unloaded,
            )


def _unloaded_note(error: EvalError) -> str:
    package = f"//{error.package}"
    pattern = f"{package}/..." if error.package else "//..."
    return (
        f" No CI command of the `{error.cell}` build loads `{package}`, so its CI stays green and this "
        f"is reported at minor; but `buck2 uquery {pattern}` fails there, as does any build of a target "
        "that depends on the package."
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
