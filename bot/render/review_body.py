"""What a person reads of one review: the comment budget, the review body, capped evidence. Pure.

The budget: a group of near-duplicate findings (`bot.render.finding_groups`) at or above the inline level
(`[review] inline_level`, major by default) gets an inline comment where the diff has its line;
a loud group outside the diff is listed in the review body, each one; everything below the level
goes into one collapsed section of the body, by rule with counts. The check run keeps the whole
record, and the JSON and SARIF reports every finding with all of its evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.model import Evidence, Finding, Severity
from bot.render.finding_groups import FindingGroup, capped
from bot.review_stats import Unevaluated

EVIDENCE_SHOWN = 8  # evidence lines a comment shows before "and N more"
PLACES_SHOWN = 6  # other places of a group a comment names
LOUD_LISTED = 20  # loud groups outside the diff listed one by one in the review body
LESSER_PER_RULE = 10  # groups of one rule listed in the collapsed section


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 finding", "2 findings" (or the given plural)."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def count_phrase(findings: Sequence[Finding]) -> str:
    """ "3 issues (1 blocker, 2 minor)"."""
    counts: dict[Severity, int] = {}
    for finding in findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    detail = ", ".join(f"{counts[s]} {s.label}" for s in sorted(counts, reverse=True))
    return f"{plural(sum(counts.values()), 'issue')} ({detail})"


def evidence_lines(evidence: Sequence[Evidence], shown: int = EVIDENCE_SHOWN) -> list[str]:
    """Markdown bullets of the evidence, at most `shown`, then "and N more"."""
    items = [f"`{item.path}:{item.line}`: {item.note}" for item in evidence]
    lines = [f"- {item}" for item in capped(items, shown)]
    if len(items) > shown:
        lines[-1] += " (the check run and the JSON report list every one)"
    return lines


def group_lines(group: FindingGroup) -> list[str]:
    """What a group adds to its lead's comment: the other targets, places and rules it stands for."""
    lines: list[str] = []
    if len(group.targets) > 1:
        names = ", ".join(f"`{target}`" for target in group.targets)
        lines.append(f"Targets: {names} (one point, made once for all of them).")
    others = [f"`{path}:{line}`" for path, line in group.places[1:]]
    if others:
        lines.append(f"Also at {', '.join(capped(others, PLACES_SHOWN))}: the same cause, one finding for all.")
    if len(group.rules) > 1:
        lines.append(f"Also reported by {', '.join(f'`{rule}`' for rule in group.rules[1:])}: the same defect.")
    return lines


def group_entry(group: FindingGroup) -> str:
    """One line of the review body for a group: where, what, and how many it stands for."""
    lead = group.lead
    where = f"`{lead.path}:{lead.line}`" if lead.path else "(the pull request)"
    on = f" on `{lead.target}`" if lead.target else ""
    cell = f" ({lead.cell})" if lead.cell else ""
    more = []
    if len(group.targets) > 1:
        more.append(f"{plural(len(group.targets) - 1, 'more target')}")
    if len(group.places) > 1:
        more.append(f"{plural(len(group.places) - 1, 'more line')}")
    extra = f" (+{', '.join(more)})" if more else ""
    return f"{where}{on}{cell}: {lead.title}{extra}"


def render_review_body(
    groups: Sequence[FindingGroup],
    inline_count: int,
    loud_off_diff: Sequence[FindingGroup],
    inline_level: Severity,
    head_sha: str,
    marker: str,
    check_run_name: str,
) -> str:
    """The review's own text: counts, the loud groups the diff cannot hold, the rest collapsed."""
    findings = [member for group in groups for member in group.members]
    if not findings:
        return "\n".join([f"pr-check found no issues at `{head_sha[:12]}`.", "", marker])
    lines = [f"pr-check found {count_phrase(findings)} at `{head_sha[:12]}`."]
    if len(groups) < len(findings):
        lines.append(
            f"Near-duplicates (one cause, several lines or targets) are shown once: {plural(len(groups), 'entry', 'entries')}."
        )
    if inline_count:
        lines.append(
            f"{plural(inline_count, 'inline comment')} below, for the findings at {inline_level.label} or above "
            "on the lines this pull request changes."
        )
    if loud_off_diff:
        lines += ["", f"At {inline_level.label} or above, outside the lines this pull request changes:"]
        shown = loud_off_diff[:LOUD_LISTED]
        lines += [f"- **{g.lead.rule}** ({g.severity.label}) {group_entry(g)}" for g in shown]
        if len(loud_off_diff) > len(shown):
            lines.append(f"- and {len(loud_off_diff) - len(shown)} more; see the `{check_run_name}` check run")
    lesser = [group for group in groups if group.severity < inline_level]
    if lesser:
        lines += ["", *lesser_section(lesser, inline_level, check_run_name)]
    lines += ["", "Comment `/pr-check help` for commands.", marker]
    return "\n".join(lines)


def lesser_section(lesser: Sequence[FindingGroup], inline_level: Severity, check_run_name: str) -> list[str]:
    """The collapsed section of the findings below the inline level, by rule with counts."""
    by_rule: dict[str, list[FindingGroup]] = {}
    for group in lesser:
        by_rule.setdefault(group.lead.rule, []).append(group)
    count = sum(len(group.members) for group in lesser)
    severities = sorted({group.severity for group in lesser}, reverse=True)
    labels = " and ".join(severity.label for severity in severities)
    lines = [
        "<details>",
        f"<summary>{plural(count, labels + ' finding')} below {inline_level.label}, not posted inline "
        f"({plural(len(by_rule), 'rule')})</summary>",
        "",
    ]
    for rule, rule_groups in sorted(by_rule.items(), key=lambda item: (-item[1][0].severity, item[0])):
        members = sum(len(group.members) for group in rule_groups)
        counted = plural(members, "finding")
        if len(rule_groups) < members:
            counted += f" in {plural(len(rule_groups), 'entry', 'entries')}"
        lines.append(f"**`{rule}`** ({rule_groups[0].severity.label}): {counted}")
        entries = [group_entry(group) for group in rule_groups]
        lines += [f"- {entry}" for entry in capped(entries, LESSER_PER_RULE)]
        lines.append("")
    lines += [f"Each with its message, evidence and fix: the `{check_run_name}` check run.", "</details>"]
    return lines


def unevaluated_lines(unevaluated: Sequence[Unevaluated]) -> list[str]:
    """**Not evaluated**, per package: whether it failed at base too, and what was therefore not checked."""
    lines = [
        f"**Not evaluated**: {plural(len(unevaluated), 'package')} this change touches failed to evaluate; no rule "
        "checked their targets in that cell, so findings there are unknown:"
    ]
    for item in unevaluated:
        if item.failed_at_base:
            history = "it failed the same way at base, so this change did not break it"
        elif item.failed_at_base is False:
            history = "**it evaluated at base: this change breaks it**"
        else:
            history = "whether it failed at base is not known"
        reason = item.reason.replace("\n", " ")[:300]
        lines.append(
            f"- `{item.package}` in `{item.cell}`: {history}; not checked: every target it defines in `{item.cell}` "
            f"({item.kind}: {reason})"
        )
    return lines


def shim_note(path: str) -> str:
    """What a review without the `shim/` submodule's files says about it."""
    return (
        f"**Stand-ins**: `{path}/` (the buck2-shims-meta submodule) is not initialised here, so the open-source "
        "cell was evaluated with pr-check's built-in stand-ins for its macros; run `git submodule update --init "
        f"{path}` or pass `--shim` to evaluate the real ones."
    )
