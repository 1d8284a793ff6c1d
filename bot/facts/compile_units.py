"""What each configuration gives a translation unit: the compiles a review asks the compiler for.

A configuration is one build the model knows: a target platform of a Buck cell (xplat's
CPU-only Android, Apple and Linux, and Linux with CUDA; fbcode; OSS) or a CMake profile. For
one translation unit (TU) and one owner (the Buck target or CMake target compiling it) it gives:
- a header layout: private path -> repository path. Buck: the owner's own headers, and the
  exported headers of its deps and, through them, of their exported deps (buck2's rule; a
  private dep of a dep is invisible), each under its include name (`executorch/<package>/x.h`
  or the target's `header_namespace`); fbcode's plain `headers` count as exported (the cell
  table). CMake: the whole repository under `executorch/` (ExecuTorch's include root is the
  checkout's parent), as the CMake build sees it.
- its macros: the owner's preprocessor flags and its visible deps' exported ones (Buck), the
  target's compile definitions and those its libraries pass on (CMake), and the platform's
  predefined macros as data (`__ANDROID__`, `__APPLE__`), simulated on the host compiler.
- CUDA headers only where the configuration has CUDA.
Only the files a TU can reach are materialized (its include closure, every `#if` branch taken).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.buck.cells import HAS_CUDA, cell_named
from bot.buck.targets import Platform
from bot.cmake.model import SOURCE_ROOT
from bot.cpp.conditions import defines_from_flags
from bot.facts import revision, xref
from bot.facts.cmake_models import cmake_model
from bot.facts.header_deps import CXX_KINDS, FLAG_ATTRIBUTES
from bot.facts.header_graph import header_graph
from bot.facts.revision import graph_memo

TU_SUFFIXES = (".c", ".cc", ".cpp", ".cxx")
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".cuh", ".inc", ".def")
MAX_INCLUDE_FILES = 4000  # a closure larger than this is not materialized (not verified)

# The predefined macros a platform's compiler has and the host's lacks, by constraint value.
PLATFORM_MACROS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "ovr_config//os:android": (("__ANDROID__", "1"),),
    "ovr_config//os:iphoneos": (("__APPLE__", "1"), ("__MACH__", "1")),
    "ovr_config//os:macos": (("__APPLE__", "1"), ("__MACH__", "1")),
}
PROFILE_MACROS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "Android": (("__ANDROID__", "1"),),
    "Darwin": (("__APPLE__", "1"), ("__MACH__", "1")),
}
# What every build for a platform passes CMake and a profile does not say: Apple's builds
# (CMakePresets' macos and ios presets, scripts/build_apple_frameworks.sh) configure with the iOS
# toolchain file, and the root CMakeLists.txt of 2023-24 adds backends/apple/coreml only when
# CMAKE_TOOLCHAIN_FILE names one (else FATAL_ERROR): without it no CoreML source is compiled.
PROFILE_VARIABLES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "Darwin": (("CMAKE_TOOLCHAIN_FILE", f"{SOURCE_ROOT}/third-party/ios-cmake/ios.toolchain.cmake"),),
}
# Vendored third-party headers the tree holds, mounted as include roots in every configuration
# (the internal cells get the same headers from their own copy): `<c10/util/...>`, `<torch/headeronly/...>`.
VENDORED_ROOTS = ("runtime/core/portable_type/c10",)
SIMULATED_COMPILERS = frozenset({"GNU", "Clang", "AppleClang"})  # others (MSVC) are not simulated


@dataclass(frozen=True, slots=True)
class Configuration:
    """One build of the repository: a Buck cell on one platform, or a CMake profile."""

    name: str  # "xplat android-arm64", "cmake cpu-only"
    cell: str | None
    platform: Platform | None
    profile: str | None
    cuda: bool
    predefined: tuple[tuple[str, str], ...]  # simulated on the host compiler
    built: bool = True  # a cell or a profile builds it (else derived: an option set no profile has)
    variables: tuple[tuple[str, str], ...] = ()  # `-D` overrides on top of the profile (derived ones)


@dataclass(frozen=True, slots=True)
class CompileSetup:
    """One TU as one configuration compiles it, owned by `owner`."""

    source: str  # repository path
    owner: str  # Buck label or CMake target name
    configuration: Configuration
    layout: tuple[tuple[str, str], ...]  # (private path, repository path), the TU first
    defines: tuple[tuple[str, str | None], ...]  # target macros (None: -U)
    # Deps the compile reaches that no evaluated package defines (another repository's targets, a
    # package that failed): what they export (macros, headers) is unknown to this compile.
    outside: tuple[str, ...] = ()

    @property
    def unit_path(self) -> str:
        return self.layout[0][0]


def buck_configurations(model) -> tuple[Configuration, ...]:
    """Every target platform of every cell."""
    found = []
    for cell in ("fbcode", "xplat", "oss"):
        for platform in model.platforms(cell):
            macros = tuple(m for c in platform.constraints for m in PLATFORM_MACROS.get(c, ()))
            found.append(
                Configuration(
                    f"{cell} {platform.name}",
                    cell,
                    platform,
                    None,
                    HAS_CUDA in platform.constraints,
                    tuple(sorted(set(macros))),
                )
            )
    return tuple(found)


def cmake_configurations(model, profiles: tuple[str, ...]) -> tuple[Configuration, ...]:
    """The given CMake profiles that the host compiler can stand for."""
    from bot.cmake.profiles import profile_named

    found = []
    for name in profiles:
        profile = profile_named(name, model.config.cmake_defined)
        if profile.compiler_id not in SIMULATED_COMPILERS:
            continue
        variables = tuple(
            (variable, value)
            for variable, value in PROFILE_VARIABLES.get(profile.platform, ())
            if variable not in profile.variables
        )
        found.append(
            Configuration(
                f"cmake {name}",
                None,
                None,
                name,
                profile.cuda,
                PROFILE_MACROS.get(profile.platform, ()),
                variables=variables,
            )
        )
    return tuple(found)


def cmake_model_of(model, configuration: Configuration):
    """The CMake model a CMake configuration compiles with (its profile and overrides)."""
    assert configuration.profile is not None
    return cmake_model(model, configuration.profile, **dict(configuration.variables))


_OPTION = re.compile(r"\b(EXECUTORCH_BUILD_[A-Z0-9_]+)\b")


def derived_configuration(model, base_configuration: Configuration, source: str) -> Configuration | None:
    """A CMake configuration that compiles `source` where no profile does: the first profile with
    the `EXECUTORCH_BUILD_*` options turned on that guard the way to it (the `if()` blocks around
    each `add_subdirectory` leading to its directory, and around the line naming it). A list naming
    a file under an option no profile turns on is compiled nowhere else. Where one of those options
    is one only another platform's backend profile turns on (CoreML and MPS on Apple, the JNI
    library on Android; XNNPACK builds on Linux too), that profile stands for it: that platform's
    macros and variables, not the base profile's."""
    from bot.cmake.profiles import BACKEND_PROFILES, profile_named

    options = _gating_options(model, source)
    turned_on = {
        name
        for profile in model.config.cmake_profiles
        for name, value in profile_named(profile, model.config.cmake_defined).variables.items()
        if value.upper() in ("ON", "TRUE", "1")
    }
    wanted = tuple(sorted((name, "ON") for name in options - turned_on))
    if not wanted:
        return None
    suffix = " ".join(f"{name}=ON" for name, _on in wanted)
    assert base_configuration.profile is not None
    platform = profile_named(base_configuration.profile, model.config.cmake_defined).platform
    here = {o for p in BACKEND_PROFILES.values() if p.platform == platform for o, v in p.variables.items() if v == "ON"}
    elsewhere = {option for option, _on in wanted if option not in here}  # built only on another platform
    for name, profile in BACKEND_PROFILES.items():
        if profile.platform != platform and any(profile.variables.get(option) == "ON" for option in elsewhere):
            return Configuration(
                f"cmake {name} with {suffix} (no profile turns this on)",
                None,
                None,
                name,
                profile.cuda,
                PROFILE_MACROS.get(profile.platform, ()),
                built=False,
                variables=(*PROFILE_VARIABLES.get(profile.platform, ()), *wanted),
            )
    return Configuration(
        f"{base_configuration.name} with {suffix} (no profile turns this on)",
        None,
        None,
        base_configuration.profile,
        base_configuration.cuda,
        base_configuration.predefined,
        built=False,
        variables=(*base_configuration.variables, *wanted),
    )


