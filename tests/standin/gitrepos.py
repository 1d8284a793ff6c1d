"""Real bare git repositories for tests, built with git plumbing (no work tree) and fixed dates.

The same inputs always give the same commit SHAs: author, committer and dates are fixed, the date
of a commit being derived from how many commits precede it.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

AUTHOR = ("Test Author", "author@example.com")
_EPOCH = 1_700_000_000  # 2023-11-14T22:13:20Z, the date of every root commit

FileMap = Mapping[str, "str | bytes | None"]  # path -> content; None deletes the path


def git(
    repo: str | os.PathLike[str], *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
) -> str:
    """Run git against a bare repository, isolated from the user's and system's git config."""
    full_env = {**os.environ, **_ISOLATION, **(env or {})}
    done = subprocess.run(
        ["git", f"--git-dir={os.fspath(repo)}", *args],
        input=input,
        capture_output=True,
        env=full_env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode("utf-8", errors="surrogateescape")


_ISOLATION = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}


def make_bare_repo(
    path: str | os.PathLike[str],
    files: FileMap,
    *,
    branch: str = "main",
    message: str = "Initial commit",
) -> str:
    """Create a bare repository at `path` whose `branch` holds one commit of `files`; returns its SHA."""
    Path(path).mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "--bare", "--quiet", f"--initial-branch={branch}", os.fspath(path)],
        check=True,
        capture_output=True,
        env={**os.environ, **_ISOLATION},
    )
    return commit(path, files, parent=None, branch=branch, message=message)


def commit(
    repo: str | os.PathLike[str],
    files: FileMap,
    *,
    parent: str | None,
    branch: str | None = None,
    message: str = "Update",
    author: tuple[str, str] = AUTHOR,
) -> str:
    """Commit `files` on top of `parent` (a SHA or ref; None for a root commit); returns the SHA.

    Paths not named keep the parent's content. When `branch` is given, refs/heads/<branch> is moved
    to the new commit.
    """
    with tempfile.TemporaryDirectory() as scratch:
        index_env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        depth = 0
        if parent is not None:
            parent = rev_parse(repo, parent)
            git(repo, "read-tree", parent, env=index_env)
            depth = int(git(repo, "rev-list", "--count", parent).strip())
        entries = []
        for path, content in sorted(files.items()):
            if content is None:
                entries.append(f"0 {'0' * 40}\t{path}\n")  # mode 0 removes the path
                continue
            data = content.encode() if isinstance(content, str) else content
            blob = git(repo, "hash-object", "-w", "--stdin", input=data).strip()
            entries.append(f"100644 {blob}\t{path}\n")
        git(
            repo,
            "update-index",
            "--index-info",
            input="".join(entries).encode("utf-8", "surrogateescape"),
            env=index_env,
        )
        tree = git(repo, "write-tree", env=index_env).strip()
    date = f"{_EPOCH + 60 * depth} +0000"
    identity = {
        "GIT_AUTHOR_NAME": author[0],
        "GIT_AUTHOR_EMAIL": author[1],
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": author[0],
        "GIT_COMMITTER_EMAIL": author[1],
        "GIT_COMMITTER_DATE": date,
    }
    parents = ["-p", parent] if parent is not None else []
    sha = git(repo, "commit-tree", tree, *parents, input=message.encode(), env=identity).strip()
    if branch is not None:
        set_ref(repo, f"refs/heads/{branch}", sha)
    return sha


def set_ref(repo: str | os.PathLike[str], ref: str, sha: str) -> None:
    """Point `ref` (a full ref name) at `sha`."""
    git(repo, "update-ref", ref, sha)


def set_pull_ref(repo: str | os.PathLike[str], number: int, sha: str) -> None:
    """Create or move refs/pull/<number>/head, as GitHub does for every pull request."""
    set_ref(repo, f"refs/pull/{number}/head", sha)


def rev_parse(repo: str | os.PathLike[str], rev: str) -> str:
    """The commit SHA `rev` names; RuntimeError when it names none."""
    return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()


def diff(repo: str | os.PathLike[str], base: str, head: str, *, full_index: bool = False) -> str:
    """`git diff base...head` (GitHub's three-dot PR diff) with renames detected."""
    extra = ["--full-index"] if full_index else []
    return git(
        repo,
        "-c",
        "core.quotePath=false",
        "-c",
        "diff.noprefix=false",
        "-c",
        "diff.mnemonicPrefix=false",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "-M",
        *extra,
        f"{base}...{head}",
    )
