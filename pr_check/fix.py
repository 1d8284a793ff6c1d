"""`pr-check fix` and `pr-check hook --fix`: apply the fixes of a review's findings until they settle.

A round reviews a tree, applies to each file the fixes of the findings new at that tree (the
review has already dropped suppressed findings and unselected rules), and makes the tree with
those files rewritten. Fixes that overlap one applied in the same round are left for the next
round, where the review computes them again on the new text; a fix whose lines are no longer
there is refused (a StaleFix), never forced. Rounds stop when nothing changes, or after
MAX_ROUNDS, so a fix that does not remove its finding cannot loop.

Rounds work on tree ids in git's object database (`bot/repo.py` makes them), so nothing on disk
changes until the end: `write_work_tree` then writes only the files whose contents differ, and
only where the work-tree file still holds what was reviewed. `fix_round` is pure.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.fix_commit import plan_fix_commit
from bot.model import Finding, Fix, Severity
from bot.pipeline import Report
from bot.tree import FileTree, blob_id_of
from pr_check.fix_platforms import RoundJudge, loss_reason, withheld_reason

MAX_ROUNDS = 5
_REGULAR_MODES = ("100644", "100755")


@dataclass(frozen=True, slots=True)
class Refusal:
    """A finding whose fix was not applied, and why."""

    finding: Finding
    reason: str


@dataclass(frozen=True, slots=True)
class Round:
    """What one round did: the files it rewrote (path -> new contents) and the fate of each fix."""

    files: Mapping[str, bytes]
    applied: tuple[Finding, ...]
    refused: tuple[Refusal, ...]
    postponed: tuple[Finding, ...]  # overlapping an applied fix: recomputed by the next round's review


def fix_round(findings: Iterable[Finding], tree: FileTree, withheld: Mapping[str, str] | None = None) -> Round:
    """Apply the fixes of `findings` to the files of `tree` (pure: returns the new contents).

    `withheld` maps the fingerprints of findings whose fix must not be applied to the reason
    (fixed in an earlier round yet still there, or a fix that made a new finding). The edit
    itself is the App's (`bot.fix_commit.plan_fix_commit`), so `fix` and `/pr-check fix` agree.
    """
    withheld = withheld or {}
    refused: list[Refusal] = []
    candidates: list[Finding] = []
    for finding in findings:
        if finding.fix is None:
            continue
        reason = withheld.get(finding.fingerprint) or _why_not(finding, tree)
        if reason:
            refused.append(Refusal(finding, reason))
        else:
            candidates.append(finding)

    def read_text(path: str) -> str | None:
        data = tree.read(path)
        return None if data is None else data.decode("utf-8", "surrogateescape")

    plan = plan_fix_commit(candidates, read_text)
    refused += [Refusal(finding, reason) for finding, reason in plan.left if finding not in plan.overlapping]
    files = {path: text.encode("utf-8", "surrogateescape") for path, text in plan.files}
    return Round(files, plan.fixed, tuple(refused), plan.overlapping)


def _why_not(finding: Finding, tree: FileTree) -> str:
    fix: Fix = finding.fix  # type: ignore[assignment]
    if any(fix.path == mount or fix.path.startswith(mount + "/") for mount in tree.mounts):
        return "the file is inside a submodule"
    entry = tree.entry(fix.path)
    if entry is None or tree.resolve(fix.path) != fix.path:
        return "the file is not in the tree (or is a symlink)"
    if entry.mode not in _REGULAR_MODES or tree.read(fix.path) is None:
        return "the file is not a regular file whose contents are at hand"
    return ""


@dataclass(frozen=True)
class FixRun:
    """The rounds from a start tree to the tree where fixes settled, and the reviews at both ends."""

    start: str  # tree ids
    final: str
    applied: tuple[Finding, ...]  # every finding whose fix was applied, in order
    refused: tuple[Refusal, ...]  # of findings still there at the end
    first: Report  # the review of the start tree
    report: Report  # the review of the final tree
    rounds: int
    changed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # fingerprint -> targets its fix changed

    @property
    def fixed(self) -> tuple[Finding, ...]:
        """Findings fixed: applied, and gone from the final review."""
        left = {f.fingerprint for f in self.report.findings}
        return tuple(f for f in self.applied if f.fingerprint not in left)


def fix_until_settled(
    start: str,
    review: Callable[[str], tuple[Report, FileTree]],
    rewrite: Callable[[str, Mapping[str, tuple[bytes, str]]], str],
    max_rounds: int = MAX_ROUNDS,
    judge: RoundJudge | None = None,
) -> FixRun:
    """Review `start`, apply fixes, review the result, until a round changes nothing.

    `review(tree_id)` reviews a tree; `rewrite(tree_id, {path: (contents, mode)})` makes a new one.
    A round whose result is worse than its input is not kept: it has a finding its input did not (a
    fix that breaks the file's syntax, say), or, with a `judge`, it takes a target off a platform
    where the target built before the change (a guard on a target that others depend on,
    `pr_check.fix_platforms`). The files whose fixes do that on their own are found, their fixes
    are withheld with the reason (left as suggestions), and the round is made again without them.
    """
    tree_id = start
    report, tree = review(tree_id)
    first = report
    applied: list[Finding] = []
    changed: dict[str, tuple[str, ...]] = {}
    withheld: dict[str, str] = {}
    refused: dict[str, Refusal] = {}
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        done = fix_round(report.findings, tree, withheld)
        refused.update({r.finding.fingerprint: r for r in done.refused})
        if not done.files:
            break
        modes = {path: tree.entry(path).mode for path in done.files}  # type: ignore[union-attr]
        candidate = rewrite(tree_id, {path: (data, modes[path]) for path, data in done.files.items()})
        candidate_report, candidate_tree = review(candidate)
        worse = _worse(report, tree, candidate_report, candidate_tree, judge)
        if not worse:
            applied += done.applied
            if judge is not None:
                changed.update(
                    {f.fingerprint: judge.changed(tree, candidate_tree, f.fix) for f in done.applied if f.fix}
                )
            withheld.update({f.fingerprint: "its fix was applied and the finding is still there" for f in done.applied})
            tree_id, report, tree = candidate, candidate_report, candidate_tree
            continue
        blamed = False
        for path, data in done.files.items():
            alone, alone_tree = review(rewrite(tree_id, {path: (data, modes[path])}))
            why = _worse(report, tree, alone, alone_tree, judge)
            if why:
                blamed = True
                withheld.update(
                    {
                        f.fingerprint: withheld_reason(why, alone=True)
                        for f in done.applied
                        if f.fix is not None and f.fix.path == path
                    }
                )
        if not blamed:  # only the fixes together make it: withhold them all
            withheld.update({f.fingerprint: withheld_reason(worse, alone=False) for f in done.applied})
    left = {f.fingerprint for f in report.findings}
    return FixRun(
        start,
        tree_id,
        tuple(applied),
        tuple(r for key, r in refused.items() if key in left),
        first,
        report,
        rounds,
        changed,
    )


def _worse(before: Report, tree: FileTree, after: Report, after_tree: FileTree, judge: RoundJudge | None) -> str:
    """How the reviewed tree `after` is worse than `before` ("" when it is not), as a reason."""
    made = new_findings(before, after)
    if made:
        return f"makes a new finding: {made[0].rule} at {made[0].path}:{made[0].line}"
    lost = judge.losses(tree, after_tree) if judge is not None else ()
    return loss_reason(lost) if lost else ""


def new_findings(before: Report, after: Report) -> tuple[Finding, ...]:
    """Defects of `after` that `before` has not: neither their fingerprint nor their rule, path and
    target (a fix may change the text another finding's fingerprint is made of).

    Informational findings do not count: they describe the change, not a defect in it (a guard
    added to a CUDA target is a guard change without a test, `test-missing`, whoever wrote it),
    so they cannot make a fix worse than the finding it removes.
    """
    known = {f.fingerprint for f in before.findings} | {(f.rule, f.path, f.target) for f in before.findings}
    return tuple(
        f
        for f in after.findings
        if f.severity > Severity.INFO and f.fingerprint not in known and (f.rule, f.path, f.target) not in known
    )


@dataclass(frozen=True, slots=True)
class Written:
    """What `write_work_tree` did: files written and files left alone with the reason."""

    written: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]


def write_work_tree(root: Path, start: FileTree, final: FileTree, skip_reason: str) -> Written:
    """Write each file whose contents differ between `start` and `final` into the work tree at
    `root`, only where the file on disk still holds the `start` contents (or those with CRLF line
    endings, as git's autocrlf checks out); its mode is kept. Other files are never opened for
    writing."""
    written: list[str] = []
    skipped: list[tuple[str, str]] = []
    for path in sorted(set(start.paths()) | set(final.paths())):
        before, after = start.blob_id(path), final.blob_id(path)
        if before == after or after is None:
            continue
        target = root / path
        new = final.read(path)
        try:
            current = target.read_bytes() if not target.is_symlink() else None
        except OSError:
            current = None
        if current is None or new is None:
            skipped.append((path, "it is not a regular file in the work tree"))
            continue
        if blob_id_of(current) != before:
            if b"\r\n" in current and blob_id_of(current.replace(b"\r\n", b"\n")) == before:
                new = new.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            else:
                skipped.append((path, skip_reason))
                continue
        _replace_file(target, new)
        written.append(path)
    return Written(tuple(written), tuple(skipped))


def _replace_file(target: Path, data: bytes) -> None:
    """Write atomically (a reader sees the old file or the new one), keeping the file's mode."""
    mode = stat.S_IMODE(target.stat().st_mode)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.pr-check-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def summary_lines(run: FixRun, written: Written | None, head_label: str) -> list[str]:
    """The plain-text account of a fix run: what was fixed, what is left and why, what was written
    (`written` is None when nothing is written: a diff is printed instead)."""
    skipped = dict(written.skipped) if written is not None else {}
    fixed = [f for f in run.fixed if f.fix is not None and f.fix.path not in skipped]
    left = run.report.findings
    refused = {r.finding.fingerprint: r.reason for r in run.refused}
    files = sorted({f.fix.path for f in fixed if f.fix is not None})
    lines = [
        f"pr-check fix {_label(run.report.base)}..{head_label} ({_plural(len(run.first.changes.files), 'file')} changed): "
        f"{_plural(len(fixed), 'finding')} fixed in "
        f"{_plural(len(files), 'file')}, {_plural(len(left), 'finding')} left"
    ]
    for finding in fixed:
        targets = run.changed.get(finding.fingerprint) or ((finding.target,) if finding.target else ())
        changed = f" (changed {', '.join(f'`{label}`' for label in targets)})" if targets else ""
        lines.append(
            f"fixed: {finding.path}:{finding.line} {finding.rule}: "
            f"{finding.fix.description if finding.fix else ''}{changed}"
        )
    for finding in run.fixed:
        if finding.fix is not None and finding.fix.path in skipped:
            lines.append(f"not fixed: {finding.path}:{finding.line} {finding.rule}: {finding.fix.path} was not written")
    for finding in left:
        why = (
            "no mechanical fix"
            if finding.fix is None
            else refused.get(finding.fingerprint, "its fix is left to the next run")
        )
        lines.append(f"left: {finding.path}:{finding.line} {finding.rule} ({finding.severity.label}): {why}")
    if written is not None:
        lines += [f"written: {path}" for path in written.written]
        lines += [f"not written: {path}: {reason}" for path, reason in written.skipped]
    return [line.rstrip() for line in lines]


def _label(revision: str) -> str:
    return revision[:12] if len(revision) == 40 else revision or "(no base)"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
