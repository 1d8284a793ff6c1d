"""The fresh precision sample of this round, Jun - Oct 2025 (tests/real_tree/precision_2025.toml):
every loud finding of its first run judged (each verdict's form: tests/test_precision_2023.py), the figures in the file's header reproduced from the
stored run without reviewing again, and the two causes of its false findings pinned on their real
commits when a mirror is present."""

from __future__ import annotations

from pathlib import Path

from bench.precision import figures, loud_rows, verdicts

REAL_TREE = Path(__file__).parent / "real_tree"
VERDICTS = REAL_TREE / "precision_2025.toml"
FIRST_RUN = REAL_TREE / "precision_2025_first.tsv"  # loud findings of the first measurement, 150 commits


def test_first_measurement_figures():
    # Judged by hand: a7a9130922's CMake source name that no file has is true; the 30 header-unowned
    # of 8b56743a46 (a package whose BUCK was Meta-internal) and 6e63c47354's two are false.
    found = figures(loud_rows(FIRST_RUN), 150, verdicts(VERDICTS))
    assert found.unjudged == ()
    assert (found.findings, found.true, found.false) == (33, 1, 32)
    assert sorted(found.blocked_falsely) == ["6e63c47354", "8b56743a46"]


def test_header_of_a_package_whose_build_file_is_not_here_is_not_unowned(real_review):
    report = real_review("8b56743a46^", "8b56743a46")
    assert not [f for f in report.findings if f.rule == "header-unowned"]


def test_exported_header_its_sources_never_include_is_judged_by_its_includers(real_review):
    report = real_review("6e63c47354^", "6e63c47354")
    assert not [f for f in report.findings if f.rule == "dep-undeclared-header" and f.path.endswith("quantized_ops.h")]


def test_true_finding_is_still_raised(real_review):
    report = real_review("a7a9130922^", "a7a9130922")
    found = [f for f in report.findings if f.rule == "source-missing"]
    assert [(f.path, f.line) for f in found] == [("backends/cadence/hifi/operators/CMakeLists.txt", 91)]
