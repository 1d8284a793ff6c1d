"""What is new at head: the backend stages of base and head, compared, and placed in the pull request's diff.

A compile error, a lost export, a duplicate definition or a stage failure that base shares is the tree's
(or the machine's), not the pull request's; only what head adds is reported as new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


@dataclass(frozen=True, slots=True)
class NewAtHead:
    """One thing head breaks that base did not. kind: compile-error, symbol-lost, duplicate-definition,
    stage-failed."""

    kind: str
    message: str
    path: str | None = None
    line: int | None = None
    in_diff: bool = False

    def to_json(self) -> dict:
        return {"kind": self.kind, "message": self.message, "path": self.path, "line": self.line,
                "in_diff": self.in_diff}


def added_lines(diff_text: str) -> dict[str, frozenset[int]]:
    """Per file (its head path), the line numbers the unified diff adds."""
    lines: dict[str, set[int]] = {}
    path = None
    number = 0
    for row in diff_text.splitlines():
        if row.startswith("+++ "):
            target = row[4:].strip().split("\t")[0]
            path = None if target == "/dev/null" else target.removeprefix("b/")
            continue
        match = HUNK.match(row)
        if match:
            number = int(match.group("start"))
            continue
        if path is None or row.startswith(("--- ", "diff ", "index ")):
            continue
        if row.startswith("+"):
            lines.setdefault(path, set()).add(number)
            number += 1
        elif row.startswith(" "):
            number += 1
    return {name: frozenset(numbers) for name, numbers in lines.items()}


def compare(base: dict, head: dict, diff_text: str = "") -> list[NewAtHead]:
    """base and head are `backend_summary` dicts; the result lists what head adds, diff lines first."""
    added = added_lines(diff_text)
    found: list[NewAtHead] = []
    base_errors = {(error["path"], error["message"]) for error in base["errors"]}
    for error in head["errors"]:
        if (error["path"], error["message"]) in base_errors:
            continue
        in_diff = error["line"] in added.get(error["path"], ())
        where = "a line this pull request adds" if in_diff else "outside the diff"
        found.append(NewAtHead("compile-error", f"{error['path']}:{error['line']}: {error['message']} "
                                                f"(compiling {error['source']} for {error['target']}; {where})",
                               error["path"], error["line"], in_diff))
    lost = sorted(set(base["exported"]) - set(head["exported"]))
    if lost and not head["errors"]:
        shown = ", ".join(lost[:5]) + (", ..." if len(lost) > 5 else "")
        found.append(NewAtHead("symbol-lost", f"{len(lost)} aoti_torch_* symbol(s) no longer exported by "
                                              f"libaoti_cuda_shims.so: {shown}"))
    for name in sorted(set(head["duplicated"]) - set(base["duplicated"]))[:20]:
        found.append(NewAtHead("duplicate-definition", f"{name} is defined strongly in more than one loaded "
                                                       f"object at head"))
    for stage, status in head["statuses"].items():
        if status == "failed" and base["statuses"].get(stage) != "failed" and stage != "compile":
            found.append(NewAtHead("stage-failed", f"{stage}: {head['reasons'][stage]}"))
    return sorted(found, key=lambda item: not item.in_diff)


def backend_summary(run) -> dict:
    """The facts of a BackendRun that compare() reads, as JSON."""
    build = run.build
    return {
        "errors": [error.to_json() for error in build.errors] if build else [],
        "exported": sorted(run.exported),
        "duplicated": sorted(run.duplicated),
        "statuses": {name: outcome.status for name, outcome in run.stages()},
        "reasons": {name: outcome.reason for name, outcome in run.stages()},
    }
