"""bot/render/github_review.py: placing findings on the diff, the plan for a push, the check-run output."""

from __future__ import annotations

from bot.diff import parse_diff
from bot.model import Evidence, Finding, Fix, Severity
from bot.render.github_review import (
    ANNOTATIONS_PER_REQUEST,
    COMMENT_BODY_LIMIT,
    OUTPUT_TEXT_LIMIT,
    PostedComment,
    PostedReview,
    SmokeNote,
    check_conclusion,
    marked_fingerprint,
    marked_review_head,
    marked_smoke,
    place_finding,
    plan_review,
    plan_smoke_lines,
    render_check_run,
    render_comment_body,
)
from bot.render.smoke_check_run import SmokeLinked, smoke_from_workflow_run, smoke_never_reported
from pr_check.review import SMOKE_VERIFIED_RULES

HEAD = "c" * 40
# BUCK: lines 3-6 in one hunk (4 and 5 added); lines 20-22 in a second hunk (21 added).
DIFF = parse_diff(
    "diff --git a/BUCK b/BUCK\n--- a/BUCK\n+++ b/BUCK\n@@ -3,2 +3,4 @@\n a\n+b\n+c\n d\n@@ -18,2 +20,3 @@\n x\n+y\n z\n"
)


def finding(
    line: int = 4,
    *,
    rule: str = "link-whole-without-python-dlopen",
    severity: Severity = Severity.MAJOR,
    fingerprint: str = "fp1",
    fix: Fix | None = None,
    end_line: int | None = None,
    message: str = "why",
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        title="Title",
        path="BUCK",
        line=line,
        end_line=end_line or line,
        message=message,
        fingerprint=fingerprint,
        target="//:shims",
        cell="fbcode",
        evidence=(Evidence("BUCK", 1, "defined here"),),
        fix=fix,
    )


def posted(comment_id: int, item: Finding, line: int | None, **state) -> PostedComment:
    placement = place_finding(item, DIFF)
    return PostedComment(comment_id, item.path, line, None, render_comment_body(item, placement), **state)


def test_findings_are_placed_only_on_lines_the_diff_contains():
    assert place_finding(finding(4), DIFF).line == 4
    assert place_finding(finding(3), DIFF).line == 3  # context lines take comments too
    assert place_finding(finding(10), DIFF) is None  # between hunks
    assert place_finding(Finding("r", Severity.MINOR, "t", "other.bzl", 4, 4, "m", "f"), DIFF) is None


def test_a_fix_inside_one_hunk_becomes_a_suggestion_over_exactly_its_lines():
    one_line = place_finding(finding(4, fix=Fix("BUCK", 4, 4, "b2")), DIFF)
    assert (one_line.start_line, one_line.line, one_line.suggestion) == (None, 4, "b2")
    two_lines = place_finding(finding(4, fix=Fix("BUCK", 4, 5, "b2\nc2")), DIFF)
    assert (two_lines.start_line, two_lines.line) == (4, 5)
    body = render_comment_body(finding(4, fix=Fix("BUCK", 4, 5, "b2\nc2", "do this")), two_lines)
    assert "do this:\n```suggestion\nb2\nc2\n```" in body
    across = place_finding(finding(4, fix=Fix("BUCK", 5, 21, "zz")), DIFF)
    assert (across.line, across.suggestion) == (4, None)  # spans two hunks: described, not suggested
    assert "```suggestion" not in render_comment_body(finding(4, fix=Fix("BUCK", 5, 21, "zz")), across)


def test_comment_bodies_carry_rule_evidence_and_a_hidden_fingerprint():
    body = render_comment_body(finding(4), place_finding(finding(4), DIFF))
    assert body.startswith("**link-whole-without-python-dlopen** (major): Title")
    assert "- `BUCK:1`: defined here" in body
    assert marked_fingerprint(body) == "fp1"
    assert marked_fingerprint("a human comment") is None


