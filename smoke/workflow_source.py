"""Which pr-check the GPU smoke workflow installs: exactly the one `pr-check smoke workflow` ran from,
pinned by git URL and commit. Never a name looked up in a package index: the job runs on a
self-hosted GPU runner, and whoever registers that name there would run their code on it.

Where the pin comes from: `--git-url URL --commit SHA`; else what pip recorded when this pr-check was
installed (PEP 610 `direct_url.json`: `pip install 'pr-check @ git+URL@TAG'` records the URL and the
commit the tag named); else, installed from a clone's directory, that clone's `origin` URL and HEAD
commit when its work tree is clean. Anything else is an error that says what to pass.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from smoke.config import SmokeConfigError

URL_PLACEHOLDER = "@PR_CHECK_GIT_URL@"
COMMIT_PLACEHOLDER = "@PR_CHECK_COMMIT@"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_URL = re.compile(r"^(https|http|ssh|git|file)://[^\s\"'$`\\]+$|^[\w.-]+@[\w.-]+:[^\s\"'$`\\]+$")


class WorkflowSourceUnknown(SmokeConfigError):
    """Which pr-check to pin cannot be told (or what was given is not a git URL and a commit)."""


@dataclass(frozen=True, slots=True)
class Source:
    """A git repository of pr-check and a full commit id in it."""

    git_url: str
    commit: str


def checked(git_url: str, commit: str) -> Source:
    """The source, or WorkflowSourceUnknown saying what is wrong with it."""
    git_url = git_url.removeprefix("git+")
    if not _URL.match(git_url):
        raise WorkflowSourceUnknown(f"--git-url {git_url!r} is not a git URL (https://host/owner/pr-check, ...)")
    if not _COMMIT.match(commit):
        raise WorkflowSourceUnknown(f"--commit {commit!r} is not a full commit id (40 hex digits: git rev-parse TAG)")
    return Source(git_url, commit)


def installed_source() -> Source:
    """The git URL and commit this pr-check was installed from (see the module docstring)."""
    try:
        recorded = metadata.distribution("pr-check").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        recorded = None
    data = json.loads(recorded) if recorded else {}
    vcs = data.get("vcs_info") or {}
    if vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return checked(str(data["url"]), str(vcs["commit_id"]))
    url = urlparse(str(data.get("url") or ""))
    directory = Path(unquote(url.path)) if url.scheme == "file" else Path(__file__).resolve().parent.parent
    clone = _clean_clone(directory)
    if clone is not None:
        return clone
    raise WorkflowSourceUnknown(
        "cannot tell which pr-check the GPU runner should install (this one was not installed from a git URL, "
        "nor from a clean clone with an `origin`): pass --git-url URL --commit SHA, the repository and the "
        "commit (git rev-parse v0.1.0) of this pr-check"
    )


def _clean_clone(directory: Path) -> Source | None:
    def git(*arguments: str) -> str | None:
        result = subprocess.run(["git", "-C", str(directory), *arguments], capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else None

    if not directory.is_dir() or git("status", "--porcelain", "--untracked-files=no") != "":
        return None
    url, commit = git("remote", "get-url", "origin"), git("rev-parse", "HEAD")
    if not url or not commit:
        return None
    try:
        return checked(url, commit)
    except WorkflowSourceUnknown:
        return None


def render_workflow(template: str, source: Source) -> str:
    """The workflow with the pin written in."""
    assert URL_PLACEHOLDER in template and COMMIT_PLACEHOLDER in template, "the template lost its placeholders"
    return template.replace(URL_PLACEHOLDER, source.git_url).replace(COMMIT_PLACEHOLDER, source.commit)
