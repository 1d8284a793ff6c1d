"""Which preprocessor macros the repository defines, where, and which ones its sources test.

A macro is defined for some build when a source or header `#define`s (or `#undef`s) it, when a
build file passes it as a flag (`-DX` in a BUCK file, a `.bzl` macro, a CMake file, a script),
when a CMake command lists it among compile definitions (`target_compile_definitions(t PRIVATE
X=1)`, `add_compile_definitions`, `add_definitions`), or when a configured header template
declares it (`#cmakedefine X`). Compilers and platforms define others (`__linux__`, `_WIN32`,
`TARGET_OS_IPHONE`, `NDEBUG`): those are data here, not derived.

Every file is read once per blob (kept across reviews), with regular expressions rather than
a full parse: the question is only "is this name defined or tested anywhere".
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.facts import revision
from bot.store import memo as cache
from bot.tree import missing_reads

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

SOURCE_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inl", ".inc", ".m", ".mm")
# Shader templates: what they `#define` counts as defined (Vulkan's addmm_optimized.glsl defined
# TILE_ROW_2, which glsl/matmul.h tested); their own `#if`s are the shader generator's business.
SHADER_SUFFIXES = (".glsl", ".glslh")
BUILD_SUFFIXES = (
    ".bzl",
    ".cmake",
    ".in",
    ".txt",
    ".py",
    ".sh",
    ".yml",
    ".yaml",
    ".json",
    ".toml",
    ".gradle",
    ".buckconfig",
    ".bazel",
    ".mk",
)
BUILD_NAMES = ("BUCK", "TARGETS", "Makefile", "BUILD", "WORKSPACE")

# Defined by compilers, standard libraries and platform SDKs: never ours to define.
PLATFORM_MACROS = frozenset(
    {
        "NDEBUG",
        "DEBUG",
        "ANDROID",
        "APPLE",
        "WIN32",
        "WIN64",
        "MSVC",
        "MINGW",
        "UNIX",
        "linux",
        "unix",
        "CUDA_VERSION",
        "CUDART_VERSION",
        "HIP_VERSION",
        "HIP_VERSION_MAJOR",
        "HIP_VERSION_MINOR",
        "NCCL_VERSION_CODE",
        "TARGET_OS_IPHONE",
        "TARGET_OS_IOS",
        "TARGET_OS_OSX",
        "TARGET_OS_MAC",
        "TARGET_OS_SIMULATOR",
        "TARGET_OS_TV",
        "TARGET_OS_WATCH",
        "TARGET_OS_VISION",
        "TARGET_IPHONE_SIMULATOR",
        "TARGET_OS_MACCATALYST",
        "INT8_MAX",
        "INT16_MAX",
        "INT32_MAX",
        "INT64_MAX",
        "SIZE_MAX",
        "UINT32_MAX",
        "UINT64_MAX",
        "PATH_MAX",
        "FLT_MAX",
        "DBL_MAX",
        "EOF",
        "CHAR_BIT",
        "RTLD_NOLOAD",
        "RTLD_DEEPBIND",
        "MAP_ANONYMOUS",
        "MAP_POPULATE",
        "O_DIRECT",
        "O_CLOEXEC",
        "SIGSEGV",
        "PTHREAD_STACK_MIN",
        "EINTR",
    }
)
# What compilers predefine with underscores around a bare name that they never define bare
# (clang's Xtensa target: __XTENSA__, __xtensa__, __Xtensa__; no XTENSA): `#if defined(XTENSA)` is
# a gate nothing defines. Names whose bare form a toolchain does define (GNU C's `linux`, `unix`;
# the NDK's `-DANDROID`) stay out; those bare forms are in PLATFORM_MACROS.
COMPILER_SPELLINGS = frozenset(
    {
        "__XTENSA__",
        "__xtensa__",
        "__Xtensa__",
        "__hexagon__",
        "__aarch64__",
        "__x86_64__",
        "__riscv",
        "__powerpc64__",
        "__wasm__",
        "__wasm32__",
        "__EMSCRIPTEN__",
        "__MACH__",
        "__FreeBSD__",
        "__ZEPHYR__",
        "__clang__",
        "__INTEL_COMPILER",
        "_MSC_VER",
        "__MINGW32__",
        "__MINGW64__",
        "__CUDACC__",
        "__HIPCC__",
        "__CUDA_ARCH__",
        "__NVCC__",
        "__OPTIMIZE__",
        "__cplusplus",
    }
)
# Prefixes of names a compiler, an SDK or a third-party library defines.
PLATFORM_PREFIXES = (
    "_",
    "TARGET_OS_",
    "TARGET_CPU_",
    "TARGET_RT_",
    "MAC_OS_",
    "TORCH_",
    "C10_",
    "AT_",
    "CAFFE2_",
    "GTEST_",
    "GOOGLE_",
    "PYBIND11_",
    "EIGEN_",
    "FLATBUFFERS_",
    "FLATCC_",
    "XNN_",
    "VK_",
    "VMA_",
    "CL_",
    "GL_",
    "ARM_",
    "CMSIS_",
    "QNN_",
    "HTP_",
    "MLX_",
    "METAL_",
    "NS_",
    "CUDA_",
    "CUDART_",
    "CUB_",
    "THRUST_",
    "CUTLASS_",
    "HIP_",
    "NEON",
    "SSE",
    "AVX",
    "FP16_",
    "PTHREADPOOL_",
    "CPUINFO_",
    "KLEIDIAI_",
    "NNLIB_",
    "XT_",
    "XCHAL_",
    "HAVE_",
)

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef|cmakedefine(?:01)?)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_CONDITION = re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b([^\n]*)", re.MULTILINE)
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")
_FLAG = re.compile(rb"(?:-D|/D)[ \t]*['\"]?([A-Za-z_]\w*)")
_CMAKE_DEFINITIONS = re.compile(
    rb"(?:target_compile_definitions|add_compile_definitions|add_definitions|COMPILE_DEFINITIONS)\s*\(([^)]*)\)",
    re.IGNORECASE,
)
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_WORD = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{3,}\b")
_NOT_MACROS = frozenset(
    {
        b"defined",
        b"__has_include",
        b"__has_feature",
        b"__has_attribute",
        b"__has_builtin",
        b"__has_cpp_attribute",
        b"true",
        b"false",
    }
)


@dataclass(frozen=True, slots=True)
class MacroPlace:
    """Where a macro is defined (or tested): `path:line`, and how (`#define`, a build flag, ...)."""

    name: str
    path: str
    line: int
    how: str


@dataclass(frozen=True, slots=True)
class FileMacros:
    """What one file defines and tests, by name -> first line."""

    defined: tuple[tuple[str, int], ...]
    tested: tuple[tuple[str, int], ...]
    mentioned: tuple[str, ...]  # build files only: every word, which may name a macro a tool defines


def is_vendored(path: str) -> bool:
    """A file of a vendored third-party copy: its gates are its upstream build's business."""
    return "third-party/" in path or "third_party/" in path or path.startswith(("third-party", "third_party"))


