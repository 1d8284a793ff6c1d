"""One commit of fixes for a pull request head: which files change, which findings it fixes. Pure.

`/pr-check fix` takes the findings of a review of the head, applies every fix once (one round of
`bot.fixes.apply_fixes` per file), and pushes the result as one commit. A fix that no longer matches
the file, or that overlaps one applied before it, is left for the next round (the next review
recomputes it on the new text) and named in the reply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bot.buck.syntax import parse_starlark
from bot.check import BUCK_FILES, CMAKE_FILES, touches
from bot.cmake.syntax import parse_cmake
from bot.fixes import StaleFix, apply_fix, apply_fixes
from bot.model import Finding, Fix


@dataclass(frozen=True, slots=True)
class FixCommit:
    """The head files after the fixes, and what happened to each finding that had one."""

    files: tuple[tuple[str, str], ...]  # (path, new text), sorted by path; only files that change
    fixed: tuple[Finding, ...]
    left: tuple[tuple[Finding, str], ...]  # (finding, why its fix was not applied)
    overlapping: tuple[Finding, ...] = ()  # of `left`: those a later round recomputes on the new text


def plan_fix_commit(findings: Iterable[Finding], read_text: Callable[[str], str | None]) -> FixCommit:
    """Apply the fixes of `findings` to the head files that `read_text` returns (None: no such file)."""
    by_path: dict[str, list[Finding]] = {}
    fixes: dict[Finding, Fix] = {}  # every finding in by_path has one
    for finding in findings:
        if finding.fix is not None:
            by_path.setdefault(finding.fix.path, []).append(finding)
            fixes[finding] = finding.fix
    files: list[tuple[str, str]] = []
    fixed: list[Finding] = []
    left: list[tuple[Finding, str]] = []
    overlapping: list[Finding] = []
    for path in sorted(by_path):
        text = read_text(path)
        if text is None:
            left += [(finding, f"`{path}` is not a text file of the head") for finding in by_path[path]]
            continue
        usable: list[Fix] = []
        for finding in by_path[path]:
            problem = _problem(text, fixes[finding])
            if problem is not None:
                left.append((finding, problem))
            else:
                usable.append(fixes[finding])
        applied = apply_fixes(text, usable)
        done = set(applied.applied)
        for finding in by_path[path]:
            if finding.fix in done:
                fixed.append(finding)
            elif finding.fix in set(applied.overlapping):
                left.append((finding, "its lines overlap another fix; a new review recomputes it"))
                overlapping.append(finding)
        new_text = _keep_line_endings(text, applied.text)
        broken = _syntax_broken(path, text, new_text)
        if broken:  # never hand out a file that no longer parses: every fix of it is left
            done_here = [finding for finding in by_path[path] if finding.fix in done]
            fixed = [finding for finding in fixed if finding not in done_here]
            left += [(finding, f"with it the file would not parse ({broken})") for finding in done_here]
            continue
        if new_text != text:
            files.append((path, new_text))
    return FixCommit(tuple(files), tuple(fixed), tuple(left), tuple(overlapping))


def _syntax_broken(path: str, before: str, after: str) -> str:
    """The first syntax error `after` has and `before` had not, for Buck and CMake files; else "".

    The cheap guard both `/pr-check fix` and `pr-check fix` get: a fix is computed from spans of a
    file that parses, so a result that does not parse is a bug of the fix, and is not applied."""
    if touches(path, BUCK_FILES) and not path.endswith(".buckconfig"):
        errors = parse_starlark(after).errors
        if errors and not parse_starlark(before).errors:
            return f"line {errors[0].line}, column {errors[0].column}: {errors[0].message}"
    elif touches(path, CMAKE_FILES):
        problems = parse_cmake(after, path).problems
        if problems and not parse_cmake(before, path).problems:
            return f"line {problems[0].line}: {problems[0].message}"
    return ""


def _problem(text: str, fix: Fix) -> str | None:
    try:
        apply_fix(text, fix)
    except StaleFix:
        return "the lines it replaces are no longer in the file"
    except ValueError:
        return "its lines are past the end of the file"
    return None


def _keep_line_endings(before: str, after: str) -> str:
    """A file whose lines all ended in CRLF keeps CRLF on the lines a fix wrote (fixes are made with LF)."""
    if "\r\n" in before and before.count("\r\n") == before.count("\n"):
        return after.replace("\r\n", "\n").replace("\n", "\r\n")
    return after


def fix_commit_message(commit: FixCommit, number: int, head_sha: str, requested_by: str) -> str:
    """The commit message: a subject line, each finding the commit fixes, and each one whose fix it
    leaves out, with why."""
    count = len(commit.fixed)
    lines = [f"pr-check: fix {count} finding{'s' if count != 1 else ''} of #{number}", ""]
    lines += [f"- {_named(finding)}: {finding.title}" for finding in commit.fixed]
    if commit.left:
        lines += ["", "Not applied:"]
        lines += [f"- {_named(finding)}: {why}" for finding, why in commit.left]
    lines += ["", f"Fixes computed by pr-check on {head_sha[:12]}, pushed at the request of @{requested_by}."]
    return "\n".join(lines)


def _named(finding: Finding) -> str:
    return f"{finding.rule} at {finding.path}:{finding.line}" + (f" on {finding.target}" if finding.target else "")