_IF = re.compile(r"^\s*(if|elseif|else|endif)\s*\(", re.IGNORECASE)
_VARIABLE_PREFIX = re.compile(r"\$\{[A-Za-z_]+\}/?")


def _gating_options(model, source: str) -> set[str]:
    """The options in the `if()` conditions around the lines that lead the CMake build to `source`."""
    parts = source.split("/")
    found: set[str] = set()
    for depth in range(len(parts)):
        directory = "/".join(parts[:depth])
        text = model.tree.read_text(f"{directory}/CMakeLists.txt" if directory else "CMakeLists.txt")
        if text is None:
            continue
        below = "/".join(parts[depth:])  # the source's path relative to this directory
        stack: list[str] = []
        for line in text.splitlines():
            keyword = _IF.match(line)
            if keyword is not None:
                word = keyword.group(1).lower()
                if word == "if":
                    stack.append(line)
                elif word in ("elseif", "else") and stack:
                    stack[-1] = stack[-1] + " " + line
                elif word == "endif" and stack:
                    stack.pop()
                continue
            tokens = _VARIABLE_PREFIX.sub("", line).replace("(", " ").replace(")", " ").split()
            if any(t and (below == t or below.startswith(t.rstrip("/") + "/")) for t in tokens if "/" in t or "." in t):
                for condition in stack:
                    found.update(_OPTION.findall(condition))
    return found


