"""Messages as people read them: no slip a template makes ("once them are guarded", "1 targets").

Every rule's bad examples are reviewed, and every text a person reads of the result is checked:
each finding's title, message, evidence notes and fix description, and what the renderers make of
them (the inline comments and review body the App posts, the check run, the terminal text).
"""

from __future__ import annotations

import re

import pytest

from bot import engine
from bot.diff import ChangeSet, FileChange
from bot.model import Evidence, Finding, Severity
from bot.render.check_run import render_check_run
from bot.render.github_review import plan_review
from bot.render.review_body import count_phrase
from checks import ALL
from tests.test_check_examples import _snapshot

# A count of one with a plural noun ("1 targets"); words whose singular ends in s ("1 class") excluded.
ONE_WITH_PLURAL = re.compile(r"(?<![\w.,/:-])(?<!line )(?<!lines )1 ([a-z]+[^s\W])s\b(?!\()")
# A count above one with a singular noun that ends the phrase ("3 target." / "2 finding,").
MANY_WITH_SINGULAR = re.compile(
    r"(?<![\w.,/:-])(?:[2-9]|\d{2,}) (target|file|finding|package|dependent|platform|line|rule|issue|comment|"
    r"test|header|source|entry|place|call|caller)(?=[.,;:)]|$)"
)
# Pronouns that do not agree with their verb or position.
PRONOUN_SLIPS = re.compile(
    r"\b(?:once|when|until|if|because|since|after|before|so that) them\b"
    r"|\bthem (?:is|are|was|were|has|have)\b"
    r"|\bthey (?:is|was|has)\b"
    r"|\bthis (?:targets|files|headers|platforms|dependents)\b"
    r"|\bthese (?:target|file|header|platform|dependent)\b",
    re.IGNORECASE,
)
# A count of one whose verb is plural ("1 target that depend on it").
ONE_WITH_PLURAL_VERB = re.compile(
    r"(?<![\w.,/:-])(?<!line )1 [a-z]+ (?:that|which) (?:depend|build|include|link|use|need|fail|break)\b"
)
DOUBLED_WORD = re.compile(r"\b(the|a|an|of|to|is|in|on|and|it)\s+\1\b", re.IGNORECASE)


def slips(text: str) -> list[str]:
    """The grammar slips of a template in `text`, each with the words around it."""
    found = []
    plain = re.sub(r"`[^`\n]*`", "`x`", text)  # quoted code and labels are not prose
    for pattern in (ONE_WITH_PLURAL, MANY_WITH_SINGULAR, ONE_WITH_PLURAL_VERB, PRONOUN_SLIPS, DOUBLED_WORD):
        for match in pattern.finditer(plain):
            found.append(plain[max(0, match.start() - 30) : match.end() + 30])
    return found


def test_the_patterns_catch_the_slips_they_name_and_pass_good_prose():
    assert slips("once them are guarded, they fail")
    assert slips("it has 1 targets left")
    assert slips("3 target.")
    assert slips("the the target")
    assert slips("and the 1 target that depend on it")
    assert not slips("once they are guarded, 1 target and 2 targets; 1 class; `1 targets` in code")
    assert not slips("once it is guarded, it fails; 3 target platforms")


def _texts(check) -> list[str]:
    texts: list[str] = []
    for example in check.bad:
        result = engine.run([check], _snapshot(example))
        findings = result.findings
        for finding in findings:
            texts += [finding.title, finding.message, *(e.note for e in finding.evidence)]
            if finding.fix is not None:
                texts.append(finding.fix.description)
        changes = _snapshot(example).changes
        plan = plan_review(findings, changes, (), (), "c" * 40, inline_level=Severity.INFO)
        texts += [plan.body, *(comment.body for comment in plan.comments)]
        output = render_check_run(
            findings=findings,
            off_diff=plan.off_diff,
            suppressed_count=0,
            base_sha="b" * 40,
            head_sha="c" * 40,
            smoke_reasons=(),
            full_report_pointer="",
        )
        texts += [output.title, output.summary, output.text]
    return texts


@pytest.mark.parametrize("check", ALL, ids=[c.id for c in ALL])
def test_every_rule_speaks_without_template_slips(check):
    problems = [slip for text in _texts(check) for slip in slips(text)]
    assert problems == []


def _finding(index: int, severity: Severity, rule: str = "dep-private-for-exported-header") -> Finding:
    return Finding(
        rule,
        severity,
        "Exported header includes through a private dep",
        f"a/h{index}.h",
        3,
        3,
        "m",
        f"fp{index}",
        f"//a:t{index}",
        "fbcode",
        (Evidence("BUCK", 1, "here"),),
    )


@pytest.mark.parametrize("count", [1, 2])
def test_the_review_body_counts_agree_with_their_nouns(count):
    # One and two of everything the body counts: findings, entries, rules, comments.
    change = FileChange(
        "a/h0.h", "a/h0.h", "modified", added=frozenset({3}), commentable=frozenset({3}), hunks=((3, 1),)
    )
    findings = [_finding(i, Severity.MINOR) for i in range(count)]
    findings += [_finding(10 + i, Severity.MAJOR, "dep-undeclared-header") for i in range(count)]
    plan = plan_review(findings, ChangeSet((change,)), (), (), "c" * 40)
    assert slips(plan.body) == []
    assert slips(count_phrase(findings)) == []
