"""The GitHub stand-in, driven by the real PyGithub client over real HTTP."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import github
import httpx
import jwt
import pytest
from github import Auth, Github, GithubException, GithubIntegration

from tests.standin import SECONDARY_RATE_LIMIT_BODY, GitHubStandIn, app_key_pair, gitrepos, sign_webhook

APP_ID = 4242
OWNER, NAME, NUMBER = "pytorch", "executorch", 7

CMAKE_BASE = "".join(f"cmake line {n}\n" for n in range(1, 31))
BUCK_BASE = "".join(f"buck line {n}\n" for n in range(1, 11))
BASE_FILES = {
    "CMakeLists.txt": CMAKE_BASE,
    "BUCK": BUCK_BASE,
    "src/gone.h": "#pragma once\n",
    "img.bin": b"\x00\x01\x02binary",
}
HEAD_FILES = {
    "CMakeLists.txt": CMAKE_BASE.replace("cmake line 3\n", "cmake line 3 changed\n").replace(
        "cmake line 25\n", "cmake line 25 changed\n"
    ),
    "BUCK": BUCK_BASE.replace("buck line 5\n", "buck line 5a\nbuck line 5b\n"),
    "src/gone.h": None,
    "src/new.cu": "__global__ void k() {}\n",
    "img.bin": b"\x00\x01\x02binary v2",
}


@pytest.fixture(scope="module")
def repo_shas(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(bare repo path, base sha, head sha) of a real repository with a 5-file PR."""
    path = str(tmp_path_factory.mktemp("git") / "executorch.git")
    base = gitrepos.make_bare_repo(path, BASE_FILES)
    head = gitrepos.commit(path, HEAD_FILES, parent=base, branch="feature", message="Touch the build")
    gitrepos.set_pull_ref(path, NUMBER, head)
    return path, base, head


@pytest.fixture()
def gh(repo_shas: tuple[str, str, str]):
    path, base, head = repo_shas
    with GitHubStandIn(APP_ID, app_key_pair().public_pem) as standin:
        standin.add_repo(OWNER, NAME, bare_git_path=path, permissions={"alice": "write", "mo": "maintain"})
        standin.add_pull(
            OWNER, NAME, NUMBER, head, base, "feature", "main", "alice", "CONTRIBUTOR", binary_paths=("img.bin",)
        )
        yield standin


def client(gh: GitHubStandIn, per_page: int = 100) -> Github:
    auth = Auth.AppAuth(APP_ID, app_key_pair().private_pem.decode())
    return Github(
        auth=auth.get_installation_auth(1),
        base_url=gh.base_url,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        per_page=per_page,
        timeout=5,
    )


def integration(gh: GitHubStandIn) -> GithubIntegration:
    # GithubIntegration throttles too (0.25 s between requests) unless told not to.
    return GithubIntegration(
        auth=Auth.AppAuth(APP_ID, app_key_pair().private_pem.decode()),
        base_url=gh.base_url,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def app_jwt(**claims: object) -> str:
    now = int(time.time())
    body = {"iat": now - 60, "exp": now + 300, "iss": str(APP_ID), **claims}
    return jwt.encode(body, app_key_pair().private_pem, algorithm="RS256")


# -- auth ---------------------------------------------------------------------------------------------


def test_installation_token_from_app_jwt(gh: GitHubStandIn) -> None:
    gi = integration(gh)
    token = gi.get_access_token(1)
    assert token.token.startswith("ghs_")
    assert token.repository_selection == "all"
    assert token.permissions["checks"] == "write"
    assert gi.get_repo_installation(OWNER, NAME).id == 1
    assert gh.tokens_issued == 1
    assert ("POST", "/app/installations/1/access_tokens", 201) in gh.requests

    g = client(gh)
    g.get_repo(f"{OWNER}/{NAME}")
    gh.expire_tokens()
    with pytest.raises(github.BadCredentialsException):
        g.get_repo(f"{OWNER}/{NAME}")  # PyGithub keeps its cached token until expires_at - 20 s
    assert client(gh).get_repo(f"{OWNER}/{NAME}").name == NAME
    assert gh.tokens_issued == 3


# Times are offsets from when the test runs, not from collection: a long suite once ran this
# test more than four minutes after collecting it, and an `iat` 300 s "in the future" was not.
@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"iss": "999"}, "'Issuer' claim"),
        ({"exp": 3600}, "too far in the future"),
        ({"iat": 300}, "'Issued at' claim"),
        ({"exp": -10}, "'Expiration time' claim ('exp') must be a numeric value"),
    ],
)
def test_bad_app_jwt_is_refused(gh: GitHubStandIn, claims: dict[str, object], reason: str) -> None:
    now = int(time.time())
    claims = {name: now + value if name in ("iat", "exp") else value for name, value in claims.items()}
    answer = httpx.post(
        f"{gh.base_url}/app/installations/1/access_tokens", headers={"Authorization": f"Bearer {app_jwt(**claims)}"}
    )
    assert (answer.status_code, answer.json()["message"]) == (401, "Bad credentials")
    assert reason in gh.auth_failures[-1]
    assert gh.tokens_issued == 0


