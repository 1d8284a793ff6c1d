"""`pr-check fix` and `pr-check hook`: which trees are reviewed, against what, and what reaches the disk.

`fix` reviews the work tree against the base `review` would use; `hook` reviews the index (what
the commit will hold) against HEAD, which is what pre-commit asks. Both go through the fix rounds
of `pr_check.fix` on tree ids, then write (or, with `fix --diff`, print) the difference.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, touches
from bot.config import Config
from bot.pipeline import Report, default_cache_dir, load_config, review_trees
from bot.render.printable import printable
from bot.repo import GitRepository
from bot.snapshot import BuildModel
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree
from pr_check.commands.request import local_config, output_request
from pr_check.fix import fix_until_settled, summary_lines, write_work_tree
from pr_check.fix_platforms import RoundJudge
from pr_check.output import OutputRequest, exit_status, render, write
from pr_check.product_checks import ProductChecks, all_checks
from pr_check.review_input import INDEX, WORK_TREE, Index, ReviewInput, TreeAgainst, WorkTree, resolve
from pr_check.shim import shim_files

# What the pre-commit hook reviews; `.pre-commit-hooks.yaml`'s `files:` says the same (tested).
HOOK_FILE_KINDS = BUCK_FILES + CMAKE_FILES + CPP_FILES


def _tree_reviewer(
    repo: GitRepository,
    arguments: argparse.Namespace,
    request: OutputRequest,
    config: Config | None,
    base: str,
    label: str,
) -> tuple[Callable[[str], tuple[Report, FileTree]], RoundJudge]:
    """A function reviewing any tree id of `repo` against `base` (a commit or tree id), and the
    judge of the fix rounds on the same builds (the same configuration and evaluation cache)."""
    with_shim = shim_files(repo, arguments.shim)
    cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
    reviewed: list[str] = []
    base_tree = with_shim(resolve(repo, TreeAgainst(base, base, label)).base)
    settings = config if config is not None else load_config(base_tree, all_checks())

    def review(tree_id: str) -> tuple[Report, FileTree]:
        name = label if not reviewed or tree_id == reviewed[0] else f"{label} + fixes"
        reviewed.append(tree_id)
        given = resolve(repo, TreeAgainst(base, tree_id, name)).with_files(with_shim)
        report = review_trees(
            given.base, given.head, given.changes, checks=request.checks(all_checks()), cache=cache, config=config
        )
        return request.filter(report), given.head

    def build(tree: FileTree) -> BuildModel:
        return BuildModel(tree, settings, cache)

    return review, RoundJudge(build(base_tree), build)


def run_fix(arguments: argparse.Namespace) -> int:
    """`pr-check fix`: 0 nothing changed and nothing left at the fail level, 1 files changed (or a diff
    printed) or findings left at the fail level."""
    request = output_request(arguments)
    config = local_config(arguments.config)
    with GitRepository(arguments.repo) as repo:
        root = repo.work_tree_root()
        given: ReviewInput = resolve(repo, WorkTree(arguments.base))
        assert given.head_id is not None  # the work tree is a tree object
        notes = [given.base_note] if given.base_note else []
        review, judge = _tree_reviewer(repo, arguments, request, config, given.base_id, WORK_TREE)
        run = fix_until_settled(given.head_id, review, repo.tree_with_files, judge=judge)
        if arguments.diff:  # stdout is the patch alone, so it can be piped to `git apply`
            patch = repo.diff_trees(run.start, run.final) if run.final != run.start else ""
            sys.stdout.write(patch)
            sys.stdout.flush()
            _say(request, notes + summary_lines(run, None, WORK_TREE), sys.stderr)
            return 1 if patch else exit_status(run.report, request)
        written = write_work_tree(
            root,
            repo.tree_object(run.start, WORK_TREE),
            repo.tree_object(run.final, f"{WORK_TREE} + fixes"),
            "it changed while pr-check reviewed it (or a git filter rewrites it)",
        )
        _say(request, notes + summary_lines(run, written, WORK_TREE), sys.stdout)
        # As ruff's --fix: what is left at the fail level still fails, even when nothing could be changed.
        return 1 if written.written else exit_status(run.report, request)


def run_hook(arguments: argparse.Namespace) -> int:
    """`pr-check hook [--fix]`: review the staged change; exit 1 on findings at the fail level or files changed."""
    request = output_request(arguments)
    config = local_config(arguments.config)
    with GitRepository(arguments.repo) as repo:
        root = repo.work_tree_root()
        staged = resolve(repo, Index())
        assert staged.head_id is not None  # the index is a tree object
        if not any(touches(path, HOOK_FILE_KINDS) for path in staged.changes.paths):
            _say(request, ["pr-check hook: no staged Buck, CMake or C++ change to review"], sys.stdout)
            return 0
        review, judge = _tree_reviewer(repo, arguments, request, config, staged.base_id, INDEX)
        if not arguments.fix:
            report, _ = review(staged.head_id)
            write(render(report, request, ProductChecks(), notes=staged.notes), None)
            return exit_status(report, request)
        run = fix_until_settled(staged.head_id, review, repo.tree_with_files, judge=judge)
        written = write_work_tree(
            root,
            repo.tree_object(run.start, INDEX),
            repo.tree_object(run.final, f"{INDEX} + fixes"),
            "it has unstaged changes; stage or stash them and run again",
        )
        _say(request, summary_lines(run, written, INDEX), sys.stdout)
        # Nothing written: the staged change is as it was reviewed first, findings and all.
        return 1 if written.written else exit_status(run.first, request)


def _say(request: OutputRequest, lines: list[str], stream) -> None:
    if request.verbosity >= 0:
        stream.write(printable("".join(line + "\n" for line in lines)))
        stream.flush()