def test_a_first_review_posts_inline_comments_and_lists_the_rest():
    plan = plan_review([finding(4), finding(10, fingerprint="fp2")], DIFF, [], [], HEAD)
    assert [(c.path, c.line, c.fingerprint) for c in plan.comments] == [("BUCK", 4, "fp1")]
    assert [f.fingerprint for f in plan.off_diff] == ["fp2"]
    assert plan.post_review and plan.event == "COMMENT"
    assert marked_review_head(plan.body) == HEAD
    assert "`BUCK:10`" in plan.body
    assert plan.comments[0].to_api() == {"path": "BUCK", "line": 4, "side": "RIGHT", "body": plan.comments[0].body}


def test_a_blocker_requests_changes_and_its_fix_dismisses_the_request():
    blocker = finding(4, severity=Severity.BLOCKER)
    plan = plan_review([blocker], DIFF, [], [], HEAD)
    assert plan.event == "REQUEST_CHANGES" and plan.dismissals == ()
    standing = [PostedReview(7, "CHANGES_REQUESTED", "a" * 40)]
    later = plan_review([], DIFF, [posted(1, blocker, 4)], standing, HEAD)
    assert later.dismissals == (7,) and later.deletions == (1,)


def test_on_a_new_push_standing_comments_are_kept_edited_or_deleted():
    same = finding(4)
    changed = finding(5, fingerprint="fp2", message="old text")
    gone = finding(21, fingerprint="fp3")
    comments = [posted(1, same, 4), posted(2, changed, 5), posted(3, gone, 21)]
    previous = [PostedReview(9, "COMMENTED", "a" * 40)]
    plan = plan_review([same, finding(5, fingerprint="fp2", message="new text")], DIFF, comments, previous, HEAD)
    assert plan.kept == (1,)
    assert [comment_id for comment_id, _ in plan.edits] == [2] and "new text" in plan.edits[0][1]
    assert plan.deletions == (3,)
    assert plan.comments == () and not plan.post_review  # nothing new to say: no second review


def test_an_outdated_comment_is_replaced_not_duplicated():
    moved = finding(5)
    plan = plan_review([moved], DIFF, [posted(1, finding(4), None)], [PostedReview(9, "COMMENTED", "a" * 40)], HEAD)
    assert plan.deletions == (1,)
    assert [(c.line, c.fingerprint) for c in plan.comments] == [(5, "fp1")]
    assert plan.post_review


def test_a_thread_a_human_answered_is_never_deleted():
    gone = finding(4)
    plan = plan_review([], DIFF, [posted(1, gone, 4, human_replied=True)], [], HEAD)
    assert plan.deletions == () and plan.replies == ((1, f"Fixed in {HEAD}."),)
    answered = plan_review([], DIFF, [posted(1, gone, 4, human_replied=True, fixed_reply_posted=True)], [], HEAD)
    assert answered.replies == () and answered.deletions == ()
    outdated_but_discussed = plan_review([gone], DIFF, [posted(1, gone, None, human_replied=True)], [], HEAD)
    assert outdated_but_discussed.deletions == () and outdated_but_discussed.comments == ()


def test_duplicate_comments_of_one_finding_are_reduced_to_one():
    item = finding(4)
    plan = plan_review([item], DIFF, [posted(1, item, 4), posted(2, item, 4)], [], HEAD)
    assert plan.kept == (1,) and plan.deletions == (2,) and plan.comments == ()


def test_a_head_that_already_has_its_review_gets_no_second_one():
    item = finding(4, severity=Severity.BLOCKER)
    reviewed = [PostedReview(9, "CHANGES_REQUESTED", HEAD)]
    assert not plan_review([item], DIFF, [posted(1, item, 4)], reviewed, HEAD).post_review
    assert not plan_review([finding(10)], DIFF, [], [PostedReview(9, "COMMENTED", HEAD)], HEAD).post_review
    # ...unless an inline comment is missing (GitHub refused it, or someone deleted it).
    assert plan_review([item], DIFF, [], reviewed, HEAD).post_review


