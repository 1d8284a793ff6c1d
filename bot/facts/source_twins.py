"""What a source list change means on the other build: the twins of a target, and whether the other
side builds the source some other way.

Twins are the Buck targets and CMake targets paired by their sources (bot/facts/pairing.py) at
base or head. The other side covers a source when a twin lists it, when it builds the file for
another architecture (`arm/` against `x86/`), when the CMake lists are derived from Buck, when a
sibling of the same name family is one-sided too, or when Buck mentions it elsewhere.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection

from bot.buck.cells import CELLS, is_build_file
from bot.buck.targets import BuckTarget
from bot.facts import cmake_models, pairing, revision
from bot.snapshot import BuildModel, Snapshot


def twins_of_buck(label: str, before: pairing.Pairing, after: pairing.Pairing) -> list[str]:
    """The CMake twins of a Buck target, closest (most shared sources) first."""
    shared: dict[str, int] = {}
    for pairs in (before, after):
        for name in pairs.by_buck.get(label, ()):
            if _close(pairs.buck_sources[label], pairs.cmake_sources[name]):
                shared[name] = max(shared.get(name, 0), len(pairs.shared(label, name)))
    return sorted(shared, key=lambda name: (-shared[name], name))


def twins_of_cmake(name: str, before: pairing.Pairing, after: pairing.Pairing) -> list[str]:
    """The Buck twins of a CMake target, closest (most shared sources) first."""
    shared: dict[str, int] = {}
    for pairs in (before, after):
        for label in pairs.by_cmake.get(name, ()):
            if _close(pairs.buck_sources[label], pairs.cmake_sources[name]):
                shared[label] = max(shared.get(label, 0), len(pairs.shared(label, name)))
    return sorted(shared, key=lambda label: (-shared[label], label))


def buck_side_covers(name: str, twins: list[str], before: pairing.Pairing) -> bool:
    """Whether the Buck twins together compiled at least half of the CMake target's sources at the
    base: only then does a source CMake adds belong in Buck too. (Cortex-M's Buck build keeps two of
    the CMake kernel library's operators, one library each; a new CMake operator is not drift.)"""
    cmake_sources = before.cmake_sources.get(name, frozenset())
    covered = frozenset().union(*(before.shared(label, name) for label in twins))
    return 2 * len(covered) >= len(cmake_sources)


def _close(buck: frozenset[str], cmake_sources: frozenset[str]) -> bool:
    """Twins compile at least half of the smaller target's sources in common."""
    return 2 * len(buck & cmake_sources) >= min(len(buck), len(cmake_sources))


# Directory names that hold one variant of a file per processor (CMake picks one by
# `${CMAKE_SYSTEM_PROCESSOR}`, a Buck glob or select() another): `htpbackend/x86_64/X.cpp` built by
# one build is the same source as `htpbackend/aarch64/X.cpp` built by the other.
_NAMESPACE = "executorch/"  # the prefix of an include path that names a file of the tree

_ARCHITECTURE_DIRECTORIES = frozenset(
    {"x86_64", "x86", "amd64", "i386", "i686", "aarch64", "arm64", "arm", "armv7", "armv7a", "riscv64", "wasm32"}
)


def other_architecture_built(source: str, other_build: frozenset[str]) -> bool:
    """Whether the other build compiles the same file for another processor (a sibling directory
    named for an architecture, holding a file of the same name)."""
    parts = source.split("/")
    for index, part in enumerate(parts[:-1]):
        if part in _ARCHITECTURE_DIRECTORIES:
            for other in _ARCHITECTURE_DIRECTORIES - {part}:
                if "/".join((*parts[:index], other, *parts[index + 1 :])) in other_build:
                    return True
    return False


def derived_from_buck(model: BuildModel) -> frozenset[str]:
    """Sources of the lists extract_sources.py computes from Buck queries for CMake (trees before
    2a692c2da9): they follow the Buck graph by construction (bot/facts/extracted_sources.py)."""
    return frozenset(
        path for lists in cmake_models.extracted_source_lists(model) for _name, paths in lists.lists for path in paths
    )


_NAME_PARTS = re.compile(r"\d+|[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def _name_parts(path: str) -> tuple[str, ...]:
    stem = posixpath.basename(path).rsplit(".", 1)[0]
    return tuple(_NAME_PARTS.findall(stem))


def _siblings(source: str, candidates: Collection[str]) -> list[str]:
    """Sources of the same family: same directory and extension, names that differ in one part
    (`int5_plain_mm.cu` and `int4_plain_mm.cu`; `jni_layer_asr.cpp` and `jni_layer_llama.cpp`)."""
    directory, extension = posixpath.dirname(source), posixpath.splitext(source)[1]
    parts = _name_parts(source)
    if len(parts) < 2:
        return []
    found = []
    for other in sorted(candidates):
        if other == source or posixpath.dirname(other) != directory or posixpath.splitext(other)[1] != extension:
            continue
        theirs = _name_parts(other)
        if len(theirs) == len(parts) and sum(a != b for a, b in zip(parts, theirs, strict=True)) == 1:
            found.append(other)
    return found


def one_sided_family(
    source: str, own_before: frozenset[str], other_everywhere: frozenset[str], other_mentions: Callable[[str], bool]
) -> list[str]:
    """The target's siblings of `source` (at the base) that the other build compiles nowhere and
    names nowhere, when they are at least as many as the siblings both builds compile: the
    family was already built on this side alone, so one more member is not drift."""
    siblings = _siblings(source, own_before)
    one_sided = [s for s in siblings if s not in other_everywhere and not other_mentions(s)]
    return one_sided if one_sided and 2 * len(one_sided) >= len(siblings) else []


def cmake_only_library(snap: Snapshot, source: str, before: pairing.Pairing, after: pairing.Pairing) -> str | None:
    """A repository header the source includes from a directory no Buck target compiles or lists a
    file of, at the base or at the head: the source needs a library only CMake builds."""
    built = _buck_directories(snap.base, before) | _buck_directories(snap.head, after)
    for include, _line in revision.includes(snap.head, [source]).get(source, ()):
        if not include.startswith(_NAMESPACE):
            continue
        header = include[len(_NAMESPACE) :]
        if snap.base.tree.exists(header) and snap.head.tree.exists(header) and posixpath.dirname(header) not in built:
            return header
    return None


def _buck_directories(model: BuildModel, pairs: pairing.Pairing) -> frozenset[str]:
    """Directories holding a file some Buck target of some cell compiles or lists as a header."""
    directories = {posixpath.dirname(path) for path in pairs.all_buck_sources()}
    for cell in CELLS:
        directories.update(
            posixpath.dirname(include[len(_NAMESPACE) :])
            for include in revision.header_owners(model, cell)
            if include.startswith(_NAMESPACE)
        )
    return frozenset(directories)


def buck_target(model: BuildModel, label: str) -> BuckTarget | None:
    for cell in CELLS:
        target = model.cell(cell).targets.get(label)
        if target is not None:
            return target
    return None


def mention_in(model: BuildModel, path: str, source: str) -> tuple[str, int] | None:
    directory = posixpath.dirname(path)
    needle = source[len(directory) + 1 :] if directory and source.startswith(directory + "/") else source
    for number, line in enumerate((model.text(path) or "").splitlines(), start=1):
        if needle in line and not line.lstrip().startswith("#"):
            return path, number
    return None


def buck_mentions(model: BuildModel, source: str) -> bool:
    """Whether a Buck file names the source (relative to its package, or by repository path)."""
    for path in model.tree.paths():
        name = posixpath.basename(path)
        if not is_build_file(path) and not name.endswith(".bzl"):
            continue
        directory = posixpath.dirname(path)
        needles = [source]
        if directory and source.startswith(directory + "/"):
            needles.append(source[len(directory) + 1 :])
        text = model.text(path) or ""
        if any(f'"{needle}"' in text or f"'{needle}'" in text for needle in needles):
            return True
    return False
