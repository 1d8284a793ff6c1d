"""Findings on real ExecuTorch commits, pinned commit by commit (run when a mirror is present).

`real_tree/layout_baseline.json` holds, for 40 first-parent commits spread over Nov 2025 to
Aug 2026 (bench/real_history.py's selection), every finding the review raised against the
commit's parent before the engine layout was reshaped: (rule, severity, cell, path, line, target).
A layout change must not move one of them; a deliberate change of a rule's verdict updates the
file in the same commit, with the judgment that justifies it in real_tree/verdicts.toml.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pr_check.review import review_repository

BASELINE = json.loads((Path(__file__).parent / "real_tree" / "layout_baseline.json").read_text())


def _finding_rows(report) -> list[list]:
    return sorted([f.rule, f.severity.label, f.cell, f.path, f.line, f.target] for f in report.findings)


@pytest.mark.parametrize("sha", sorted(BASELINE))
def test_real_commit_findings_are_unchanged(sha, executorch_mirror, real_tree_cache):
    report = review_repository(executorch_mirror, f"{sha}^", sha, cache_dir=real_tree_cache)
    assert _finding_rows(report) == BASELINE[sha]
    assert not [f for f in report.findings if f.rule == "internal-error"]
