"""The three Buck builds of one repository, as data (design 3.1).

The same BUCK file is evaluated by Meta's internal `fbcode` and `xplat` cells and by open-source
buck2 through `shim_et/`. Everything that differs between them is a field of `Cell`; the
Starlark host and the checks read these fields instead of comparing cell names, so a new cell
is one more row of `CELL_TABLE`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.buck.targets import Platform

# The constraint values the default platforms are made of (ExecuTorch's `ovr_config` names).
HAS_CUDA = "ovr_config//cuda:has_cuda"
_LINUX_X86_64 = ("ovr_config//os:linux", "ovr_config//cpu:x86_64")

ANDROID_ARM64 = Platform("android-arm64", ("ovr_config//cpu:arm64", "ovr_config//os:android"))
IPHONEOS_ARM64 = Platform("iphoneos-arm64", ("ovr_config//cpu:arm64", "ovr_config//os:iphoneos"))
LINUX_X86_64 = Platform("linux-x86_64", tuple(sorted(_LINUX_X86_64)))
LINUX_X86_64_CUDA = Platform("linux-x86_64-cuda", tuple(sorted((*_LINUX_X86_64, HAS_CUDA))))
FBCODE_LINUX_CUDA = Platform(
    "fbcode-linux-x86_64-cuda", tuple(sorted((*_LINUX_X86_64, HAS_CUDA, "ovr_config//runtime:fbcode")))
)


class StaticLinking(enum.Enum):
    """How a cell's builds link libraries statically; the value is the prose a message says of it."""

    BINARIES_ONLY = ""  # libraries link as shared objects; binaries and tests may link statically
    LIBRARIES = "links libraries statically"
    FORCE_STATIC = "sets `force_static = True`"  # a library links statically where it sets the flag

    @property
    def prose(self) -> str:
        """What a message says of a cell that links this way ("`xplat`, which links ...")."""
        return self.value


@dataclass(frozen=True, slots=True)
class Cell:
    """How one build evaluates the repository's Buck files."""

    name: str
    # Build file names read in a directory, first present wins; None: `.buckconfig` decides.
    build_file_names: tuple[str, ...] | None
    # What `is_fbcode()` returns, and which of `fbcode_target` / `non_fbcode_target` define.
    is_fbcode: bool
    defines_fbcode_target: bool
    defines_non_fbcode_target: bool
    # `runtime.is_oss` of ExecuTorch's wrapper.
    is_oss: bool
    # Plain `headers` of a `cxx_library` are seen by dependents (fbcode in practice) or private.
    headers_visible_to_dependents: bool
    # `cpp_library` (fbcode_macros / buck2-shims-meta) makes `headers` visible to dependents.
    cpp_library_headers_visible: bool
    # Meta-internal macros are not in the repository: recorded as given (True), or a `load()`
    # the repository cannot satisfy fails the package as real buck2 would (False).
    records_internal_macros: bool
    # `read_config()` answers from `.buckconfig` (open source) or with its default (internal).
    reads_buckconfig: bool
    # Labels written `//executorch/...` name the repository root (internal cells mount it there).
    repository_under_executorch: bool
    # ATen modes the wrapper's `get_aten_mode_options()` yields.
    aten_modes: tuple[bool, ...]
    # The cell's static builds link libraries statically (xplat) or set force_static (oss).
    static_linking: StaticLinking
    # The target platforms the cell builds for: select() and compatibility are resolved per platform.
    platforms: tuple[Platform, ...] = ()
    # The cell builds for platforms without CUDA (mobile, embedded): a CUDA target must be guarded.
    cpu_only: bool = False


CELL_TABLE: tuple[Cell, ...] = (
    Cell(
        name="fbcode",
        build_file_names=("TARGETS", "BUCK"),
        is_fbcode=True,
        defines_fbcode_target=True,
        defines_non_fbcode_target=False,
        is_oss=False,
        headers_visible_to_dependents=True,
        cpp_library_headers_visible=True,
        records_internal_macros=True,
        reads_buckconfig=False,
        repository_under_executorch=True,
        aten_modes=(True, False),
        static_linking=StaticLinking.BINARIES_ONLY,
        platforms=(FBCODE_LINUX_CUDA,),
    ),
    Cell(
        name="xplat",
        build_file_names=("BUCK",),
        is_fbcode=False,
        defines_fbcode_target=False,
        defines_non_fbcode_target=True,
        is_oss=False,
        headers_visible_to_dependents=False,
        cpp_library_headers_visible=True,
        records_internal_macros=True,
        reads_buckconfig=False,
        repository_under_executorch=True,
        aten_modes=(True, False),
        static_linking=StaticLinking.LIBRARIES,
        platforms=(ANDROID_ARM64, IPHONEOS_ARM64, LINUX_X86_64, LINUX_X86_64_CUDA),
        cpu_only=True,
    ),
    Cell(
        name="oss",
        build_file_names=None,
        is_fbcode=True,
        defines_fbcode_target=True,
        defines_non_fbcode_target=False,
        is_oss=True,
        headers_visible_to_dependents=False,
        cpp_library_headers_visible=True,
        records_internal_macros=False,
        reads_buckconfig=True,
        repository_under_executorch=False,
        aten_modes=(False,),
        static_linking=StaticLinking.FORCE_STATIC,
        platforms=(LINUX_X86_64,),
    ),
)

CELLS_BY_NAME: dict[str, Cell] = {cell.name: cell for cell in CELL_TABLE}
CELLS: tuple[str, ...] = tuple(cell.name for cell in CELL_TABLE)
INTERNAL_CELLS: tuple[str, ...] = tuple(c.name for c in CELL_TABLE if c.records_internal_macros)
OPEN_SOURCE_CELLS: tuple[str, ...] = tuple(c.name for c in CELL_TABLE if c.is_oss)


def cell_named(name: str) -> Cell:
    """The cell called `name`; a ValueError names the known ones."""
    try:
        return CELLS_BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown cell {name!r} (one of {', '.join(CELLS)})") from None


def cells_where(**fields: object) -> tuple[str, ...]:
    """Names of the cells whose fields have the given values, in table order."""
    return tuple(
        cell.name for cell in CELL_TABLE if all(getattr(cell, field) == value for field, value in fields.items())
    )


# -- what the rows say about files, for the code that has no cell in hand -----------------------
# A row without build file names reads `.buckconfig`'s `[buildfile] name`, whose buck2 default is BUCK.
BUCK2_DEFAULT_BUILD_FILE_NAMES: tuple[str, ...] = ("BUCK",)
# Every build file name some cell reads: what makes a path a Buck build file for the engine (which
# checks a change can affect), the evaluation caches, the pre-commit hook and the smoke decision.
BUILD_FILE_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys(name for cell in CELL_TABLE for name in (cell.build_file_names or BUCK2_DEFAULT_BUILD_FILE_NAMES))
)


def is_build_file(path: str) -> bool:
    """Is `path` (a repository path) a build file of some cell?"""
    return path.rsplit("/", 1)[-1] in BUILD_FILE_NAMES