def is_platform_macro(name: str) -> bool:
    """A macro of a compiler, an SDK or a third-party library (data, not derived)."""
    return name in PLATFORM_MACROS or name.startswith(PLATFORM_PREFIXES)


def compiler_spelling(name: str) -> str | None:
    """The compiler's macro that `name` is with its underscores dropped (`XTENSA` -> `__XTENSA__`)."""
    found = [macro for macro in COMPILER_SPELLINGS if macro != name and macro.strip("_") == name]
    return found[0] if len(found) == 1 else None


def _is_source(path: str) -> bool:
    return path.endswith(SOURCE_SUFFIXES)


def _is_build_file(path: str) -> bool:
    name = posixpath.basename(path)
    return name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES)


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def scan_file(path: str, data: bytes) -> FileMacros:
    """The macros one file defines and tests (a source), or defines and mentions (a build file)."""
    defined: dict[str, int] = {}
    tested: dict[str, int] = {}
    mentioned: set[str] = set()
    for match in _DEFINE.finditer(data):
        defined.setdefault(match.group(1).decode(), _line_of(data, match.start()))
    if _is_source(path):
        for match in _CONDITION.finditer(data):
            line = _line_of(data, match.start())
            expression = _STRING.sub(b"", match.group(1).split(b"//", 1)[0].split(b"/*", 1)[0])
            for word in _IDENTIFIER.findall(expression):
                if word not in _NOT_MACROS and not word.isdigit():
                    tested.setdefault(word.decode(), line)
    elif not path.endswith(SHADER_SUFFIXES):
        for match in _FLAG.finditer(data):
            defined.setdefault(match.group(1).decode(), _line_of(data, match.start()))
        if path.endswith(("CMakeLists.txt", ".cmake")):
            for match in _CMAKE_DEFINITIONS.finditer(data):
                for word in _IDENTIFIER.findall(match.group(1)):
                    defined.setdefault(word.decode(), _line_of(data, match.start(1)))
        mentioned = {word.decode() for word in _WORD.findall(data)}
    return FileMacros(tuple(defined.items()), tuple(tested.items()), tuple(sorted(mentioned)))


