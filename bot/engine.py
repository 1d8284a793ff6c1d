"""run(checks, snapshot) -> findings: select, identify, keep what is new at head, suppress.

A check is run on (base, head, changes) and, when that found anything, on (base, base, no
changes). A finding whose identity (model.identity: rule, cell, target and subject; never the
file or the wording) the base run also produced existed before the pull request and is not
blamed on it. Two more rules keep old problems off the pull request:
- a finding on a target whose package failed to evaluate at base (so the base run could not
  see it) is blamed only when the change touched one of the finding's files;
- a finding in a cell whose real builds are driven by CI commands (the open-source build) is
  kept only when those commands reach its target or package (bot/facts/build_scope.py), unless
  its check reports it as outside that scope on purpose (a package that fails to load): such a
  finding is kept at minor at most.
A check that raises becomes an `internal-error` finding; the review goes on.

The checks may run on two cores (bot/parallel/check_split.py): each check's runs are one `CheckOutcome`,
computed here or in a worker process, and merged in the checks' order, so the result is the same
wherever each ran.
"""

from __future__ import annotations

import difflib
import re
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from bot.buck.cells import cell_named
from bot.check import BUCK_FILES, CMAKE_FILES, Check, touches
from bot.diff import ChangeSet
from bot.facts import cmake_models
from bot.model import INTERNAL_ERROR, Finding, Hit, ReviewMode, Severity, fingerprint, identity, internal_error

if TYPE_CHECKING:  # the models and the build scope are imported by a review that runs checks, not
    # by one served from the result store nor by the outputs that read this module's rule names
    from bot.snapshot import Snapshot

UNUSED_SUPPRESSION = "unused-suppression"
ENGINE_RULES = {
    INTERNAL_ERROR: (Severity.MAJOR, "A check crashed; its verdict on this change is unknown"),
    UNUSED_SUPPRESSION: (Severity.MINOR, "A `@lint-ignore` suppresses nothing"),
}

_SUPPRESSION = re.compile(r"(?:#|//)\s*@lint-ignore\s+([a-z0-9\-]+)(?:\s*:\s*(\S.*))?")


@dataclass(frozen=True, slots=True)
class Suppression:
    """A `@lint-ignore <id>: <reason>` comment in the head revision."""

    path: str
    line: int
    rule: str
    reason: str


@dataclass(frozen=True, slots=True)
class EngineResult:
    """Findings new at head (sorted), those suppressed, and the checks that ran."""

    findings: tuple[Finding, ...]
    suppressed: tuple[Finding, ...]
    checks_run: tuple[str, ...]
    # Findings at head not blamed on the change, by why: "unseen-at-base", "outside-build-scope".
    not_blamed: tuple[tuple[str, Finding], ...] = ()


def run(checks: Iterable[Check], snapshot: Snapshot, *, jobs: int | None = None) -> EngineResult:
    """Run the enabled checks and keep what the pull request introduced. `jobs`: 1 runs them all in
    this process, 2 shares them with a forked worker whenever both shares hold a check, None
    decides (bot/parallel/check_split.py)."""
    return _run(checks, snapshot, jobs)


def _run(checks: Iterable[Check], snapshot: Snapshot, jobs: int | None = None) -> EngineResult:
    from bot.parallel.check_split import run_checks
    from bot.snapshot import Snapshot

    config = snapshot.config
    enabled = [c for c in checks if c.id not in config.disabled and _may_change(c, snapshot)]
    baseline = Snapshot(snapshot.base, snapshot.base, ChangeSet(()), config, scope=snapshot, mode=ReviewMode.BASELINE)
    outcomes = run_checks(enabled, snapshot, partial(_outcome, snapshot=snapshot, baseline=baseline), jobs=jobs)
    findings: dict[str, Finding] = {}
    not_blamed: list[tuple[str, Finding]] = []
    for outcome in outcomes:  # in the checks' order, wherever each ran
        not_blamed.extend(("outside-build-scope", finding) for finding in outcome.outside)
        for finding, unseen in zip(outcome.head, outcome.unseen_at_base, strict=True):
            if finding.fingerprint in outcome.base_prints or finding.fingerprint in findings:
                continue
            if unseen:
                not_blamed.append(("unseen-at-base", finding))
                continue
            findings[finding.fingerprint] = finding
    suppressions = _suppressions(snapshot)
    active, suppressed = _apply_suppressions(findings.values(), suppressions)
    active.extend(_unused_suppressions(suppressions, suppressed, {c.id for c in checks} | set(ENGINE_RULES)))
    return EngineResult(
        tuple(sorted(active, key=_order)),
        tuple(sorted(suppressed, key=_order)),
        tuple(c.id for c in enabled),
        tuple(not_blamed),
    )


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """One check's runs, as the merge into the review's findings needs them (a value, so that a
    worker process can send it back: bot/parallel/check_split.py)."""

    head: tuple[Finding, ...]  # the head run's findings within the build scope, in the check's order
    outside: tuple[Finding, ...]  # those outside it (not blamed), in the same order
    base_prints: frozenset[str]  # the baseline run's fingerprints (empty when it did not run)
    unseen_at_base: tuple[bool, ...]  # per `head` finding new at head: on a target the base could not see


