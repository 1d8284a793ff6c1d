"""Read a git repository through its object database: no checkout, no work tree needed.

All git I/O of pr-check goes through `GitRepository`. Blob reads are batched through one
long-lived `git cat-file --batch` process; a blob missing from a shallow or partial clone reads
as None instead of failing the review.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bot.errors import GitError, NotAGitRepository, UnknownRevision, UsageError
from bot.tree import Entry, FileTree, blob_id_of

# git's id of the empty tree: the base of a repository that has no commit yet.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# Never let git lazily fetch a missing promisor object or prompt for credentials mid-review.
_GIT_ENV = {
    **os.environ,
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
}


class GitRepository:
    """A git repository (bare or not) read by revision."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise NotAGitRepository(f"{self.path}: no such directory")
        probe = self._run(["rev-parse", "--git-dir"], check=False)
        if probe.returncode != 0:
            raise NotAGitRepository(f"{self.path}: not a git repository")
        self.git_dir = (self.path / probe.stdout.decode().strip()).resolve()
        self._batch: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        # Full commit ids already verified: an object id names the same commit for ever, so a review
        # that resolves its two commits for the diff, the trees and the report asks git once each.
        self._commits: set[str] = set()
        _OPEN.add(self)

    # -- plumbing ------------------------------------------------------------------------
    def _run(self, args: list[str], check: bool = True, input: bytes | None = None):
        result = subprocess.run(
            ["git", "-C", str(self.path), *args],
            capture_output=True,
            input=input,
            env=_GIT_ENV,
        )
        if check and result.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])} failed: {result.stderr.decode().strip()}")
        return result

    def resolve(self, revision: str) -> str:
        """The full commit id of `revision`, or UnknownRevision."""
        if revision in self._commits:
            return revision
        result = self._run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"], check=False
        )
        if result.returncode != 0:
            raise UnknownRevision(f"unknown revision {revision!r} in {self.path}")
        commit = result.stdout.decode().strip()
        self._commits.add(commit)
        return commit

    def merge_base(self, base: str, head: str) -> str:
        result = self._run(["merge-base", base, head], check=False)
        return result.stdout.decode().strip() if result.returncode == 0 else base

    def tree(self, revision: str) -> FileTree:
        """The FileTree of a commit, listed with one `git ls-tree`."""
        commit = self.resolve(revision)
        return self.tree_object(commit, commit)

    def tree_object(self, treeish: str, revision: str) -> FileTree:
        """The FileTree of any tree-ish (a commit or a bare tree id), named `revision`: identified
        by its git tree id, listed with one `git ls-tree` when a path is first asked for."""
        tree_id = (
            self._run(["rev-parse", "--verify", "--end-of-options", f"{treeish}^{{tree}}"]).stdout.decode().strip()
        )

        def listed() -> dict[str, Entry]:
            listing = self._run(["ls-tree", "-r", "-z", "--full-tree", tree_id]).stdout
            entries: dict[str, Entry] = {}
            for record in listing.split(b"\0"):
                if not record:
                    continue
                meta, _, path = record.partition(b"\t")
                mode, _kind, blob = meta.decode().split(" ")
                entries[path.decode("utf-8", errors="surrogateescape")] = Entry(blob, mode)
            return entries

        return FileTree(listed, self.read_blobs, revision, identity=f"git-tree:{tree_id}")

    def has_commit(self, commit: str) -> bool:
        """Is `commit` in this repository's object database?"""
        try:
            self.resolve(commit)
        except UnknownRevision:
            return False
        return True

    def diff(self, base: str, head: str) -> str:
        """Unified diff base..head with renames detected and full binary markers."""
        result = self._run(
            ["diff", "--no-color", "--no-ext-diff", "-M", "--full-index", self.resolve(base), self.resolve(head)]
        )
        return result.stdout.decode("utf-8", errors="replace")

    def diff_trees(self, base: str, head: str) -> str:
        """`diff` between two tree-ishes given as object ids (commits or trees), not resolved as commits."""
        result = self._run(
            [
                "diff",
                "--no-color",
                "--no-ext-diff",
                "-M",
                "--full-index",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                base,
                head,
                "--",
            ]
        )
        return result.stdout.decode("utf-8", errors="replace")

    # -- trees that are no commit: the work tree, the index, a tree with files replaced ---------
    # A temporary index file (GIT_INDEX_FILE) turns each into a real tree id that the review reads
    # like any commit's tree: git's own rules decide what the work tree holds (.gitignore, deletions,
    # submodules, skip-worktree entries), and the user's index, HEAD and files stay as they are.
    # Only objects are written to the object database, as `git stash` would.
    def work_tree_root(self) -> Path:
        """The top directory of the work tree, or UsageError in a bare repository."""
        result = self._run(["rev-parse", "--show-toplevel"], check=False)
        top = result.stdout.decode().strip()
        if result.returncode != 0 or not top:
            raise UsageError(f"{self.path}: a bare repository has no work tree")
        return Path(top)

    def head_commit(self) -> str | None:
        """The commit HEAD points at, or None in a repository without commits."""
        try:
            return self.resolve("HEAD")
        except UnknownRevision:
            return None

    def work_tree_id(self) -> str:
        """The tree id of the work tree as `git add -A` would stage it (tracked, untracked but not
        ignored, deletions), made in a copy of the index so the real one is not touched."""
        root = self.work_tree_root()
        with self._temporary_index(seed=True) as env:
            self._run_env(["-C", str(root), "add", "-A", "--", "."], env)  # git -C PATH -C ROOT: ROOT wins
            return self._run_env(["write-tree"], env).stdout.decode().strip()

    def index_tree_id(self) -> str:
        """The tree id of what is staged (writes only tree objects; the index itself is unchanged)."""
        result = self._run(["write-tree"], check=False)
        if result.returncode != 0:
            raise UsageError(f"{self.path}: the index cannot be written as a tree: {result.stderr.decode().strip()}")
        return result.stdout.decode().strip()

    def tree_with_files(self, treeish: str, files: Mapping[str, tuple[bytes, str]]) -> str:
        """The tree id of `treeish` with the given files (path -> (contents, mode)) replaced or added."""
        records = []
        for path, (data, mode) in files.items():
            blob = self._run(["hash-object", "-w", "--stdin"], input=data).stdout.decode().strip()
            records.append(f"{mode} {blob}\t{path}\n".encode("utf-8", "surrogateescape"))
        with self._temporary_index(seed=False) as env:
            self._run_env(["read-tree", treeish], env)
            self._run_env(["update-index", "--index-info"], env, input=b"".join(records))
            return self._run_env(["write-tree"], env).stdout.decode().strip()

    @contextmanager
    def _temporary_index(self, seed: bool) -> Iterator[dict[str, str]]:
        """The environment of a fresh index file (a copy of the real one if `seed`), removed after."""
        real = self._run(["rev-parse", "--path-format=absolute", "--git-path", "index"]).stdout.decode().strip()
        with tempfile.TemporaryDirectory(prefix="pr-check-index-") as directory:
            index = Path(directory) / "index"
            if seed and Path(real).is_file():
                shutil.copyfile(real, index)  # its stat cache spares re-hashing unchanged files
            yield {**_GIT_ENV, "GIT_INDEX_FILE": str(index)}

    def _run_env(self, args: list[str], env: dict[str, str], input: bytes | None = None):
        result = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, input=input, env=env)
        if result.returncode != 0:
            raise GitError(f"git {' '.join(args[:2])} failed: {result.stderr.decode().strip()}")
        return result

    def read_blobs(self, blobs: Iterable[str]) -> dict[str, bytes | None]:
        """Read many blobs through one `cat-file --batch`; missing ones map to None."""
        wanted = list(dict.fromkeys(blobs))
        out: dict[str, bytes | None] = {}
        if not wanted:
            return out
        with self._lock:
            process = self._batch_process()
            assert process.stdin is not None and process.stdout is not None
            # Write and read in chunks so neither pipe fills while the other waits.
            for start in range(0, len(wanted), 256):
                chunk = wanted[start : start + 256]
                process.stdin.write(b"".join(b.encode() + b"\n" for b in chunk))
                process.stdin.flush()
                for blob in chunk:
                    header = process.stdout.readline().decode().split()
                    if len(header) < 3 or header[1] == "missing":
                        out[blob] = None
                        continue
                    size = int(header[2])
                    data = process.stdout.read(size)
                    process.stdout.read(1)  # the newline after each object
                    out[blob] = data if header[1] == "blob" else None
        return out

    def _batch_process(self) -> subprocess.Popen[bytes]:
        if self._batch is None or self._batch.poll() is not None:
            self._batch = subprocess.Popen(
                ["git", "-C", str(self.path), "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_GIT_ENV,
            )
        return self._batch

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin:
                self._batch.stdin.close()
            self._batch.wait(timeout=5)
            self._batch = None

    def __enter__(self) -> GitRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_OPEN: weakref.WeakSet[GitRepository] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked process (bot/parallel/evaluation_pool.py) must not talk to its parent's `cat-file`
    (their requests and answers would interleave) nor wait on a lock another thread held at the
    fork: it starts its own when it first reads a blob."""
    for repository in list(_OPEN):
        repository._batch = None
        repository._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def directory_tree(path: str | os.PathLike[str]) -> FileTree:
    """The files under a directory on disk (a checkout without git data), `.git` skipped."""
    root = Path(path)
    contents: dict[str, bytes] = {}
    entries: dict[str, Entry] = {}
    for file in sorted(root.rglob("*")):
        relative = file.relative_to(root).as_posix()
        if relative == ".git" or relative.startswith(".git/") or not (file.is_file() or file.is_symlink()):
            continue
        if file.is_symlink():
            data, mode = os.fsencode(os.readlink(file)), "120000"
        else:
            data, mode = file.read_bytes(), "100644"
        contents[blob_id_of(data)] = data
        entries[relative] = Entry(blob_id_of(data), mode)
    return FileTree(entries, lambda blobs: {b: contents.get(b) for b in blobs}, "DIRECTORY")
