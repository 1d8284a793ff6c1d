"""FileTree: the read-only view of one revision that every model is built from.

A tree is a mapping of repository paths to blob ids plus a way to read a blob. The git-backed
tree lives in `bot/repo.py`; `MemoryTree` serves check examples and tests. Symlinks inside the
tree are resolved (ExecuTorch's `shim_et/tools` is one), and gitlinks (submodules) are kept as
facts: their contents are not in the tree.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import posixpath
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

_MISSING = threading.local()


# A path is text, but git names files with bytes: a name that is not UTF-8 is kept as Python keeps
# such file names (os.fsdecode), each undecodable byte as a lone surrogate, so the str is the
# bytes without loss. These two functions are the only ways out: to bytes (hashing, git), and
# to text anyone can print (outputs), with each such byte written `\xff`.
def path_bytes(path: str) -> bytes:
    """The bytes git names `path` with."""
    return path.encode("utf-8", "surrogateescape")


def shown_path(path: str) -> str:
    r"""`path` as printable text: valid UTF-8 as it is, each undecodable byte as `\xNN`."""
    if path.isascii():
        return path
    return path_bytes(path).decode("utf-8", "backslashreplace")


def missing_reads() -> int:
    """How many reads of this thread found a blob missing from the object store (a partial
    clone): a fact derived meanwhile describes the gap, not the content, and is not kept."""
    return getattr(_MISSING, "count", 0)


@contextlib.contextmanager
def noting_missing() -> Iterator[set[str]]:
    """The ids of the blobs this thread's reads found missing while inside: a stored whole-review
    result names them, and is served again only while they are still missing
    (bot/store/reviews.py)."""
    outer = getattr(_MISSING, "blobs", None)
    found: set[str] = set()
    _MISSING.blobs = found
    try:
        yield found
    finally:
        _MISSING.blobs = outer
        if outer is not None:
            outer |= found


def note_missing(blobs: Iterable[str]) -> None:
    """Blobs another process of this review found missing (bot/parallel/check_split.py), for this thread's
    `noting_missing`; facts this process derived are not affected, so its count stays."""
    noted = getattr(_MISSING, "blobs", None)
    if noted is not None:
        noted.update(blobs)


def _note_missing(blob: str) -> None:
    _MISSING.count = missing_reads() + 1
    blobs = getattr(_MISSING, "blobs", None)
    if blobs is not None:
        blobs.add(blob)


@dataclass(frozen=True, slots=True)
class Entry:
    """One path of a tree: its blob id and git mode."""

    blob: str
    mode: str = "100644"

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"

    @property
    def is_gitlink(self) -> bool:
        return self.mode == "160000"


class FileTree:
    """Paths and contents of one revision; reading is delegated to `read_blob`."""

    def __init__(
        self,
        entries: Mapping[str, Entry] | Callable[[], Mapping[str, Entry]],
        read_blobs: Callable[[Iterable[str]], Mapping[str, bytes | None]],
        revision: str = "",
        mounts: Mapping[str, str] | None = None,
        identity: str | None = None,
    ) -> None:
        """`entries` may be a function listing them, called the first time a path is asked for;
        `identity` then names the content without listing it (a git tree id, which is a content
        hash of every path, mode and blob), so a review whose whole result is stored can be keyed
        and served without listing either tree (issue 21: warm time flat in tree size)."""
        self.revision = revision
        # Submodule path -> the commit whose files are mounted there (see `mount`).
        self.mounts: dict[str, str] = dict(mounts or {})
        self._listed: dict[str, Entry] | None = None if callable(entries) else dict(entries)
        self._list = entries if callable(entries) else None
        self._identity = identity
        self._read_blobs = read_blobs
        self._cache: dict[str, bytes | None] = {}
        self._by_blob: dict[str, bytes | None] = {}
        self._dirs: frozenset[str] | None = None
        self._digest: str | None = None
        self._paths: tuple[str, ...] | None = None
        self._symlinks: dict[str, Entry] | None = None
        self._absent: set[str] = set()  # paths `resolve` found under no symlink and absent

    @property
    def listed(self) -> bool:
        """Whether the paths have been listed (a tree with an identity is listed only on demand)."""
        return self._listed is not None

    @property
    def _entries(self) -> dict[str, Entry]:
        if self._listed is None:
            assert self._list is not None
            self._listed = dict(self._list())
        return self._listed

    @property
    def _symlink_dirs(self) -> dict[str, Entry]:
        if self._symlinks is None:
            self._symlinks = {p: e for p, e in self._entries.items() if e.is_symlink}
        return self._symlinks

    # -- paths ---------------------------------------------------------------------------
    def digest(self) -> str:
        """A digest of every (path, mode, blob): equal trees have equal digests (computed once).
        A tree with an identity (a git tree id, mounts included) is digested from it unlisted."""
        if self._digest is None:
            hasher = hashlib.sha256()
            if self._identity is not None:
                hasher.update(f"identity\0{self._identity}".encode())
            else:
                for path in sorted(self._entries):
                    entry = self._entries[path]
                    hasher.update(path_bytes(path) + f"\0{entry.mode}\0{entry.blob}\n".encode())
            self._digest = hasher.hexdigest()
        return self._digest

    def paths(self) -> tuple[str, ...]:
        """Every file path (symlinks and gitlinks included), sorted (once: globs ask for it often)."""
        if self._paths is None:
            self._paths = tuple(sorted(self._entries))
        return self._paths

    def paths_under(self, prefix: str) -> tuple[str, ...]:
        """The sorted paths that start with `prefix` (a directory with its `/`, or "" for all)."""
        paths = self.paths()
        if not prefix:
            return paths
        start = bisect.bisect_left(paths, prefix)
        end = bisect.bisect_left(paths, prefix[:-1] + chr(ord(prefix[-1]) + 1), start)
        return paths[start:end]

    def entry(self, path: str) -> Entry | None:
        """The entry at `path`, following symlinks inside the tree."""
        resolved = self.resolve(path)
        return None if resolved is None else self._entries.get(resolved)

    def exists(self, path: str) -> bool:
        return self.entry(path) is not None

    def is_dir(self, path: str) -> bool:
        if self._dirs is None:
            dirs = set()
            for p in self._entries:
                parent = posixpath.dirname(p)
                while parent and parent not in dirs:
                    dirs.add(parent)
                    parent = posixpath.dirname(parent)
            self._dirs = frozenset(dirs)
        return path.strip("/") in self._dirs or path.strip("/") == ""

    def read_link(self, path: str) -> str | None:
        """The target text of a symlink entry itself (not followed)."""
        entry = self._entries.get(path)
        if entry is None or not entry.is_symlink:
            return None
        data = self._read_one(path)
        return None if data is None else data.decode("utf-8", "surrogateescape").strip()  # a name: its bytes

    def symlinks(self) -> tuple[str, ...]:
        return tuple(sorted(self._symlink_dirs))

    def gitlinks(self) -> dict[str, str]:
        """Submodule path -> pinned commit."""
        return {p: e.blob for p, e in self._entries.items() if e.is_gitlink}

    def blob_id(self, path: str) -> str | None:
        entry = self.entry(path)
        return None if entry is None or entry.is_gitlink else entry.blob

    def resolve(self, path: str, _depth: int = 0) -> str | None:
        """Follow symlinked files and directories; None when the path is not in the tree."""
        entry = self._entries.get(path)
        if entry is not None and not entry.is_symlink:
            return path  # a path of the tree as git names it is already normal
        if path in self._absent:
            return None
        asked = path
        path = posixpath.normpath(path).lstrip("/")
        if path in self._entries and not self._entries[path].is_symlink:
            return path
        if _depth > 8:
            return None
        parts = path.split("/")
        for i in range(len(parts), 0, -1):
            prefix = "/".join(parts[:i])
            entry = self._entries.get(prefix)
            if entry is not None and entry.is_symlink:
                target = self._read_one(prefix)
                if target is None:
                    return None
                joined = posixpath.normpath(
                    posixpath.join(
                        posixpath.dirname(prefix), target.decode("utf-8", "surrogateescape").strip(), *parts[i:]
                    )
                )
                if joined.startswith(".."):
                    return None
                return self.resolve(joined, _depth + 1)
        # Under no symlink and not in the tree: known without reading anything, so remembered
        # (checks ask whether thousands of candidate paths exist, most of them more than once).
        self._absent.update((asked, path))
        return None

    # -- contents ------------------------------------------------------------------------
    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None if absent or its blob is missing from the object store."""
        resolved = self.resolve(path)
        if resolved is None or self._entries[resolved].is_gitlink:
            return None
        return self._read_one(resolved)

    def read_text(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_text_by_blob(self, blob: str) -> str | None:
        """Contents of a blob, from what this tree already read when possible."""
        if blob not in self._by_blob:
            self._by_blob[blob] = self._read_blobs([blob]).get(blob)
        data = self._by_blob[blob]
        if data is None:
            _note_missing(blob)
        return None if data is None else data.decode("utf-8", errors="replace")

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read many files in one batch (one round trip to git)."""
        wanted = {}
        for p in paths:
            resolved = self.resolve(p)
            if resolved is not None and resolved not in self._cache:
                entry = self._entries[resolved]
                if not entry.is_gitlink:
                    wanted[resolved] = entry.blob
        if wanted:
            blobs = self._read_blobs(set(wanted.values()))
            blobs = {b: d for b, d in blobs.items() if d is not None}  # a missing blob is asked again
            self._by_blob.update(blobs)
            for p, blob in wanted.items():
                self._cache[p] = blobs.get(blob)

    def _read_one(self, path: str) -> bytes | None:
        if path not in self._cache:
            self.prefetch_raw(path)
        data = self._cache.get(path)
        if data is None:
            _note_missing(self._entries[path].blob)  # every read of it counts: a fact derived now must not be kept
        return data

    def prefetch_raw(self, path: str) -> None:
        blob = self._entries[path].blob
        self._cache[path] = self._read_blobs([blob]).get(blob)


def mount(tree: FileTree, at: str, subtree: FileTree) -> FileTree:
    """`tree` with `subtree`'s files under `at`, in place of the submodule (gitlink) there.

    A review reads a revision from git's object database, where a submodule is only its
    pinned commit; mounting that commit's files lets loaders see them as a checkout would.
    Blobs are read from whichever tree holds them.
    """
    entry = tree._entries.get(at)
    commit = entry.blob if entry is not None and entry.is_gitlink else subtree.revision
    entries = {p: e for p, e in tree._entries.items() if p != at}
    own_blobs = {e.blob for p, e in subtree._entries.items() if not e.is_gitlink}
    for path, sub_entry in subtree._entries.items():
        entries[f"{at}/{path}"] = sub_entry

    def read(blobs: Iterable[str]) -> Mapping[str, bytes | None]:
        wanted = list(blobs)
        found = dict(subtree._read_blobs([b for b in wanted if b in own_blobs]))
        found.update(tree._read_blobs([b for b in wanted if b not in own_blobs]))
        return found

    # Both identities name their contents, and `at` where the second sits: so does the pair.
    identity = (
        f"{tree._identity}\0mount\0{at}\0{subtree._identity}"
        if tree._identity is not None and subtree._identity is not None
        else None
    )
    return FileTree(entries, read, tree.revision, {**tree.mounts, at: commit}, identity)


def with_files(tree: FileTree, files: Mapping[str, bytes | str], revision: str | None = None) -> FileTree:
    """`tree` with these files' contents replaced or added (modes kept; new files 100644).

    How a fix or an in-memory edit becomes a tree to review again, without a work tree.
    """
    written = {path: data.encode("utf-8") if isinstance(data, str) else data for path, data in files.items()}
    by_blob = {blob_id_of(data): data for data in written.values()}
    entries = dict(tree._entries)
    for path, data in written.items():
        old = entries.get(path)
        entries[path] = Entry(blob_id_of(data), old.mode if old is not None and not old.is_gitlink else "100644")

    def read(blobs: Iterable[str]) -> Mapping[str, bytes | None]:
        wanted = list(blobs)
        found = dict(tree._read_blobs([b for b in wanted if b not in by_blob]))
        found.update({b: by_blob[b] for b in wanted if b in by_blob})
        return found

    name = revision or f"{tree.revision}+{hashlib.sha256(repr(sorted(by_blob)).encode()).hexdigest()[:12]}"
    return FileTree(entries, read, name, tree.mounts)


def blob_id_of(data: bytes) -> str:
    """git's blob id of `data`, so memory trees share cache keys with git trees."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True, slots=True)
class Gitlink:
    """A submodule entry for `memory_tree`: its contents are not in the tree."""

    commit: str


@dataclass(frozen=True, slots=True)
class Symlink:
    """A symlink entry for `memory_tree`."""

    target: str


def memory_tree(files: Mapping[str, str | bytes | Gitlink | Symlink], revision: str = "memory") -> FileTree:
    """A tree from a {path: text} map (check examples, tests)."""
    contents: dict[str, bytes] = {}
    entries: dict[str, Entry] = {}
    for path, value in files.items():
        if isinstance(value, Gitlink):
            entries[path] = Entry(value.commit, "160000")
            continue
        data = (
            value.target.encode() if isinstance(value, Symlink) else value.encode() if isinstance(value, str) else value
        )
        contents[path] = data
        entries[path] = Entry(blob_id_of(data), "120000" if isinstance(value, Symlink) else "100644")
    by_blob = {blob_id_of(data): data for data in contents.values()}
    return FileTree(entries, lambda blobs: {b: by_blob.get(b) for b in blobs}, revision)
