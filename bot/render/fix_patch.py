"""A fix shown as a unified patch, folded in a `<details>` block. Pure.

GitHub turns a fix into a one-click `suggestion` only when its lines lie in the diff's hunk under
the comment. Any other fix (lines outside the diff, another file) is shown as the patch a
maintainer can read at a glance and apply with `git apply`: the `-` lines are the fix's
`original`, the `+` lines its replacement. A fix made before fixes carried their original lines
has no `-` side to show, so its replacement is shown instead.
"""

from __future__ import annotations

import difflib

from bot.model import Fix


def unified_patch(fix: Fix, context: int = 3) -> str:
    """The fix as a unified diff (`--- a/` `+++ b/` `@@ -l,n +l,m @@`); needs `fix.original`.

    A fix replaces whole lines and often keeps most of them (an anchor line, a call it adds one
    keyword to), so the hunks show only the lines that change, with `context` lines around them,
    as `git diff` would.
    """
    above = fix.above.split("\n") if fix.above else []
    below = fix.below.split("\n") if fix.below else []
    removed = above + fix.original.split("\n") + below
    added = above + fix.replacement.split("\n") + below
    first = fix.line - len(above)
    lines = [f"--- a/{fix.path}", f"+++ b/{fix.path}"]
    matcher = difflib.SequenceMatcher(None, removed, added, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        old_start, old_end = group[0][1], group[-1][2]
        new_start, new_end = group[0][3], group[-1][4]
        lines.append(
            f"@@ -{_hunk_range(first + old_start, old_end - old_start)} "
            f"+{_hunk_range(first + new_start, new_end - new_start)} @@"
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [f" {line}" for line in removed[i1:i2]]
                continue
            lines += [f"-{line}" for line in removed[i1:i2]]
            lines += [f"+{line}" for line in added[j1:j2]]
    return "\n".join(lines)


def _hunk_range(start: int, count: int) -> str:
    """`start,count` as a hunk header writes it; an empty side names the line before it."""
    return f"{start - 1 if count == 0 else start},{count}"


def fix_location(fix: Fix) -> str:
    """`path:line`, or `path` lines a-b for a range."""
    if fix.end_line > fix.line:
        return f"`{fix.path}` lines {fix.line}-{fix.end_line}"
    return f"`{fix.path}:{fix.line}`"


def collapsed_fix(fix: Fix) -> list[str]:
    """Markdown lines of a `<details>` block holding the fix: a ```diff patch, or the replacement text."""
    description = fix.description.strip() or "Suggested fix"
    if fix.original:
        summary, language, content = "patch", "diff", unified_patch(fix)
    else:  # an old fix: its replaced lines are unknown, so only the new text can be shown
        summary, language, content = "replacement", "", fix.replacement.rstrip("\n")
    fence = _fence_for(content)
    return [
        f"<details><summary>{_escape_html(description)} ({_escape_html(_plain(fix_location(fix)))}): {summary}</summary>",
        "",
        fence + language,
        content,
        fence,
        "",
        "</details>",
    ]


def _fence_for(content: str) -> str:
    """A backtick fence longer than any backtick run in `content`, so the block cannot end early."""
    longest = run = 0
    for character in content:
        run = run + 1 if character == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _plain(text: str) -> str:
    # Markdown inside <summary> is not rendered by GitHub; backticks would show as they are.
    return text.replace("`", "")


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
