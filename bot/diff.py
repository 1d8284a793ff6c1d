"""Unified diff text -> ChangeSet: which files changed and which lines, on each side."""

from __future__ import annotations

import re
from dataclasses import dataclass

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from bot.errors import MalformedDiff


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file of a diff. Line numbers are 1-based in the new (head) or old (base) file."""

    path: str  # the head path ("" never: for a deletion it is the old path)
    old_path: str | None  # None for an added file
    status: str  # added | deleted | modified | renamed
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    added: frozenset[int] = frozenset()  # head lines added
    removed: frozenset[int] = frozenset()  # base lines removed
    commentable: frozenset[int] = frozenset()  # head lines inside hunks: where GitHub takes comments
    hunks: tuple[tuple[int, int], ...] = ()  # (first, last) head lines of each hunk
    no_newline_at_end: bool = False

    @property
    def mode_changed(self) -> bool:
        return self.old_mode is not None and self.new_mode is not None and self.old_mode != self.new_mode

    def hunk_of(self, line: int) -> int | None:
        """Index of the hunk containing head line `line`."""
        for index, (first, last) in enumerate(self.hunks):
            if first <= line <= last:
                return index
        return None


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """All file changes between two revisions."""

    files: tuple[FileChange, ...]

    def by_path(self) -> dict[str, FileChange]:
        return {f.path: f for f in self.files}

    def get(self, path: str) -> FileChange | None:
        for change in self.files:
            if change.path == path:
                return change
        return None

    @property
    def paths(self) -> frozenset[str]:
        """Every path touched, old and new names of renames included."""
        touched = set()
        for change in self.files:
            touched.add(change.path)
            if change.old_path:
                touched.add(change.old_path)
        return frozenset(touched)


_MODE = re.compile(r"^(old|new|new file|deleted file) mode (\d+)$", re.M)
# A line starting with "@@" is always a hunk header (hunk bodies start with ' ', '+', '-' or '\\');
# one that does not match this is malformed, not something to skip.
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?$")
_PATH_LINE = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.*)$")
_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)$")


def parse_diff(text: str) -> ChangeSet:
    """Parse `git diff` output. Raises MalformedDiff with the reason on text that is not a diff."""
    if text.strip() and not re.search(r"^(diff --git |--- |\+\+\+ )", text, re.M):
        raise MalformedDiff("input is not a unified diff (no 'diff --git' or '---/+++' headers)")
    check_headers(text)
    try:
        patch = PatchSet(text)
    except UnidiffParseError as error:
        raise MalformedDiff(f"malformed diff: {error}") from None
    except (ValueError, IndexError) as error:
        raise MalformedDiff(f"malformed diff: {error}") from None
    changes = ChangeSet(tuple(_file_change(patched) for patched in patch))
    for change in changes.files:
        for path in (change.path, change.old_path):
            if path is not None:
                check_path(path)
    return changes


def check_headers(text: str) -> None:
    """Reject hunk headers that are not `@@ -N[,N] +N[,N] @@` and paths that leave the repository.

    Hunk bodies are skipped by their declared lengths: a removed line `-- x` reads `--- x`.
    """
    old_left = new_left = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if old_left > 0 or new_left > 0:
            kind = line[:1]
            if kind in (" ", ""):
                old_left, new_left = old_left - 1, new_left - 1
            elif kind == "-":
                old_left -= 1
            elif kind == "+":
                new_left -= 1
            elif kind != "\\":
                raise MalformedDiff(f"hunk ends early on line {number}: {line[:80]!r}")
            continue
        if line.startswith("@@"):
            header = HUNK_HEADER.match(line)
            if not header:
                raise MalformedDiff(f"malformed hunk header on line {number}: {line[:80]!r}")
            old_left = 1 if header.group(2) is None else int(header.group(2))
            new_left = 1 if header.group(4) is None else int(header.group(4))
            continue
        git_header = _GIT_HEADER.match(line)
        names = git_header.groups() if git_header else ()
        path_line = _PATH_LINE.match(line)
        if path_line:
            names = (path_line.group(1).split("\t")[0],)
        for name in names:
            if name != "/dev/null":
                check_path(_strip(name) or "", line_number=number)


def check_path(path: str, line_number: int | None = None) -> None:
    """A diff path must name a file inside the repository: relative, no `..`, no NUL."""
    where = f" on line {line_number}" if line_number else ""
    parts = path.split("/")
    if not path or path.startswith("/") or "\0" in path or ".." in parts or ".git" in parts:
        raise MalformedDiff(f"diff path {path!r}{where} is not a path inside the repository")


def _strip(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
    path = _unquoted(path)
    return path[2:] if path[:2] in ("a/", "b/") else path


_OCTAL = re.compile(r"[0-7]{1,3}")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquoted(name: str) -> str:
    r"""A name as git writes it in a diff, C-quoted when it holds bytes outside printable ASCII
    (`"b/notes-\377.h"`), as the path it names: its bytes, decoded as bot/tree.py keeps paths."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    data = bytearray()
    index, end = 1, len(name) - 1
    while index < end:
        char = name[index]
        if char != "\\" or index + 1 >= end:
            data += char.encode("utf-8", "surrogateescape")
            index += 1
        elif name[index + 1] in "01234567":
            octal = _OCTAL.match(name, index + 1, index + 4)  # matches: name[index + 1] is an octal digit
            digits = octal.group(0) if octal else name[index + 1]
            data.append(int(digits, 8) & 0xFF)
            index += 1 + len(digits)
        else:
            data.append(_C_ESCAPES.get(name[index + 1], ord(name[index + 1]) & 0xFF))
            index += 2
    return data.decode("utf-8", "surrogateescape")


def _file_change(patched) -> FileChange:
    source = _strip(patched.source_file)
    target = _strip(patched.target_file)
    if patched.is_added_file:
        status = "added"
    elif patched.is_removed_file:
        status = "deleted"
    elif patched.is_rename:
        status = "renamed"
    else:
        status = "modified"
    path = target or source or ""
    added, removed, commentable, hunks = set(), set(), set(), []
    no_newline = False
    for hunk in patched:
        first = hunk.target_start
        last = hunk.target_start + max(hunk.target_length, 1) - 1
        hunks.append((first, last))
        for line in hunk:
            if line.is_added:
                added.add(line.target_line_no)
                commentable.add(line.target_line_no)
            elif line.is_removed:
                removed.add(line.source_line_no)
            elif line.is_context:
                commentable.add(line.target_line_no)
            if line.line_type == "\\":
                no_newline = True
    header = str(patched.patch_info or "")
    modes = dict(_MODE.findall(header))
    return FileChange(
        path=path,
        old_path=None if status == "added" else source,
        status=status,
        binary=bool(patched.is_binary_file),
        old_mode=modes.get("old") or modes.get("deleted file"),
        new_mode=modes.get("new") or modes.get("new file"),
        added=frozenset(added),
        removed=frozenset(removed),
        commentable=frozenset(commentable),
        hunks=tuple(hunks),
        no_newline_at_end=no_newline,
    )
