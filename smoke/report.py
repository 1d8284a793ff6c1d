"""Stage results and the JSON report: its schema, the overall status and the exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPORT_VERSION = 1
Status = Literal["passed", "failed", "skipped"]

# 77 is the exit code test harnesses (automake, meson) use for "skipped", so CI can tell it apart.
EXIT_CODES: dict[Status, int] = {"passed": 0, "failed": 1, "skipped": 77}


@dataclass(frozen=True, slots=True)
class StageOutcome:
    """What a stage concluded, before the runner adds its name and timing."""

    status: Status
    reason: str
    details: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StageResult:
    name: str
    status: Status
    reason: str
    seconds: float
    details: dict

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "details": self.details,
        }


def overall_status(stages: tuple[StageResult, ...]) -> Status:
    """Failed if any stage failed (except one that failed at base too); skipped if every stage skipped or
    a stage says the pull request went untested; else passed."""
    statuses = {"passed" if stage.details.get("also_at_base") else stage.status for stage in stages}
    if "failed" in statuses:
        return "failed"
    # What could not be tested (base did not build, no program ran on the GPU) is never passed: neutral.
    if statuses <= {"skipped"} or any(stage.details.get("untested") for stage in stages):
        return "skipped"
    return "passed"


def build_report(
    machine: dict,
    stages: tuple[StageResult, ...],
    link_contract: dict,
    canary: dict,
    correlation_id: str | None,
) -> dict:
    """The report document, version 1."""
    return {
        "version": REPORT_VERSION,
        "status": overall_status(stages),
        "correlation_id": correlation_id,
        "machine": machine,
        "stages": [stage.to_json() for stage in stages],
        "link_contract": link_contract,
        "canary": canary,
    }


def write_report(report: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")


COVERAGE_LINES = 12  # changed functions listed in the job log; the report keeps every one


def describe_report(report: dict) -> str:
    """One line per stage and the verdict, for the job log."""
    lines = [
        f"{stage['status']:>7}  {stage['name']:<15} {stage['seconds']:6.1f}s  {stage['reason']}"
        for stage in report["stages"]
    ]
    for item in (report.get("backend") or {}).get("new_at_head", []):
        lines.append(f"    new at head: {item['kind']}: {item['message']}")
    for line in (report.get("backend") or {}).get("fixed_at_head", []):
        lines.append(f"    fixed at head: {line}")
    rows = (report.get("backend") or {}).get("coverage", [])
    # What ran first: a pull request adding a file changes dozens of functions, and the log is read.
    shown = sorted(rows, key=lambda row: not row["ran_on_gpu"])[:COVERAGE_LINES]
    for row in shown:
        ran = "ran on the GPU" if row["ran_on_gpu"] else "NOT reached"
        lines.append(f"    changed: {row['path']}:{row['line']} {row['function']}: {ran} ({row['how']})")
    if len(rows) > len(shown):
        unreached = sum(not row["ran_on_gpu"] for row in rows) - sum(not row["ran_on_gpu"] for row in shown)
        lines.append(
            f"    changed: {len(rows) - len(shown)} more function(s), {unreached} of them not reached "
            "(backend.coverage in the report lists each)"
        )
    skipped = [stage["name"] for stage in report["stages"] if stage["status"] == "skipped"]
    if report["status"] == "passed" and skipped:
        # "passed" with skipped stages would claim what was never run; say how much was.
        ran = len(report["stages"]) - len(skipped)
        lines.append(
            f"smoke: incomplete: {ran} of {len(report['stages'])} stages passed, "
            f"{len(skipped)} skipped ({', '.join(skipped)})"
        )
    else:
        lines.append(f"smoke: {report['status']}")
    return "\n".join(lines)
