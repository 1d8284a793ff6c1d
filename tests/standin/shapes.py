"""GitHub's JSON shapes, with every URL built from the stand-in's own address.

PyGithub refuses to follow a URL whose host or port differs from its base_url, so nothing here may
mention api.github.com. `Urls.web` plays github.com (html_url and friends).
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .diffs import FilePatch
from .records import CheckRun, IssueComment, Pull, Reaction, Repo, Review, ReviewComment, Workflow, WorkflowRun

REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
CREATED_AT = "2024-01-02T03:04:05Z"  # a fixed date for objects the test registers


@dataclass(frozen=True, slots=True)
class Urls:
    api: str  # what clients use as base_url, e.g. http://127.0.0.1:PORT
    web: str  # stands for https://github.com


@dataclass(frozen=True, slots=True)
class App:
    id: int
    slug: str
    owner: str

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"


def node_id(kind: str, number: int) -> str:
    """An opaque node id in the style of GitHub's legacy ids."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode().rstrip("=")


def user_id(login: str) -> int:
    """A stable numeric id for a login."""
    return zlib.crc32(login.encode()) % 90_000_000 + 1_000_000


def user(urls: Urls, login: str, *, bot: bool | None = None) -> dict[str, Any]:
    is_bot = login.endswith("[bot]") if bot is None else bot
    uid = user_id(login)
    api = f"{urls.api}/users/{quote(login)}"
    html = f"{urls.web}/apps/{login.removesuffix('[bot]')}" if is_bot else f"{urls.web}/{login}"
    return {
        "login": login,
        "id": uid,
        "node_id": node_id("Bot" if is_bot else "User", uid),
        "avatar_url": f"{urls.web}/avatars/u/{uid}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": html,
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": "Bot" if is_bot else "User",
        "user_view_type": "public",
        "site_admin": False,
    }


def app(urls: Urls, the_app: App, permissions: dict[str, str]) -> dict[str, Any]:
    return {
        "id": the_app.id,
        "slug": the_app.slug,
        "node_id": node_id("App", the_app.id),
        "client_id": f"Iv1.{the_app.id:016x}",
        "owner": user(urls, the_app.owner),
        "name": the_app.slug,
        "description": "",
        "external_url": f"{urls.web}/{the_app.owner}",
        "html_url": f"{urls.web}/apps/{the_app.slug}",
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "permissions": dict(permissions),
        "events": ["check_run", "check_suite", "issue_comment", "pull_request", "workflow_run"],
    }


def repo(urls: Urls, r: Repo) -> dict[str, Any]:
    api = f"{urls.api}/repos/{r.full_name}"
    html = f"{urls.web}/{r.full_name}"
    clone = f"file://{r.bare_git_path}" if r.bare_git_path else f"{html}.git"
    return {
        "id": r.id,
        "node_id": node_id("Repository", r.id),
        "name": r.name,
        "full_name": r.full_name,
        "private": r.private,
        "owner": user(urls, r.owner),
        "html_url": html,
        "description": None,
        "fork": r.fork,
        "url": api,
        "forks_url": f"{api}/forks",
        "keys_url": f"{api}/keys{{/key_id}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "teams_url": f"{api}/teams",
        "hooks_url": f"{api}/hooks",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "events_url": f"{api}/events",
        "assignees_url": f"{api}/assignees{{/user}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "tags_url": f"{api}/tags",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "languages_url": f"{api}/languages",
        "stargazers_url": f"{api}/stargazers",
        "contributors_url": f"{api}/contributors",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "commits_url": f"{api}/commits{{/sha}}",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "comments_url": f"{api}/comments{{/number}}",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "merges_url": f"{api}/merges",
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "downloads_url": f"{api}/downloads",
        "issues_url": f"{api}/issues{{/number}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "labels_url": f"{api}/labels{{/name}}",
        "releases_url": f"{api}/releases{{/id}}",
        "deployments_url": f"{api}/deployments",
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "pushed_at": CREATED_AT,
        "git_url": f"git://{urls.web.split('://', 1)[-1]}/{r.full_name}.git",
        "ssh_url": f"git@{urls.web.split('://', 1)[-1]}:{r.full_name}.git",
        "clone_url": clone,
        "svn_url": html,
        "homepage": None,
        "size": 1,
        "stargazers_count": 0,
        "watchers_count": 0,
        "language": "C++",
        "has_issues": True,
        "has_projects": False,
        "has_downloads": True,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 0,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 0,
        "license": None,
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": [],
        "visibility": "private" if r.private else "public",
        "forks": 0,
        "open_issues": 0,
        "watchers": 0,
        "default_branch": r.default_branch,
        "custom_properties": {},
    }