def buck_owners(model, cell: str, platform: Platform) -> Mapping[str, tuple[str, ...]]:
    """source path -> labels of the C++ targets compiling it on `platform` (compatible there)."""

    def compute(graph) -> dict[str, tuple[str, ...]]:
        incompatible = revision.incompatible(model, cell, platform)
        owners: dict[str, list[str]] = {}
        for label, target in graph.targets.items():
            if not CXX_KINDS.search(target.kind) or label in incompatible:
                continue
            for path in xref.source_paths(target, platform):
                owners.setdefault(path, []).append(label)
        return {path: tuple(sorted(labels)) for path, labels in owners.items()}

    return graph_memo(model, cell, ("compile-owners", platform), compute, persist=False)


def buck_setup(model, configuration: Configuration, label: str, source: str) -> CompileSetup:
    """What `configuration` gives `source` compiled by Buck target `label`."""
    cell, platform = configuration.cell or "", configuration.platform
    graph = header_graph(model, cell)
    index = graph.index
    view = next((v for v in index.configured if v.platform == platform), None)
    if view is not None:
        index = view.index
    visible = index.visible(label)
    exported_visibility = cell_named(cell).headers_visible_to_dependents
    layout: dict[str, str] = {f"src/{source}": source}
    target = graph.targets[label]
    for attribute in ("exported_headers", "headers"):
        for include_name, repo_path in xref.header_entries(target, attribute, platform):
            layout.setdefault(f"include/{include_name}", repo_path)
            layout.setdefault(f"src/{repo_path}", repo_path)  # "x.h" next to the source
    for other in sorted(visible - {label}):
        dep = graph.targets.get(other)
        if dep is None:
            continue
        for attribute in ("exported_headers", "headers"):
            seen = xref.visible_attribute(dep, attribute, cell)
            if seen == "headers" and not exported_visibility:
                continue
            for include_name, repo_path in xref.header_entries(dep, attribute, platform):
                layout.setdefault(f"include/{include_name}", repo_path)
    for other in sorted(visible):  # include directories: the target's own, and its deps' public ones
        dep = graph.targets.get(other)
        if dep is not None:
            for attribute in DIRECTORY_ATTRIBUTES if other == label else PUBLIC_DIRECTORY_ATTRIBUTES:
                directories = [str(d) for d in dep.values(attribute, platform) if isinstance(d, str)]
                _mount_directories(model, layout, other[2:].split(":")[0], directories)
    flags: list[str] = []
    for other in sorted(visible):
        dep = graph.targets.get(other)
        if dep is None:
            continue
        for attribute in FLAG_ATTRIBUTES if other == label else ("exported_preprocessor_flags",):
            flags.extend(str(flag) for flag in dep.values(attribute, platform) if isinstance(flag, str))
    _mount_vendored(model, layout)
    outside = tuple(sorted(other for other in visible if other not in graph.targets))
    return CompileSetup(
        source, label, configuration, _closure(model, layout, f"src/{source}"), _defines(flags), outside
    )


def cmake_owners(cmake_model) -> Mapping[str, tuple[str, ...]]:
    """source path -> names of the CMake targets compiling it."""
    owners: dict[str, list[str]] = {}
    for name, target in cmake_model.targets.items():
        if target.imported or target.alias_of:
            continue
        for source in target.sources:
            owners.setdefault(source.path_repo_relative, []).append(name)
    return {path: tuple(sorted(set(names))) for path, names in owners.items()}


