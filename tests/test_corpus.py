"""The regression corpus (tests/real_tree/corpus/*.toml): well formed everywhere, and a small
subset run through bench/corpus.py when a mirror is present (`make corpus` runs all of it and
prints the table; a whole run is tens of minutes, too long for the suite)."""

from __future__ import annotations

import re

from bench.corpus import Outcome, format_row, load_corpus, summary
from checks import BY_ID

# The causes named in issue 24 and two of their fixes: a fixed sample, fast enough for every test run.
SUBSET = (
    "cadence-reference-rename-cmake",
    "arm-tosa-move-targets",
    "stack-util-exported-through-private-dep",
    "binary-ops-header-only-gains-source",
)
QUIET_SUBSET = ("f01198f285", "397b8df215")


def test_every_entry_is_well_formed():
    regressions, quiet = load_corpus()
    assert len({r.id for r in regressions}) == len(regressions)
    for regression in regressions:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", regression.id), regression.id
        assert re.fullmatch(r"[0-9a-f]{10,40}", regression.introducer) and re.fullmatch(
            r"[0-9a-f]{10,40}", regression.fix
        )
        assert regression.rule in BY_ID, regression.rule
        assert regression.path and regression.subject and regression.reason
    for entry in quiet:
        assert re.fullmatch(r"[0-9a-f]{10,40}", entry.commit) and entry.reason
    assert len({q.commit for q in quiet}) == len(quiet)
    # A regression's fix must not be listed as its own introducer, nor an introducer as quiet.
    introducers = {r.introducer for r in regressions}
    assert not introducers & {q.commit for q in quiet}


def test_summary_counts_only_caught_and_silent_at_fix():
    outcomes = [
        Outcome("a", "1" * 10, "x", "r", True, True, ""),
        Outcome("b", "2" * 10, "x", "r", True, False, ""),
        Outcome("c", "3" * 10, "x", "r", False, True, ""),
        Outcome("quiet-4", "4" * 10, "quiet", "-", False, True, "rule p:1"),
    ]
    text, recall, loud = summary(outcomes)
    assert recall == 1 / 3 and loud == 1
    assert "2/3 caught at the introducer, 1 of them silent at the fix" in text


def test_named_causes_caught_and_fixes_quiet(executorch_mirror, real_review):
    from bench.corpus import evaluate

    regressions, quiet = load_corpus()
    chosen = [r for r in regressions if r.id in SUBSET]
    calm = [q for q in quiet if q.commit in QUIET_SUBSET]
    assert len(chosen) == len(SUBSET) and len(calm) == len(QUIET_SUBSET)
    outcomes = evaluate(
        executorch_mirror,
        chosen,
        calm,
        real_review,
    )
    table = "\n".join(format_row(o) for o in outcomes)  # the bench's own table, shown on failure
    assert [(o.id, o.caught, o.silent_at_fix) for o in outcomes] == [
        *((r.id, True, True) for r in chosen),
        *((f"quiet-{q.commit}", True, True) for q in calm),
    ], table


def test_python_dependency_gap_caught_and_its_fix_quiet(executorch_mirror, real_tree_cache):
    # python-import-undeclared on its corpus pair: 1bb039ff33 makes arm_pass_manager.py import three
    # passes of backends/transforms that //backends/arm/_passes:passes does not depend on; c4ec988d16
    # adds them. A test of its own: two reviews, under the suite's per-test timeout on its own.
    from bench.corpus import evaluate
    from pr_check.review import review_repository

    regressions, quiet = load_corpus()
    chosen = [r for r in regressions if r.id == "arm-pass-manager-transforms-deps"]
    calm = [q for q in quiet if q.commit == "c4ec988d16"]
    outcomes = evaluate(
        executorch_mirror,
        chosen,
        calm,
        lambda base, head: review_repository(executorch_mirror, base, head, cache_dir=real_tree_cache),
    )
    assert [(o.id, o.caught, o.silent_at_fix) for o in outcomes] == [
        ("arm-pass-manager-transforms-deps", True, True),
        ("quiet-c4ec988d16", True, True),
    ], "\n".join(format_row(o) for o in outcomes)