def _pull_urls(urls: Urls, p: Pull) -> dict[str, str]:
    api = f"{urls.api}/repos/{p.repo.full_name}"
    html = f"{urls.web}/{p.repo.full_name}/pull/{p.number}"
    return {
        "url": f"{api}/pulls/{p.number}",
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{api}/issues/{p.number}",
        "commits_url": f"{api}/pulls/{p.number}/commits",
        "review_comments_url": f"{api}/pulls/{p.number}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "comments_url": f"{api}/issues/{p.number}/comments",
        "statuses_url": f"{api}/statuses/{p.head.sha}",
    }


def pull(urls: Urls, p: Pull, *, review_comments: int, comments: int, commits: int) -> dict[str, Any]:
    links = _pull_urls(urls, p)
    head, base = p.head, p.repo
    files = head.files
    return {
        "url": links["url"],
        "id": p.id,
        "node_id": node_id("PullRequest", p.id),
        "html_url": links["html_url"],
        "diff_url": links["diff_url"],
        "patch_url": links["patch_url"],
        "issue_url": links["issue_url"],
        "number": p.number,
        "state": p.state,
        "locked": False,
        "title": p.title,
        "user": user(urls, p.author),
        "body": p.body,
        "created_at": p.created_at,
        "updated_at": p.updated_at,
        "closed_at": None,
        "merged_at": None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "labels": [],
        "milestone": None,
        "draft": p.draft,
        "commits_url": links["commits_url"],
        "review_comments_url": links["review_comments_url"],
        "review_comment_url": links["review_comment_url"],
        "comments_url": links["comments_url"],
        "statuses_url": links["statuses_url"],
        "head": {
            "label": f"{p.head_repo.owner}:{p.head_ref}",
            "ref": p.head_ref,
            "sha": head.sha,
            "user": user(urls, p.head_repo.owner),
            "repo": repo(urls, p.head_repo),
        },
        "base": {
            "label": f"{base.owner}:{p.base_ref}",
            "ref": p.base_ref,
            "sha": head.base_sha,
            "user": user(urls, base.owner),
            "repo": repo(urls, base),
        },
        "_links": {
            "self": {"href": links["url"]},
            "html": {"href": links["html_url"]},
            "issue": {"href": links["issue_url"]},
            "comments": {"href": links["comments_url"]},
            "review_comments": {"href": links["review_comments_url"]},
            "review_comment": {"href": links["review_comment_url"]},
            "commits": {"href": links["commits_url"]},
            "statuses": {"href": links["statuses_url"]},
        },
        "author_association": p.author_association,
        "auto_merge": None,
        "active_lock_reason": None,
        "merged": False,
        "mergeable": True,
        "rebaseable": True,
        "mergeable_state": "clean",
        "merged_by": None,
        "comments": comments,
        "review_comments": review_comments,
        "maintainer_can_modify": p.maintainer_can_modify,
        "commits": commits,
        "additions": sum(f.additions for f in files),
        "deletions": sum(f.deletions for f in files),
        "changed_files": len(files),
    }


