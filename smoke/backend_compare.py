"""What is new at head: the backend stages of base and head, compared, and placed in the pull request's diff.

A compile error, a lost export, a duplicate definition or a stage failure that base shares is the tree's
(or the machine's), not the pull request's; only what head adds is reported as new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from smoke.link_errors import added_cmake_line, added_text, find_definition

UNDEFINED_SYMBOL = re.compile(r"undefined symbol: ([A-Za-z_][A-Za-z0-9_]*)")
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")


@dataclass(frozen=True, slots=True)
class NewAtHead:
    """One thing head breaks that base did not. kind: compile-error, link-error, symbol-lost,
    duplicate-definition, stage-failed."""

    kind: str
    message: str
    path: str | None = None
    line: int | None = None
    in_diff: bool = False

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "in_diff": self.in_diff,
        }


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


DEFINITION_SUFFIXES = (".cpp", ".cc", ".cu", ".c")


def locate(checkout: Path, name: str) -> tuple[str, int] | None:
    """Where `name` is still defined in the checkout's backend sources (e.g. now `static`), if anywhere."""
    pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
    for directory in ("backends/aoti", "backends/cuda"):
        for path in sorted((checkout / directory).rglob("*")):
            if path.suffix not in DEFINITION_SUFFIXES or not path.is_file():
                continue
            for number, row in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                if pattern.search(row) and not row.rstrip().endswith(";") and '"' not in row.split(name)[0]:
                    return path.relative_to(checkout).as_posix(), number
    return None


def compare(base: dict, head: dict, diff_text: str = "", head_checkout: Path | None = None) -> list[NewAtHead]:
    """base and head are `backend_summary` dicts; the result lists what head adds, diff lines first."""
    added = added_lines(diff_text)
    found: list[NewAtHead] = []
    base_errors = {(error["path"], error["message"]) for error in base["errors"]}
    for error in head["errors"]:
        if (error["path"], error["message"]) in base_errors:
            continue
        in_diff = error["line"] in added.get(error["path"], ())
        where = "a line this pull request adds" if in_diff else "outside the diff"
        found.append(
            NewAtHead(
                "compile-error",
                f"{error['path']}:{error['line']}: {error['message']} "
                f"(compiling {error['source']} for {error['target']}; {where})",
                error["path"],
                error["line"],
                in_diff,
            )
        )
    base_links = {_link_key(problem) for problem in base.get("link_problems", ())}
    for problem in head.get("link_problems", ()):
        if _link_key(problem) in base_links:
            continue
        cause = cause_in_diff(problem, diff_text) if diff_text else None
        place = cause or next((tuple(item["definition"]) for item in problem["objects"] if item["definition"]), None)
        message = problem["message"]
        if cause:
            message += f"; {cause[0]}:{cause[1]}, a line this pull request adds, put it there"
        found.append(
            NewAtHead("link-error", message, place[0] if place else None, place[1] if place else None, bool(cause))
        )
    # A library that did not build exports nothing and loads nothing: its lost symbols and the stages
    # after it are consequences of the compile or link failure above, not failures of their own.
    built = head["statuses"].get("compile") != "failed"
    lost = sorted(set(base["exported"]) - set(head["exported"]))
    if lost and built:
        shown = ", ".join(lost[:5]) + (", ..." if len(lost) > 5 else "")
        place = locate(head_checkout, lost[0]) if head_checkout is not None and len(lost) <= 5 else None
        where = f"; {lost[0]} is still written at {place[0]}:{place[1]}" if place else ""
        in_diff = bool(place) and place[1] in added.get(place[0], ())
        found.append(
            NewAtHead(
                "symbol-lost",
                f"{len(lost)} aoti_torch_* symbol(s) no longer exported by libaoti_cuda_shims.so: {shown}{where}",
                place[0] if place else None,
                place[1] if place else None,
                in_diff,
            )
        )
    for name in sorted(set(head["duplicated"]) - set(base["duplicated"]))[:20]:
        found.append(
            NewAtHead("duplicate-definition", f"{name} is defined strongly in more than one loaded object at head")
        )
    # A load that fails on a symbol head no longer exports is that lost symbol again, at run time: said
    # once, with the symbol-lost finding, not as a failure of its own.
    lost_names = set(lost)
    for stage, status in head["statuses"].items():
        if not built and stage != "doctor":
            continue
        missing = UNDEFINED_SYMBOL.findall(head["reasons"].get(stage, ""))
        if (
            status == "failed"
            and missing
            and set(missing) <= lost_names
            and base["statuses"].get(stage) != "failed"
            and any(item.kind == "symbol-lost" for item in found)
        ):
            symbol_lost = next(index for index, item in enumerate(found) if item.kind == "symbol-lost")
            found[symbol_lost] = replace(
                found[symbol_lost],
                message=f"{found[symbol_lost].message}; {stage} fails on it (undefined symbol: {missing[0]})",
            )
            continue
        if status == "failed" and base["statuses"].get(stage) != "failed" and stage != "compile":
            if stage == "program-run" and head.get("program_wrong_values"):
                found.append(_wrong_result(head, added, head_checkout))
                continue
            found.append(NewAtHead("stage-failed", f"{stage}: {head['reasons'][stage]}"))
    return sorted(found, key=lambda item: not item.in_diff)


