"""What the CLI asks git beyond reading trees: the default base, the HEAD reference, the remote's URL.

`origin/main` does not exist in a bare mirror (its branches are `refs/heads/*`) and `HEAD` is
ambiguous there when a branch is named HEAD, so references are spelled out in full.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from bot.errors import UnknownRevision
from bot.repo import GitRepository

_SSH_REMOTE = re.compile(r"^(?:ssh://)?git@([^:/]+)[:/](.+?)(?:\.git)?/?$")
_HTTP_REMOTE = re.compile(r"^(https?)://(?:[^@/]+@)?([^/]+)/(.+?)(?:\.git)?/?$")


@dataclass(frozen=True, slots=True)
class Base:
    """The base commit chosen for a review and how it was chosen (shown to the user)."""

    sha: str
    description: str


def head_reference(repo: GitRepository) -> str:
    """The full reference HEAD points at (`refs/heads/main`), or the commit of a detached HEAD."""
    try:
        text = (repo.git_dir / "HEAD").read_text().strip()
    except OSError:
        return "HEAD"
    return text[len("ref: ") :] if text.startswith("ref: ") else text


def is_bare(repo: GitRepository) -> bool:
    return repo.git_dir == repo.path.resolve()


def default_branch(repo: GitRepository) -> str | None:
    """The remote's default branch as a full reference, or None when the repository names none.

    A clone records it as `refs/remotes/origin/HEAD`; a bare mirror's own HEAD is the remote's.
    """
    candidates = ["refs/remotes/origin/HEAD"]
    if is_bare(repo):
        candidates.append(head_reference(repo))
    candidates += ["refs/remotes/origin/main", "refs/remotes/origin/master", "refs/heads/main", "refs/heads/master"]
    for reference in candidates:
        if not reference.startswith("refs/"):
            continue
        try:
            repo.resolve(reference)
        except UnknownRevision:
            continue
        return reference
    return None


def default_base(repo: GitRepository, head_sha: str) -> Base:
    """The merge base of the remote's default branch and the head: what a pull request would show."""
    branch = default_branch(repo)
    if branch is None:
        raise UnknownRevision(
            f"no default branch found in {repo.path} (no origin/HEAD, origin/main or main); pass --base"
        )
    tip = repo.resolve(branch)
    base = repo.merge_base(tip, head_sha)
    short = branch.removeprefix("refs/remotes/").removeprefix("refs/heads/")
    if base == tip:
        return Base(base, f"base: {short} ({base[:12]})")
    return Base(base, f"base: merge base of {short} and the head ({base[:12]})")


def repository_uri(repo: GitRepository) -> str | None:
    """The `origin` remote as an https URL (what SARIF's versionControlProvenance wants), or None."""
    result = subprocess.run(
        ["git", "-C", str(repo.path), "config", "--get", "remote.origin.url"], capture_output=True, text=True
    )
    return normalize_remote(result.stdout.strip()) if result.returncode == 0 else None


def normalize_remote(url: str) -> str | None:
    """`git@github.com:o/r.git` or `https://user@github.com/o/r.git` -> `https://github.com/o/r`."""
    ssh = _SSH_REMOTE.match(url)
    if ssh:
        return f"https://{ssh.group(1)}/{ssh.group(2)}"
    http = _HTTP_REMOTE.match(url)
    if http:
        return f"{http.group(1)}://{http.group(2)}/{http.group(3)}"
    return None  # a local path or an unknown scheme is no repository URI a reader can open
