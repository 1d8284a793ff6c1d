"""The comment-budget sample of issue 34 (tests/real_tree/pr_sample_posts.txt), judged by hand: every
minor finding the App posts on it after the change has a one-line judgment, at least 90 % of them
true, and every loud finding of either version is judged. Reads the checked-in file only (cheap)."""

from __future__ import annotations

import tomllib
from pathlib import Path

JUDGED = Path(__file__).parent / "real_tree" / "pr_sample_posts_judged.toml"
SAMPLE = Path(__file__).parent / "real_tree" / "pr_sample_posts.txt"


def _sample() -> set[int]:
    return {int(line.split("\t")[0]) for line in SAMPLE.read_text().splitlines() if line and not line.startswith("#")}


def test_every_posted_minor_is_judged_with_a_reason_and_at_least_90_percent_are_true():
    minors = tomllib.loads(JUDGED.read_text())["minor"]
    assert minors and all(m["verdict"] in ("true", "false") and m["why"].strip() for m in minors)
    assert {m["pr"] for m in minors} <= _sample()
    true = sum(1 for m in minors if m["verdict"] == "true")
    assert true / len(minors) >= 0.9, f"{true} of {len(minors)} true"


def test_every_loud_finding_of_both_versions_is_judged():
    loud = tomllib.loads(JUDGED.read_text())["loud"]
    assert loud and all(e["verdict"] in ("true", "false") and e["why"].strip() for e in loud)
    assert all(e["in"] in ("before", "after", "both") for e in loud)
    assert {e["pr"] for e in loud} <= _sample()