def test_check_conclusions_follow_the_worst_severity():
    assert check_conclusion([]) == "success"
    assert check_conclusion([finding(severity=Severity.INFO)]) == "success"
    assert check_conclusion([finding(severity=Severity.MINOR)]) == "neutral"
    assert check_conclusion([finding(severity=Severity.MAJOR)]) == "failure"
    assert check_conclusion([finding(severity=Severity.BLOCKER)]) == "failure"


def test_annotations_go_in_batches_of_fifty_and_the_summary_fits_githubs_limit():
    many = [finding(n, fingerprint=f"fp{n}", message="m" * 2000) for n in range(1, 121)]
    output = render_check_run(
        findings=many,
        off_diff=many[10:],
        suppressed_count=2,
        base_sha="b" * 40,
        head_sha=HEAD,
        smoke_reasons=["x.cu: CUDA source changed"],
        full_report_pointer="See reports/x.json.",
    )
    assert [len(batch) for batch in output.annotation_batches] == [ANNOTATIONS_PER_REQUEST, ANNOTATIONS_PER_REQUEST, 20]
    assert output.requests_needed == 3
    assert "annotations" in output.output(2) and "annotations" not in output.output(3)
    assert len(output.text) <= OUTPUT_TEXT_LIMIT and output.text.endswith("See reports/x.json.")
    assert len(output.summary) <= OUTPUT_TEXT_LIMIT
    assert "CUDA-touching" in output.summary and "2 findings suppressed" in output.summary
    first = output.annotation_batches[0][0]
    assert (first["path"], first["start_line"], first["annotation_level"]) == ("BUCK", 1, "failure")
    empty = render_check_run(
        findings=[],
        off_diff=[],
        suppressed_count=0,
        base_sha="b" * 40,
        head_sha=HEAD,
        smoke_reasons=[],
        full_report_pointer="",
    )
    assert (empty.conclusion, empty.title, empty.requests_needed) == ("success", "No issues", 1)


# -- the smoke line ----------------------------------------------------------------------------
OLD_HEAD = "a" * 40
RUN_URL = "https://github.com/pytorch/executorch/actions/runs/77"
SMOKE = SMOKE_VERIFIED_RULES  # the renderer is told which rules the smoke job speaks to


def test_the_smoke_verified_rules_are_the_checks_tagged_so():
    # The link contract of the CUDA shims, which the GPU smoke job exercises (smoke/): read from tags.
    assert {
        "link-export-dynamic-missing",
        "link-whole-without-python-dlopen",
        "link-whole-archive-public",
        "shim-duplicate-symbol",
    } == SMOKE_VERIFIED_RULES


def test_findings_the_smoke_job_proves_carry_a_smoke_line_with_its_own_marker():
    item = finding(4)  # link-whole-without-python-dlopen
    placement = place_finding(item, DIFF)
    pending = render_comment_body(item, placement, SmokeNote("pending", HEAD), SMOKE)
    assert "GPU smoke job **pending** on `ccccccc`" in pending and "`pr-check / cuda-smoke` check" in pending
    mark = marked_smoke(pending)
    assert (mark.rule, mark.head_sha) == ("link-whole-without-python-dlopen", HEAD)
    assert mark.line.endswith(f"<!-- pr-check:smoke rule=link-whole-without-python-dlopen head={HEAD} -->")
    assert marked_fingerprint(pending) == "fp1" and pending.endswith("<!-- pr-check:fp=fp1 -->")
    waiting = render_comment_body(item, placement, SmokeNote("waiting", HEAD), SMOKE)
    assert "**waiting for a maintainer**" in waiting and "`/pr-check smoke`" in waiting
    assert "**not required**" in render_comment_body(item, placement, SmokeNote("not-required", HEAD), SMOKE)
    # Other rules, and a caller that knows nothing of the smoke job: no line.
    assert (
        marked_smoke(
            render_comment_body(finding(4, rule="dep-undeclared-header"), placement, SmokeNote("pending", HEAD), SMOKE)
        )
        is None
    )
    assert marked_smoke(render_comment_body(item, placement)) is None
    # A body trimmed to GitHub's limit keeps both markers.
    long = render_comment_body(
        finding(4, message="m" * COMMENT_BODY_LIMIT), placement, SmokeNote("pending", HEAD), SMOKE
    )
    assert len(long) <= COMMENT_BODY_LIMIT and marked_smoke(long) is not None and marked_fingerprint(long) == "fp1"


