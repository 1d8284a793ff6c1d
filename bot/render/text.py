"""Terminal output (rich): findings grouped by severity, each with evidence and a fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from bot.model import Finding, Severity

if TYPE_CHECKING:
    from bot.pipeline import Report

_STYLE = {Severity.BLOCKER: "bold red", Severity.MAJOR: "red", Severity.MINOR: "yellow", Severity.INFO: "cyan"}


def render_text(report: "Report", console: Console) -> None:
    """Print the review as a person reads it: most severe first."""
    short = (report.base[:10] or "(empty)") + ".." + (report.head[:10] or "(tree)")
    console.print(f"[bold]pr-check[/bold] {short}: {len(report.changes.files)} file(s) changed")
    if not report.findings:
        console.print("[green]No findings new at head.[/green]")
    for finding in report.findings:
        _finding(finding, console)
    if report.suppressed:
        console.print(f"[dim]{len(report.suppressed)} finding(s) suppressed with @lint-ignore.[/dim]")
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in Severity}
    summary = ", ".join(f"{n} {s.label}" for s, n in sorted(counts.items(), reverse=True) if n) or "clean"
    console.print(f"[bold]Summary:[/bold] {summary}")
    if report.smoke.required:
        console.print("[bold]GPU smoke job:[/bold] required")
        for reason in report.smoke.reasons[:10]:
            console.print(f"  - {escape(reason)}")
        if len(report.smoke.reasons) > 10:
            console.print(f"  ... and {len(report.smoke.reasons) - 10} more")


def _finding(finding: Finding, console: Console) -> None:
    place = f"{finding.path}:{finding.line}" if finding.path else "(pr-check)"
    header = Text.assemble(
        (f"{finding.severity.label.upper():8}", _STYLE[finding.severity]),
        (f"{finding.rule}", "bold"),
        "  ",
        (place, "underline"),
    )
    console.print()
    console.print(header)
    if finding.target:
        console.print(f"  target: {escape(finding.target)}" + (f" (cell {finding.cell})" if finding.cell else ""))
    console.print("  " + escape(finding.message), soft_wrap=False)
    for evidence in finding.evidence:
        console.print(f"  [dim]evidence[/dim] {escape(evidence.path)}:{evidence.line}: {escape(evidence.note)}")
    if finding.fix is not None:
        console.print(f"  [green]fix[/green] {escape(finding.fix.path)}:{finding.fix.line}: {escape(finding.fix.description)}")
        for line in finding.fix.replacement.splitlines():
            console.print(f"    [green]{escape(line)}[/green]")
