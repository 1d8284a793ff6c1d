"""The Git Data endpoints a push through the API needs, over the repositories' real bare git repos.

    GET   /repos/o/r/git/ref/heads/{branch}     GET  /repos/o/r/git/commits/{sha}
    POST  /repos/o/r/git/blobs                  POST /repos/o/r/git/trees (with base_tree)
    POST  /repos/o/r/git/commits                PATCH /repos/o/r/git/refs/heads/{branch}

Who may write: the installation's token must hold `contents: write` (the route table checks it), on a
repository the installation covers; or, on a contributor's fork, only the head branch of an open pull
request into a covered repository whose author allowed edits by maintainers (`maintainer_can_modify`).
A PATCH without `force` that is not a fast forward is refused with 422, as GitHub does. Moving the
head branch of a pull request moves the pull request's head (and refs/pull/N/head), as a push does.
Error texts are GitHub's where known; those marked "unverified" are not taken from a real response.
"""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

from . import gitrepos
from .exchange import Abort, Call, Reply, error, not_found
from .records import Pull, Repo
from .state import State, now_iso

DOC_REF = "https://docs.github.com/rest/git/refs#update-a-reference"
DOC_GET_REF = "https://docs.github.com/rest/git/refs#get-a-reference"
DOC_BLOB = "https://docs.github.com/rest/git/blobs#create-a-blob"
DOC_TREE = "https://docs.github.com/rest/git/trees#create-a-tree"
DOC_COMMIT = "https://docs.github.com/rest/git/commits#create-a-commit"
NOT_FAST_FORWARD = "Update is not a fast forward"
NOT_ACCESSIBLE = "Resource not accessible by integration"
_MODES = ("100644", "100755", "040000", "160000", "120000")


# -- who may touch which repository ------------------------------------------------------------------


def _repo(s: State, call: Call, *, write_branch: str | None = None, write: bool = False) -> Repo:
    """The route's repository if the caller may use it; a fork only through an open PR allowing edits."""
    repo = s.repos.get((call.params["owner"].lower(), call.params["repo"].lower()))
    if repo is None:
        raise not_found()
    if repo.bare_git_path is None:
        raise Abort(error(409, "Git Repository is empty."))  # unverified wording for a repo with no git data
    if repo.installation_id is not None and repo.installation_id == call.installation_id:
        return repo
    opened = _pulls_allowing_edits(s, repo, call.installation_id)
    if not write and (opened or not repo.private):
        return repo
    if write and opened and (write_branch is None or any(p.head_ref == write_branch for p in opened)):
        return repo
    if repo.private and not opened:
        raise not_found()
    raise Abort(error(403, NOT_ACCESSIBLE, DOC_REF))


def _pulls_allowing_edits(s: State, fork: Repo, installation_id: int | None) -> list[Pull]:
    return [
        pull
        for pull in s.pulls.values()
        if pull.head_repo is fork
        and pull.repo is not fork
        and pull.state == "open"
        and pull.maintainer_can_modify
        and pull.repo.installation_id == installation_id
    ]


# -- reads ---------------------------------------------------------------------------------------------


