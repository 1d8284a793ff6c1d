"""#24817 rebuilt on the real tree (bench/seed_prs), posted as the App posts it: through the App's
PyGithub client, over HTTP, to the GitHub stand-in, then read back from what the stand-in stored.

What a maintainer gets is pinned from the invariants of the comment budget and from the judged
seed table (bench/seed_prs/README.md): inline comments only for blocker and major findings on lines
the pull request changes, at most one entry per defect (one macro call, one exported header, one
include seen by two rules), and every finding of the review accounted for in the body.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from bench.seed_prs import SEED_PRS, build_commits, review_seed
from bot.diff import parse_diff
from bot.model import Severity
from bot.render.finding_groups import group_findings
from bot.render.github_review import marked_fingerprint
from tests.standin import GitHubStandIn, app_key_pair
from tests.test_app_harness import APP_ID, OWNER
from webhooks.github_api import GitHubApp, RetryPolicy
from webhooks.review_job import _post_review

NUMBER = 24817
# Judged in bench/seed_prs/README.md: the loud findings of #24817 whose lines the pull request changes.
# The stub `cuda_allocator` (its `nvcc_flags` and deps are new lines) and `runtime_shims` (its
# `link_whole` is a new line); the other three guard findings sit on definition lines the pull request
# does not change (it changes `headers` to `exported_headers` below them): they go in the body.
INLINE = {
    ("cuda-guard-missing", "//backends/cuda/runtime:cuda_allocator"),
    ("link-export-dynamic-missing", "//backends/cuda/runtime:runtime_shims"),
}
LOUD_IN_BODY = {
    "//backends/aoti/slim/cuda:guard",
    "//extension/cuda:runtime_api",
    "//extension/cuda:caller_stream",
}


@pytest.fixture(scope="module")
def posted(executorch_mirror, real_tree_cache, tmp_path_factory):
    repo, commits = build_commits(executorch_mirror, tmp_path_factory.mktemp("seed-posted"))
    pr = next(seed for seed in SEED_PRS if seed.number == NUMBER)
    report = review_seed(repo, commits, pr, real_tree_cache)
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        standin.add_repo(OWNER, "executorch", bare_git_path=str(repo))
        standin.add_pull(OWNER, "executorch", NUMBER, commits[pr.head], commits[pr.base], "seed", "main", "alice")
        app = GitHubApp(
            str(APP_ID), app_key_pair().private_pem.decode(), standin.base_url, write_pause_s=0, retry=RetryPolicy()
        )
        client = app.repository(1, OWNER, "executorch")
        pull = client.pull(NUMBER)
        changes = parse_diff(client.pull_diff(NUMBER))  # GitHub's own diff, as the App places comments
        plan = _post_review(client, NUMBER, pull, report.findings, changes, None)
        reviews = standin.reviews(OWNER, "executorch", NUMBER)
        comments = standin.review_comments(OWNER, "executorch", NUMBER)
    return report, plan, reviews, comments


def test_inline_comments_are_the_loud_findings_on_changed_lines_and_nothing_else(posted):
    report, _, reviews, comments = posted
    assert len(reviews) == 1 and reviews[0]["state"] == "CHANGES_REQUESTED"
    by_fingerprint = {f.fingerprint: f for f in report.findings}
    inline = {
        (by_fingerprint[marked_fingerprint(c["body"])].rule, by_fingerprint[marked_fingerprint(c["body"])].target)
        for c in comments
    }
    assert inline == INLINE
    assert len(comments) == len(INLINE)
    assert all(by_fingerprint[marked_fingerprint(c["body"])].severity >= Severity.MAJOR for c in comments)


def test_the_body_lists_the_loud_findings_off_the_diff_and_folds_the_rest(posted):
    report, _, reviews, _ = posted
    body = reviews[0]["body"]
    loud, _, rest = body.partition("<details>")
    for label in LOUD_IN_BODY:  # each defect of each target once (a target can have two defects)
        entries = re.findall(rf"^- \*\*([a-z-]+)\*\* .* on `{re.escape(label)}`", loud, re.MULTILINE)
        assert entries and len(entries) == len(set(entries)), (label, entries)
    assert "</details>" in rest
    minors = [f for f in report.findings if f.severity < Severity.MAJOR]
    assert f"<summary>{len(minors)} " in rest  # every lesser finding counted in the summary line
    for group in group_findings(minors):
        lead = group.lead
        named = f"`{lead.path}:{lead.line}` on `{lead.target}`" if lead.target else f"`{lead.path}:{lead.line}`:"
        assert rest.count(named) == 1, lead
        for member in group.others:  # a grouped finding is not listed again
            assert f"`{member.path}:{member.line}` on" not in rest or (member.path, member.line) == (
                lead.path,
                lead.line,
            )


def test_at_most_one_entry_per_defect(posted):
    _, _, reviews, comments = posted
    body = reviews[0]["body"]
    # One exported header is one entry however many of its include lines the rule reports.
    headers = re.findall(r"^- `([^`:]+\.(?:h|cuh)):\d+` on", body, re.MULTILINE)
    assert len(headers) == len(set(headers))
    # One macro call (one definition line) is one entry however many targets it makes.
    places = re.findall(r"^- `([^`]+:\d+)` on", body, re.MULTILINE)
    assert len(places) == len(set(places))
    assert len({marked_fingerprint(c["body"]) for c in comments}) == len(comments)


def test_evidence_is_capped_for_people(posted):
    _, _, _, comments = posted
    for comment in comments:
        evidence = comment["body"].split("Evidence:", 1)[-1].split("\n\n", 1)[0]
        assert evidence.count("\n- ") <= 8


def test_every_posted_minor_is_judged_true(posted):
    judged = tomllib.loads((Path(__file__).parent / "real_tree" / "seed_minors_judged.toml").read_text())["minor"]
    verdicts = {(item["rule"], item["target"], item["cell"]): item for item in judged}
    assert all(item["why"].strip() for item in judged)
    report, _, _, _ = posted
    minors = [f for f in report.findings if f.severity is Severity.MINOR]
    posted_minors = {(g.lead.rule, g.lead.target, g.lead.cell) for g in group_findings(minors)}
    assert sorted(posted_minors - set(verdicts)) == []  # every posted minor has a judgment
    assert all(verdicts[key]["verdict"] == "true" for key in posted_minors)


def test_the_review_says_what_it_could_not_see(posted):
    report, _, _, _ = posted
    # The OSS cell cannot map `("cuda", None, "cuda-lazy")` (LLM item 3): those packages are not
    # evaluated there, and the review says per package whether that was so at base too.
    assert report.stats.unevaluated
    assert all(item.failed_at_base is not None for item in report.stats.unevaluated)
    # A bare mirror has no checkout of the `shim/` submodule: the built-in stand-ins were used, and it says so.
    assert report.stats.shim_stand_ins == "shim"
