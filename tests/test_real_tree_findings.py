"""Findings on real ExecuTorch commits, pinned commit by commit (run when a mirror is present).

`real_tree/layout_baseline.json` holds, for 30 first-parent commits spread over Nov 2025 to
Aug 2026 (bench/real_history.py's selection), every finding the review raised against the
commit's parent before the engine layout was reshaped: (rule, severity, cell, path, line, target).
A layout change must not move one of them; a finding judged false after reading history
(real_tree/verdicts.toml) must be gone, and nothing else may move.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pr_check.review import review_repository

BASELINE = json.loads((Path(__file__).parent / "real_tree" / "layout_baseline.json").read_text())
# Findings judged false after reading history (real_tree/verdicts.toml): the baseline minus these.
_VERDICTS = tomllib.loads((Path(__file__).parent / "real_tree" / "verdicts.toml").read_text())["finding"]
JUDGED_FALSE = {(v["commit"], v["rule"], v["path"]) for v in _VERDICTS if not v["verdict"]}
JUDGED_FALSE_EVERYWHERE = {
    (v["commit"], v["rule"], v.get("cell")) for v in _VERDICTS if not v["verdict"] and v.get("every")
}


def _finding_rows(report) -> list[list]:
    return sorted([f.rule, f.severity.label, f.cell, f.path, f.line, f.target] for f in report.findings)


@pytest.mark.parametrize("sha", sorted(BASELINE))
def test_real_commit_findings_are_unchanged(sha, executorch_mirror, real_tree_cache):
    report = review_repository(executorch_mirror, f"{sha}^", sha, cache_dir=real_tree_cache)
    expected = [
        row
        for row in BASELINE[sha]
        if (sha[:10], row[0], row[3]) not in JUDGED_FALSE and (sha[:10], row[0], row[2]) not in JUDGED_FALSE_EVERYWHERE
    ]
    assert _finding_rows(report) == expected
    assert not [f for f in report.findings if f.rule == "internal-error"]
