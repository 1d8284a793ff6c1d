"""The comment budget (bot/render/github_review.py, bot/render/review_body.py): what goes inline,
what goes in the review body, what the check run keeps."""

from __future__ import annotations

from bot.diff import parse_diff
from bot.model import Evidence, Finding, Severity
from bot.render.github_review import PostedComment, fingerprint_marker, plan_review, render_check_run
from bot.render.review_body import EVIDENCE_SHOWN

HEAD = "c" * 40
# BUCK lines 1-12 added; x.h lines 1-5 added.
DIFF = parse_diff(
    "diff --git a/BUCK b/BUCK\n--- /dev/null\n+++ b/BUCK\n@@ -0,0 +1,12 @@\n"
    + "".join(f"+l{n}\n" for n in range(1, 13))
    + "diff --git a/x.h b/x.h\n--- /dev/null\n+++ b/x.h\n@@ -0,0 +1,5 @@\n"
    + "".join(f"+h{n}\n" for n in range(1, 6))
)


def finding(
    rule: str,
    severity: Severity,
    path: str,
    line: int,
    target: str,
    message: str = "m",
    evidence: tuple[Evidence, ...] = (),
) -> Finding:
    return Finding(
        rule,
        severity,
        f"{rule} title",
        path,
        line,
        line,
        message,
        f"fp-{rule}-{line}-{target.replace('/', '')}",
        target,
        "xplat",
        evidence,
    )


BLOCKER = finding("cuda-guard-missing", Severity.BLOCKER, "BUCK", 2, "//a:lib")
MAJOR = finding("link-export-dynamic-missing", Severity.MAJOR, "BUCK", 5, "//a:shims")
MINORS = [finding("dep-private-for-exported-header", Severity.MINOR, "x.h", n, "//a:x") for n in (1, 2, 3)]
OTHER_MINOR = finding("cell-arch-flags-missing", Severity.MINOR, "BUCK", 9, "//a:k")
INFO = finding("test-missing", Severity.INFO, "BUCK", 11, "//a:t")


def test_only_findings_at_the_inline_level_or_above_go_inline():
    plan = plan_review([BLOCKER, MAJOR, *MINORS, OTHER_MINOR, INFO], DIFF, [], [], HEAD)
    assert sorted(c.fingerprint for c in plan.comments) == sorted([BLOCKER.fingerprint, MAJOR.fingerprint])
    # The rest: one collapsed section, by rule with counts; the three include lines of x.h are one entry.
    body = plan.body
    folded = body.split("<details>", 1)[1]
    assert "<summary>5 minor and info findings below major, not posted inline (3 rules)</summary>" in folded
    assert "**`dep-private-for-exported-header`** (minor): 3 findings in 1 entry" in folded
    assert folded.count("`x.h:") == 1 and "(+2 more lines)" in folded
    assert "**`cell-arch-flags-missing`** (minor): 1 finding\n" in folded
    assert "**`test-missing`** (info): 1 finding\n" in folded
    assert plan.body.endswith(
        f"</details>\n\nComment `/pr-check help` for commands.\n<!-- pr-check:review head={HEAD} -->"
    )


def test_the_inline_level_is_configurable():
    everything = plan_review([BLOCKER, *MINORS, INFO], DIFF, [], [], HEAD, inline_level=Severity.INFO)
    assert len(everything.comments) == 3  # the blocker, the x.h group, the info
    assert "<details>" not in everything.body
    blockers_only = plan_review([BLOCKER, MAJOR], DIFF, [], [], HEAD, inline_level=Severity.BLOCKER)
    assert [c.fingerprint for c in blockers_only.comments] == [BLOCKER.fingerprint]


def test_a_loud_finding_off_the_diff_is_listed_in_the_body_not_folded():
    off = finding("cuda-guard-missing", Severity.BLOCKER, "other/BUCK", 7, "//other:lib")
    plan = plan_review([off, *MINORS], DIFF, [], [], HEAD)
    head, _, folded = plan.body.partition("<details>")
    assert "`other/BUCK:7` on `//other:lib` (xplat)" in head
    assert "//other:lib" not in folded
    assert plan.event == "REQUEST_CHANGES"


def test_a_grouped_comment_names_its_other_lines_and_caps_its_evidence():
    many = tuple(Evidence("dep/BUCK", n, f"dependent {n}") for n in range(1, 21))
    group = [
        finding("dep-private-for-exported-header", Severity.MAJOR, "x.h", n, "//a:x", evidence=many) for n in (1, 4)
    ]
    plan = plan_review(group, DIFF, [], [], HEAD)
    (comment,) = plan.comments
    assert "Also at `x.h:4`: the same cause, one finding for all." in comment.body
    listed = [line for line in comment.body.splitlines() if line.startswith("- `dep/BUCK:")]
    assert len(listed) == EVIDENCE_SHOWN - 1
    assert f"- and {20 - EVIDENCE_SHOWN + 1} more (the check run and the JSON report list every one)" in comment.body


def test_a_standing_comment_of_a_finding_now_grouped_goes_and_is_never_answered_fixed():
    lead, member = MINORS[0], MINORS[1]
    grouped = [finding(m.rule, Severity.MAJOR, m.path, m.line, m.target or "") for m in (lead, member)]
    old = PostedComment(7, "x.h", 2, None, "old body\n\n" + fingerprint_marker(grouped[1].fingerprint))
    discussed = PostedComment(
        8, "x.h", 2, None, "b\n\n" + fingerprint_marker(grouped[1].fingerprint), human_replied=True
    )
    plan = plan_review(grouped, DIFF, [old], [], HEAD)
    assert plan.deletions == (7,) and plan.replies == ()
    plan = plan_review(grouped, DIFF, [discussed], [], HEAD)
    assert plan.kept == (8,) and plan.replies == () and plan.deletions == ()


def test_the_check_run_has_one_row_and_one_annotation_per_group():
    output = render_check_run(
        findings=[BLOCKER, *MINORS],
        off_diff=[],
        suppressed_count=0,
        base_sha="b" * 40,
        head_sha=HEAD,
        smoke_reasons=(),
        full_report_pointer="",
    )
    rows = [line for line in output.summary.splitlines() if line.startswith("| ") and "`x.h:" in line]
    assert len(rows) == 1 and "(+2 like it)" in rows[0]
    annotations = [a for batch in output.annotation_batches for a in batch]
    assert [(a["path"], a["start_line"]) for a in annotations] == [("BUCK", 2), ("x.h", 1)]


def test_not_evaluated_says_per_package_whether_it_failed_at_base_and_what_was_not_checked():
    from bot.review_stats import Unevaluated

    output = render_check_run(
        findings=[],
        off_diff=[],
        suppressed_count=0,
        base_sha="b" * 40,
        head_sha=HEAD,
        smoke_reasons=(),
        full_report_pointer="",
        unevaluated=(
            Unevaluated(
                "oss", "//extension/cuda", "external-dep", 'Key `("cuda", None, "cuda-lazy")` was not found', True
            ),
            Unevaluated("oss", "//backends/new", "load-error", "cannot load", False),
        ),
        shim_stand_ins="shim",
    )
    lines = output.summary.splitlines()
    (cuda,) = [line for line in lines if "`//extension/cuda`" in line]
    assert "it failed the same way at base, so this change did not break it" in cuda
    assert "not checked: every target it defines in `oss`" in cuda
    (new,) = [line for line in lines if "`//backends/new`" in line]
    assert "**it evaluated at base: this change breaks it**" in new
    assert any(line.startswith("**Stand-ins**: `shim/`") and "not initialised" in line for line in lines)