def test_a_smoke_result_rewrites_only_the_smoke_line_of_comments_about_that_head():
    item = finding(4)
    placement = place_finding(item, DIFF)
    pending = render_comment_body(item, placement, SmokeNote("pending", HEAD), SMOKE)
    comments = [
        PostedComment(1, "BUCK", 4, None, pending, html_url="https://x/pull/1#discussion_r1"),
        PostedComment(
            2,
            "BUCK",
            21,
            None,
            render_comment_body(finding(21, fingerprint="fp2"), None, SmokeNote("pending", OLD_HEAD), SMOKE),
        ),  # another head
        PostedComment(3, "BUCK", 5, None, render_comment_body(finding(5, rule="other", fingerprint="fp3"), None)),
    ]
    failed = SmokeNote("completed", HEAD, conclusion="failure", run_url=RUN_URL)
    plan = plan_smoke_lines(comments, failed)
    [(comment_id, body)] = plan.edits
    assert comment_id == 1
    assert f"GPU smoke job **failed** on `ccccccc`: [workflow run]({RUN_URL})." in body
    assert "The link contract this finding describes failed on a real GPU" in body
    assert body.replace(marked_smoke(body).line, "") == pending.replace(marked_smoke(pending).line, "")
    assert plan.linked == (
        SmokeLinked("link-whole-without-python-dlopen", "BUCK", 4, "https://x/pull/1#discussion_r1"),
    )
    # Applied again: nothing to edit, the same links.
    again = plan_smoke_lines(
        [PostedComment(1, "BUCK", 4, None, body, html_url="https://x/pull/1#discussion_r1")], failed
    )
    assert again.edits == () and again.linked == plan.linked
    passed = plan_smoke_lines(comments[:1], SmokeNote("completed", HEAD, conclusion="success", run_url=RUN_URL))
    assert "**passed**" in passed.edits[0][1] and "did not reproduce on a real GPU" in passed.edits[0][1]
    silent = plan_smoke_lines(comments[:1], SmokeNote("silent", HEAD, timeout_s=3600))
    assert "**did not report** within 60 minutes" in silent.edits[0][1]
    cancelled = plan_smoke_lines(comments[:1], SmokeNote("completed", HEAD, conclusion="cancelled", run_url=RUN_URL))
    assert "ended **cancelled**" in cancelled.edits[0][1] and "no verdict" in cancelled.edits[0][1]


def test_a_review_of_the_same_head_carries_the_smoke_result_along():
    item = finding(4)
    placement = place_finding(item, DIFF)
    result = SmokeNote("completed", HEAD, conclusion="failure", run_url=RUN_URL)
    standing = PostedComment(1, "BUCK", 4, None, render_comment_body(item, placement, result, SMOKE))
    reviewed = [PostedReview(9, "COMMENTED", HEAD)]
    # The review thinks "pending" (or knows nothing): the result stands, no edit.
    for outlook in (SmokeNote("pending", HEAD), None):
        plan = plan_review([item], DIFF, [standing], reviewed, HEAD, outlook, SMOKE)
        assert plan.kept == (1,) and plan.edits == ()
    # The finding's text changed: the edit keeps the result line.
    reworded = finding(4, message="new text")
    [(comment_id, body)] = plan_review(
        [reworded], DIFF, [standing], reviewed, HEAD, SmokeNote("pending", HEAD), SMOKE
    ).edits
    assert comment_id == 1 and "new text" in body and "GPU smoke job **failed**" in body
    # A new head: the old result no longer speaks for it; the line says what is known of the new head.
    newer = "d" * 40
    [(_, body)] = plan_review([item], DIFF, [standing], reviewed, newer, SmokeNote("pending", newer), SMOKE).edits
    assert marked_smoke(body).head_sha == newer and "**pending** on `ddddddd`" in body
    # New comments take the outlook.
    fresh = plan_review([item], DIFF, [], [], HEAD, SmokeNote("waiting", HEAD), SMOKE)
    assert "**waiting for a maintainer**" in fresh.comments[0].body


