"""The fifth precision sample (tests/real_tree/precision_fifth.toml): 150 commits of Jun 2024 - Oct 2025
that no earlier work reviewed, measured before any change it led to. Its figures are reproduced from
the stored run, its disjointness from everything judged before is checked, and its two false
findings' causes and one true finding are pinned on the real commits when a mirror is present."""

from __future__ import annotations

from pathlib import Path

from bench.precision import figures, loud_rows, overlaps_with_judged, verdicts

REAL_TREE = Path(__file__).parent / "real_tree"
VERDICTS = REAL_TREE / "precision_fifth.toml"
FIRST_RUN = REAL_TREE / "precision_fifth_first.tsv"
SAMPLE = REAL_TREE / "precision_fifth_sample.txt"


def test_first_measurement_figures():
    # Judged by hand: 7 dep-undeclared-header findings on three commits, each repaired days later, are
    # true; the two source-parity findings (a list computed from Buck, a per-processor file) are false.
    found = figures(loud_rows(FIRST_RUN), 150, verdicts(VERDICTS))
    assert found.unjudged == ()
    assert (found.findings, found.commits_with_findings, found.true, found.false) == (9, 5, 7, 2)
    assert sorted(found.blocked_falsely) == ["4086509b52", "abc8a5fabd"]


def test_the_sample_is_disjoint_from_everything_judged_before():
    sample = {sha[:10] for sha in SAMPLE.read_text().split()}
    assert len(sample) == 150
    assert overlaps_with_judged(sample, (VERDICTS, SAMPLE)) == {}


def test_a_cmake_list_computed_from_buck_is_not_drift(real_review):
    report = real_review("abc8a5fabd^", "abc8a5fabd")
    assert not [f for f in report.findings if f.rule == "source-parity"]


def test_a_file_for_another_processor_is_not_drift(real_review):
    report = real_review("4086509b52^", "4086509b52")
    assert not [f for f in report.findings if f.rule == "source-parity"]


def test_a_true_finding_is_still_raised(real_review):
    report = real_review("e84dccaf9b^", "e84dccaf9b")
    found = [(f.rule, f.cell, f.path) for f in report.findings if f.severity.label in ("blocker", "major")]
    assert found == [("dep-undeclared-header", "fbcode", "extension/pytree/function_ref.h")]