def issue_of_pull(urls: Urls, p: Pull, *, comments: int) -> dict[str, Any]:
    """The issue half of a pull request, as `GET /repos/o/r/issues/n` and issue_comment payloads carry it."""
    links = _pull_urls(urls, p)
    api = f"{urls.api}/repos/{p.repo.full_name}"
    return {
        "url": links["issue_url"],
        "repository_url": api,
        "labels_url": f"{links['issue_url']}/labels{{/name}}",
        "comments_url": links["comments_url"],
        "events_url": f"{links['issue_url']}/events",
        "html_url": links["html_url"],
        "id": p.id + 500_000_000,
        "node_id": node_id("Issue", p.id),
        "number": p.number,
        "title": p.title,
        "user": user(urls, p.author),
        "labels": [],
        "state": p.state,
        "locked": False,
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "comments": comments,
        "created_at": p.created_at,
        "updated_at": p.updated_at,
        "closed_at": None,
        "author_association": p.author_association,
        "active_lock_reason": None,
        "draft": p.draft,
        "pull_request": {
            "url": links["url"],
            "html_url": links["html_url"],
            "diff_url": links["diff_url"],
            "patch_url": links["patch_url"],
            "merged_at": None,
        },
        "body": p.body,
        "reactions": reaction_rollup(f"{links['issue_url']}/reactions", []),
        "timeline_url": f"{links['issue_url']}/timeline",
        "performed_via_github_app": None,
        "state_reason": None,
    }


def reaction_rollup(url: str, reactions: list[Reaction]) -> dict[str, Any]:
    rollup: dict[str, Any] = {"url": url, "total_count": len(reactions)}
    for content in REACTION_CONTENTS:
        rollup[content] = sum(r.content == content for r in reactions)
    return rollup


def diff_entry(urls: Urls, r: Repo, head_sha: str, f: FilePatch, *, with_patch: bool) -> dict[str, Any]:
    """One item of `GET /pulls/n/files` (GitHub's DiffEntry)."""
    quoted = quote(f.path)
    entry: dict[str, Any] = {
        "sha": f.new_blob if f.status != "removed" else f.old_blob,
        "filename": f.path,
        "status": f.status,
        "additions": f.additions,
        "deletions": f.deletions,
        "changes": f.additions + f.deletions,
        "blob_url": f"{urls.web}/{r.full_name}/blob/{head_sha}/{quoted}",
        "raw_url": f"{urls.web}/{r.full_name}/raw/{head_sha}/{quoted}",
        "contents_url": f"{urls.api}/repos/{r.full_name}/contents/{quoted}?ref={head_sha}",
    }
    patch = f.patch
    if with_patch and patch is not None:
        entry["patch"] = patch
    if f.previous_path is not None:
        entry["previous_filename"] = f.previous_path
    return entry


def review(urls: Urls, rv: Review) -> dict[str, Any]:
    p = rv.pull
    links = _pull_urls(urls, p)
    html = f"{links['html_url']}#pullrequestreview-{rv.id}"
    shape: dict[str, Any] = {
        "id": rv.id,
        "node_id": node_id("PullRequestReview", rv.id),
        "user": user(urls, rv.user),
        "body": rv.body,
        "state": rv.state,
        "html_url": html,
        "pull_request_url": links["url"],
        "author_association": "NONE",
        "_links": {"html": {"href": html}, "pull_request": {"href": links["url"]}},
        "commit_id": rv.commit_id,
    }
    if rv.submitted_at is not None:
        shape["submitted_at"] = rv.submitted_at
    return shape


def review_comment(urls: Urls, c: ReviewComment, reactions: list[Reaction]) -> dict[str, Any]:
    p = c.pull
    links = _pull_urls(urls, p)
    url = f"{urls.api}/repos/{p.repo.full_name}/pulls/comments/{c.id}"
    html = f"{links['html_url']}#discussion_r{c.id}"
    shape: dict[str, Any] = {
        "url": url,
        "pull_request_review_id": c.review_id,
        "id": c.id,
        "node_id": node_id("PullRequestReviewComment", c.id),
        "diff_hunk": c.diff_hunk,
        "path": c.path,
        "position": c.position,
        "original_position": c.original_position,
        "commit_id": c.commit_id,
        "original_commit_id": c.original_commit_id,
        "user": user(urls, c.user),
        "body": c.body,
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "html_url": html,
        "pull_request_url": links["url"],
        "author_association": "NONE",
        "_links": {"self": {"href": url}, "html": {"href": html}, "pull_request": {"href": links["url"]}},
        "reactions": reaction_rollup(f"{url}/reactions", reactions),
        "start_line": c.start_line,
        "original_start_line": c.original_start_line,
        "start_side": c.start_side,
        "line": c.line,
        "original_line": c.original_line,
        "side": c.side,
        "subject_type": c.subject_type,
    }
    if c.in_reply_to_id is not None:
        shape["in_reply_to_id"] = c.in_reply_to_id
    return shape


