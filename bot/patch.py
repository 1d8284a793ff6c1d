"""Apply a unified diff to a base tree in memory: the diff plus its base revision define the head.

Nothing touches a work tree, so this works in bare repositories and mirrors. A hunk whose
context and removed lines are not in the base file (at its stated line, or shifted as a whole,
as `git apply` allows) makes the patch not apply; so does adding a file that exists, deleting
or changing one that does not, and any binary change (its contents are not in the diff).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from bot.diff import ChangeSet, FileChange, check_headers, check_path, parse_diff
from bot.errors import MalformedDiff, PrCheckError
from bot.tree import Entry, FileTree, blob_id_of


class PatchDoesNotApply(PrCheckError):
    """A diff that parses but does not apply to the base tree (an input error, exit 2)."""


@dataclass(frozen=True, slots=True)
class PatchedHead:
    """The head tree built from base + diff, and the diff's ChangeSet."""

    tree: FileTree
    changes: ChangeSet


_GITLINK = "160000"


def apply_diff(base: FileTree, text: str) -> PatchedHead:
    """The head tree that `text` (a unified diff) makes of `base`, or PatchDoesNotApply."""
    changes = parse_diff(text)
    check_headers(text)
    try:
        patch = PatchSet(text)
    except (UnidiffParseError, ValueError, IndexError) as error:
        raise MalformedDiff(f"malformed diff: {error}") from None
    # The raw entries: `entry()` follows symlinks, and a symlink must stay one in the head.
    entries = dict(base._entries)  # noqa: SLF001 - FileTree has no public raw listing
    written: dict[str, bytes] = {}
    for patched, change in zip(patch, changes.files, strict=True):
        _apply_file(base, entries, written, patched, change)

    def read(blobs):
        wanted = list(blobs)
        found: dict[str, bytes | None] = {blob: written[blob] for blob in wanted if blob in written}
        missing = [blob for blob in wanted if blob not in written]
        if missing:
            found.update(base._read_blobs(missing))  # noqa: SLF001 - the base tree's own reader
        return found

    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    revision = f"{base.revision[:12]}+diff:{digest}"
    return PatchedHead(FileTree(entries, read, revision), changes)


def _apply_file(
    base: FileTree, entries: dict[str, Entry], written: dict[str, bytes], patched, change: FileChange
) -> None:
    source = change.old_path
    target = change.path
    for path in (source, target):
        if path is not None:
            check_path(path)
    if change.binary:
        raise PatchDoesNotApply(
            f"{target}: a binary change cannot be applied from a diff (its contents are not in it); "
            "review the commits instead (--base/--head)"
        )
    if change.status == "added":
        if target in entries:
            raise PatchDoesNotApply(f"{target}: the diff adds it, but it already exists at the base revision")
        old_text = ""
        mode = change.new_mode or "100644"
    else:
        entry = entries.get(source or target)
        if entry is None:
            raise PatchDoesNotApply(
                f"{source or target}: the diff changes it, but it does not exist at the base revision"
            )
        if change.status == "renamed" and target in entries and target != source:
            raise PatchDoesNotApply(f"{target}: the diff renames {source} onto it, but it already exists")
        if entry.is_gitlink:
            _apply_gitlink(entries, patched, change, entry)
            return
        link = base.read_link(source or target) if entry.is_symlink else None
        data = link.encode() if link is not None else base.read(source or target)
        if data is None:
            raise PatchDoesNotApply(
                f"{source or target}: its contents are missing from the repository (shallow clone?)"
            )
        old_text = data.decode("utf-8", "surrogateescape")
        mode = change.new_mode or entry.mode
    new_text = apply_hunks(old_text, patched, target)
    if change.status == "deleted":
        if new_text:
            raise PatchDoesNotApply(f"{source}: the diff deletes it, but removes only part of its contents")
        entries.pop(source or target, None)
        return
    if source and source != target:
        entries.pop(source, None)
    data = new_text.encode("utf-8", "surrogateescape")
    blob = blob_id_of(data)
    written[blob] = data
    entries[target] = Entry(blob, mode)


def _apply_gitlink(entries: dict[str, Entry], patched, change: FileChange, entry: Entry) -> None:
    """A submodule pointer change: `-Subproject commit A` / `+Subproject commit B`."""
    removed = [line.value.split()[-1] for hunk in patched for line in hunk if line.is_removed]
    added = [line.value.split()[-1] for hunk in patched for line in hunk if line.is_added]
    if removed and removed[0] != entry.blob:
        raise PatchDoesNotApply(
            f"{change.path}: the diff moves the submodule from {removed[0][:12]}, but the base pins {entry.blob[:12]}"
        )
    if change.status == "deleted":
        entries.pop(change.path, None)
    elif added:
        entries[change.path] = Entry(added[0], _GITLINK)


def apply_hunks(old_text: str, patched, path: str) -> str:
    """`old_text` with every hunk of one file applied in order; PatchDoesNotApply when one does not fit."""
    lines = old_text.splitlines(keepends=True)
    offset = 0
    floor = 0  # hunks apply in order and never overlap
    for index, hunk in enumerate(patched, start=1):
        old, new = _sides(hunk)
        stated = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        at = _find(lines, old, stated + offset, floor)
        if at is None:
            raise PatchDoesNotApply(
                f"{path}: hunk {index} (@@ -{hunk.source_start},{hunk.source_length} @@) does not apply to the base revision"
            )
        lines[at : at + len(old)] = new
        offset = at - stated + len(new) - len(old)
        floor = at + len(new)
    return "".join(lines)


def _sides(hunk) -> tuple[list[str], list[str]]:
    """The hunk's base lines and head lines, honouring `\\ No newline at end of file`."""
    old: list[str] = []
    new: list[str] = []
    previous = None
    for line in hunk:
        kind = line.line_type
        if kind == "\\":
            if previous in (" ", "-") and old:
                old[-1] = old[-1].rstrip("\r\n")
            if previous in (" ", "+") and new:
                new[-1] = new[-1].rstrip("\r\n")
            continue
        if kind in (" ", "-"):
            old.append(line.value)
        if kind in (" ", "+"):
            new.append(line.value)
        previous = kind
    return old, new


def _find(lines: list[str], wanted: list[str], start: int, floor: int) -> int | None:
    """Where `wanted` sits in `lines`: at `start` or the nearest shifted place at or after `floor`."""
    size = len(wanted)
    last = len(lines) - size
    if last < floor:
        return None
    for distance in range(0, max(last - floor, 0) + abs(start) + 1):
        for at in (start - distance, start + distance) if distance else (start,):
            if floor <= at <= last and lines[at : at + size] == wanted:
                return at
    return None
