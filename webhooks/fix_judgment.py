"""`/pr-check fix`'s commit, planned from a review and judged on where targets build before it is pushed.

`pr-check fix` withholds a fix that takes a target off a platform where it built at the base of
the change (pr_check/fix_platforms.py); the App's commit is judged the same way. Judging means
evaluating the pull request's Buck files, which the worker never does itself (webhooks/isolation.py),
so the two halves run in two processes:

- in the review child, `judge_head_fixes` plans the commit from the review's findings
  (`plan_head_fixes`, the function the worker plans with), builds the base, the head and the head
  with the planned files, and sends back one `FileVerdict` per planned file: its path, the blob id
  of the contents judged, and the platform losses (none: it may be pushed);
- in the worker, `withhold` keeps a planned file only where a verdict for exactly its contents
  loses nothing. A file whose fixes lose a platform, or that has no verdict for its contents, is
  not pushed: its findings go to "Not applied" with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from bot.fix_commit import FixCommit, plan_fix_commit
from bot.model import Finding
from bot.render.printable import is_printable_path
from bot.repo import GitRepository
from bot.snapshot import BuildModel
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree, blob_id_of
from pr_check.fix_platforms import FileVerdict, RoundJudge, judge_files
from pr_check.review import load_config
from pr_check.review_input import Revisions, resolve

_TEXT_MODES = ("100644", "100755")
UNJUDGED = "where it builds could not be checked, so it was not pushed; `/pr-check fix` again checks it anew"


def plan_head_fixes(findings: Iterable[Finding], head: FileTree) -> FixCommit:
    """The commit of fixes for the head `head`: every fix applied once to the head's text files."""
    findings = tuple(findings)
    # The Git Data API names files in UTF-8: a file whose name is not cannot be written through it.
    named = [f for f in findings if f.fix is None or is_printable_path(f.fix.path)]
    unnamed = tuple(
        (f, f"GitHub's API cannot name `{f.fix.path}` (its name is not UTF-8); `pr-check fix` in a checkout applies it")
        for f in findings
        if f.fix and not is_printable_path(f.fix.path)
    )
    plan = plan_fix_commit(named, lambda path: _head_text(head, path))
    return FixCommit(plan.files, plan.fixed, plan.left + unnamed, plan.overlapping)


def _head_text(tree: FileTree, path: str) -> str | None:
    """A regular file's text at the head; None for links, submodules, binaries and missing paths."""
    entry = tree.entry(path)
    if entry is None or entry.mode not in _TEXT_MODES:
        return None
    data = tree.read(path)
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def judge_head_fixes(
    repo_path: str, base_sha: str, head_sha: str, cache_dir: str, findings: Sequence[Finding]
) -> tuple[FileVerdict, ...]:
    """In the review child: plan the commit as the worker will, and judge its files on the base, the
    head and the head with them (the review's configuration, read at the base, and its cache)."""
    with GitRepository(repo_path) as repo:
        plan = plan_head_fixes(findings, repo.tree(head_sha))
        if not plan.files:
            return ()
        given = resolve(repo, Revisions(base_sha, head_sha))
        settings = load_config(given.base)
        cache = EvaluationCache(Path(cache_dir))
        builds: dict[str, BuildModel] = {}

        def build(tree: FileTree) -> BuildModel:  # the head is built once, not once per file judged
            return builds.setdefault(tree.digest(), BuildModel(tree, settings, cache))

        judge = RoundJudge(build(given.base), build)
        return judge_files(judge, given.head, {path: text.encode("utf-8") for path, text in plan.files})


def withhold(plan: FixCommit, verdicts: Iterable[FileVerdict]) -> FixCommit:
    """`plan` with only the files a verdict clears for exactly their contents; the fixes of every
    other file move to `left` with the verdict's reason (or `UNJUDGED` where there is none)."""
    judged = {(verdict.path, verdict.blob): verdict for verdict in verdicts}
    kept: list[tuple[str, str]] = []
    reasons: dict[str, str] = {}
    for path, text in plan.files:
        verdict = judged.get((path, blob_id_of(text.encode("utf-8"))))
        if verdict is None:
            reasons[path] = UNJUDGED
        elif verdict.losses:
            reasons[path] = verdict.reason
        else:
            kept.append((path, text))
    withheld = tuple(
        (finding, reasons[finding.fix.path])
        for finding in plan.fixed
        if finding.fix is not None and finding.fix.path in reasons
    )
    fixed = tuple(finding for finding in plan.fixed if finding.fix is None or finding.fix.path not in reasons)
    return FixCommit(tuple(kept), fixed, plan.left + withheld, plan.overlapping)
