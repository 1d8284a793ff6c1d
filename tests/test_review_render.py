"""bot/render/review.py: placing findings on the diff, the plan for a push, the check-run output."""

from __future__ import annotations

from bot.diff import parse_diff
from bot.model import Evidence, Finding, Fix, Severity
from bot.render.review import (
    ANNOTATIONS_PER_REQUEST,
    OUTPUT_TEXT_LIMIT,
    PostedComment,
    PostedReview,
    check_conclusion,
    marked_fingerprint,
    marked_review_head,
    place_finding,
    plan_review,
    render_check_run,
    render_comment_body,
)

HEAD = "c" * 40
# BUCK: lines 3-6 in one hunk (4 and 5 added); lines 20-22 in a second hunk (21 added).
DIFF = parse_diff(
    "diff --git a/BUCK b/BUCK\n--- a/BUCK\n+++ b/BUCK\n"
    "@@ -3,2 +3,4 @@\n a\n+b\n+c\n d\n"
    "@@ -18,2 +20,3 @@\n x\n+y\n z\n"
)


def finding(line: int = 4, *, rule: str = "link-whole-without-python-dlopen", severity: Severity = Severity.MINOR,
            fingerprint: str = "fp1", fix: Fix | None = None, end_line: int | None = None, message: str = "why") -> Finding:
    return Finding(rule=rule, severity=severity, title="Title", path="BUCK", line=line, end_line=end_line or line,
                   message=message, fingerprint=fingerprint, target="//:shims", cell="fbcode",
                   evidence=(Evidence("BUCK", 1, "defined here"),), fix=fix)


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
    assert body.startswith("**link-whole-without-python-dlopen** (minor): Title")
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
    output = render_check_run(findings=many, off_diff=many[10:], suppressed_count=2, base_sha="b" * 40,
                              head_sha=HEAD, smoke_reasons=["x.cu: CUDA source changed"],
                              full_report_pointer="See reports/x.json.")
    assert [len(batch) for batch in output.annotation_batches] == [ANNOTATIONS_PER_REQUEST, ANNOTATIONS_PER_REQUEST, 20]
    assert output.requests_needed == 3
    assert "annotations" in output.output(2) and "annotations" not in output.output(3)
    assert len(output.text) <= OUTPUT_TEXT_LIMIT and output.text.endswith("See reports/x.json.")
    assert len(output.summary) <= OUTPUT_TEXT_LIMIT
    assert "CUDA-touching" in output.summary and "2 findings suppressed" in output.summary
    first = output.annotation_batches[0][0]
    assert (first["path"], first["start_line"], first["annotation_level"]) == ("BUCK", 1, "warning")
    empty = render_check_run(findings=[], off_diff=[], suppressed_count=0, base_sha="b" * 40, head_sha=HEAD,
                             smoke_reasons=[], full_report_pointer="")
    assert (empty.conclusion, empty.title, empty.requests_needed) == ("success", "No issues", 1)
