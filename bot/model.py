"""Values every part of pr-check shares: severities, locations, findings. All frozen."""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass, field


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that `>=` compares against a fail level."""

    INFO = 0
    MINOR = 1
    MAJOR = 2
    BLOCKER = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r} (one of {names})") from None


class ReviewMode(enum.Enum):
    """What kind of run a Snapshot is: set once by the pipeline (and the engine for its baseline),
    read by everything that branches on it."""

    REVIEW = "review"  # base..head of a change: the findings new at head are blamed on it
    BASELINE = "baseline"  # the engine's second run of a review: base against base, no change
    SCAN = "scan"  # a whole tree against an empty base: every file is new


class EvidenceRole(enum.Enum):
    """What a piece of evidence is to its finding: code that groups or folds findings reads this,
    never the note's wording."""

    SUPPORT = "support"  # a location that makes the case (the default)
    DEFINES = "defines"  # the line that defines the finding's target where it breaks (a macro call)
    DEPENDENT = "dependent"  # a target that breaks along with the finding's
    COMPILER = "compiler"  # the compiler's own error confirming a rule's prediction


@dataclass(frozen=True, slots=True)
class Evidence:
    """One location that makes the case for a finding, with what it shows."""

    path: str
    line: int
    note: str
    role: EvidenceRole = EvidenceRole.SUPPORT  # not part of the public JSON: the note says it


@dataclass(frozen=True, slots=True)
class Fix:
    """A mechanical fix: replace lines [line, end_line] of `path` with `replacement`.

    `original` is the text of those lines as the fix was computed (empty when unknown): it lets a
    fix be shown as a patch and refused where the file no longer holds those lines. `above` and
    `below` are up to three unchanged lines around them, the context a patch needs to apply.
    """

    path: str
    line: int
    end_line: int
    replacement: str
    description: str = ""
    original: str = ""
    above: str = ""
    below: str = ""


@dataclass(frozen=True, slots=True)
class Hit:
    """What a check yields: a defect at a place, before the engine turns it into a Finding.

    `key` is the stable part of the fingerprint (a target label, a symbol, a macro): never a
    line number, so that a finding survives rebases and unrelated edits.
    """

    path: str
    line: int
    message: str
    key: str
    end_line: int | None = None
    target: str | None = None
    cell: str | None = None
    offending_text: str = ""
    evidence: tuple[Evidence, ...] = ()
    fix: Fix | None = None
    # Found where the cell's CI never looks (a package no open-source CI command loads) and
    # reported anyway: the engine keeps it instead of dropping it, at minor at most.
    outside_build_scope: bool = False
    # A rule's softer case (a gap no built target hits yet): reported at this severity at most.
    at_most: Severity | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule's verdict on one place in the head revision."""

    rule: str
    severity: Severity
    title: str
    path: str
    line: int
    end_line: int
    message: str
    fingerprint: str
    target: str | None = None
    cell: str | None = None
    evidence: tuple[Evidence, ...] = ()
    fix: Fix | None = None
    suppressed: str | None = field(default=None)  # the suppression's reason, when suppressed
    outside_build_scope: bool = False  # see Hit.outside_build_scope

    def to_json(self) -> dict:
        """The public JSON shape of design section 5 (version 1)."""
        return {
            "rule": self.rule,
            "severity": self.severity.label,
            "path": self.path,
            "line": self.line,
            "end_line": self.end_line,
            "target": self.target,
            "cell": self.cell,
            "title": self.title,
            "message": self.message,
            "fingerprint": self.fingerprint,
            "evidence": [{"path": e.path, "line": e.line, "note": e.note} for e in self.evidence],
            "fix": None
            if self.fix is None
            else {
                "path": self.fix.path,
                "line": self.fix.line,
                "end_line": self.fix.end_line,
                "replacement": self.fix.replacement,
                "description": self.fix.description,
            },
        }


_SPACE = re.compile(r"\s+")


def fingerprint(rule: str, path: str, key: str, offending_text: str) -> str:
    """Rule + path + key + whitespace-normalized text; no line numbers."""
    normalized = _SPACE.sub(" ", offending_text).strip()
    # surrogateescape: a path (or a key naming one) that is not UTF-8 hashes as its bytes (bot/tree.py).
    digest = hashlib.sha256("\0".join((rule, path, key, normalized)).encode("utf-8", "surrogateescape")).hexdigest()
    return digest[:16]


def identity(rule: str, hit: Hit) -> str:
    """What a finding is about, stable across edits: for a finding on a Buck target, the rule
    and key (which names the target and the subject), never the file it sits in or the wording
    around it, so that moving a target from TARGETS to BUCK + targets.bzl keeps it the same
    finding. The cell is left out so that one defect seen by several cells is one finding
    (a check whose defect differs per cell puts the cell in its key). Any other finding: the
    file, key and offending text."""
    if hit.target:
        digest = hashlib.sha256("\0".join((rule, "target", hit.key)).encode("utf-8", "surrogateescape")).hexdigest()
        return digest[:16]
    return fingerprint(rule, hit.path, hit.key, hit.offending_text)


INTERNAL_ERROR = "internal-error"
UNUSED_SUPPRESSION = "unused-suppression"
# The rules the engine reports about a review itself (not checks): a value here, below the engine,
# so renderers and the rules page read it without importing the engine's models and evaluators.
ENGINE_RULES = {
    INTERNAL_ERROR: (Severity.MAJOR, "A check crashed; its verdict on this change is unknown"),
    UNUSED_SUPPRESSION: (Severity.MINOR, "A `@lint-ignore` suppresses nothing"),
}


def internal_error(title: str, message: str, *, key: str, subject: str = "", path: str = "") -> Finding:
    """The finding that stands for work that did not finish (a check that raised, a review that
    crashed): major, on `path`'s first line or on no file, identified by `key` and `subject`."""
    return Finding(
        rule=INTERNAL_ERROR,
        severity=Severity.MAJOR,
        title=title,
        path=path,
        line=1 if path else 0,
        end_line=1 if path else 0,
        message=message,
        fingerprint=fingerprint(INTERNAL_ERROR, path, key, subject),
    )