def test_only_issued_tokens_open_repo_endpoints(gh: GitHubStandIn) -> None:
    url = f"{gh.base_url}/repos/{OWNER}/{NAME}"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "token ghs_forged"}).json()["message"] == "Bad credentials"
    assert httpx.get(url, headers={"Authorization": f"Bearer {app_jwt()}"}).status_code == 401
    with pytest.raises(github.BadCredentialsException):
        Github(auth=Auth.Token("ghs_forged"), base_url=gh.base_url, retry=None).get_repo(f"{OWNER}/{NAME}")


def test_missing_installation_permission_is_403(repo_shas: tuple[str, str, str]) -> None:
    path, _base, head = repo_shas
    with GitHubStandIn(APP_ID, app_key_pair().public_pem, installation_permissions={"metadata": "read"}) as gh:
        gh.add_repo(OWNER, NAME, bare_git_path=path)
        repo = client(gh).get_repo(f"{OWNER}/{NAME}")
        with pytest.raises(GithubException) as refused:
            repo.create_check_run("pr-check", head)
    assert refused.value.status == 403
    assert refused.value.data["message"] == "Resource not accessible by integration"
    assert refused.value.headers["x-accepted-github-permissions"] == "checks=write"


# -- pull request, files, diff ------------------------------------------------------------------------


def test_pull_and_files_paginate_with_link_headers(gh: GitHubStandIn, repo_shas: tuple[str, str, str]) -> None:
    _, base, head = repo_shas
    g = client(gh, per_page=2)
    pr = g.get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    assert (pr.head.sha, pr.base.sha, pr.head.ref, pr.base.ref) == (head, base, "feature", "main")
    assert (pr.user.login, pr.draft, pr.changed_files) == ("alice", False, 5)
    assert pr.url == f"{gh.base_url}/repos/{OWNER}/{NAME}/pulls/{NUMBER}"
    files = {f.filename: f for f in pr.get_files()}
    assert {name: f.status for name, f in files.items()} == {
        "BUCK": "modified",
        "CMakeLists.txt": "modified",
        "img.bin": "modified",
        "src/gone.h": "removed",
        "src/new.cu": "added",
    }
    assert files["img.bin"].patch is None
    assert files["BUCK"].patch.startswith("@@ -2,7 +2,8 @@")
    assert (files["BUCK"].additions, files["BUCK"].deletions) == (2, 1)
    assert len(files["src/new.cu"].sha) == 40
    opened = gh.pull_request_payload(OWNER, NAME, NUMBER)
    assert (opened["action"], opened["pull_request"]["head"]["sha"], opened["installation"]["id"]) == (
        "opened",
        head,
        1,
    )
    pages = [r for r in gh.request_log if r["path"].endswith("/files")]
    assert [r["query"].get("page") for r in pages] == [None, "2", "3"]

    token = integration(gh).get_access_token(1).token
    files_url = f"{gh.base_url}/repos/{OWNER}/{NAME}/pulls/{NUMBER}/files"
    first = httpx.get(f"{files_url}?per_page=2", headers={"Authorization": f"token {token}"})
    assert first.headers["link"] == (
        f'<{files_url}?per_page=2&page=2>; rel="next", <{files_url}?per_page=2&page=3>; rel="last"'
    )


