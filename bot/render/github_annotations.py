"""GitHub Actions workflow commands (`::error file=...::message`): annotations without an App.

The runner parses one command per line, so the message's newlines and the separators of the
property list are percent-encoded as the runner expects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.model import Finding, Severity

if TYPE_CHECKING:
    from bot.pipeline import Report

_COMMAND = {Severity.BLOCKER: "error", Severity.MAJOR: "error", Severity.MINOR: "warning", Severity.INFO: "notice"}


def render_github_annotations(report: Report) -> str:
    """One workflow command per finding, most severe first; empty when clean."""
    return "".join(annotation_command(finding) + "\n" for finding in report.findings)


def annotation_command(finding: Finding) -> str:
    """`::<level> file=..,line=..,endLine=..,title=..::<message>` for one finding."""
    properties = []
    if finding.path:
        properties += [f"file={escape_property(finding.path)}", f"line={max(1, finding.line)}"]
        properties.append(f"endLine={max(1, finding.line, finding.end_line)}")
    properties.append(f"title={escape_property(f'{finding.rule} ({finding.severity.label}): {finding.title}')}")
    message = finding.message.strip() or finding.title
    message += "".join(f"\n{e.path}:{e.line}: {e.note}" for e in finding.evidence)
    return f"::{_COMMAND[finding.severity]} {','.join(properties)}::{escape_data(message)}"


def escape_data(text: str) -> str:
    """Encode what ends a workflow command's message: `%`, CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Encode a property value: the message escapes plus the `:` and `,` that separate properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
