"""The JSON report is a public contract: every fixture review validates against its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bot.render.json import render_json
from fixtures.cases import CASES
from pr_check.review import review_repository

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "bot/render/report.schema.json").read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_fixture_review_matches_the_schema(case, case_repo, tmp_path):
    repo, base, head = case_repo(case)
    document = render_json(review_repository(repo, base, head, cache_dir=tmp_path / "cache"))
    jsonschema.validate(document, SCHEMA)


def test_the_schema_rejects_a_finding_without_evidence():
    finding = {
        "rule": "cuda-guard-missing",
        "severity": "blocker",
        "path": "a",
        "line": 1,
        "end_line": 1,
        "target": None,
        "cell": "xplat",
        "title": "t",
        "message": "m",
        "fingerprint": "0" * 16,
        "fix": None,
    }
    document = {
        "version": 1,
        "base": "",
        "head": "",
        "findings": [finding],
        "smoke": {"required": False, "reasons": []},
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)