def test_diff_media_type_and_406_when_too_large(gh: GitHubStandIn) -> None:
    pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    headers, data = pr.requester.requestJsonAndCheck("GET", pr.url, headers={"Accept": "application/vnd.github.diff"})
    # PyGithub wraps non-JSON text as {"data": text} and, for a GET, adds the request URL.
    assert set(data) == {"data", "url"}
    assert data["data"].startswith("diff --git a/BUCK b/BUCK\n")
    assert "Binary files a/img.bin and b/img.bin differ" in data["data"]
    assert headers["content-type"].startswith("text/plain")

    gh.set_diff_limits(max_files=4)
    with pytest.raises(GithubException) as too_large:
        pr.requester.requestJsonAndCheck("GET", pr.url, headers={"Accept": "application/vnd.github.v3.diff"})
    assert too_large.value.status == 406
    assert too_large.value.data["errors"] == [{"resource": "PullRequest", "field": "diff", "code": "too_large"}]
    assert too_large.value.data["message"].startswith("Sorry, the diff exceeded the maximum number of files (4).")


def test_commits_by_sha_and_ref(gh: GitHubStandIn, repo_shas: tuple[str, str, str]) -> None:
    _, base, head = repo_shas
    repo = client(gh).get_repo(f"{OWNER}/{NAME}")
    root = repo.get_commit(base)
    assert (root.parents, sorted(f.filename for f in root.files)) == ([], sorted(BASE_FILES))
    tip = repo.get_commit("feature")
    assert (tip.sha, tip.parents[0].sha, tip.commit.message) == (head, base, "Touch the build")
    assert tip.commit.author.date.isoformat() == "2023-11-14T22:14:20+00:00"
    with pytest.raises(GithubException) as unknown:
        repo.get_commit("f" * 40)
    assert unknown.value.status == 422


def test_concurrent_requests_are_consistent(gh: GitHubStandIn) -> None:
    pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda n: pr.create_issue_comment(f"c{n}").id, range(24)))
    assert len(set(made)) == 24
    assert sorted(c["body"] for c in gh.issue_comments(OWNER, NAME, NUMBER)) == sorted(f"c{n}" for n in range(24))


# -- reviews ------------------------------------------------------------------------------------------


def test_review_with_valid_comments_is_stored(gh: GitHubStandIn, repo_shas: tuple[str, str, str]) -> None:
    _, _, head = repo_shas
    repo = client(gh).get_repo(f"{OWNER}/{NAME}")
    pr = repo.get_pull(NUMBER)
    comments = [
        {"path": "BUCK", "body": "added", "line": 6, "side": "RIGHT"},
        {"path": "BUCK", "body": "removed", "line": 5, "side": "LEFT"},
        {"path": "BUCK", "body": "range", "start_line": 3, "line": 6, "side": "RIGHT"},
        {"path": "CMakeLists.txt", "body": "context", "line": 26, "side": "RIGHT"},
    ]
    review = pr.create_review(commit=repo.get_commit(head), body="Two findings", event="COMMENT", comments=comments)
    assert (review.state, review.commit_id, review.user.login) == ("COMMENTED", head, gh.bot_login)
    stored = gh.review_comments(OWNER, NAME, NUMBER)
    assert [(c["path"], c["side"], c["start_line"], c["line"]) for c in stored] == [
        ("BUCK", "RIGHT", None, 6),
        ("BUCK", "LEFT", None, 5),
        ("BUCK", "RIGHT", 3, 6),
        ("CMakeLists.txt", "RIGHT", None, 26),
    ]
    assert stored[0]["diff_hunk"].splitlines()[-1] == "+buck line 5b"
    assert [c.body for c in pr.get_single_review_comments(review.id)] == ["added", "removed", "range", "context"]
    assert [r.state for r in pr.get_reviews()] == ["COMMENTED"]


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ({"path": "BUCK", "line": 1, "side": "RIGHT"}, "Pull request review thread line must be part of the diff"),
        ({"path": "BUCK", "line": 9, "side": "LEFT"}, "Pull request review thread line must be part of the diff"),
        ({"path": "README.md", "line": 1}, "Pull request review thread path is invalid"),
        ({"path": "img.bin", "line": 1}, "diff hunk can't be blank"),
        ({"path": "CMakeLists.txt", "start_line": 3, "line": 25}, "start line must be part of the same hunk"),
        ({"path": "BUCK", "start_line": 6, "line": 6}, "start line must precede the end line"),
    ],
)
def test_review_with_an_off_diff_comment_fails_whole(
    gh: GitHubStandIn, repo_shas: tuple[str, str, str], comment: dict[str, object], message: str
) -> None:
    _, _, head = repo_shas
    repo = client(gh).get_repo(f"{OWNER}/{NAME}")
    good = {"path": "BUCK", "body": "fine", "line": 6}
    with pytest.raises(GithubException) as refused:
        repo.get_pull(NUMBER).create_review(
            commit=repo.get_commit(head), body="x", event="COMMENT", comments=[good, {"body": "bad", **comment}]
        )
    assert refused.value.status == 422
    assert message in refused.value.data["errors"][0]
    assert gh.reviews(OWNER, NAME, NUMBER) == [] and gh.review_comments(OWNER, NAME, NUMBER) == []


