"""`.buckconfig`: the sections pr-check needs (cells, repository aliases, build file names)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.buck.cells import BUCK2_DEFAULT_BUILD_FILE_NAMES


@dataclass(frozen=True, slots=True)
class BuckConfig:
    """Parsed `.buckconfig`: cell roots, aliases and build file names."""

    cells: dict[str, str] = field(default_factory=dict)  # cell name -> repo-relative root ("" = root)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> cell name
    build_file_names: tuple[str, ...] = BUCK2_DEFAULT_BUILD_FILE_NAMES
    values: dict[tuple[str, str], str] = field(default_factory=dict)

    def cell_root(self, name: str) -> str | None:
        """Repo-relative root of a cell or alias; None when neither is declared."""
        name = self.aliases.get(name, name)
        root = self.cells.get(name)
        if root is None:
            return None
        return "" if root in (".", "./") else root.strip("/").removeprefix("./")

    def get(self, section: str, key: str, default: str | None = None) -> str | None:
        return self.values.get((section, key), default)


_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*=\s*(.*)$")


def parse_buckconfig(text: str) -> BuckConfig:
    """Parse the ini-like `.buckconfig` format, with `\\` line continuations."""
    values: dict[tuple[str, str], str] = {}
    section = ""
    pending_key: str | None = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith(";") else ""
        if pending_key is not None:
            continued = line.endswith("\\")
            values[(section, pending_key)] += " " + line.rstrip("\\").strip()
            if not continued:
                pending_key = None
            continue
        if not line.strip():
            continue
        header = _SECTION.match(line)
        if header:
            section = header.group(1).strip()
            continue
        entry = _KEY.match(line)
        if entry:
            key, value = entry.group(1), entry.group(2)
            if value.endswith("\\"):
                pending_key = key
                value = value.rstrip("\\")
            values[(section, key)] = value.strip()
    cells = {k: v for (s, k), v in values.items() if s == "repositories" or s == "cells"}
    aliases = {k: v for (s, k), v in values.items() if s in ("repository_aliases", "cell_aliases")}
    names = (
        values.get(("buildfile", "name_v2"))
        or values.get(("buildfile", "name"))
        or ",".join(BUCK2_DEFAULT_BUILD_FILE_NAMES)
    )
    build_files = tuple(n.strip() for n in names.split(",") if n.strip())
    return BuckConfig(cells=cells, aliases=aliases, build_file_names=build_files, values=values)
