"""The sixth precision sample (tests/real_tree/precision_sixth.toml): 150 commits of the whole mirror
(Jul 2023 - Aug 2026) that no earlier work reviewed, measured before any change of the session that
drew it. Its figures are reproduced from the stored run and its disjointness from everything judged
before is checked; its findings are held on the real commits when a mirror is present."""

from __future__ import annotations

from pathlib import Path

from bench.precision import figures, loud_rows, overlaps_with_judged, verdicts

REAL_TREE = Path(__file__).parent / "real_tree"
VERDICTS = REAL_TREE / "precision_sixth.toml"
FIRST_RUN = REAL_TREE / "precision_sixth_first.tsv"
SAMPLE = REAL_TREE / "precision_sixth_sample.txt"


def test_first_measurement_figures():
    # Judged by hand: eight dep-undeclared-header findings of one cause (util:all_deps's private deps)
    # on the commit that buckified the fusion_g3 ops, and one on the new Arm VGF backend: all true.
    found = figures(loud_rows(FIRST_RUN), 150, verdicts(VERDICTS))
    assert found.unjudged == ()
    assert (found.findings, found.commits_with_findings, found.true, found.false) == (9, 2, 9, 0)
    assert found.blocked_falsely == ()


def test_the_sample_is_disjoint_from_everything_judged_before():
    sample = {sha[:10] for sha in SAMPLE.read_text().split()}
    assert len(sample) == 150
    assert overlaps_with_judged(sample, (VERDICTS, SAMPLE)) == {}


def test_the_true_findings_are_still_raised(real_review):
    report = real_review("34663328b8^", "34663328b8")
    found = [(f.rule, f.cell, f.path, f.line) for f in report.findings if f.severity.label in ("blocker", "major")]
    assert found == [("dep-undeclared-header", "fbcode", "backends/arm/runtime/VGFBackend.cpp", 31)]