def test_comment_review_needs_a_body(gh: GitHubStandIn) -> None:
    pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    with pytest.raises(GithubException) as refused:
        pr.create_review(body="", event="REQUEST_CHANGES")
    assert refused.value.status == 422
    assert pr.create_review(event="APPROVE").state == "APPROVED"


def test_review_comment_replies_edits_deletes_and_outdating(gh: GitHubStandIn, repo_shas: tuple[str, str, str]) -> None:
    path, _base, head = repo_shas
    pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    first = pr.create_review_comment("on 5a", head, "BUCK", line=5, side="RIGHT")
    keep = pr.create_review_comment("on 26", head, "CMakeLists.txt", line=26, side="RIGHT")
    reply = pr.create_review_comment_reply(first.id, "a reply")
    assert reply.in_reply_to_id == first.id and reply.line == 5
    first.edit("on 5a, edited")
    reply.delete()
    assert [c.body for c in pr.get_review_comments()] == ["on 5a, edited", "on 26"]

    newer = gitrepos.commit(path, {"BUCK": BUCK_BASE.replace("buck line 5\n", "buck line 5z\n")}, parent=head)
    payload = gh.update_pull_head(OWNER, NAME, NUMBER, newer)
    assert (payload["action"], payload["before"], payload["after"]) == ("synchronize", head, newer)
    now = {c["id"]: c for c in gh.review_comments(OWNER, NAME, NUMBER)}
    assert (now[first.id]["line"], now[first.id]["original_line"]) == (None, 5)  # outdated
    assert (now[keep.id]["line"], now[keep.id]["commit_id"]) == (26, newer)  # same text, still there


def test_dismissal(gh: GitHubStandIn) -> None:
    pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    review = pr.create_review(body="no", event="REQUEST_CHANGES")
    review.dismiss("superseded")
    assert [r["state"] for r in gh.reviews(OWNER, NAME, NUMBER)] == ["DISMISSED"]


# -- issue comments and reactions -------------------------------------------------------------------


def test_issue_comment_reaction_edit_delete(gh: GitHubStandIn) -> None:
    human = gh.add_issue_comment(OWNER, NAME, NUMBER, "/pr-check", "alice")
    payload = gh.issue_comment_payload(OWNER, NAME, human["id"])
    assert payload["issue"]["pull_request"]["url"].startswith(gh.base_url)
    pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
    seen = pr.get_issue_comment(human["id"])
    first = seen.create_reaction("eyes")
    again = seen.create_reaction("eyes")
    assert first.id == again.id
    assert [r["status"] for r in gh.request_log if r["path"].endswith("/reactions")] == [201, 200]
    mine = pr.create_issue_comment("Looking.")
    mine.edit("Done: 2 findings.")
    assert [c["body"] for c in gh.issue_comments(OWNER, NAME, NUMBER)] == ["/pr-check", "Done: 2 findings."]
    assert gh.issue_comments(OWNER, NAME, NUMBER)[1]["user"]["type"] == "Bot"
    mine.delete()
    assert len(gh.issue_comments(OWNER, NAME, NUMBER)) == 1
    assert [r["content"] for r in gh.reactions(OWNER, NAME, human["id"])] == ["eyes"]
    with pytest.raises(GithubException) as too_long:
        pr.create_issue_comment("x" * 65537)
    assert too_long.value.data["errors"][0]["message"] == "Body is too long (maximum is 65536 characters)"
    assert "pull_request" in pr.as_issue().raw_data