def test_the_smoke_check_links_the_findings_it_bears_on():
    linked = (
        SmokeLinked(
            "link-export-dynamic-missing", "backends/cuda/runtime/targets.bzl", 10, "https://x/1#discussion_r5"
        ),
        SmokeLinked("shim-duplicate-symbol", "BUCK", None, "https://x/1#discussion_r6"),
    )
    done = smoke_from_workflow_run("completed", "failure", RUN_URL, "prc-0123456789abcdef", linked)
    assert (done.status, done.conclusion, done.details_url) == ("completed", "failure", RUN_URL)
    assert (
        "- [`link-export-dynamic-missing` at `backends/cuda/runtime/targets.bzl:10`](https://x/1#discussion_r5)"
        in done.summary
    )
    assert "- [`shim-duplicate-symbol` at `BUCK` (outdated)](https://x/1#discussion_r6)" in done.summary
    assert "Findings" not in smoke_from_workflow_run("completed", "success", RUN_URL, "prc-0123456789abcdef").summary
    silent = smoke_never_reported(3600, "prc-0123456789abcdef", linked)
    assert "within 60 minutes" in silent.summary and "(https://x/1#discussion_r5)" in silent.summary
    many = [SmokeLinked("shim-duplicate-symbol", "BUCK", n, f"https://x/{n}") for n in range(80)]
    assert "... and 30 more" in smoke_from_workflow_run("completed", "failure", RUN_URL, "prc-0", many).summary


def test_the_fail_level_of_the_base_config_decides_the_conclusion():
    minor, major = finding(severity=Severity.MINOR), finding(severity=Severity.MAJOR)
    assert check_conclusion([minor], Severity.MINOR) == "failure"
    assert check_conclusion([major], Severity.BLOCKER) == "neutral"  # below the bar: visible, not blocking
    assert check_conclusion([finding(severity=Severity.INFO)], Severity.INFO) == "failure"
    output = render_check_run(
        findings=[minor],
        off_diff=[],
        suppressed_count=0,
        base_sha="a" * 40,
        head_sha=HEAD,
        smoke_reasons=[],
        full_report_pointer="",
        fail_level=Severity.MINOR,
    )
    assert output.conclusion == "failure"


def test_a_finding_that_comes_back_after_its_thread_said_fixed_gets_a_new_comment():
    # The thread's last word is "Fixed in ...": the returning finding must not hide in it, edited
    # in place (and it is outdated besides); the thread stays as the humans left it.
    back = finding(5)
    closed = posted(1, back, None, human_replied=True, fixed_reply_posted=True)
    plan = plan_review([back], DIFF, [closed], [PostedReview(9, "COMMENTED", "a" * 40)], HEAD)
    assert [(c.line, c.fingerprint) for c in plan.comments] == [(5, "fp1")]
    assert plan.kept == (1,) and plan.edits == () and plan.deletions == () and plan.post_review
    # Next push, same finding: the new comment is the one that stands; the closed thread is left alone.
    again = plan_review([back], DIFF, [closed, posted(2, back, 5)], [PostedReview(10, "COMMENTED", HEAD)], HEAD)
    assert again.comments == () and again.deletions == () and set(again.kept) == {1, 2}


def test_a_finding_without_a_path_is_in_the_summary_but_not_an_annotation():
    whole = Finding("internal-error", Severity.MAJOR, "Crashed", "", 0, 0, "the review process crashed", "fp9")
    output = render_check_run(
        findings=[whole, finding(4)],
        off_diff=[whole],
        suppressed_count=0,
        base_sha="a" * 40,
        head_sha=HEAD,
        smoke_reasons=[],
        full_report_pointer="",
    )
    assert [a["path"] for batch in output.annotation_batches for a in batch] == ["BUCK"]
    assert "internal-error" in output.summary