def issue_comment(urls: Urls, c: IssueComment, reactions: list[Reaction]) -> dict[str, Any]:
    api = f"{urls.api}/repos/{c.repo.full_name}"
    url = f"{api}/issues/comments/{c.id}"
    return {
        "url": url,
        "html_url": f"{urls.web}/{c.repo.full_name}/pull/{c.number}#issuecomment-{c.id}",
        "issue_url": f"{api}/issues/{c.number}",
        "id": c.id,
        "node_id": node_id("IssueComment", c.id),
        "user": user(urls, c.user, bot=c.user_type == "Bot"),
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "author_association": c.author_association,
        "body": c.body,
        "reactions": reaction_rollup(f"{url}/reactions", reactions),
        "performed_via_github_app": None,
    }


def reaction(urls: Urls, r: Reaction) -> dict[str, Any]:
    return {
        "id": r.id,
        "node_id": node_id("Reaction", r.id),
        "user": user(urls, r.user, bot=r.user_type == "Bot"),
        "content": r.content,
        "created_at": r.created_at,
    }


def check_run(urls: Urls, cr: CheckRun, app_shape: dict[str, Any], pulls: list[Pull]) -> dict[str, Any]:
    api = f"{urls.api}/repos/{cr.repo.full_name}"
    url = f"{api}/check-runs/{cr.id}"
    return {
        "id": cr.id,
        "name": cr.name,
        "node_id": node_id("CheckRun", cr.id),
        "head_sha": cr.head_sha,
        "external_id": cr.external_id if cr.external_id is not None else "",
        "url": url,
        "html_url": f"{urls.web}/{cr.repo.full_name}/runs/{cr.id}",
        "details_url": cr.details_url if cr.details_url is not None else app_shape["html_url"],
        "status": cr.status,
        "conclusion": cr.conclusion,
        "started_at": cr.started_at,
        "completed_at": cr.completed_at,
        "output": {
            "title": cr.title,
            "summary": cr.summary,
            "text": cr.text,
            "annotations_count": len(cr.annotations),
            "annotations_url": f"{url}/annotations",
        },
        "check_suite": {"id": cr.suite_id},
        "app": app_shape,
        "pull_requests": [_check_pull(urls, p) for p in pulls],
    }


def _check_pull(urls: Urls, p: Pull) -> dict[str, Any]:
    def side(r: Repo, ref: str, sha: str) -> dict[str, Any]:
        return {"ref": ref, "sha": sha, "repo": {"id": r.id, "url": f"{urls.api}/repos/{r.full_name}", "name": r.name}}

    return {
        "url": f"{urls.api}/repos/{p.repo.full_name}/pulls/{p.number}",
        "id": p.id,
        "number": p.number,
        "head": side(p.head_repo, p.head_ref, p.head.sha),
        "base": side(p.repo, p.base_ref, p.head.base_sha),
    }


def annotation(urls: Urls, cr: CheckRun, a: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": a["path"],
        "blob_href": f"{urls.web}/{cr.repo.full_name}/blob/{cr.head_sha}/{quote(a['path'])}",
        "start_line": a["start_line"],
        "end_line": a["end_line"],
        "start_column": a.get("start_column"),
        "end_column": a.get("end_column"),
        "annotation_level": a["annotation_level"],
        "title": a.get("title", ""),
        "message": a["message"],
        "raw_details": a.get("raw_details", ""),
    }


def workflow(urls: Urls, w: Workflow) -> dict[str, Any]:
    return {
        "id": w.id,
        "node_id": node_id("Workflow", w.id),
        "name": w.name,
        "path": f".github/workflows/{w.file}",
        "state": w.state,
        "created_at": w.created_at,
        "updated_at": w.created_at,
        "url": f"{urls.api}/repos/{w.repo.full_name}/actions/workflows/{w.id}",
        "html_url": f"{urls.web}/{w.repo.full_name}/blob/{w.repo.default_branch}/.github/workflows/{w.file}",
        "badge_url": f"{urls.web}/{w.repo.full_name}/workflows/{quote(w.name)}/badge.svg",
    }


