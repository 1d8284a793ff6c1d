"""Unified diff text -> per-file patches, the way GitHub sees a pull request's diff.

Written independently of `bot/diff.py` on purpose: the stand-in plays GitHub, so it must not share
the parser whose mistakes it is meant to catch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DIFF_GIT = re.compile(r"^diff --git a/(.*) b/(.*)$")
_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)")


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a hunk body. `old`/`new` are file line numbers (None where the side lacks it)."""

    kind: str  # " " context, "+" added, "-" removed, "\\" no-newline marker
    old: int | None
    new: int | None
    position: int  # GitHub's legacy `position`: lines below the file's first @@ header
    text: str  # the row as it appears in the patch, marker included


@dataclass(frozen=True, slots=True)
class Hunk:
    header: str
    header_position: int  # 0 for the first hunk; later headers take a position too
    rows: tuple[Row, ...]


@dataclass(frozen=True, slots=True)
class FilePatch:
    """One file of a pull request diff, in the terms the files endpoint and review checks need."""

    path: str
    previous_path: str | None  # set for renames and copies
    status: str  # added | removed | modified | renamed | copied | changed
    binary: bool
    hunks: tuple[Hunk, ...]
    old_blob: str | None
    new_blob: str | None

    @property
    def additions(self) -> int:
        return sum(row.kind == "+" for hunk in self.hunks for row in hunk.rows)

    @property
    def deletions(self) -> int:
        return sum(row.kind == "-" for hunk in self.hunks for row in hunk.rows)

    @property
    def patch(self) -> str | None:
        """The `patch` field of GitHub's DiffEntry: hunks only, no file headers; None for binaries."""
        if self.binary or not self.hunks:
            return None
        lines: list[str] = []
        for hunk in self.hunks:
            lines.append(hunk.header)
            lines.extend(row.text for row in hunk.rows)
        return "\n".join(lines)

    def find_line(self, side: str, line: int) -> tuple[int, Row] | None:
        """(hunk index, row) that a review comment on `side` at file line `line` anchors to, if any."""
        for index, hunk in enumerate(self.hunks):
            for row in hunk.rows:
                if side == "RIGHT" and row.kind in " +" and row.new == line:
                    return index, row
                if side == "LEFT" and row.kind in " -" and row.old == line:
                    return index, row
        return None

    def find_position(self, position: int) -> tuple[int, Row] | None:
        """(hunk index, row) at a legacy `position`; None when it names a header or lies outside."""
        for index, hunk in enumerate(self.hunks):
            for row in hunk.rows:
                if row.position == position and row.kind != "\\":
                    return index, row
        return None

    def hunk_text_through(self, hunk_index: int, row: Row) -> str:
        """The `diff_hunk` of a review comment: its hunk's header down to the commented row."""
        hunk = self.hunks[hunk_index]
        lines = [hunk.header]
        for candidate in hunk.rows:
            lines.append(candidate.text)
            if candidate is row:
                break
        return "\n".join(lines)


def parse_diff(text: str) -> tuple[FilePatch, ...]:
    """Split `git diff` output into FilePatches; text outside `diff --git` sections is ignored."""
    sections: list[list[str]] = []
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    return tuple(_parse_section(section) for section in sections)


def _parse_section(lines: list[str]) -> FilePatch:
    match = _DIFF_GIT.match(lines[0])
    old_path, new_path = (match.group(1), match.group(2)) if match else ("", "")
    status = "modified"
    binary = False
    old_blob = new_blob = None
    body_start = len(lines)
    for index, line in enumerate(lines[1:], start=1):
        if line.startswith("@@"):
            body_start = index
            break
        if line.startswith("new file mode"):
            status = "added"
        elif line.startswith("deleted file mode"):
            status = "removed"
        elif line.startswith("rename from "):
            status, old_path = "renamed", line[len("rename from ") :]
        elif line.startswith("rename to "):
            new_path = line[len("rename to ") :]
        elif line.startswith("copy from "):
            status, old_path = "copied", line[len("copy from ") :]
        elif line.startswith("copy to "):
            new_path = line[len("copy to ") :]
        elif line.startswith("--- a/"):
            old_path = line[len("--- a/") :].rstrip("\t")  # git appends a tab to names with spaces
        elif line.startswith("+++ b/"):
            new_path = line[len("+++ b/") :].rstrip("\t")
        elif line.startswith("Binary files ") or line == "GIT binary patch":
            binary = True
        elif index_match := _INDEX.match(line):
            old_blob, new_blob = index_match.group(1), index_match.group(2)
    hunks = () if binary else _parse_hunks(lines[body_start:])
    if status == "modified" and not hunks and not binary:
        status = "changed"  # mode-only change
    path = old_path if status == "removed" else new_path
    previous = old_path if status in ("renamed", "copied") else None
    return FilePatch(path, previous, status, binary, hunks, old_blob, new_blob)


def _parse_hunks(lines: list[str]) -> tuple[Hunk, ...]:
    hunks: list[Hunk] = []
    header: str | None = None
    header_position = 0
    rows: list[Row] = []
    position = 0
    old = new = 0
    for line in lines:
        match = _HUNK_HEADER.match(line)
        if match:
            if header is not None:
                hunks.append(Hunk(header, header_position, tuple(rows)))
                position += 1  # a later hunk header takes a position of its own
            header, header_position, rows = line, position, []
            old, new = int(match.group(1)), int(match.group(3))
            continue
        if header is None or line == "":
            continue  # a trailing empty string after the final newline
        kind = line[0]
        position += 1
        if kind == " ":
            rows.append(Row(" ", old, new, position, line))
            old, new = old + 1, new + 1
        elif kind == "-":
            rows.append(Row("-", old, None, position, line))
            old += 1
        elif kind == "+":
            rows.append(Row("+", None, new, position, line))
            new += 1
        elif kind == "\\":
            rows.append(Row("\\", None, None, position, line))
        else:
            position -= 1  # not part of a hunk body
    if header is not None:
        hunks.append(Hunk(header, header_position, tuple(rows)))
    return tuple(hunks)