def get_ref(s: State, call: Call) -> Reply:
    repo = _repo(s, call)
    branch = call.params["branch"]
    try:
        sha = gitrepos.git(repo.bare_git_path, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").strip()
    except RuntimeError:
        raise not_found() from None
    return Reply(200, _ref_shape(s, repo, branch, sha))


def get_commit(s: State, call: Call) -> Reply:
    repo = _repo(s, call)
    sha = call.params["sha"]
    if _object_type(repo, sha) != "commit":
        raise not_found()
    return Reply(200, _commit_shape(s, repo, sha))


# -- writes --------------------------------------------------------------------------------------------


def create_blob(s: State, call: Call) -> Reply:
    repo = _repo(s, call, write=True)
    body = call.json()
    content, encoding = body.get("content"), body.get("encoding", "utf-8")
    if not isinstance(content, str) or encoding not in ("utf-8", "base64"):
        raise Abort(error(422, 'Invalid request.\n\n"content" wasn\'t supplied.', DOC_BLOB))
    data = base64.b64decode(content) if encoding == "base64" else content.encode()
    sha = gitrepos.git(repo.bare_git_path, "hash-object", "-w", "--stdin", input=data).strip()
    return Reply(201, {"sha": sha, "url": f"{_api(s, repo)}/git/blobs/{sha}"})


def create_tree(s: State, call: Call) -> Reply:
    repo = _repo(s, call, write=True)
    body = call.json()
    entries = body.get("tree")
    if not isinstance(entries, list):
        raise Abort(error(422, 'Invalid request.\n\n"tree" wasn\'t supplied.', DOC_TREE))
    base_tree = body.get("base_tree")
    if base_tree is not None and _object_type(repo, str(base_tree)) != "tree":
        raise Abort(error(422, "base_tree is not a valid tree oid", DOC_TREE))  # unverified wording
    lines = []
    for entry in entries:
        path, mode, sha = entry.get("path"), entry.get("mode"), entry.get("sha")
        if not isinstance(path, str) or not path or mode not in _MODES:
            raise Abort(error(422, "tree.path or tree.mode is invalid", DOC_TREE))  # unverified wording
        if "content" in entry:
            sha = gitrepos.git(
                repo.bare_git_path, "hash-object", "-w", "--stdin", input=str(entry["content"]).encode()
            ).strip()
        if sha is None:  # GitHub: a null sha deletes the path
            lines.append(f"0 {'0' * 40}\t{path}\n")
            continue
        if _object_type(repo, str(sha)) is None:
            raise Abort(error(422, f"tree.sha {sha} is not a valid blob", DOC_TREE))  # unverified wording
        lines.append(f"{mode} {sha}\t{path}\n")
    with tempfile.TemporaryDirectory() as scratch:
        index = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        if base_tree is not None:
            gitrepos.git(repo.bare_git_path, "read-tree", str(base_tree), env=index)
        gitrepos.git(repo.bare_git_path, "update-index", "--index-info", input="".join(lines).encode(), env=index)
        tree = gitrepos.git(repo.bare_git_path, "write-tree", env=index).strip()
    return Reply(201, {"sha": tree, "url": f"{_api(s, repo)}/git/trees/{tree}", "tree": [], "truncated": False})


def create_commit(s: State, call: Call) -> Reply:
    repo = _repo(s, call, write=True)
    body = call.json()
    message, tree, parents = body.get("message"), body.get("tree"), body.get("parents", [])
    if not isinstance(message, str) or not isinstance(tree, str) or not isinstance(parents, list):
        raise Abort(error(422, 'Invalid request.\n\n"message" and "tree" weren\'t supplied.', DOC_COMMIT))
    if _object_type(repo, tree) != "tree":
        raise Abort(error(422, "Tree SHA does not exist", DOC_COMMIT))
    for parent in parents:
        if _object_type(repo, str(parent)) != "commit":
            raise Abort(error(422, "Parent SHA does not exist or is not a commit object", DOC_COMMIT))
    # No author given: GitHub records the App's bot account as author and committer.
    bot = s.app.bot_login
    email = f"{s.app.id}+{bot}@users.noreply.github.com"
    author = body.get("author") or {"name": bot, "email": email}
    committer = body.get("committer") or {"name": bot, "email": email}
    stamp = now_iso()
    identity = {
        "GIT_AUTHOR_NAME": author["name"],
        "GIT_AUTHOR_EMAIL": author["email"],
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": committer["name"],
        "GIT_COMMITTER_EMAIL": committer["email"],
        "GIT_COMMITTER_DATE": stamp,
    }
    arguments = [argument for parent in parents for argument in ("-p", str(parent))]
    sha = gitrepos.git(
        repo.bare_git_path, "commit-tree", tree, *arguments, input=message.encode(), env=identity
    ).strip()
    return Reply(201, _commit_shape(s, repo, sha))


def update_ref(s: State, call: Call) -> Reply:
    branch = call.params["branch"]
    repo = _repo(s, call, write=True, write_branch=branch)
    body = call.json()
    new, force = body.get("sha"), bool(body.get("force"))
    if not isinstance(new, str) or _object_type(repo, new) != "commit":
        raise Abort(error(422, "Object does not exist", DOC_REF))
    ref = f"refs/heads/{branch}"
    try:
        old = gitrepos.git(repo.bare_git_path, "rev-parse", "--verify", "--quiet", ref).strip()
    except RuntimeError:
        raise Abort(error(422, "Reference does not exist", DOC_REF)) from None
    if not force and old != new and not _is_ancestor(repo, old, new):
        raise Abort(error(422, NOT_FAST_FORWARD, DOC_REF))
    gitrepos.git(repo.bare_git_path, "update-ref", ref, new, old)
    for pull in s.pulls.values():
        if pull.head_repo is repo and pull.head_ref == branch and pull.state == "open" and pull.head.sha != new:
            _move_pull_head(s, pull, new)
    return Reply(200, _ref_shape(s, repo, branch, new))


def _move_pull_head(s: State, pull: Pull, sha: str) -> None:
    """A push to a pull request's head branch: refs/pull/N/head follows, and so does the pull request."""
    base_git, head_git = pull.repo.bare_git_path, pull.head_repo.bare_git_path
    if base_git is None:
        return
    if head_git != base_git:  # GitHub copies a fork's pushed commits into the base repository
        gitrepos.git(base_git, "fetch", "--quiet", "--no-tags", head_git, f"+{sha}:refs/pull/{pull.number}/head")
    else:
        gitrepos.set_pull_ref(base_git, pull.number, sha)
    s.advance_pull(pull, s.make_head(pull.repo, pull.head.base_sha, sha, None))


# -- shapes and git helpers ----------------------------------------------------------------------------


def _api(s: State, repo: Repo) -> str:
    return f"{s.urls.api}/repos/{repo.full_name}"


def _ref_shape(s: State, repo: Repo, branch: str, sha: str) -> dict[str, Any]:
    api = _api(s, repo)
    return {
        "ref": f"refs/heads/{branch}",
        "node_id": base64.b64encode(f"04:Ref{repo.id}:{branch}".encode()).decode(),
        "url": f"{api}/git/refs/heads/{branch}",
        "object": {"sha": sha, "type": "commit", "url": f"{api}/git/commits/{sha}"},
    }


def _commit_shape(s: State, repo: Repo, sha: str) -> dict[str, Any]:
    layout = "%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"
    fields = gitrepos.git(repo.bare_git_path, "show", "-s", f"--format={layout}", sha)
    tree, parents, an, ae, ad, cn, ce, cd, message = fields.split("\x00", 8)
    api = _api(s, repo)
    return {
        "sha": sha,
        "node_id": base64.b64encode(f"06:Commit{repo.id}:{sha}".encode()).decode(),
        "url": f"{api}/git/commits/{sha}",
        "html_url": f"{s.urls.web}/{repo.full_name}/commit/{sha}",
        "author": {"name": an, "email": ae, "date": ad},
        "committer": {"name": cn, "email": ce, "date": cd},
        "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
        "message": message.rstrip("\n"),
        "parents": [
            {"sha": p, "url": f"{api}/git/commits/{p}", "html_url": f"{s.urls.web}/{repo.full_name}/commit/{p}"}
            for p in parents.split()
        ],
        "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None},
    }


def _object_type(repo: Repo, sha: str) -> str | None:
    if not sha or len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
        return None
    try:
        return gitrepos.git(repo.bare_git_path, "cat-file", "-t", sha).strip()
    except RuntimeError:
        return None


def _is_ancestor(repo: Repo, old: str, new: str) -> bool:
    try:
        gitrepos.git(repo.bare_git_path, "merge-base", "--is-ancestor", old, new)
    except RuntimeError:
        return False
    return True