def workflow_run(urls: Urls, run: WorkflowRun) -> dict[str, Any]:
    r = run.workflow.repo
    api = f"{urls.api}/repos/{r.full_name}"
    url = f"{api}/actions/runs/{run.id}"
    return {
        "id": run.id,
        "name": run.workflow.name,
        "node_id": node_id("WorkflowRun", run.id),
        "head_branch": run.ref,
        "head_sha": run.head_sha,
        "path": f".github/workflows/{run.workflow.file}",
        "display_title": run.workflow.name,
        "run_number": run.run_number,
        "event": "workflow_dispatch",
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow.id,
        "check_suite_id": run.check_suite_id,
        "check_suite_node_id": node_id("CheckSuite", run.check_suite_id),
        "url": url,
        "html_url": f"{urls.web}/{r.full_name}/actions/runs/{run.id}",
        "pull_requests": [],  # always empty for dispatch-triggered runs
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "actor": user(urls, run.actor),
        "run_attempt": 1,
        "referenced_workflows": [],
        "run_started_at": run.created_at,
        "triggering_actor": user(urls, run.actor),
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api}/check-suites/{run.check_suite_id}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "previous_attempt_url": None,
        "workflow_url": f"{api}/actions/workflows/{run.workflow.id}",
        "head_commit": {
            "id": run.head_sha,
            "tree_id": None,
            "message": "",
            "timestamp": run.created_at,
            "author": {"name": "Test Author", "email": "author@example.com"},
            "committer": {"name": "Test Author", "email": "author@example.com"},
        },
        "repository": repo(urls, r),
        "head_repository": repo(urls, r),
    }


def installation(
    urls: Urls, installation_id: int, account: str, the_app: App, permissions: dict[str, str]
) -> dict[str, Any]:
    return {
        "id": installation_id,
        "account": user(urls, account),
        "repository_selection": "all",
        "access_tokens_url": f"{urls.api}/app/installations/{installation_id}/access_tokens",
        "repositories_url": f"{urls.api}/installation/repositories",
        "html_url": f"{urls.web}/settings/installations/{installation_id}",
        "app_id": the_app.id,
        "app_slug": the_app.slug,
        "target_id": user_id(account),
        "target_type": "Organization",
        "permissions": dict(permissions),
        "events": ["check_run", "check_suite", "issue_comment", "pull_request", "workflow_run"],
        "created_at": CREATED_AT,
        "updated_at": CREATED_AT,
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def commit(
    urls: Urls,
    r: Repo,
    sha: str,
    *,
    parents: list[str],
    author: tuple[str, str, str],
    committer: tuple[str, str, str],
    message: str,
    tree: str | None,
    files: list[dict[str, Any]],
) -> dict[str, Any]:
    """`GET /repos/o/r/commits/{sha}`; author/committer are (name, email, ISO date)."""
    api = f"{urls.api}/repos/{r.full_name}"
    html = f"{urls.web}/{r.full_name}/commit/{sha}"
    additions = sum(f["additions"] for f in files)
    deletions = sum(f["deletions"] for f in files)
    return {
        "sha": sha,
        "node_id": node_id("Commit", zlib.crc32(sha.encode())),
        "commit": {
            "author": {"name": author[0], "email": author[1], "date": author[2]},
            "committer": {"name": committer[0], "email": committer[1], "date": committer[2]},
            "message": message,
            "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
            "url": f"{api}/git/commits/{sha}",
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "url": f"{api}/commits/{sha}",
        "html_url": html,
        "comments_url": f"{api}/commits/{sha}/comments",
        "author": None,
        "committer": None,
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{urls.web}/{r.full_name}/commit/{p}"} for p in parents
        ],
        "stats": {"total": additions + deletions, "additions": additions, "deletions": deletions},
        "files": files,
    }


def rate_limit(limit: int, used: int, reset: int) -> dict[str, Any]:
    core = {"limit": limit, "used": used, "remaining": max(limit - used, 0), "reset": reset}
    other = {"limit": 5000, "used": 0, "remaining": 5000, "reset": reset}
    return {
        "resources": {
            "core": core,
            "search": {**other, "limit": 30, "remaining": 30},
            "graphql": other,
            "integration_manifest": other,
            "code_scanning_upload": other,
            "actions_runner_registration": other,
            "scim": other,
        },
        "rate": core,
    }
