"""The held-out precision window of this round, Jul 2023 - May 2024 (tests/real_tree/precision_2023.toml):
every loud finding of its runs judged, the figures recorded in the file's header reproduced from
the stored runs without reviewing again, and the general causes fixed on it pinned on their real
commits when a mirror is present."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bench.precision import figures, loud_rows, verdicts

REAL_TREE = Path(__file__).parent / "real_tree"
VERDICTS = REAL_TREE / "precision_2023.toml"
FIRST_RUN = REAL_TREE / "precision_2023_first.tsv"  # loud findings of the first measurement, 150 commits


_rows = loud_rows


@pytest.mark.parametrize("window", ["precision_2023.toml", "precision_2025.toml"])
def test_every_verdict_has_a_reason_and_lines(window):
    findings = tomllib.loads((REAL_TREE / window).read_text())["finding"]
    assert findings
    for entry in findings:
        assert isinstance(entry["verdict"], bool) and len(entry["reason"]) > 20
        assert len(entry["commit"]) >= 10 and entry["rule"] and entry["path"] and entry["lines"]


def test_first_measurement_figures():
    # Judged by hand: the only true finding is 1de1a8227f's CMake add_subdirectory(examples) left
    # without a CMakeLists.txt; the 15 false ones are the Buck model on the pre-shim_et layout.
    found = figures(_rows(FIRST_RUN), 150, verdicts(VERDICTS))
    assert found.unjudged == ()
    assert (found.findings, found.true, found.false) == (16, 1, 15)
    assert sorted(found.blocked_falsely) == sorted(
        ["34317e2a66", "8490570b7a", "1b7a096570", "9260d7bc6e", "9c26d98908", "205cfeafac"]
    )


def test_internal_cells_read_the_in_tree_shim_of_older_trees(real_review):
    # 8490570b7a (Feb 2024): //kernels/quantized:generated_lib_headers is made by codegen.bzl under the
    # in-tree shim/ of that time; fbcode defines it, so the new op_mixed_mm_test depends on nothing missing.
    report = real_review("8490570b7a^", "8490570b7a")
    assert not [f for f in report.findings if f.severity.label in ("blocker", "major")]


def test_wrapper_kwargs_unpacked_in_an_internal_cell_evaluates(real_review):
    # 34317e2a66 (Aug 2023): examples/bundled_executor_runner passes **get_oss_build_kwargs().
    report = real_review("34317e2a66^", "34317e2a66")
    assert not [f for f in report.findings if f.rule == "buck-eval-error"]


AFTER_FIXES = REAL_TREE / "precision_2023_after.tsv"  # the same 150 commits after the two model fixes


def test_figures_after_the_model_fixes():
    found = figures(_rows(AFTER_FIXES), 150, verdicts(VERDICTS))
    assert found.unjudged == ()
    assert (found.findings, found.true, found.false, found.blocked_falsely) == (1, 1, 0, ())


PYTHON_RULE_RUN = REAL_TREE / "precision_2023_python.tsv"  # again, with python-import-undeclared at major


def test_figures_with_python_import_undeclared_at_major():
    # Its three findings are judged false (never fixed, never broke), which is why it is minor now.
    found = figures(_rows(PYTHON_RULE_RUN), 150, verdicts(VERDICTS))
    assert found.unjudged == ()
    assert (found.findings, found.true, found.false) == (4, 1, 3)
    assert sorted(found.blocked_falsely) == ["7156f1bdc6", "a58bfd0620", "f5d75ffa2e"]