# -- check runs ---------------------------------------------------------------------------------------


def annotations(count: int) -> list[dict[str, object]]:
    return [
        {"path": "BUCK", "start_line": 6, "end_line": 6, "annotation_level": "warning", "message": f"m{n}"}
        for n in range(count)
    ]


def test_check_run_annotations_accumulate_and_limits(gh: GitHubStandIn, repo_shas: tuple[str, str, str]) -> None:
    _, _, head = repo_shas
    repo = client(gh).get_repo(f"{OWNER}/{NAME}")
    run = repo.create_check_run(
        "pr-check", head, status="in_progress", output={"title": "t", "summary": "s", "annotations": annotations(50)}
    )
    with pytest.raises(GithubException) as refused:
        run.edit(output={"title": "t", "summary": "s", "annotations": annotations(51)})
    assert (refused.value.status, refused.value.data["message"]) == (
        422,
        "Invalid request.\n\nNo more than 50 items are allowed; 51 were supplied.",
    )
    with pytest.raises(GithubException) as too_long:
        run.edit(output={"title": "t", "summary": "s" * 65536})
    assert too_long.value.status == 422
    run.edit(conclusion="failure", output={"title": "t", "summary": "done", "annotations": annotations(20)})
    fetched = repo.get_check_run(run.id)
    assert (fetched.status, fetched.conclusion, fetched.output.annotations_count) == ("completed", "failure", 70)
    assert len(list(fetched.get_annotations())) == 70
    assert [c.id for c in repo.get_commit(head).get_check_runs()] == [run.id]
    assert gh.check_runs(OWNER, NAME, head)[0]["pull_requests"][0]["number"] == NUMBER
    with pytest.raises(GithubException) as refused_on_create:
        repo.create_check_run("pr-check", head, output={"title": "t", "summary": "s", "annotations": annotations(51)})
    assert refused_on_create.value.status == 422
    assert len(gh.check_runs(OWNER, NAME)) == 1
    clicked = gh.check_run_payload(OWNER, NAME, run.id, "requested_action", requested_action="fix")
    assert (clicked["check_run"]["id"], clicked["requested_action"]) == (run.id, {"identifier": "fix"})


# -- actions ------------------------------------------------------------------------------------------


def test_workflow_dispatch_with_run_details_and_completion(gh: GitHubStandIn, repo_shas: tuple[str, str, str]) -> None:
    _, _, head = repo_shas
    gh.add_workflow(OWNER, NAME, "gpu-smoke.yml", inputs={"pr_number": True, "head_sha": True})
    repo = client(gh).get_repo(f"{OWNER}/{NAME}")
    workflow = repo.get_workflow("gpu-smoke.yml")
    inputs = {"pr_number": "7", "head_sha": head}
    run = workflow.create_dispatch("feature", inputs=inputs, throw=True, return_run_details=True)
    assert run.status == "queued"  # a lazy fetch through run_url: same host and port as base_url
    assert run.head_sha == head and run.event == "workflow_dispatch"
    assert gh.dispatches(OWNER, NAME)[0]["inputs"] == {"pr_number": "7", "head_sha": head}
    assert workflow.create_dispatch("main", inputs={"pr_number": "7", "head_sha": head}, throw=True) is True

    payload = gh.complete_run(OWNER, NAME, run.id, "success")
    assert (payload["action"], payload["workflow_run"]["conclusion"], payload["workflow_run"]["pull_requests"]) == (
        "completed",
        "success",
        [],
    )
    assert repo.get_workflow_run(run.id).conclusion == "success"
    with pytest.raises(GithubException) as refused:
        workflow.create_dispatch("main", inputs={"pr_number": "7", "head_sha": head, "x": "1"}, throw=True)
    assert refused.value.data["message"] == 'Unexpected inputs provided: ["x"]'
    with pytest.raises(GithubException):
        workflow.create_dispatch("no-such-branch", inputs={"pr_number": "7", "head_sha": head}, throw=True)


