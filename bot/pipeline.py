"""One review, end to end: repository + revisions -> Report, for the checks it is given.

The composition root (`pr_check.review`) binds the product's checks; nothing here imports them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.buck.cells import is_build_file
from bot.buck.shim import shim_gitlink
from bot.check import Check
from bot.config import CONFIG_PATH, Config, config_origin, parse_config
from bot.diff import ChangeSet
from bot.model import ENGINE_RULES, Finding, ReviewMode, Severity
from bot.repo import GitRepository
from bot.review_stats import CellStats, ReviewStats, Unevaluated
from bot.store import reviews
from bot.store.evaluations import EvaluationCache
from bot.store.memo import FactCache, digest, reviewing
from bot.toolchain.switch import compiling, tier_state
from bot.tree import FileTree, memory_tree, noting_missing

if TYPE_CHECKING:  # imported by a review that runs its checks: one served from the store needs none
    from bot.smoke_decision import SmokeDecision
    from bot.snapshot import BuildModel


@dataclass(frozen=True)
class Report:
    """What a review found, ready for any renderer."""

    base: str
    head: str
    findings: tuple[Finding, ...]
    suppressed: tuple[Finding, ...]
    changes: ChangeSet
    smoke: SmokeDecision
    stats: ReviewStats = field(default_factory=ReviewStats)
    fail_level: Severity = Severity.MAJOR  # from the base revision's config
    inline_level: Severity = Severity.MAJOR  # from the base revision's config: what goes inline


def default_cache_dir(repo: GitRepository) -> Path:
    """Evaluation results live with the repository they came from."""
    return repo.git_dir / "pr-check" / "cache"


def review_trees(
    base_tree: FileTree,
    head_tree: FileTree,
    changes: ChangeSet,
    *,
    checks: Sequence[Check],
    cache: EvaluationCache | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    config: Config | None = None,
    stored_results: bool = True,
    check_jobs: int | None = None,
    compiled: bool | None = False,
) -> Report:
    """Review two trees; the configuration comes from the base tree unless given. `stored_results`
    False: run the checks even when this review's result is stored (benchmarks of the checks).
    `check_jobs`: 1 runs every check in this process, 2 shares them with a forked worker, None
    lets the engine decide (bot/parallel/check_split.py). `compiled`: the compiled tier
    (bot/facts/compiled.py) on, off, or None for on where a compiler is found."""
    started = time.perf_counter()
    # The same inputs reviewed before (a re-run, a restart, the same pull request asked twice):
    # the stored result, composed from nothing else (bot/store/reviews.py). Looked up
    # before the configuration is parsed: that needs the checks, which a lazy set imports only now.
    key = reviews.review_key(base_tree, head_tree, changes, config, checks) if cache is not None else None
    with compiling(compiled):
        tier = tier_state()
    if key is not None and tier[1] is not None:
        key = digest(key, "compiled", tier[1].identity)  # its verdicts are part of the result
    if cache is not None and key is not None and stored_results:
        stored = reviews.load(cache.facts, key, head_tree)
        if stored is not None:
            return _report(base_tree, head_tree, changes, stored, started)
    config = config if config is not None else load_config(base_tree, checks)
    from bot import engine  # the checks' machinery: a review served from the store needs none of it
    from bot.parallel.collector import collector_paused
    from bot.smoke_decision import classify
    from bot.snapshot import BuildModel, Snapshot

    base_model = BuildModel(base_tree, config, cache, progress)
    head_model = BuildModel(head_tree, config, cache, progress)
    # The one place the kind of run is decided: against an empty base (scan_tree, a first commit)
    # every file is new, so it is a scan; the engine makes each review's baseline run itself.
    mode = ReviewMode.REVIEW if base_tree.paths() else ReviewMode.SCAN
    snapshot = Snapshot(base_model, head_model, changes, config, mode=mode)
    # One fact cache for the whole review: base and head share it, later reviews read its store.
    with (
        collector_paused(),
        reviewing(cache.facts if cache is not None else FactCache(None)),
        noting_missing() as missing,
        compiling(compiled),
    ):
        result = engine.run(checks, snapshot, jobs=check_jobs)
        smoke = classify(snapshot)
        unevaluated = unevaluated_packages(head_model, changes, base_model)
    cells = {
        name: CellStats(
            packages=len(graph.packages),
            targets=len(graph.targets),
            failed=len(graph.errors),
            evaluated=sum(1 for r in graph.packages.values() if not r.cached),
        )
        for name, graph in head_model._cells.items()  # noqa: SLF001 - only the cells that were used
    }
    stored = reviews.StoredReview(
        findings=result.findings,
        suppressed=result.suppressed,
        smoke=smoke,
        cells=cells,
        checks=tuple(result.checks_run),
        unevaluated=unevaluated,
        not_blamed={
            reason: sum(1 for why, _ in result.not_blamed if why == reason)
            for reason in sorted({why for why, _ in result.not_blamed})
        },
        fail_level=config.fail_level,
        missing=frozenset(missing),
        inline_level=config.inline_level,
        shim_stand_ins=shim_stand_ins(head_tree),
    )
    if cache is not None and key is not None:
        reviews.save(cache.facts, key, replace(stored, cells={n: replace(c, evaluated=0) for n, c in cells.items()}))
    return _report(base_tree, head_tree, changes, stored, started)


def _report(
    base_tree: FileTree,
    head_tree: FileTree,
    changes: ChangeSet,
    stored: reviews.StoredReview,
    started: float,
) -> Report:
    return Report(
        base=base_tree.revision,
        head=head_tree.revision,
        findings=stored.findings,
        suppressed=stored.suppressed,
        changes=changes,
        smoke=stored.smoke,
        stats=ReviewStats(
            seconds=round(time.perf_counter() - started, 3),
            cells=stored.cells,
            checks=stored.checks,
            unevaluated=stored.unevaluated,
            not_blamed=stored.not_blamed,
            shim_stand_ins=stored.shim_stand_ins,
        ),
        fail_level=stored.fail_level,
        inline_level=stored.inline_level if stored.inline_level is not None else Severity.MAJOR,
    )


def shim_stand_ins(tree: FileTree) -> str | None:
    """The path of the `shim/` submodule `tree` pins when its files are not mounted (the built-in
    stand-ins are evaluated in their place); None when they are, or when the tree pins none."""
    gitlink = shim_gitlink(tree)
    if gitlink is None or gitlink[0] in tree.mounts:
        return None
    return gitlink[0]


def unevaluated_packages(
    model: BuildModel, changes: ChangeSet, base: BuildModel | None = None
) -> tuple[Unevaluated, ...]:
    """Packages the change touches (a file in the package's directory) that failed to evaluate
    in a cell the review used: what the model could not see, why, and whether the package failed
    at `base` too (then the change did not break it, and the review of it is as blind at base)."""
    touched = changes.paths
    found = []
    for cell, graph in sorted(model._cells.items()):  # noqa: SLF001 - only the cells that were used
        for error in graph.errors:
            prefix = f"{error.package}/" if error.package else ""
            if any(path.startswith(prefix) and "/" not in path[len(prefix) :] for path in touched) or any(
                path.startswith(prefix) for path in touched if is_build_file(path) or path.endswith(".bzl")
            ):
                at_base = None
                if base is not None:
                    at_base = any(e.package == error.package for e in base.cell(cell).errors)
                found.append(Unevaluated(cell, f"//{error.package}", error.kind.value, error.message, at_base))
    return tuple(found)


def scan_tree(
    tree: FileTree, *, checks: Sequence[Check], cache: EvaluationCache | None = None, progress=None
) -> Report:
    """Audit a whole tree: every finding, nothing filtered against a base."""
    return review_trees(
        memory_tree({}, revision=""),
        tree,
        ChangeSet(()),
        checks=checks,
        cache=cache,
        progress=progress,
        config=load_config(tree, checks),
    )


def load_config(tree: FileTree, checks: Sequence[Check]) -> Config:
    """The configuration at `tree`; rule ids it names must be among `checks` or the engine's."""
    known = frozenset(c.id for c in checks) | frozenset(ENGINE_RULES)
    return parse_config(tree.read_text(CONFIG_PATH), known, origin=config_origin(tree.revision))