def _outcome(check: Check, snapshot: Snapshot, baseline: Snapshot) -> CheckOutcome:
    """Run one check on the head, and on the baseline where the head found something."""
    outside: list[tuple[str, Finding]] = []
    head = tuple(f for f in _findings(check, snapshot) if not _outside_scope(f, snapshot, outside))
    if snapshot.mode is ReviewMode.BASELINE or not head:
        base_prints: frozenset[str] = frozenset()  # nothing at head, so nothing for the baseline to filter
    else:
        base_prints = frozenset(f.fingerprint for f in _findings(check, baseline) if f.rule != INTERNAL_ERROR)
    return CheckOutcome(
        head,
        tuple(finding for _why, finding in outside),
        base_prints,
        tuple(f.fingerprint not in base_prints and _unseen_at_base(f, snapshot) for f in head),
    )


def _outside_scope(finding: Finding, snapshot: Snapshot, not_blamed: list) -> bool:
    """Is this finding in a CI-driven cell on a target or package its CI never reaches?"""
    if not finding.cell or not finding.target or finding.rule == INTERNAL_ERROR or finding.outside_build_scope:
        return False
    if not cell_named(finding.cell).is_oss:
        return False  # the internal cells build whatever their owners ask for
    from bot.facts.build_scope import scope_of

    scope = scope_of(snapshot.head, finding.cell)
    if scope.reaches(finding.target):
        return False
    not_blamed.append(("outside-build-scope", finding))
    return True


def _unseen_at_base(finding: Finding, snapshot: Snapshot) -> bool:
    """A finding on a target the base could not evaluate, in files the change did not touch."""
    if not finding.cell or not finding.target or snapshot.is_scan:
        return False
    package = finding.target[2:].split(":", 1)[0]
    result = snapshot.base.cell(finding.cell).packages.get(package)
    if result is None or result.error is None:
        return False  # the base saw this package (or it is new): the baseline run decided
    changed = set(snapshot.changes.paths)
    files = {finding.path, *(e.path for e in finding.evidence)}
    return not (files & changed)


def _may_change(check: Check, snapshot: Snapshot) -> bool:
    """Could this change alter the check's verdict? Not when it touches none of its inputs."""
    if check.inputs is None or snapshot.is_scan:
        return True  # a scan or a check that reads anything
    from bot.facts.cmake_models import CMAKE_PROCESS_INPUTS

    buck_reader = any(kind in check.inputs for kind in BUCK_FILES)
    cmake_reader = any(kind in check.inputs for kind in CMAKE_FILES)
    for change in snapshot.changes.files:
        if touches(change.path, check.inputs) or (change.old_path and touches(change.old_path, check.inputs)):
            return True
        if buck_reader and change.status in ("added", "deleted", "renamed"):
            return True  # glob() results follow the listing
        if cmake_reader and touches(change.path, tuple(CMAKE_PROCESS_INPUTS)):
            return True  # the CMake model reads the files its modelled processes read
        if (
            cmake_reader
            and touches(change.path, BUCK_FILES)
            and (
                cmake_models.cmake_reads_buck_graph(snapshot.base) or cmake_models.cmake_reads_buck_graph(snapshot.head)
            )
        ):
            return True  # before 2a692c2da9 the CMake source lists come from the Buck graph
    return False


