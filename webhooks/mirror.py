"""Persistent bare mirrors of the repositories the App reviews, fetched by `refs/pull/N/head`.

One bare repository per GitHub repository under `<data dir>/mirrors/<owner>/<name>.git`; each review
fetches only the pull request's head and its base branch into it, so a second push to the same
pull request transfers only the new objects. An installation token, when there is one, goes to git
through the environment (`GIT_CONFIG_*`), never on the command line or into a remote URL that git
might print, and it is scrubbed from any error text.
"""

from __future__ import annotations

import base64
import fcntl
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bot.errors import GitError

_SAFE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ASKPASS": "true",
    "LC_ALL": "C",
}


@dataclass(frozen=True, slots=True)
class FetchedPull:
    """What a fetch left in the mirror: the repository path and the commits to review."""

    path: Path
    head_sha: str
    base_sha: str  # the merge base of the PR's base and head: what GitHub's diff compares against


class Mirrors:
    """The directory of bare mirrors."""

    def __init__(self, root: Path, *, timeout_s: float = 600.0) -> None:
        self.root = Path(root)
        self.timeout_s = timeout_s

    def path_for(self, owner: str, name: str) -> Path:
        for part in (owner, name):
            if not _SAFE_NAME.match(part) or part in (".", ".."):
                raise GitError(f"refusing repository name {owner!r}/{name!r}")
        return self.root / owner.lower() / f"{name.lower()}.git"

    def fetch_pull(
        self,
        owner: str,
        name: str,
        remote_url: str,
        number: int,
        *,
        base_ref: str,
        base_sha: str,
        head_sha: str,
        token: str | None = None,
    ) -> FetchedPull:
        """Bring refs/pull/N/head and the base branch into the mirror; check both commits are there."""
        path = self.path_for(owner, name)
        with self._locked(path):
            if not (path / "HEAD").exists():
                path.mkdir(parents=True, exist_ok=True)
                self._git(path, ["init", "--bare", "--quiet"], token=None)
            refspecs = [f"+refs/pull/{int(number)}/head:refs/pr-check/pull/{int(number)}/head"]
            if base_ref:
                refspecs.append(f"+refs/heads/{base_ref}:refs/pr-check/base/{base_ref}")
            if not (self._has_commit(path, head_sha) and self._has_commit(path, base_sha)):
                self._git(
                    path, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote_url, *refspecs], token=token
                )
            if not self._has_commit(path, head_sha):
                raise GitError(
                    f"{owner}/{name}: head {head_sha[:12]} of pull request #{number} is not in refs/pull/{number}/head"
                )
            base = base_sha if self._has_commit(path, base_sha) else f"refs/pr-check/base/{base_ref}"
            merge_base = self._git(path, ["merge-base", base, head_sha], token=None).strip()
        return FetchedPull(path, head_sha, merge_base)

    def changed_paths(self, path: Path, base_sha: str, head_sha: str, *, limit: int = 3000) -> tuple[str, ...]:
        """The paths a pull request changes (git's own diff of names; no file content is read)."""
        try:
            listed = self._git(path, ["diff", "--name-only", "-z", "--no-renames", base_sha, head_sha], token=None)
        except GitError:
            return ()
        return tuple(name for name in listed.split("\0") if name)[:limit]

    def _has_commit(self, path: Path, sha: str) -> bool:
        if not sha:
            return False
        done = subprocess.run(
            ["git", f"--git-dir={path}", "cat-file", "-e", f"{sha}^{{commit}}"],
            capture_output=True,
            env={**os.environ, **_GIT_ENV},
        )
        return done.returncode == 0

    @contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        """One fetch per mirror at a time on this machine (jobs of different PRs share a mirror)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.parent / f".{path.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _git(self, path: Path, args: list[str], *, token: str | None) -> str:
        env = {**os.environ, **_GIT_ENV}
        if token:
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": "http.extraHeader",
                    "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
                }
            )
        command = (
            ["git", f"--git-dir={path}", *args]
            if args[0] != "init"
            else ["git", "init", "--bare", "--quiet", str(path)]
        )
        try:
            done = subprocess.run(command, capture_output=True, env=env, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} timed out after {self.timeout_s:g}s") from None
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip()
            if token:
                message = message.replace(token, "***")
            raise GitError(f"git {args[0]} failed: {message}")
        return done.stdout.decode(errors="replace")  # a file name need not be UTF-8


def remote_url(clone_url: str) -> str:
    """The URL git fetches from: the API's clone_url, stripped of any credentials it might carry."""
    return re.sub(r"^(https?://)[^@/]+@", r"\1", clone_url)
