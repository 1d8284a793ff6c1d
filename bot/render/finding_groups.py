"""Near-duplicate findings grouped for a person: one cause, one entry, with the list of places. Pure.

A review reports what each rule sees, and several rules see one defect from where they stand, so
the raw list repeats itself in three ways:

- one macro call makes several targets (`:tensor` and `:tensor_aten`, a library and its `_aten`
  twin): the same rule says the same thing at the same line once per target;
- one gap shows at many lines: the same missing header owner once per `#include` line, the same
  missing dependency once per consumer line; the rule keys each by the line's subject, so they are
  separate findings with the same target and the same message apart from the place;
- two rules see the same defect at the same place (`OVERLAPPING_RULES`);
- one broken load fails many packages: `buck-eval-error` says the same evaluation error once per
  package of the cell (a `.buckconfig` alias pointing at a directory that lacks the shared
  `runtime_wrapper.bzl` fails every package that loads it, #8607), the error word for word.

People get one entry per group (review comments, the review body, the check run, text); machines
get every finding (JSON, SARIF, rdjson keep the ungrouped list), so nothing is lost. The lead of a
group is its most severe member, then the first by place, and its fingerprint is the group's, so
a group keeps its comment across pushes as long as its lead stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.check import BUCK_FILES, CMAKE_FILES, touches
from bot.model import Evidence, Finding, Severity

BUILD_INPUTS = (*BUCK_FILES, *CMAKE_FILES)

# Pairs of rules that report one defect at one place and target: the second is folded into the first.
# `dep-undeclared-header` reports an include whose owner the includer lacks; where the includer is
# an exported header, `dep-private-for-exported-header` reports the same include from the owner's side.
OVERLAPPING_RULES: tuple[tuple[str, str], ...] = (("dep-undeclared-header", "dep-private-for-exported-header"),)

# What differs between the findings one macro call makes: the labels, places and counts a message names.
_LABEL = re.compile(r"(?:[\w-]*//)?[\w./+-]*:[\w.+-]+")
_NUMBER = re.compile(r"\d+")
# What `buck-eval-error` says of a package, and the evaluation error it quotes (checks/buck_eval_error.py).
_EVAL_ERROR = re.compile(r"^`//[^`]*` fails to evaluate in the `(\w+)` cell: (.+?)\. Every target of the package")


@dataclass(frozen=True, slots=True)
class FindingGroup:
    """Findings with one cause: the lead a person reads, and the others it stands for."""

    lead: Finding
    others: tuple[Finding, ...] = ()

    @property
    def members(self) -> tuple[Finding, ...]:
        return (self.lead, *self.others)

    @property
    def severity(self) -> Severity:
        return self.lead.severity

    @property
    def fingerprint(self) -> str:
        return self.lead.fingerprint

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules that report it, the lead's first."""
        return tuple(dict.fromkeys(member.rule for member in self.members))

    @property
    def targets(self) -> tuple[str, ...]:
        """Every target the group names, in place order, each once."""
        return tuple(dict.fromkeys(m.target for m in self.members if m.target))

    @property
    def places(self) -> tuple[tuple[str, int], ...]:
        """Every (path, line) of the group, the lead's first, each once."""
        return tuple(dict.fromkeys((m.path, m.line) for m in self.members))

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        """The members' evidence, each location once, the lead's first."""
        seen: dict[tuple[str, int, str], Evidence] = {}
        for member in self.members:
            for item in member.evidence:
                seen.setdefault((item.path, item.line, item.note), item)
        return tuple(seen.values())


def _order(finding: Finding) -> tuple:
    return (-finding.severity, finding.path, finding.line, finding.target or "", finding.rule, finding.fingerprint)


def _shape(finding: Finding) -> str:
    """The message with the labels, places and counts it names blanked: equal for one point made per target."""
    return _NUMBER.sub("#", _LABEL.sub("<label>", finding.message)).strip()


def _keys(finding: Finding) -> list[tuple]:
    """The keys under which `finding` is the same defect as another finding with an equal key."""
    keys: list[tuple] = [
        # One macro call, several targets: the same rule at the same line making the same point.
        ("call", finding.rule, finding.path, finding.line, _shape(finding)),
    ]
    if finding.target and finding.path and not touches(finding.path, BUILD_INPUTS):
        # One gap at many lines of one source file: the same rule on the same target there (the
        # includes of one exported header, one per line); a build file's lines are separate defects.
        keys.append(("gap", finding.rule, finding.path, finding.target, finding.cell))
    failure = _EVAL_ERROR.match(finding.message) if finding.rule == "buck-eval-error" else None
    if failure is not None:
        # One evaluation error, word for word, in many packages of one cell: one cause.
        keys.append(("eval", finding.rule, failure.group(1), failure.group(2)))
    if finding.rule == "compile-error-new" and finding.path:
        # One line of a header stopping the compile of several translation units (each its own
        # target's) in one cell: one defect, the includers listed with it.
        keys.append(("compiled", finding.rule, finding.path, finding.line, finding.cell))
    folded = {second: first for first, second in OVERLAPPING_RULES}
    if finding.rule in folded or finding.rule in folded.values():
        # Two rules, one defect: the same include line, seen from the includer and from the owner.
        keys.append(("pair", folded.get(finding.rule, finding.rule), finding.path, finding.line))
    return keys


def group_findings(findings: Iterable[Finding]) -> tuple[FindingGroup, ...]:
    """The findings as groups, most severe first, then by place; every finding in exactly one group."""
    ordered = sorted(findings, key=_order)
    parent = list(range(len(ordered)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    seen: dict[tuple, int] = {}
    for index, finding in enumerate(ordered):
        for key in _keys(finding):
            if key not in seen:
                seen[key] = index
                continue
            first = ordered[seen[key]]
            if key[0] == "call" and first.target == finding.target:
                continue  # one target, two findings at its line: two defects, not one point per target
            if key[0] == "pair" and first.rule == finding.rule:
                continue  # one rule, two findings at one line: two defects
            a, b = root(seen[key]), root(index)
            parent[max(a, b)] = min(a, b)  # the earlier (more severe, first placed) stays the root
    members: dict[int, list[Finding]] = {}
    for index, finding in enumerate(ordered):
        members.setdefault(root(index), []).append(finding)
    return tuple(FindingGroup(found[0], tuple(found[1:])) for _, found in sorted(members.items()))


def capped(items: Sequence[str], shown: int) -> list[str]:
    """`items`, at most `shown` of them, then "and N more" when some are left out."""
    if len(items) <= shown:
        return list(items)
    return [*items[: shown - 1], f"and {len(items) - shown + 1} more"]