def cmake_setup(model, cmake_model, configuration: Configuration, name: str, source: str) -> CompileSetup:
    """What a CMake profile gives `source` compiled by CMake target `name`."""
    layout = {f"include/executorch/{path}": path for path in model.tree.paths() if path.endswith(HEADER_SUFFIXES)}
    unit = f"include/executorch/{source}"
    layout = {unit: source, **layout}
    flags: list[str] = []
    roots: list[str] = []  # include directories, as the model writes them (absolute, under SOURCE_ROOT)
    seen: set[str] = set()
    pending = [(name, True)]
    while pending:
        current, own = pending.pop()
        if current in seen or current not in cmake_model.targets:
            continue
        seen.add(current)
        target = cmake_model.targets[current]
        for definition in target.compile_definitions:
            if own or definition.scope in ("PUBLIC", "INTERFACE"):
                flags.append(f"-D{definition.value}")
        for directory in target.include_directories:
            if own or directory.scope in ("PUBLIC", "INTERFACE"):
                roots.append(directory.value)
        pending.extend((library.value, False) for library in target.link_libraries)
    for root in roots:  # a directory of the tree the target names: its headers by their path below it
        relative = posixpath.normpath(root[len(SOURCE_ROOT) :].lstrip("/")) if root.startswith(SOURCE_ROOT) else None
        if relative is None or relative.startswith(".."):
            continue  # the checkout's parent (`executorch/...` is mounted already) or outside the tree
        prefix = "" if relative == "." else relative + "/"
        for path in model.tree.paths_under(prefix):
            if path.endswith(HEADER_SUFFIXES):
                layout.setdefault(f"include/{path[len(prefix) :]}", path)
    _mount_vendored(model, layout)
    return CompileSetup(source, name, configuration, _closure(model, layout, unit), _defines(flags))


# buck2's include_directories are the target's own -I roots (package-relative); the public ones
# reach dependents too (ExecuTorch's Vulkan gpuinfo tool includes "app.h" through its own).
DIRECTORY_ATTRIBUTES = ("include_directories", "public_include_directories", "public_system_include_directories")
PUBLIC_DIRECTORY_ATTRIBUTES = ("public_include_directories", "public_system_include_directories")


def _mount_directories(model, layout: dict[str, str], package: str, directories: list[str]) -> None:
    """Add the headers under each package-relative include directory, by their path below it."""
    for directory in directories:
        root = posixpath.normpath(posixpath.join(package, directory.lstrip("/")))
        if root.startswith("..") or root == ".":
            continue  # outside the tree, or the whole tree (mounted by its paths already)
        prefix = root + "/"
        for path in model.tree.paths_under(prefix):
            if path.endswith(HEADER_SUFFIXES):
                layout.setdefault(f"include/{path[len(prefix) :]}", path)


def _mount_vendored(model, layout: dict[str, str]) -> None:
    """Add the vendored include roots under `include/`, below what the configuration gives."""
    for root in VENDORED_ROOTS:
        for path in model.tree.paths_under(root + "/"):
            layout.setdefault(f"include/{path[len(root) + 1 :]}", path)


def _defines(flags: list[str]) -> tuple[tuple[str, str | None], ...]:
    defines = defines_from_flags(flags)
    return tuple(sorted((k, v) for k, v in defines.items() if k.isidentifier()))


def _closure(model, layout: Mapping[str, str], unit: str) -> tuple[tuple[str, str], ...]:
    """The private paths `unit` can reach through `#include` (any branch), TU first."""
    reached = [unit]
    seen = {unit}
    frontier = [unit]
    while frontier and len(reached) < MAX_INCLUDE_FILES:
        found = revision.includes(model, [layout[p] for p in frontier])
        following = []
        for private in frontier:
            for name, _line in found.get(layout[private], ()):
                for candidate in (
                    posixpath.normpath(posixpath.join(posixpath.dirname(private), name)),
                    f"include/{name}",
                ):
                    if candidate in layout and candidate not in seen:
                        seen.add(candidate)
                        reached.append(candidate)
                        following.append(candidate)
        frontier = following
    return tuple((private, layout[private]) for private in reached)


def setup_macros(setup: CompileSetup, texts: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The configuration's predefined macros that some file of the TU's closure names: the
    others cannot change the compile, so configurations differing only there share one."""
    return tuple(
        (name, value) for name, value in setup.configuration.predefined if any(name in t for t in texts.values())
    )
