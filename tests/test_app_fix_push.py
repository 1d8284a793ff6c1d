"""Fixes on GitHub: a suggestion on a diff line, a folded patch off it, and `/pr-check fix` pushing one commit.

Real uvicorn, a real worker process, the GitHub stand-in (its Git Data endpoints over real bare git
repositories) and fixture pull requests from fixtures/cases/. The permission rows: the author without
write access, a maintainer, a read-only user, a fork without and with "Allow edits by maintainers",
the feature turned off, and a head that moves between the review and the push.

Which expectations depend on which check's fix text (other work may rewrite a check's fix):
- link-whole-archive-public (whole-archive-public-scope): the whole-archive pair of
  `aoti_cuda_shims` goes from PUBLIC to PRIVATE scope; FIXED_CMAKE below is written from that.
- link-export-dynamic-missing (link-export-dynamic-missing-xplat): its fix adds
  `exported_linker_flags = ["-Wl,--export-dynamic"]` below `link_whole = True` of `runtime_shims`,
  lines away from the line the finding is on; only its placement (a folded block) is asserted.
- cuda-guard-missing (the two-package tree of `_guard_repo`): its fix adds
  `compatible_with = ["ovr_config//cuda:has_cuda"]` to the xplat library that gained a `.cu`; only
  that the guarded file carries it is asserted.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fixtures.cases import CASES_DIR, build_case_repository
from tests.standin import GitHubStandIn, app_key_pair, gitrepos
from tests.test_app_harness import APP_ID, OWNER, completed_check_runs, running_app, start_app, wait_for

WRITE_PERMISSIONS = {
    "actions": "write",
    "checks": "write",
    "contents": "write",
    "issues": "write",
    "metadata": "read",
    "pull_requests": "write",
}
PEOPLE = {"alice": "read", "maria": "write", "mallory": "read"}  # alice writes the pull requests

WHOLE_ARCHIVE = "whole-archive-public-scope"
CMAKE = "backends/cuda/CMakeLists.txt"
CMAKE_HEAD = (CASES_DIR / WHOLE_ARCHIVE / CMAKE).read_text()
# The fix of link-whole-archive-public: the same whole-archive pair, linked PRIVATE.
FIXED_CMAKE = CMAKE_HEAD.replace(
    "    aoti_cuda_shims\n    PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n",
    "    aoti_cuda_shims\n    PRIVATE -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n",
)
assert FIXED_CMAKE != CMAKE_HEAD


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with running_app(
        tmp_path_factory.mktemp("app"), installation_permissions=WRITE_PERMISSIONS, PR_CHECK_FIX_PUSH="1"
    ) as app:
        yield app


def _case_repo(
    standin,
    tmp: Path,
    name: str,
    case: str,
    number: int,
    *,
    fork: str | None = None,
    maintainer_can_modify: bool = False,
) -> tuple[Path, str]:
    """The case as a bare repository registered with the stand-in, its PR open; returns (head git dir, head)."""
    built, base, head = build_case_repository(case, tmp / f"{name}-work")
    bare = tmp / f"{name}.git"
    subprocess.run(["git", "clone", "--bare", "--quiet", str(built), str(bare)], check=True)
    gitrepos.set_pull_ref(bare, number, head)
    standin.add_repo(OWNER, name, bare_git_path=str(bare), permissions=PEOPLE)
    head_git, head_repo = bare, None
    if fork is not None:
        head_git = tmp / f"{fork}-{name}.git"
        subprocess.run(["git", "clone", "--bare", "--quiet", str(bare), str(head_git)], check=True)
        standin.add_repo(fork, name, bare_git_path=str(head_git), installation_id=None, fork=True)
        head_repo = (fork, name)
    standin.add_pull(
        OWNER,
        name,
        number,
        head,
        base,
        "fix-me",
        "main",
        "alice",
        "CONTRIBUTOR",
        head_repo=head_repo,
        maintainer_can_modify=maintainer_can_modify,
    )
    return head_git, head


_LOAD = 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'


def _library(name: str, srcs: str, jni: bool) -> str:
    """An xplat-only C++ library, and optionally the Android JNI layer that depends on it (as
    tests/test_fix_platform_losses.py: an `android_library`, which no C++ rule counts as a dependent)."""
    text = _LOAD + f'non_fbcode_target(_kind = cxx_library, name = "{name}", srcs = {srcs}, visibility = ["PUBLIC"])\n'
    if jni:
        text += f'non_fbcode_target(_kind = android_library, name = "jni", deps = [":{name}"])\n'
    return text


def _guard_repo(standin, tmp: Path, name: str, number: int) -> tuple[Path, str]:
    """A pull request adding a `.cu` to two xplat libraries: `//tensor:tensor`, on which the JNI
    layer depends, and `//other:other`, on which nothing does. Each gets a cuda-guard-missing fix;
    guarding `tensor` takes `//tensor:jni` off the CPU-only platforms, guarding `other` takes nothing off."""
    bare = tmp / f"{name}.git"
    base = gitrepos.make_bare_repo(
        bare,
        {
            ".buckconfig": "[repositories]\n  root = .\n",
            "tensor/tensor.cpp": "int tensor() { return 0; }\n",
            "tensor/BUCK": _library("tensor", '["tensor.cpp"]', jni=True),
            "other/other.cpp": "int other() { return 0; }\n",
            "other/BUCK": _library("other", '["other.cpp"]', jni=False),
        },
    )
    head = gitrepos.commit(
        bare,
        {
            "tensor/tensor_cuda.cu": "__global__ void k() {}\n",
            "tensor/BUCK": _library("tensor", '["tensor.cpp", "tensor_cuda.cu"]', jni=True),
            "other/other_cuda.cu": "__global__ void j() {}\n",
            "other/BUCK": _library("other", '["other.cpp", "other_cuda.cu"]', jni=False),
        },
        parent=base,
        branch="fix-me",
        message="CUDA kernels",
    )
    gitrepos.set_pull_ref(bare, number, head)
    standin.add_repo(OWNER, name, bare_git_path=str(bare), permissions=PEOPLE)
    standin.add_pull(OWNER, name, number, head, base, "fix-me", "main", "alice", "CONTRIBUTOR")
    return bare, head


def _command(running, name: str, number: int, who: str, association: str) -> dict:
    comment = running.standin.add_issue_comment(
        OWNER, name, number, "/pr-check fix", who, author_association=association
    )
    running.deliver("issue_comment", running.standin.issue_comment_payload(OWNER, name, comment["id"]))
    return comment


def _reply_to(running, name: str, number: int, who: str) -> str:
    def found():
        bodies = [
            c["body"]
            for c in running.standin.issue_comments(OWNER, name, number)
            if c["user"]["login"] == running.standin.bot_login
            and (c["body"].startswith(f"@{who}") or c["body"].startswith(f"Thanks, @{who}"))
        ]
        return bodies[-1] if bodies else None

    return wait_for(found, timeout=90, what=f"the App's reply to @{who}")


def _branch(git_dir: Path, branch: str = "fix-me") -> str:
    return gitrepos.rev_parse(git_dir, f"refs/heads/{branch}")


def _show(git_dir: Path, revision: str, path: str) -> str:
    return gitrepos.git(git_dir, "show", f"{revision}:{path}")


def test_a_fix_on_a_diff_line_is_a_suggestion_and_one_off_it_a_folded_patch(running, tmp_path):
    standin = running.standin
    _, on_diff = _case_repo(standin, tmp_path, "suggest", WHOLE_ARCHIVE, 1)
    _, off_diff = _case_repo(standin, tmp_path, "patch", "link-export-dynamic-missing-xplat", 2)
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "suggest", 1, "opened"))
    running.deliver("pull_request", standin.pull_request_payload(OWNER, "patch", 2, "opened"))
    wait_for(lambda: completed_check_runs(standin, OWNER, "suggest", on_diff), timeout=90, what="review 1")
    wait_for(lambda: completed_check_runs(standin, OWNER, "patch", off_diff), timeout=90, what="review 2")

    [comment] = [c for c in standin.review_comments(OWNER, "suggest", 1) if c["user"]["type"] == "Bot"]
    assert (comment["path"], comment["line"], comment["start_line"]) == (CMAKE, 41, None)
    assert comment["body"].startswith("**link-whole-archive-public**")
    assert (
        "```suggestion\n    PRIVATE -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n```"
        in comment["body"]
    )
    assert "<details>" not in comment["body"]

    [comment] = [c for c in standin.review_comments(OWNER, "patch", 2) if c["user"]["type"] == "Bot"]
    assert (comment["path"], comment["line"]) == ("backends/cuda/runtime/targets.bzl", 10)
    body = comment["body"]
    assert "```suggestion" not in body
    folded = body[body.index("<details><summary>") : body.index("</details>")]
    assert "(backends/cuda/runtime/targets.bzl" in folded
    assert '+        exported_linker_flags = ["-Wl,--export-dynamic"],' in folded or (
        '        exported_linker_flags = ["-Wl,--export-dynamic"],' in folded and ": replacement</summary>" in folded
    )


def test_pr_check_fix_on_a_same_repository_pull_request_by_permission(running, tmp_path):
    standin = running.standin
    git_dir, head = _case_repo(standin, tmp_path, "rows", WHOLE_ARCHIVE, 3)

    _command(running, "rows", 3, "alice", "CONTRIBUTOR")  # the author, who has no write access
    reply = _reply_to(running, "rows", 3, "alice")
    assert reply.startswith("Thanks, @alice. `/pr-check fix` pushes to this branch as the App, so it needs write")
    assert "run `pr-check fix` in your checkout" in reply

    _command(running, "rows", 3, "mallory", "NONE")  # read-only
    reply = _reply_to(running, "rows", 3, "mallory")
    assert reply.startswith("Thanks, @mallory.") and "needs write access" in reply
    assert _branch(git_dir) == head  # nothing pushed

    _command(running, "rows", 3, "maria", "MEMBER")  # write access
    reply = _reply_to(running, "rows", 3, "maria")
    pushed = _branch(git_dir)
    assert pushed != head
    assert reply.startswith(f"@maria, pushed `{pushed}` to `fix-me`: it fixes 1 finding of the review of `{head[:12]}`")
    assert f"- **link-whole-archive-public** at `{CMAKE}:41`" in reply
    # One commit on the reviewed head, made by the App, changing only the fixed file.
    assert gitrepos.git(git_dir, "rev-list", f"{head}..{pushed}").split() == [pushed]
    assert gitrepos.git(git_dir, "log", "-1", "--format=%P %an <%ae>", pushed).strip() == (
        f"{head} pr-check[bot] <4242+pr-check[bot]@users.noreply.github.com>"
    )
    assert gitrepos.git(git_dir, "diff", "--name-only", head, pushed).split() == [CMAKE]
    assert _show(git_dir, pushed, CMAKE) == FIXED_CMAKE
    message = gitrepos.git(git_dir, "log", "-1", "--format=%B", pushed)
    assert message.startswith(
        f"pr-check: fix 1 finding of #3\n\n- link-whole-archive-public at {CMAKE}:41 on aoti_cuda_shims: "
    )
    # The pull request follows its branch, as on GitHub.
    assert standin.pull(OWNER, "rows", 3)["head"]["sha"] == pushed


def test_a_head_that_moves_between_review_and_push_is_not_overwritten(running, tmp_path):
    standin = running.standin
    git_dir, head = _case_repo(standin, tmp_path, "moving", WHOLE_ARCHIVE, 4)
    moved: list[str] = []

    def someone_pushes() -> None:  # the author pushes while the App has reviewed and is about to push
        sha = gitrepos.commit(git_dir, {"NOTES.md": "more\n"}, parent=head, branch="fix-me", message="more")
        gitrepos.set_pull_ref(git_dir, 4, sha)
        standin.update_pull_head(OWNER, "moving", 4, sha)
        moved.append(sha)

    standin.before_next("POST", r"/repos/pytorch/moving/git/blobs$", someone_pushes)
    _command(running, "moving", 4, "maria", "MEMBER")
    reply = _reply_to(running, "moving", 4, "maria")
    assert reply.startswith(f"@maria, the branch `fix-me` moved on while I was reviewing `{head[:12]}`")
    assert "Comment `/pr-check fix` again" in reply
    assert moved and _branch(git_dir) == moved[0]  # the author's commit stands; no force push


def test_a_fork_is_pushed_to_only_when_its_author_allows_edits_by_maintainers(running, tmp_path):
    standin = running.standin
    closed_git, closed_head = _case_repo(standin, tmp_path, "fork-closed", WHOLE_ARCHIVE, 5, fork="carol")
    _command(running, "fork-closed", 5, "maria", "MEMBER")
    reply = _reply_to(running, "fork-closed", 5, "maria")
    assert reply.startswith(
        "@maria, this pull request comes from the fork `carol/fork-closed`, whose author has not "
        "allowed edits by maintainers"
    )
    assert "run `pr-check fix` in their checkout" in reply
    assert _branch(closed_git) == closed_head

    open_git, open_head = _case_repo(
        standin, tmp_path, "fork-open", WHOLE_ARCHIVE, 6, fork="dave", maintainer_can_modify=True
    )
    _command(running, "fork-open", 6, "maria", "MEMBER")
    reply = _reply_to(running, "fork-open", 6, "maria")
    pushed = _branch(open_git)
    assert pushed != open_head and reply.startswith(f"@maria, pushed `{pushed}` to `fix-me`")
    assert gitrepos.git(open_git, "log", "-1", "--format=%P", pushed).strip() == open_head
    assert _show(open_git, pushed, CMAKE) == FIXED_CMAKE
    assert standin.pull(OWNER, "fork-open", 6)["head"]["sha"] == pushed


def test_fix_pushing_turned_off_answers_how_to_turn_it_on(tmp_path):
    with running_app(tmp_path / "app", installation_permissions=WRITE_PERMISSIONS) as app:
        git_dir, head = _case_repo(app.standin, tmp_path, "off", WHOLE_ARCHIVE, 7)
        _command(app, "off", 7, "maria", "MEMBER")
        reply = _reply_to(app, "off", 7, "maria")
        assert reply.startswith("@maria, pushing fixes is turned off for this App, so I did not push anything.")
        assert "`PR_CHECK_FIX_PUSH=1`" in reply and "**Contents: write**" in reply
        assert _branch(git_dir) == head


def test_fix_pushing_on_without_contents_write_is_refused_by_github_and_said_so(tmp_path):
    # The operator turned pushing on but the installation was granted Contents: read only: GitHub
    # refuses the first Git Data write, and the reply says so instead of failing silently.
    read_only_contents = {**WRITE_PERMISSIONS, "contents": "read"}
    with running_app(tmp_path / "app", installation_permissions=read_only_contents, PR_CHECK_FIX_PUSH="1") as app:
        git_dir, head = _case_repo(app.standin, tmp_path, "readonly", WHOLE_ARCHIVE, 8)
        _command(app, "readonly", 8, "maria", "MEMBER")
        reply = _reply_to(app, "readonly", 8, "maria")
        assert reply.startswith("@maria, GitHub refused the push to `pytorch/readonly` (403 ")
        assert _branch(git_dir) == head


def test_a_hostile_build_file_in_the_pull_request_does_not_stop_the_fix_of_another_finding(running, tmp_path):
    # The head also adds a BUCK file nested 5,000 brackets deep (it crashed the interpreter before
    # the depth guard). The review in the isolated child refuses that file (a finding without a
    # fix), the CMake finding's fix is still pushed, and the hostile file is left as written.
    standin = running.standin
    git_dir, head = _case_repo(standin, tmp_path, "hostile", WHOLE_ARCHIVE, 9)
    nested = "X = " + "[" * 5000 + "]" * 5000 + "\n"
    hostile = gitrepos.commit(git_dir, {"evil/BUCK": nested}, parent=head, branch="fix-me", message="nested")
    gitrepos.set_pull_ref(git_dir, 9, hostile)
    standin.update_pull_head(OWNER, "hostile", 9, hostile)
    _command(running, "hostile", 9, "maria", "MEMBER")
    reply = _reply_to(running, "hostile", 9, "maria")
    pushed = _branch(git_dir)
    assert pushed != hostile and reply.startswith(f"@maria, pushed `{pushed}` to `fix-me`")
    assert gitrepos.git(git_dir, "diff", "--name-only", hostile, pushed).split() == [CMAKE]
    assert _show(git_dir, pushed, CMAKE) == FIXED_CMAKE
    assert _show(git_dir, pushed, "evil/BUCK") == nested


def test_a_fix_that_takes_a_dependent_off_a_platform_is_not_pushed_and_the_reply_says_why(running, tmp_path):
    # The fixes are judged in the review's child as `pr-check fix` judges a round: the guard on
    # `//tensor:tensor` would take `//tensor:jni` off the CPU-only platforms where it built at the
    # base, so only the guard on `//other:other` is pushed; the other is named with the reason.
    standin = running.standin
    git_dir, head = _guard_repo(standin, tmp_path, "guards", 10)
    _command(running, "guards", 10, "maria", "MEMBER")
    reply = _reply_to(running, "guards", 10, "maria")
    pushed = _branch(git_dir)
    assert pushed != head, reply
    assert reply.startswith(f"@maria, pushed `{pushed}` to `fix-me`: it fixes 1 finding of the review of `{head[:12]}`")
    assert "- **cuda-guard-missing** at `other/BUCK:2`" in reply
    withheld = "takes `//tensor:jni` (xplat) off `android-arm64`, through `//tensor:tensor` and 2 more, where it built before the change; left as a suggestion"
    assert f"Not applied:\n- **cuda-guard-missing** at `tensor/BUCK:2`: applying it {withheld}" in reply
    # One commit on the reviewed head, with the harmless guard only.
    assert gitrepos.git(git_dir, "rev-list", f"{head}..{pushed}").split() == [pushed]
    assert gitrepos.git(git_dir, "diff", "--name-only", head, pushed).split() == ["other/BUCK"]
    assert 'compatible_with = ["ovr_config//cuda:has_cuda"]' in _show(git_dir, pushed, "other/BUCK")
    assert _show(git_dir, pushed, "tensor/BUCK") == _show(git_dir, head, "tensor/BUCK")
    message = gitrepos.git(git_dir, "log", "-1", "--format=%B", pushed)
    assert message.startswith(
        "pr-check: fix 1 finding of #10\n\n- cuda-guard-missing at other/BUCK:2 on //other:other: "
    )
    assert (
        f"\nNot applied:\n- cuda-guard-missing at tensor/BUCK:2 on //tensor:tensor: applying it {withheld}" in message
    )


def test_a_review_child_that_dies_while_judging_the_fixes_pushes_nothing(tmp_path):
    # The review finished, but the child crashed while judging where the fixes build: no fix is known
    # not to take a target off a platform, so none is pushed (not even the harmless one) and the
    # reply says why and what to do instead.
    standin = GitHubStandIn(APP_ID, app_key_pair().public_pem, installation_permissions=WRITE_PERMISSIONS).start()
    app = start_app(standin, tmp_path / "app", PR_CHECK_FIX_PUSH="1")
    try:
        app.start_worker(entry=("tests.app_faults", "segv-judging-fixes"))
        git_dir, head = _guard_repo(standin, tmp_path, "unjudged", 11)
        _command(app, "unjudged", 11, "maria", "MEMBER")
        reply = _reply_to(app, "unjudged", 11, "maria")
        assert reply.startswith(
            f"@maria, I reviewed `{head[:12]}` but could not check where its fixes would take targets "
            "(the review process crashed (SIGSEGV)"
        )
        assert "so I pushed nothing" in reply and "`pr-check fix` in a checkout" in reply
        assert _branch(git_dir) == head
    finally:
        app.stop()
        standin.stop()