def test_collaborator_permission(gh: GitHubStandIn) -> None:
    repo = client(gh).get_repo(f"{OWNER}/{NAME}")
    assert repo.get_collaborator_permission("alice") == "write"
    assert (repo.get_collaborator_permission("mo"), repo.get_collaborator_role_name("mo")) == ("write", "maintain")
    assert repo.get_collaborator_permission("stranger") == "read"  # public repository


# -- faults, rate limits, deliveries ------------------------------------------------------------------


def test_injected_faults_and_rate_limit_headers(gh: GitHubStandIn) -> None:
    g = client(gh)
    repo = g.get_repo(f"{OWNER}/{NAME}")
    gh.fail_next("GET", rf"/pulls/{NUMBER}$", 502)
    with pytest.raises(GithubException) as bad_gateway:
        repo.get_pull(NUMBER)
    assert bad_gateway.value.status == 502
    assert repo.get_pull(NUMBER).number == NUMBER

    gh.fail_next("POST", r"/issues/\d+/comments$", 403, body=SECONDARY_RATE_LIMIT_BODY, headers={"retry-after": "1"})
    with pytest.raises(github.RateLimitExceededException) as limited:
        repo.get_pull(NUMBER).create_issue_comment("hi")
    assert limited.value.headers["retry-after"] == "1"
    gh.fail_next("*", r"/issues/\d+/comments$", 429, headers={"retry-after": "2"}, times=2)
    for _ in range(2):
        with pytest.raises(GithubException):
            repo.get_pull(NUMBER).create_issue_comment("hi")
    repo.get_pull(NUMBER).create_issue_comment("hi")
    remaining, limit = g.rate_limiting
    assert limit == 5000 and remaining < 5000
    assert g.get_rate_limit().resources.core.limit == 5000


def test_hook_deliveries_and_redelivery(gh: GitHubStandIn) -> None:
    failed = gh.add_delivery("guid-1", "pull_request", 500, action="opened")
    gh.add_delivery("guid-2", "issue_comment", 200, action="created")
    requester = integration(gh).requester
    _, deliveries = requester.requestJsonAndCheck("GET", "/app/hook/deliveries")
    assert [(d["guid"], d["status_code"]) for d in deliveries] == [("guid-2", 200), ("guid-1", 500)]
    status, _, _ = requester.requestJson("POST", f"/app/hook/deliveries/{failed}/attempts")
    assert status == 202 and gh.delivery_attempts == [failed]


# -- helpers ------------------------------------------------------------------------------------------


def test_sign_webhook_matches_githubs_test_vector() -> None:
    assert sign_webhook(b"It's a Secret to Everybody", b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_git_repos_are_deterministic(tmp_path, repo_shas: tuple[str, str, str]) -> None:
    path, base, head = repo_shas
    again = str(tmp_path / "again.git")
    assert gitrepos.make_bare_repo(again, BASE_FILES) == base
    assert gitrepos.commit(again, HEAD_FILES, parent="main", message="Touch the build") == head
    assert gitrepos.rev_parse(path, f"refs/pull/{NUMBER}/head") == head
    assert gitrepos.git(path, "show", f"{head}:src/new.cu") == HEAD_FILES["src/new.cu"]


def test_prefix_serves_ghes_style(repo_shas: tuple[str, str, str]) -> None:
    path, base, head = repo_shas
    with GitHubStandIn(APP_ID, app_key_pair().public_pem, path_prefix="/api/v3") as gh:
        gh.add_repo(OWNER, NAME, bare_git_path=path)
        gh.add_pull(OWNER, NAME, NUMBER, head, base, "feature", "main", "alice")
        assert gh.base_url.endswith("/api/v3")
        pr = client(gh).get_repo(f"{OWNER}/{NAME}").get_pull(NUMBER)
        assert pr.get_files().totalCount == 5