def _order(finding: Finding) -> tuple:
    return (-finding.severity, finding.path, finding.line, finding.rule, finding.fingerprint)


def _findings(check: Check, snapshot: Snapshot) -> list[Finding]:
    severity = snapshot.config.severities.get(check.id, check.severity)
    try:
        return [to_finding(check.id, severity, check.title, hit) for hit in check.run(snapshot, check.options)]
    except Exception as error:  # a crashing check is a result, never a crashed review
        frame = traceback.extract_tb(error.__traceback__)[-1]
        message = (
            f"check `{check.id}` raised {type(error).__name__}: {error} "
            f"(at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}); its findings are missing from this review"
        )
        return [internal_error(ENGINE_RULES[INTERNAL_ERROR][1], message, key=check.id, subject=type(error).__name__)]


def _capped(severity: Severity, hit: Hit) -> Severity:
    if hit.outside_build_scope:
        severity = min(severity, Severity.MINOR)
    if hit.at_most is not None:
        severity = min(severity, hit.at_most)
    return severity


def to_finding(rule: str, severity: Severity, title: str, hit: Hit) -> Finding:
    return Finding(
        rule=rule,
        severity=_capped(severity, hit),
        title=title,
        path=hit.path,
        line=hit.line,
        end_line=hit.end_line or hit.line,
        message=hit.message,
        fingerprint=identity(rule, hit),
        target=hit.target,
        cell=hit.cell,
        evidence=hit.evidence,
        fix=hit.fix,
        outside_build_scope=hit.outside_build_scope,
    )


def _suppressions(snapshot: Snapshot) -> list[Suppression]:
    """Suppression comments on lines the change added (old ones were reviewed before)."""
    found = []
    full_scan = snapshot.is_scan
    for change in snapshot.changes.files:
        if change.status == "deleted" or change.binary:
            continue
        text = snapshot.head.text(change.path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if number not in change.added and not full_scan:
                continue
            match = _SUPPRESSION.search(line)
            if match:
                found.append(Suppression(change.path, number, match.group(1), (match.group(2) or "").strip()))
    return found


def _apply_suppressions(
    findings: Iterable[Finding], suppressions: list[Suppression]
) -> tuple[list[Finding], list[Finding]]:
    by_place = {(s.path, s.line, s.rule): s for s in suppressions if s.reason}
    active, suppressed = [], []
    for finding in findings:
        match = by_place.get((finding.path, finding.line, finding.rule)) or by_place.get(
            (finding.path, finding.line - 1, finding.rule)
        )
        if match is None:
            active.append(finding)
        else:
            suppressed.append(replace(finding, suppressed=match.reason))
    return active, suppressed


def _unused_suppressions(
    suppressions: list[Suppression], suppressed: list[Finding], known: set[str]
) -> Iterator[Finding]:
    used = {(f.path, f.rule, f.line) for f in suppressed} | {(f.path, f.rule, f.line - 1) for f in suppressed}
    severity, title = ENGINE_RULES[UNUSED_SUPPRESSION]
    for suppression in suppressions:
        if suppression.rule not in known:
            # A near miss of one of our ids is a typo that silently suppresses nothing; anything else is
            # another linter's suppression (clang-tidy's, ...), not ours to judge.
            near = difflib.get_close_matches(suppression.rule, sorted(known), n=1, cutoff=0.8)
            if not near:
                continue
            message = (
                f"`@lint-ignore {suppression.rule}` names no rule, so it suppresses nothing; did you mean `{near[0]}`?"
            )
        elif not suppression.reason:
            message = f"`@lint-ignore {suppression.rule}` has no reason, so it suppresses nothing; write `@lint-ignore {suppression.rule}: <why>`"
        elif (suppression.path, suppression.rule, suppression.line) in used:
            continue
        else:
            message = f"`@lint-ignore {suppression.rule}` suppresses nothing on this line or the next; remove it"
        yield Finding(
            rule=UNUSED_SUPPRESSION,
            severity=severity,
            title=title,
            path=suppression.path,
            line=suppression.line,
            end_line=suppression.line,
            message=message,
            fingerprint=fingerprint(UNUSED_SUPPRESSION, suppression.path, suppression.rule, suppression.reason),
        )
