"""Every judged real finding stays judged: true ones raised, false ones gone (mirror present)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

VERDICTS = tomllib.loads((Path(__file__).parent / "real_tree" / "verdicts.toml").read_text())["finding"]


def test_every_verdict_has_a_reason():
    assert all(v["reason"].strip() and isinstance(v["verdict"], bool) for v in VERDICTS)


@pytest.mark.parametrize("verdict", VERDICTS, ids=lambda v: f"{v['commit']}-{v['rule']}-{v['verdict']}")
def test_judged_finding(verdict, real_review):
    report = real_review(f"{verdict['commit']}^", verdict["commit"])
    in_cell = [
        f
        for f in report.findings
        if verdict.get("cell") in (None, f.cell) and verdict.get("severity") in (None, f.severity.label)
    ]
    if verdict.get("every"):
        assert any(f.rule == verdict["rule"] for f in in_cell) is verdict["verdict"], verdict["reason"]
    raised = {(f.rule, f.path) for f in in_cell}
    assert ((verdict["rule"], verdict["path"]) in raised) is verdict["verdict"], verdict["reason"]
