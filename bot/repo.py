"""Read a git repository through its object database: no checkout, no work tree needed.

All git I/O of pr-check goes through `GitRepository`. Blob reads are batched through one
long-lived `git cat-file --batch` process. In a partial clone (`git clone --filter=blob:none`) the
blobs a read or a diff needs and lacks are fetched from the promisor remote, all of one batch in one
`git fetch`, never one by one; when that fetch fails, the review stops with an input error naming
the files and the remedy. A blob missing from a shallow or damaged clone reads as None (the review
notes it), and a diff that needs one names the file instead of failing as an internal error.
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

from bot.errors import GitError, MissingObjects, NotAGitRepository, UnknownRevision, UsageError
from bot.tree import Entry, FileTree, blob_id_of

# git's id of the empty tree: the base of a repository that has no commit yet.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# Never let git lazily fetch a missing promisor object (one round trip per object) or prompt for
# credentials mid-review: a partial clone's missing blobs are fetched in batches (`_fetch_missing`).
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
        self._promisor: str | bool | None = False  # False: not asked yet; None: not a partial clone
        self._paths: dict[str, str] = {}  # blob -> a path naming it, from the trees listed: for messages
        # Partial clone: tree id -> the blobs it names that the clone lacks (git's own reads die on
        # one with lazy fetching off), found once per tree and emptied as they are fetched.
        self._lacking: dict[str, set[str]] = {}
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
                name = path.decode("utf-8", errors="surrogateescape")
                entries[name] = Entry(blob, mode)
                self._paths.setdefault(blob, name)
            self._lacking_in([tree_id])  # a partial clone learns which of them it must fetch
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
        base, head = self.resolve(base), self.resolve(head)
        return self._diff(["diff", "--no-color", "--no-ext-diff", "-M", "--full-index", base, head], base, head)

    def diff_trees(self, base: str, head: str) -> str:
        """`diff` between two tree-ishes given as object ids (commits or trees), not resolved as commits."""
        arguments = ["diff", "--no-color", "--no-ext-diff", "-M", "--full-index", "--src-prefix=a/", "--dst-prefix=b/"]
        return self._diff([*arguments, base, head, "--"], base, head)

    def _diff(self, arguments: list[str], base: str, head: str) -> str:
        """Run a diff of two tree-ishes, after fetching (partial clone) the blobs it compares; a blob
        still missing is named by its path (MissingObjects), not left to fail as git's error."""
        needed = self._changed_blobs(base, head)
        trees = [self._tree_id(base), self._tree_id(head)]
        self._ensure_present(needed, trees)
        result = self._run(arguments, check=False)
        if result.returncode != 0:
            missing = [blob for blob in needed if blob in self._lacking_in(trees, always=True)]
            if missing:
                raise MissingObjects(self._missing_message(missing, needed))
            raise GitError(f"git diff failed: {result.stderr.decode().strip()}")
        return result.stdout.decode("utf-8", errors="replace")

    def _changed_blobs(self, base: str, head: str) -> dict[str, str]:
        """blob -> path of both sides of every changed file (no renames asked: no blob read)."""
        listing = self._run(["diff", "--raw", "-z", "--no-renames", "--no-abbrev", base, head, "--"]).stdout
        fields = listing.split(b"\0")
        blobs: dict[str, str] = {}
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, old, new, _status = meta[1:].decode().split(" ")
            name = path.decode("utf-8", errors="surrogateescape")
            for mode, blob in ((old_mode, old), (new_mode, new)):
                if mode != "160000" and blob.strip("0"):
                    blobs[blob] = name
        return blobs

    # -- objects a partial clone lacks -------------------------------------------------------
    def promisor_remote(self) -> str | None:
        """The remote a partial clone fetches missing objects from; None in a complete repository."""
        if self._promisor is False:
            # git records it as remote.<name>.promisor (older clones: extensions.partialClone = <name>)
            listed = self._run(["config", "--get-regexp", r"^remote\..*\.promisor$"], check=False).stdout.decode()
            remotes = [
                key[len("remote.") : -len(".promisor")]
                for key, _, value in (line.partition(" ") for line in listed.splitlines())
                if value.strip() == "true"
            ]
            legacy = self._run(["config", "--get", "extensions.partialClone"], check=False).stdout.decode().strip()
            self._promisor = (remotes[0] if remotes else legacy) or None
        return self._promisor if isinstance(self._promisor, str) else None

    def _tree_id(self, treeish: str) -> str:
        return self._run(["rev-parse", "--verify", "--end-of-options", f"{treeish}^{{tree}}"]).stdout.decode().strip()

    def _lacking_in(self, trees: Iterable[str], *, always: bool = False) -> set[str]:
        """The blobs these trees name that the object database lacks (found without fetching); only
        in a partial clone unless `always` (a diff that failed wants to know which file it was)."""
        if self.promisor_remote() is None and not always:
            return set()
        lacking: set[str] = set()
        for tree in trees:
            if tree not in self._lacking:
                listing = self._run(["rev-list", "--objects", "--missing=print", tree]).stdout.decode()
                self._lacking[tree] = {line[1:].split()[0] for line in listing.splitlines() if line.startswith("?")}
            lacking |= self._lacking[tree]
        return lacking

    def _ensure_present(self, blobs: Mapping[str, str], trees: Iterable[str]) -> None:
        """In a partial clone, fetch the blobs of `blobs` (blob -> path) it lacks, in one batch."""
        if self.promisor_remote() is None:
            return
        missing = sorted(set(blobs) & self._lacking_in(trees))
        if missing:
            self._fetch_missing(missing, blobs)

    def _fetch_missing(self, missing: list[str], paths: Mapping[str, str]) -> None:
        """One `git fetch` of these objects from the promisor remote, as git's own lazy fetch asks
        for them, but all at once; MissingObjects naming the files when it fails."""
        remote = self.promisor_remote()
        result = self._run(
            [
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                str(remote),
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
            ],
            check=False,
            input="".join(b + "\n" for b in missing).encode(),
        )
        if result.returncode == 0:
            for lacking in self._lacking.values():
                lacking.difference_update(missing)
            return
        if missing:
            why = result.stderr.decode(errors="replace").strip().splitlines()
            raise MissingObjects(self._missing_message(missing, paths, why[-1] if why else ""))

    def _missing_message(self, missing: list[str], paths: Mapping[str, str], fetch_error: str = "") -> str:
        named = [paths.get(blob) or self._paths.get(blob) or f"blob {blob}" for blob in missing]
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        remote = self.promisor_remote()
        if remote is not None:
            return (
                f"{self.path}: this partial clone lacks the contents of {shown}, and fetching them from "
                f"its promisor remote {remote!r} failed{': ' + fetch_error if fetch_error else ''}. "
                f"Make {remote!r} reachable and run again, or fetch them first "
                f"(`git -C {self.path} fetch {remote}`), or review a clone made without --filter"
            )
        return (
            f"{self.path}: the repository lacks the contents of {shown} (a damaged or incomplete clone). "
            f"`git -C {self.path} fsck` lists what is missing; fetch it again from a complete copy "
            "(`git fetch`), or review a complete clone"
        )

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
        """Read many blobs through one `cat-file --batch`; missing ones map to None. In a partial
        clone the missing ones are fetched first, in one batch (MissingObjects if that fails)."""
        wanted = list(dict.fromkeys(blobs))
        if self.promisor_remote() is not None:
            lacking = set().union(*self._lacking.values()) if self._lacking else set()
            missing = [blob for blob in wanted if blob in lacking]
            if missing:
                self._fetch_missing(missing, {})
        return self._read_present(wanted)

    def _read_present(self, blobs: Iterable[str]) -> dict[str, bytes | None]:
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
                    if not header:  # git stopped (a promisor object it may not fetch): the rest are unread
                        out.update((b, None) for b in wanted if b not in out)
                        self._batch = None
                        return out
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
