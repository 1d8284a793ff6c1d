"""The compiled tier's held-out precision samples, judged by hand: every loud finding the measurement
printed has a one-line judgment, and none is false. Reads the checked-in files only (cheap).

The third sample keeps the measurement's own output (compiled_precision_third.jsonl, one line per
pull request, as bench/compiled_tier.py printed it), so a judgment cannot drift from what was
measured: a loud finding without a judgment, or a judgment of a finding the run did not print,
fails here."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

REAL_TREE = Path(__file__).parent / "real_tree"


def _sample(name: str) -> dict[int, tuple[str, str]]:
    rows = {}
    for line in (REAL_TREE / name).read_text().splitlines():
        if line and not line.startswith("#"):
            number, head, base, _date = line.split("\t")
            rows[int(number)] = (head, base)
    return rows


def _judged(name: str) -> list[dict]:
    return tomllib.loads((REAL_TREE / name).read_text())["finding"]


def test_the_third_sample_was_measured_whole_at_its_heads_and_bases():
    sample = _sample("pr_sample_compiled_third.txt")
    measured = [json.loads(line) for line in (REAL_TREE / "compiled_precision_third.jsonl").read_text().splitlines()]
    assert len(sample) == 100
    assert {row["pr"]: (row["head"], row["base"]) for row in measured} == sample


def test_every_loud_finding_measured_on_the_third_sample_is_judged_and_none_is_false():
    measured = [json.loads(line) for line in (REAL_TREE / "compiled_precision_third.jsonl").read_text().splitlines()]
    printed = sorted((row["pr"], f["rule"], f.get("where") or f.get("owner")) for row in measured for f in row["loud"])
    judged = _judged("compiled_precision_third.toml")
    assert sorted((j["pr"], j["rule"], j["where"]) for j in judged) == printed
    assert all(j["verdict"] == "true" and j["reason"].strip() for j in judged), judged


def test_the_second_sample_is_judged_and_none_is_false():
    sample = _sample("pr_sample_compiled_second.txt")
    judged = _judged("compiled_precision_second.toml")
    assert {j["pr"] for j in judged} <= set(sample)
    assert all(j["verdict"] == "true" and j["reason"].strip() for j in judged), judged
