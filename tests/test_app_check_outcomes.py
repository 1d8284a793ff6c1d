"""The `pr-check` check run as the base config and GitHub's fork semantics ask (issue 12, point 7).

- `[review] fail_level` of the base revision's `.github/pr-check.toml` decides failure vs neutral.
- "Re-run" on a fork's check run arrives with `pull_requests: []`; the run's external id names the
  pull request, so it is reviewed again.
"""

from __future__ import annotations

import pytest

from tests.standin import gitrepos
from tests.test_app_harness import (
    BASE_FILES,
    BUCK_DEFECT,
    OWNER,
    RULE,
    FixtureRepo,
    completed_check_runs,
    make_repo,
    running_app,
    wait_for,
)


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("app")) as app:
        yield app


def test_the_base_configs_fail_level_fails_the_check_on_a_minor_finding(running, tmp_path):
    standin = running.standin
    path = tmp_path / "strict.git"
    base = gitrepos.make_bare_repo(path, {**BASE_FILES, ".github/pr-check.toml": '[review]\nfail_level = "minor"\n'})
    standin.add_repo(OWNER, "strict", bare_git_path=str(path), permissions={"alice": "read"})
    head = FixtureRepo(standin, OWNER, "strict", path, base).open_pull(1, {"BUCK": BUCK_DEFECT})
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "strict", 1))
    [run] = wait_for(lambda: completed_check_runs(standin, OWNER, "strict", head), what="the check run")
    assert run["conclusion"] == "failure"  # a minor finding, and the base asks to fail at minor
    assert RULE in run["output"]["summary"]


def test_re_run_on_a_forks_check_run_reviews_again(running, tmp_path):
    standin = running.standin
    repo = make_repo(standin, tmp_path, "forked")
    head = repo.open_pull(2, {"BUCK": BUCK_DEFECT})
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "forked", 2))
    [first] = wait_for(lambda: completed_check_runs(standin, OWNER, "forked", head), what="the first check run")
    assert first["external_id"] == f"pr=2;head={head}"
    rerun = standin.check_run_payload(OWNER, "forked", first["id"], "rerequested", sender="alice")
    rerun["check_run"]["pull_requests"] = []  # what GitHub sends for a pull request from a fork
    assert running.deliver("check_run", rerun).json()["outcome"] == "accepted"
    runs = wait_for(
        lambda: (
            len(completed_check_runs(standin, OWNER, "forked", head)) == 2
            and completed_check_runs(standin, OWNER, "forked", head)
        ),
        what="the re-run",
    )
    assert {r["conclusion"] for r in runs} == {"neutral"}