def test_check_run_external_ids_name_the_pull_request():
    from bot.render.github_review import check_run_external_id, pull_number_from_external_id

    assert pull_number_from_external_id(check_run_external_id(17, HEAD)) == 17
    for other in (HEAD, "prc-0123456789abcdef", "pr=x;head=abc", None, 17, "pr=1;head=" + HEAD + ";x"):
        assert pull_number_from_external_id(other) is None


def test_a_fix_outside_the_diff_is_a_collapsed_patch_in_the_comment():
    # The finding sits on added line 4; its fix rewrites line 10, which no hunk shows.
    fix = Fix("BUCK", 10, 11, '    deps = [":a", ":b"],', "Declare the dep", '    deps = [\n        ":a",')
    item = finding(4, fix=fix)
    placement = place_finding(item, DIFF)
    assert (placement.line, placement.suggestion) == (4, None)
    assert render_comment_body(item, placement) == (
        "**link-whole-without-python-dlopen** (major): Title\n"
        "\n"
        "why\n"
        "\n"
        "Target: `//:shims` (cell `fbcode`)\n"
        "\n"
        "Evidence:\n"
        "- `BUCK:1`: defined here\n"
        "\n"
        "<details><summary>Declare the dep (BUCK lines 10-11): patch</summary>\n"
        "\n"
        "```diff\n"
        "--- a/BUCK\n"
        "+++ b/BUCK\n"
        "@@ -10,2 +10,1 @@\n"
        "-    deps = [\n"
        '-        ":a",\n'
        '+    deps = [":a", ":b"],\n'
        "```\n"
        "\n"
        "</details>\n"
        "\n"
        "<!-- pr-check:fp=fp1 -->"
    )


def test_a_fix_in_another_file_is_a_patch_of_that_file():
    fix = Fix("targets.bzl", 7, 7, "x\ny", "", "w")
    body = render_comment_body(finding(4, fix=fix), place_finding(finding(4, fix=fix), DIFF))
    assert (
        "<details><summary>Suggested fix (targets.bzl:7): patch</summary>\n\n"
        "```diff\n--- a/targets.bzl\n+++ b/targets.bzl\n@@ -7,1 +7,2 @@\n-w\n+x\n+y\n```\n\n</details>"
    ) in body
    assert "```suggestion" not in body


def test_an_old_fix_without_its_original_lines_shows_the_replacement_folded():
    fix = Fix("BUCK", 10, 10, "new text", "Use this")
    body = render_comment_body(finding(4, fix=fix), place_finding(finding(4, fix=fix), DIFF))
    assert ("<details><summary>Use this (BUCK:10): replacement</summary>\n\n```\nnew text\n```\n\n</details>") in body
    assert "```diff" not in body


def test_a_patch_holding_backticks_gets_a_longer_fence():
    fix = Fix("README.md", 2, 2, "````", "", "```")
    body = render_comment_body(finding(4, fix=fix), None)
    assert "`````diff\n--- a/README.md\n+++ b/README.md\n@@ -2,1 +2,1 @@\n-```\n+````\n`````" in body


def test_the_check_run_text_folds_each_fix_as_a_patch():
    fix = Fix("BUCK", 10, 10, "b", "Swap", "a")
    output = render_check_run(
        findings=[finding(4, fix=fix)],
        off_diff=[],
        suppressed_count=0,
        base_sha="b" * 40,
        head_sha=HEAD,
        smoke_reasons=(),
        full_report_pointer="see the report",
    )
    assert output.text == (
        "### `link-whole-without-python-dlopen` at `BUCK:4`\n"
        "\n"
        "why\n"
        "- `BUCK:1`: defined here\n"
        "\n"
        "<details><summary>Swap (BUCK:10): patch</summary>\n"
        "\n"
        "```diff\n--- a/BUCK\n+++ b/BUCK\n@@ -10,1 +10,1 @@\n-a\n+b\n```\n"
        "\n"
        "</details>\n"
    )