def file_macros(model: BuildModel) -> Mapping[str, FileMacros]:
    """path -> its macros, for every source and build file of the revision (read once per blob)."""

    def compute() -> dict[str, FileMacros]:
        paths = [p for p in model.tree.paths() if _is_source(p) or _is_build_file(p) or p.endswith(SHADER_SUFFIXES)]
        blobs = {p: model.tree.blob_id(p) for p in paths}
        blobs = {p: b for p, b in blobs.items() if b is not None}
        by_blob = {b: p for p, b in blobs.items()}

        def scan(missing: list) -> dict:
            model.tree.prefetch(by_blob[b[0]] for b in missing)
            found = {}
            for key in missing:
                unread_before = missing_reads()
                macros = scan_file(key[1], model.tree.read(by_blob[key[0]]) or b"")
                # A blob a partial clone lacks (ExecuTorch's large tokenizer files) spoils only its own entry.
                found[key] = cache.Unread(macros) if missing_reads() != unread_before else macros
            return found

        # The path is part of the key: one blob reads as a source or as a build file by its name.
        found = cache.many("macro-table:file", [(b, p) for p, b in blobs.items()], scan, persist=True)
        return {p: found[(b, p)] for p, b in blobs.items() if (b, p) in found}

    return revision.tree_memo(model, ("macro-table:files",), compute)


def macros_of(model: BuildModel, paths) -> dict[str, FileMacros]:
    """path -> its macros, for the given paths that are sources or build files of the revision
    (a few changed files, without the whole table)."""
    found = {}
    for path in paths:
        if (_is_source(path) or _is_build_file(path) or path.endswith(SHADER_SUFFIXES)) and model.tree.exists(path):
            found[path] = scan_file(path, model.tree.read(path) or b"")
    return found


def defined_macros(model: BuildModel) -> Mapping[str, MacroPlace]:
    """name -> the first place (by path) that defines it, over sources and build files."""

    def compute() -> dict[str, MacroPlace]:
        found: dict[str, MacroPlace] = {}
        for path, macros in sorted(file_macros(model).items()):
            how = "#define" if _is_source(path) or path.endswith(SHADER_SUFFIXES) else "a build flag or definition"
            for name, line in macros.defined:
                found.setdefault(name, MacroPlace(name, path, line, how))
        return found

    return revision.tree_memo(model, ("macro-table:defined",), compute)


def build_mentions(model: BuildModel) -> frozenset[str]:
    """Every word of every build file: a name there may be a macro some tool or script defines."""
    return revision.tree_memo(
        model,
        ("macro-table:mentions",),
        lambda: frozenset(word for macros in file_macros(model).values() for word in macros.mentioned),
    )


def tested_macros(model: BuildModel) -> Mapping[str, tuple[MacroPlace, ...]]:
    """name -> every place a source tests it."""

    def compute() -> dict[str, tuple[MacroPlace, ...]]:
        found: dict[str, list[MacroPlace]] = {}
        for path, macros in sorted(file_macros(model).items()):
            for name, line in macros.tested:
                found.setdefault(name, []).append(MacroPlace(name, path, line, "#if"))
        return {name: tuple(places) for name, places in found.items()}

    return revision.tree_memo(model, ("macro-table:tested",), compute)
