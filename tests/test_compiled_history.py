"""Real compile regressions from ExecuTorch history, checked twice: by g++ directly, and by the compiled tier.

Each entry of tests/real_tree/compiled_corpus.toml was found by bench/mine_compile_regressions.py
and written by hand after compiling the TU at the introducer, its parent and the fix (the entry's
`first_error` is the compiler's first error there, read from the compile, not captured by a tool).
Two checks per entry, both skipped without the mirror:
- the compiler's word: the TU, extracted from the mirror and compiled with g++ in the entry's
  host configuration, compiles at the introducer's parent (or is absent there), fails at the
  introducer (and at the pull request's head as posted) with `first_error`, and compiles at the fix;
- the tier's word (entries with `expected_caught = true`): a review of the introducer against its
  parent (and of the pull request as posted against its merge-base, where the entry has one)
  with the compiled tier on reports `compile-error-new` for the TU, naming the entry's
  configuration (`tier_configuration`, as the tier's message words it) and the compiler's words; a review of the fix against its parent reports none for it.
Entries the tier misses stay in the corpus with `expected_caught = false` and a `missed` reason.
Entries whose defect is Buck header visibility (`hidden`) are compiled without the headers the
owner's header tree lacks (read by hand from its build files), compile with them, and the fix
adds the dep that exports them (`fix_adds`); `quiet_span` entries are also reviewed as one change
from the introducer's parent to the fix, which compiles the TU and must be quiet.
By default the compiler's check runs on two entries and the tier's on one; PR_CHECK_LONG_RUNS=1
runs both on every entry (and, for a miss with `missed_as`, checks the tier's not-verified note).
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path

import pytest

from bench import mine_compile_regressions as mining

CORPUS = Path(__file__).parent / "real_tree" / "compiled_corpus.toml"
ENTRIES = tomllib.loads(CORPUS.read_text())["regression"]
FIELDS = {
    "name",
    "introducer",
    "introducer_date",
    "fix",
    "fix_date",
    "class",
    "configuration",
    "tier_configuration",
    "host_configuration",
    "unit",
    "first_error",
    "reason",
    "expected_caught",
    "pulls",
}
CUTOFF = "2025-09-01"


def test_corpus_entries_are_complete_and_before_the_cutoff():
    names = [entry["name"] for entry in ENTRIES]
    assert len(names) == len(set(names))
    for entry in ENTRIES:
        assert not FIELDS - set(entry), entry["name"]
        assert entry["introducer_date"] < CUTOFF and entry["fix_date"] < CUTOFF, entry["name"]
        assert entry["host_configuration"] in mining.CONFIGURATIONS, entry["name"]
        assert entry["expected_caught"] or entry.get("missed"), f"{entry['name']}: a miss needs its reason"
        assert not entry.get("hidden") or len(entry.get("fix_adds", ())) == 2, f"{entry['name']}: hidden needs fix_adds"


def test_corpus_shares_no_pull_request_with_the_held_out_sample():
    sample = {
        line.split("\t")[0]
        for line in (CORPUS.parent / "pr_sample_compiled.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    for entry in ENTRIES:
        if "pull_head" in entry:
            assert entry["pull_head"].split("/")[2] not in sample, entry["name"]
        assert not {str(number) for number in entry["pulls"]} & sample, entry["name"]


def _sides(repo: Path, entry: dict) -> dict[str, mining.Outcome]:
    with tempfile.TemporaryDirectory(prefix="compiled-history-") as scratch:
        return mining.entry_sides(repo, mining.Trees(repo, Path(scratch)), entry)


# Compiling an entry at its five to seven revisions takes 10-40 s on 2 shared cores: by default
# two entries (a missing standard include, a Buck header tree lacking a header), every entry
# with PR_CHECK_LONG_RUNS=1.
FAST = "portable-max-pool2d-with-indices-tuple-undeclared"
FAST_HIDDEN = "optimized-where-elementwise-util-deps-private"
LONG = bool(os.environ.get("PR_CHECK_LONG_RUNS"))
COMPILED = [e for e in ENTRIES if LONG or e["name"] in (FAST, FAST_HIDDEN)]


@pytest.mark.parametrize("entry", COMPILED, ids=[e["name"] for e in COMPILED])
def test_the_compiler_fails_at_the_introducer_only(entry, executorch_mirror):
    sides = _sides(executorch_mirror, entry)
    assert sides["introducer^"].status == "clean" or sides["introducer^"].first.endswith("absent"), sides
    assert sides["introducer"].status == "error", sides["introducer"]
    assert entry["first_error"] in sides["introducer"].first
    assert sides["fix"].status == "clean", sides["fix"]
    if "pull_head" in entry:
        assert sides["pull_base"].status == "clean" or sides["pull_base"].first.endswith("absent")
        assert sides["pull_head"].status == "error" and entry["first_error"] in sides["pull_head"].first
    if entry.get("hidden"):
        # Only the header tree is at fault: with the hidden headers the introducer compiles, and
        # the fix's build file adds the dep that exports them.
        assert sides["introducer+hidden"].status == "clean", sides["introducer+hidden"]
        assert mining.fix_exports(executorch_mirror, entry), entry["fix_adds"]
    assert mining.entry_holds(executorch_mirror, entry, sides)


# Each tier check is two to four real-tree reviews with the compiler (up to minutes each on 2
# shared cores): `make test` checks one entry, PR_CHECK_LONG_RUNS=1 all of them.
CAUGHT = [e for e in ENTRIES if e["expected_caught"] and (LONG or e["name"] == FAST)]
MISSED = [e for e in ENTRIES if not e["expected_caught"] and "missed_as" in e and LONG]


@pytest.mark.timeout(1800)  # two or three real-tree reviews with the compiler, on a shared 2-core machine
@pytest.mark.parametrize("entry", CAUGHT, ids=[e["name"] for e in CAUGHT])
def test_the_tier_reports_the_introducer_and_is_quiet_at_the_fix(entry, executorch_mirror, real_tree_cache):
    import checks
    from pr_check.review import review_repository

    selected = (checks.BY_ID["compile-error-new"],)

    def compile_findings(old: str, new: str):
        report = review_repository(
            executorch_mirror, old, new, checks=selected, cache_dir=real_tree_cache, compiled=True
        )
        assert not [f for f in report.findings if f.rule == "internal-error"]
        return [f for f in report.findings if f.rule == "compile-error-new" and f"`{entry['unit']}`" in f.message]

    sides = [(f"{entry['introducer']}^", entry["introducer"])]
    if "pull_head" in entry:
        sides.append((entry["pull_base"], entry["pull_head"]))
    for old, new in sides:
        broke = compile_findings(old, new)
        assert broke, f"no compile-error-new for {entry['unit']} at {new}"
        assert any(entry["tier_configuration"] in f.message and entry["first_error"] in f.message for f in broke), [
            f.message for f in broke
        ]
    assert not compile_findings(f"{entry['fix']}^", entry["fix"])
    if entry.get("quiet_span"):
        # The introducer and everything up to the fix as one change: the TU is compiled (it or a
        # header it includes changed) and compiles.
        assert not compile_findings(f"{entry['introducer']}^", entry["fix"])


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("entry", MISSED, ids=[e["name"] for e in MISSED])
def test_the_tier_says_why_it_misses(entry, executorch_mirror, real_tree_cache):
    import checks
    from pr_check.review import review_repository

    report = review_repository(
        executorch_mirror,
        f"{entry['introducer']}^",
        entry["introducer"],
        checks=(checks.BY_ID["compile-error-new"], checks.BY_ID["compile-not-verified"]),
        cache_dir=real_tree_cache,
        compiled=True,
    )
    assert not [f for f in report.findings if f.rule == "compile-error-new" and f"`{entry['unit']}`" in f.message]
    notes = [
        part
        for f in report.findings
        if f.rule == "compile-not-verified"
        for part in f.message.split("; ")
        if f"`{entry['unit']}`" in part
    ]
    assert any(entry["missed_as"] in note and entry["tier_configuration"] in note for note in notes), notes
