"""Reading an ELF file's symbol tables: what a library needs from its host and what a host exports.

pyelftools when installed; otherwise `nm` and `readelf`, so the runner works on a bare GPU machine.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from smoke.commands import run_command

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

HAS_PYELFTOOLS = importlib.util.find_spec("elftools") is not None
TOOL_TIMEOUT_S = 60


class SymbolReadError(Exception):
    """The file is not a readable ELF file, or no reader is available."""


@dataclass(frozen=True, slots=True)
class DynamicSymbols:
    """The dynamic symbol table (.dynsym) of one ELF file: what the dynamic loader sees."""

    defined: frozenset[str]
    undefined: frozenset[str]
    needed_libraries: tuple[str, ...]
    reader: str


def read_dynamic_symbols(path: Path) -> DynamicSymbols:
    """The defined (exported) and undefined dynamic symbols of path, and its DT_NEEDED libraries."""
    if not HAS_PYELFTOOLS:
        return read_dynamic_symbols_with_binutils(path)
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.sections import SymbolTableSection

    with _opened_elf(path) as elf:
        table = elf.get_section_by_name(".dynsym")
        table = table if isinstance(table, SymbolTableSection) else None
        dynamic = elf.get_section_by_name(".dynamic")
        dynamic = dynamic if isinstance(dynamic, DynamicSection) else None
        undefined = [s.name for s in table.iter_symbols() if s.name and s["st_shndx"] == "SHN_UNDEF"] if table else []
        return DynamicSymbols(
            defined=frozenset(_defined_names(table)) if table else frozenset(),
            undefined=frozenset(undefined),
            # pyelftools sets `needed` on DT_NEEDED tags when it reads them; its annotations cannot say so
            needed_libraries=tuple(tag.needed for tag in dynamic.iter_tags("DT_NEEDED")) if dynamic else (),  # pyright: ignore[reportAttributeAccessIssue]
            reader="pyelftools",
        )


def read_static_symbols(path: Path) -> frozenset[str]:
    """Names defined in the full symbol table (.symtab): in the binary, whether exported or not."""
    if not HAS_PYELFTOOLS:
        return frozenset(_nm_names(["nm", "--defined-only", str(path)]))
    from elftools.elf.sections import SymbolTableSection

    with _opened_elf(path) as elf:
        table = elf.get_section_by_name(".symtab")
        return frozenset(_defined_names(table)) if isinstance(table, SymbolTableSection) else frozenset()


@contextmanager
def _opened_elf(path: Path) -> Iterator[ELFFile]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as stream:
            yield ELFFile(stream)
    except (OSError, ELFError) as error:
        raise SymbolReadError(f"{path}: cannot read as ELF ({error})") from None


def _defined_names(table: SymbolTableSection) -> list[str]:
    # Local symbols never resolve another object's references, so only global and weak ones count.
    return [
        symbol.name
        for symbol in table.iter_symbols()
        if symbol.name
        and symbol["st_shndx"] != "SHN_UNDEF"
        and symbol["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK", "STB_GNU_UNIQUE")
    ]


def read_dynamic_symbols_with_binutils(path: Path) -> DynamicSymbols:
    """The same as read_dynamic_symbols, read with `nm -D` and `readelf -d`."""
    return DynamicSymbols(
        defined=frozenset(_nm_names(["nm", "-D", "--defined-only", str(path)])),
        undefined=frozenset(_nm_names(["nm", "-D", "--undefined-only", str(path)])),
        needed_libraries=_readelf_needed(path),
        reader="nm",
    )


def _nm_names(argv: list[str]) -> list[str]:
    result = run_command(argv, timeout=TOOL_TIMEOUT_S)
    if not result.ok:
        raise SymbolReadError(f"{result.command} failed: {result.stderr.strip() or result.returncode}")
    names = []
    for line in result.stdout.splitlines():
        fields = line.split()
        # "<value> <type> <name>" or, for undefined symbols, "<type> <name>"; lowercase types are local.
        if len(fields) >= 2 and (fields[-2].isupper() or fields[-2] in ("u", "v", "w")):
            names.append(fields[-1].split("@")[0])
    return names


def _readelf_needed(path: Path) -> tuple[str, ...]:
    result = run_command(["readelf", "-d", str(path)], timeout=TOOL_TIMEOUT_S)
    if not result.ok:
        raise SymbolReadError(f"{result.command} failed: {result.stderr.strip() or result.returncode}")
    return tuple(
        line.split("[", 1)[1].rstrip("]") for line in result.stdout.splitlines() if "(NEEDED)" in line and "[" in line
    )
