"""What is new at head: the backend stages of base and head, compared, and placed in the pull request's diff.

A compile error, a lost export, a duplicate definition or a stage failure that base shares is the tree's
(or the machine's), not the pull request's; only what head adds is reported as new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from smoke.blame import Tree, blame_failure, blame_wrong_result, changed_lines
from smoke.export_loss import trace_lost_exports
from smoke.link_errors import added_cmake_line, added_text
from smoke.runtime_errors import LogPlace, RuntimeErrors

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
        hidden = None if cause or not diff_text else hidden_by_added_option(problem, head, added, head_checkout)
        place = cause or (hidden[:2] if hidden else None)
        place = place or next((tuple(item["definition"]) for item in problem["objects"] if item["definition"]), None)
        message = problem["message"]
        if cause:
            message += f"; {cause[0]}:{cause[1]}, a line this pull request adds, put it there"
        elif hidden:
            message += (
                f"; {hidden[3]} defines it, and `{hidden[2]}` now reaches its compile: {hidden[0]}:{hidden[1]}, "
                "a line this pull request adds"
            )
            cause = hidden[:2]
        found.append(
            NewAtHead("link-error", message, place[0] if place else None, place[1] if place else None, bool(cause))
        )
    # A library that did not build exports nothing and loads nothing: its lost symbols and the stages
    # after it are consequences of the compile or link failure above, not failures of their own.
    built = head["statuses"].get("compile") != "failed"
    lost = sorted(set(base["exported"]) - set(head["exported"]))
    if lost and built:
        still = (lambda name: locate(head_checkout, name)) if head_checkout is not None else (lambda name: None)
        for cause in trace_lost_exports(base, head, diff_text, still):
            found.append(NewAtHead("symbol-lost", cause.message, cause.path, cause.line, cause.in_diff))
    reported_links = any(item.kind == "link-error" for item in found)  # folded or not, said by its cause
    found = _fold_links_into_lost(found)
    for name in sorted(set(head["duplicated"]) - set(base["duplicated"]))[:20]:
        found.append(
            NewAtHead("duplicate-definition", f"{name} is defined strongly in more than one loaded object at head")
        )
    # A load that fails on a symbol head no longer exports is that lost symbol again, at run time: said
    # once, with the symbol-lost finding, not as a failure of its own; a link failure likewise is said
    # once, by its cause above, not again as the stage it stopped.
    lost_names = set(lost)
    for stage, status in head["statuses"].items():
        if status != "failed" or base["statuses"].get(stage) == "failed" or stage == "compile":
            continue
        if not built or (reported_links and stage in head.get("link_stages", ())):
            continue
        if _fold_into_lost(found, stage, head["reasons"].get(stage, ""), lost_names):
            continue
        if stage == "program-run" and head.get("programs"):
            found += _program_failures(base, head, diff_text, head_checkout, lost_names, found)
            continue
        found.append(NewAtHead("stage-failed", f"{stage}: {head['reasons'][stage]}"))
    return sorted(found, key=lambda item: not item.in_diff)


VISIBILITY_OPTIONS = ("-fvisibility=hidden", "-fvisibility-inlines-hidden")


def hidden_by_added_option(
    problem: dict, head: dict, added: dict[str, frozenset[int]], checkout: Path | None
) -> tuple[str, int, str, str] | None:
    """An undefined reference whose definition a visibility option this pull request adds now hides:
    (option's path, line, option, defining source). The definition is looked up in the shim library's
    sources, whose compile options (with the line each came from) the summary keeps."""
    if problem.get("kind") != "undefined-reference" or checkout is None:
        return None
    qualified = problem["symbol"].split("(", 1)[0]
    name = "::".join(qualified.split("::")[-2:])
    pattern = re.compile(rf"(?<![\w:]){re.escape(name)}\s*\(")
    for source, facts in sorted(head.get("shim_sources", {}).items()):
        file = checkout / source
        text = file.read_text(errors="replace") if file.is_file() else ""
        if not any(pattern.search(row) and not row.rstrip().endswith(";") for row in text.splitlines()):
            continue
        for option in facts.get("options", ()):
            path, line = option["origin"]
            if option["value"] in VISIBILITY_OPTIONS and line in added.get(path, ()):
                return path, line, option["value"], source
    return None


def _fold_links_into_lost(found: list[NewAtHead]) -> list[NewAtHead]:
    """A link failure caused by the same added line as lost exports (a visibility option hides both) is
    that finding again: said once, with the lost exports."""
    lost_at = {(item.path, item.line): item for item in found if item.kind == "symbol-lost" and item.in_diff}
    links = {
        place: [
            item for item in found if item.kind == "link-error" and item.in_diff and (item.path, item.line) == place
        ]
        for place in lost_at
    }
    kept = []
    for item in found:
        place = (item.path, item.line)
        if item.kind == "link-error" and item in links.get(place, ()):
            continue
        if item.kind == "symbol-lost" and links.get(place):
            said = "; and ".join(link.message.split("; ", 1)[0] for link in links[place])
            item = replace(item, message=f"{item.message}; the same line breaks a link: {said}")
        kept.append(item)
    return kept


def _fold_into_lost(found: list[NewAtHead], stage: str, reason: str, lost_names: set[str]) -> bool:
    missing = UNDEFINED_SYMBOL.findall(reason)
    index = next((index for index, item in enumerate(found) if item.kind == "symbol-lost"), None)
    if not missing or not set(missing) <= lost_names or index is None:
        return False
    found[index] = replace(
        found[index], message=f"{found[index].message}; {stage} fails on it (undefined symbol: {missing[0]})"
    )
    return True


def _program_failures(
    base: dict, head: dict, diff_text: str, head_checkout: Path | None, lost_names: set[str], found: list[NewAtHead]
) -> list[NewAtHead]:
    """One finding per program that fails at head and not at base, placed by its own evidence."""
    before = {run["name"]: run for run in base.get("programs", ())}
    changed = changed_lines(diff_text)
    tree = Tree(head_checkout)
    definitions: dict[str, str] = head.get("definitions", {})
    results = []
    for run in head["programs"]:
        if run["status"] != "failed" or before.get(run["name"], {}).get("status") == "failed":
            continue
        if _fold_into_lost(found, f"program {run['name']}", run["reason"], lost_names):
            continue
        said = f"program {run['name']}: {run['reason']}"
        if run.get("errors"):
            errors = RuntimeErrors(
                tuple(run["errors"]["failed_shims"]),
                tuple(LogPlace(p["file"], p["line"], p["message"]) for p in run["errors"]["places"]),
                tuple(run["errors"]["cuda_errors"]),
                tuple(run["errors"]["lines"]),
            )
            culprit = blame_failure(errors, definitions, changed, tree)
            if culprit is None:  # its own lines point outside the diff (a kernel's fatal check in a header)
                culprit = blame_wrong_result(run.get("calls", {}), changed, tree)
                if culprit is not None:
                    culprit = replace(
                        culprit, why=f"its error lines point outside the diff ({errors.summary()[:160]}); {culprit.why}"
                    )
            kind = "run-failure"
        elif run.get("ran"):
            culprit = blame_wrong_result(run.get("calls", {}), changed, tree)
            kind = "wrong-result"
        else:
            results.append(NewAtHead("stage-failed", said))
            continue
        if culprit is None:
            calls = ", ".join(f"{name} ({source})" for name, source in sorted(run.get("calls", {}).items())) or "none"
            results.append(
                NewAtHead(kind, f"{said}; the diff changes no definition this evidence points at (it calls: {calls})")
            )
            continue
        results.append(
            NewAtHead(kind, f"{said}; {culprit.place()}: {culprit.why}", culprit.path, culprit.line, culprit.in_diff)
        )
    return results


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


def backend_summary(run, plan=None) -> dict:
    """The facts of a BackendRun (and its plan) that compare() reads, as JSON."""
    from smoke.backend_stages import shim_sources

    build = run.build
    stages = {"compile": run.compile, "backend-host": run.host, "runtime-host": run.runtime_host}
    not_whole = run.exports.details.get("defined_in_linked_archives_not_exported", [])
    return {
        "errors": [error.to_json() for error in build.errors] if build else [],
        "exported": sorted(run.exported),
        "duplicated": sorted(run.duplicated),
        # Every link's first causes, and the stages whose failure they are (said once, by cause).
        "link_problems": [
            problem for outcome in stages.values() for problem in outcome.details.get("link_problems", ())
        ],
        "link_stages": sorted(name for name, outcome in stages.items() if outcome.details.get("link_problems")),
        "statuses": {name: outcome.status for name, outcome in run.stages()},
        "reasons": {name: outcome.reason for name, outcome in run.stages()},
        "definitions": dict(run.definitions),
        "shim_sources": {
            step.source: {
                "target": target,
                "origin": list(step.origin),
                "options": [{"value": flag.value, "origin": list(flag.origin)} for flag in step.options],
            }
            for target, step in (shim_sources(plan) if plan is not None else [])
        },
        "not_whole_at": run.exports.details.get("not_whole_at", []),
        "not_whole_symbols": [item["symbol"] for item in not_whole],
    }