def _wrong_result(head: dict, added: dict[str, frozenset[int]], head_checkout: Path | None) -> NewAtHead:
    """A wrong result of the program, placed at a line the pull request changes in a .cu source whose
    kernel the program's wrapper calls; else at that kernel's definition."""
    kernels: dict[str, str] = head.get("program_kernels", {})
    reason = head["reasons"]["program-run"]
    for symbol, source in sorted(kernels.items(), key=lambda item: item[1]):
        lines = sorted(added.get(source, ()))
        if lines:
            return NewAtHead(
                "wrong-result",
                f"program-run: {reason}; {source}:{lines[0]} (defining {symbol}, which "
                "the program calls) is a line this pull request changes",
                source,
                lines[0],
                True,
            )
    for symbol, source in sorted(kernels.items()):
        place = find_definition(head_checkout, source, symbol) if head_checkout is not None else None
        if place:
            return NewAtHead(
                "wrong-result",
                f"program-run: {reason}; the diff changes none of the kernels it "
                f"calls; {symbol} is defined at {place[0]}:{place[1]}",
                place[0],
                place[1],
                False,
            )
    return NewAtHead("wrong-result", f"program-run: {reason}")


def _link_key(problem: dict) -> tuple:
    return (
        problem["kind"],
        problem["symbol"],
        tuple(sorted(item["source"] or item["object"] for item in problem["objects"])),
    )


def cause_in_diff(problem: dict, diff_text: str) -> tuple[str, int] | None:
    """The line this pull request adds that put a source of the problem into the link: the definition's
    own line, or a CMake line naming the source."""
    lines = added_text(diff_text)
    added: dict[str, set[int]] = {}
    for path, number in lines:
        added.setdefault(path, set()).add(number)
    frozen = {path: frozenset(numbers) for path, numbers in added.items()}
    for item in problem["objects"]:
        definition = item.get("definition")
        if definition and definition[1] in frozen.get(definition[0], ()):
            return definition[0], definition[1]
    for item in problem["objects"]:
        if item.get("source"):
            found = added_cmake_line(item["source"], frozen, lines)
            if found:
                return found
    return None


def fixed_at_head(base: dict, head: dict) -> list[str]:
    """Stages that fail at base and pass at head: what the pull request repairs, said in words."""
    return [
        f"{stage}: failed at base ({base['reasons'][stage]}), passes at head"
        for stage, status in base["statuses"].items()
        if status == "failed" and head["statuses"].get(stage) == "passed"
    ]


def backend_summary(run) -> dict:
    """The facts of a BackendRun that compare() reads, as JSON."""
    build = run.build
    return {
        "errors": [error.to_json() for error in build.errors] if build else [],
        "exported": sorted(run.exported),
        "duplicated": sorted(run.duplicated),
        # The compile stage's link causes, and the host's when only its link failed.
        "link_problems": [*run.compile.details.get("link_problems", ()), *run.host.details.get("link_problems", ())],
        "statuses": {name: outcome.status for name, outcome in run.stages()},
        "reasons": {name: outcome.reason for name, outcome in run.stages()},
    }
