"""The `fix` and `hook` commands: which trees are reviewed, against what, and what reaches the disk.

`fix` reviews the work tree against the base `review` would use; `hook` reviews the index (what
the commit will hold) against HEAD, which is what pre-commit asks. Both go through the fix rounds
of `pr_check.fix` on tree ids, then write (or, with `fix --diff`, print) the difference.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, touches
from bot.config import Config
from bot.diff import parse_diff
from bot.errors import UsageError
from bot.pipeline import Report
from bot.render.printable import printable
from bot.repo import EMPTY_TREE, GitRepository
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree
from pr_check import revisions
from pr_check.fix import fix_until_settled, summary_lines, write_work_tree
from pr_check.output import OutputRequest, exit_status, render, write
from pr_check.review import CHECKS, default_cache_dir, review_trees
from pr_check.shim import shim_files

# What the pre-commit hook reviews; `.pre-commit-hooks.yaml`'s `files:` says the same (tested).
HOOK_FILE_KINDS = BUCK_FILES + CMAKE_FILES + CPP_FILES


@dataclass(frozen=True, slots=True)
class FixRequest:
    """Where `fix` and `hook` work, and how: what the CLI parsed, nothing else."""

    repo: str
    shim: Path | None = None  # the shim submodule's files (see `review --shim`)
    cache_dir: Path | None = None  # None: inside the git directory
    base: str | None = None  # fix --base; None: the default base of HEAD
    diff: bool = False  # fix --diff: print the patch instead of writing files
    apply: bool = False  # hook --fix: write the fixes to the work tree


def _tree_reviewer(
    repo: GitRepository,
    arguments: FixRequest,
    request: OutputRequest,
    config: Config | None,
    base: str,
    label: str,
) -> Callable[[str], tuple[Report, FileTree]]:
    """A function reviewing any tree id of `repo` against `base` (a commit or tree id)."""
    with_shim = shim_files(repo, arguments.shim)
    base_tree = with_shim(repo.tree_object(base, base if base != EMPTY_TREE else "(no commit)"))
    cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
    reviewed: list[str] = []

    def review(tree_id: str) -> tuple[Report, FileTree]:
        name = label if not reviewed or tree_id == reviewed[0] else f"{label} + fixes"
        reviewed.append(tree_id)
        head = with_shim(repo.tree_object(tree_id, name))
        changes = parse_diff(repo.diff_trees(base, tree_id))
        report = review_trees(base_tree, head, changes, checks=request.checks(CHECKS), cache=cache, config=config)
        return request.filter(report), head

    return review


def run_fix(arguments: FixRequest, request: OutputRequest, config: Config | None) -> int:
    """`pr-check fix`: 0 nothing changed and nothing left at the fail level, 1 files changed (or a diff
    printed) or findings left at the fail level."""
    with GitRepository(arguments.repo) as repo:
        root = repo.work_tree_root()
        if arguments.base is None:
            head = repo.head_commit()
            if head is None:
                raise UsageError(f"{repo.path}: no commit yet to find a base from; pass --base")
            chosen = revisions.default_base(repo, head)
            base_sha, notes = chosen.sha, [chosen.description]
        else:
            base_sha, notes = repo.resolve(arguments.base), []
        start = repo.work_tree_id()
        run = fix_until_settled(
            start, _tree_reviewer(repo, arguments, request, config, base_sha, "work tree"), repo.tree_with_files
        )
        if arguments.diff:  # stdout is the patch alone, so it can be piped to `git apply`
            patch = repo.diff_trees(run.start, run.final) if run.final != run.start else ""
            sys.stdout.write(patch)
            sys.stdout.flush()
            _say(request, notes + summary_lines(run, None, "work tree"), sys.stderr)
            return 1 if patch else exit_status(run.report, request)
        written = write_work_tree(
            root,
            repo.tree_object(run.start, "work tree"),
            repo.tree_object(run.final, "work tree + fixes"),
            "it changed while pr-check reviewed it (or a git filter rewrites it)",
        )
        _say(request, notes + summary_lines(run, written, "work tree"), sys.stdout)
        # As ruff's --fix: what is left at the fail level still fails, even when nothing could be changed.
        return 1 if written.written else exit_status(run.report, request)


def run_hook(arguments: FixRequest, request: OutputRequest, config: Config | None) -> int:
    """`pr-check hook [--fix]`: review the staged change; exit 1 on findings at the fail level or files changed."""
    with GitRepository(arguments.repo) as repo:
        root = repo.work_tree_root()
        base = repo.head_commit() or EMPTY_TREE
        staged = repo.index_tree_id()
        touched = parse_diff(repo.diff_trees(base, staged)).paths
        if not any(touches(path, HOOK_FILE_KINDS) for path in touched):
            _say(request, ["pr-check hook: no staged Buck, CMake or C++ change to review"], sys.stdout)
            return 0
        review = _tree_reviewer(repo, arguments, request, config, base, "index")
        if not arguments.apply:
            report, _ = review(staged)
            write(render(report, request, notes=("head: the staged change (the index)",)), None)
            return exit_status(report, request)
        run = fix_until_settled(staged, review, repo.tree_with_files)
        written = write_work_tree(
            root,
            repo.tree_object(run.start, "index"),
            repo.tree_object(run.final, "index + fixes"),
            "it has unstaged changes; stage or stash them and run again",
        )
        _say(request, summary_lines(run, written, "index"), sys.stdout)
        # Nothing written: the staged change is as it was reviewed first, findings and all.
        return 1 if written.written else exit_status(run.first, request)


def _say(request: OutputRequest, lines: list[str], stream) -> None:
    if request.verbosity >= 0:
        stream.write(printable("".join(line + "\n" for line in lines)))
        stream.flush()
