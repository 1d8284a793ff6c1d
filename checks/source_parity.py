"""A source is added to (or dropped from) one build of a target and not the other.

ExecuTorch builds the same libraries with Buck and with CMake, and the two source lists are
kept in step by hand. A source added to the Buck target but not to its CMake twin builds and
passes Buck CI, and the CMake build (the one users and the wheels get) then fails to link
with undefined symbols, or silently lacks a kernel; the reverse breaks the internal build.
A source dropped from one side while the other still compiles it is the same drift, and
when the file itself was deleted the other build no longer configures.

Every configured CMake profile is compared, and so is the profile of each backend or extension
the change touches (Arm, Cadence, NXP, Vulkan, XNNPACK, Qualcomm, MediaTek, Apple, LLM,
training: bot/cmake/profiles.py), so their twins are held to the same rule as CUDA's.

Twins are found by shared sources (design 3.4): a Buck target and a CMake target that compiled
at least half of the smaller one's files at base or at head. Only what the pull request
changed is compared: a source that moved to another target of the same build, or that the
other build compiles in any target or mentions in any CMake/Buck file (under an option the
default profile leaves off), or that CMake names through a variable's value in some
configuration the repository sets up (`runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp`
with the android preset's `EXECUTORCH_PAL_DEFAULT=android`), is not drift. Sources a Buck target gets from a variable or a
glob rather than writing them at the call site are left to the build that generates them. Nor is
it drift when the other build compiles the same file for another processor (`htpbackend/x86_64/X.cpp`
chosen by `${CMAKE_SYSTEM_PROCESSOR}` in CMake, `htpbackend/aarch64/X.cpp` in Buck), or when the
CMake list is one extract_sources.py computed from Buck queries (trees before 2a692c2da9): such a
list follows the Buck graph by construction.

Two cases are reported at minor, not as drift, because the other build has never built what the
source belongs to: a source of a family the target already builds on its side alone (in the same
directory, a name that differs from it in one part, such as `int5_plain_mm.cu` beside
`int4_plain_mm.cu` and `int8_plain_mm.cu`, which no Buck target builds), and a CMake source that
includes a header of a library only CMake builds (a directory no Buck target compiles or lists a
file of, already so at the base: `jni_layer_asr.cpp` including `extension/asr/runner/runner.h`).

Example (bad): `srcs = ["shims/memory.cpp", "shims/sort.cu"]` in Buck while
`add_library(aoti_cuda_shims SHARED runtime/shims/memory.cpp)` in CMake does not add `sort.cu`.

Use instead: add the source to both, or to neither.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from bot.check import BUCK_FILES, CMAKE_FILES, Check, Example
from bot.cmake.profiles import profiles_touched
from bot.facts import cmake_models, pairing, source_twins
from bot.model import Evidence, Hit, ReviewMode, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import attribute_line, item_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    if snap.mode is ReviewMode.BASELINE:
        return
    seen: set[tuple[str, int, str]] = set()
    touched = profiles_touched(
        [path for change in snap.changes.files for path in (change.path, change.old_path) if path]
    )
    # drift in any configured build is drift, and in the build of each backend the change touches
    for profile in dict.fromkeys((*snap.config.cmake_profiles, *touched)):
        before, after = pairing.pairing(snap.base, profile), pairing.pairing(snap.head, profile)
        if not (before.by_buck or after.by_buck):
            continue
        for hit in (*_buck_changes(snap, profile, before, after), *_cmake_changes(snap, profile, before, after)):
            if (hit.path, hit.line, hit.key) not in seen:
                seen.add((hit.path, hit.line, hit.key))
                yield hit


def _buck_changes(snap: Snapshot, profile: str, before: pairing.Pairing, after: pairing.Pairing) -> Iterator[Hit]:
    cmake_everywhere = after.all_cmake_sources()
    buck_everywhere = after.all_buck_sources()
    seen: set[tuple[str, int, str]] = set()
    for label in sorted(set(before.buck_sources) & set(after.buck_sources)):
        added = after.buck_sources[label] - before.buck_sources[label]
        removed = before.buck_sources[label] - after.buck_sources[label]
        if not added and not removed:
            continue
        target = source_twins.buck_target(snap.head, label)
        twins = source_twins.twins_of_buck(label, before, after)
        if target is None or not twins or "test" in target.kind:
            continue
        text = snap.head.text(target.path) or ""
        for source in sorted(added):
            if source in cmake_everywhere or not snap.head.tree.exists(source):
                continue
            if source_twins.other_architecture_built(source, cmake_everywhere):
                continue
            relative = _relative(source, target.package)
            line = item_line(text, target, relative)
            # cmake_mentions counts a file CMake names through a variable only for the values a
            # preset, script or default gives it.
            if line is None or (target.path, line, source) in seen or pairing.cmake_mentions(snap.head, source):
                continue
            seen.add((target.path, line, source))
            twin = cmake_models.cmake_model(snap.head, profile).targets.get(twins[0])
            family = source_twins.one_sided_family(
                source,
                before.buck_sources[label],
                before.all_cmake_sources(),
                lambda sibling: pairing.cmake_mentions(snap.base, sibling) is not None,
            )
            message = (
                f"`{relative}` is added to the Buck target `{label}` but to no CMake target; its CMake twin "
                f"`{twins[0]}` compiles the same files otherwise, so the CMake build now lacks what this source "
                "defines (undefined symbols at link, or a missing kernel). Add it to the CMake target too."
            )
            if family:
                message += _family_note(family, "CMake")
            yield Hit(
                path=target.path,
                line=line,
                message=message,
                at_most=Severity.MINOR if family else None,
                key=f"{target.primary_label}|{source}",
                target=label,
                offending_text=f"added {source}",
                evidence=_cmake_evidence(
                    twin, twins[0], f"the CMake twin `{twins[0]}`, which does not compile `{source}`"
                ),
            )
        for source in sorted(removed):
            if source in buck_everywhere:
                continue  # moved to another Buck target
            still = [
                n
                for n in twins
                if source in after.cmake_sources.get(n, ()) and source in before.cmake_sources.get(n, ())
            ]
            if not still or (target.path, target.line, source) in seen:
                continue
            seen.add((target.path, target.line, source))
            location = pairing.cmake_mentions(snap.head, source)
            gone = not snap.head.tree.exists(source)
            consequence = "CMake no longer configures (the file is deleted)" if gone else "the two builds now differ"
            yield Hit(
                path=target.path,
                line=attribute_line(text, target, "srcs") or target.line,
                message=(
                    f"`{_relative(source, target.package)}` is dropped from the Buck target `{label}`, but its CMake "
                    f"twin `{still[0]}` still compiles it: {consequence}. Drop it from the CMake target too, or keep it in Buck."
                ),
                key=f"{target.primary_label}|{source}",
                target=label,
                offending_text=f"dropped {source}",
                evidence=(Evidence(*location, f"CMake still compiles `{source}` in `{still[0]}`"),) if location else (),
            )


def _cmake_changes(snap: Snapshot, profile: str, before: pairing.Pairing, after: pairing.Pairing) -> Iterator[Hit]:
    cmake_everywhere = after.all_cmake_sources()
    buck_everywhere = after.all_buck_sources()
    model = cmake_models.cmake_model(snap.head, profile)
    derived = source_twins.derived_from_buck(snap.base) | source_twins.derived_from_buck(snap.head)
    for name in sorted(set(before.cmake_sources) & set(after.cmake_sources)):
        # A list computed from Buck queries follows Buck by construction: not kept by hand, no drift.
        added = after.cmake_sources[name] - before.cmake_sources[name] - derived
        removed = before.cmake_sources[name] - after.cmake_sources[name] - derived
        if not added and not removed:
            continue
        twins = source_twins.twins_of_cmake(name, before, after)
        target = model.targets.get(name)
        if not twins or target is None:
            continue
        if not source_twins.buck_side_covers(name, twins, before):
            continue  # Buck builds only a part of this target (a few per-file libraries): not its twin
        buck_twin = source_twins.buck_target(snap.head, twins[0])
        for source in sorted(added):
            if (
                source in buck_everywhere
                or not snap.head.tree.exists(source)
                or source_twins.buck_mentions(snap.head, source)
            ):
                continue
            if source_twins.other_architecture_built(source, buck_everywhere):
                continue
            written = next((s for s in target.sources if s.path_repo_relative == source), None)
            location = source_twins.mention_in(snap.head, written.path, source) if written else None
            path, line = location or ((written.path, written.line) if written else (target.path, target.line))
            family = source_twins.one_sided_family(
                source,
                before.cmake_sources[name],
                before.all_buck_sources(),
                lambda sibling: source_twins.buck_mentions(snap.base, sibling),
            )
            library = None if family else source_twins.cmake_only_library(snap, source, before, after)
            message = (
                f"`{source}` is added to the CMake target `{name}` but to no Buck target; its Buck twin "
                f"`{twins[0]}` compiles the same files otherwise, so the Buck builds now lack what this source "
                "defines. Add it to the Buck target's `srcs` too."
            )
            if family:
                message += _family_note(family, "Buck")
            elif library:
                message += (
                    f" It includes `{library}`, from a library no Buck target builds (nothing in "
                    f"`{posixpath.dirname(library)}/` is compiled or listed by Buck): this looks like a CMake-only "
                    "feature, so it is reported at minor."
                )
            yield Hit(
                path=path,
                line=line,
                message=message,
                at_most=Severity.MINOR if family or library else None,
                key=f"{name}|{source}",
                target=name,
                offending_text=f"added {source}",
                evidence=(
                    Evidence(
                        buck_twin.path, buck_twin.line, f"the Buck twin `{twins[0]}`, which does not compile `{source}`"
                    ),
                )
                if buck_twin
                else (),
            )
        for source in sorted(removed):
            if source in cmake_everywhere or pairing.cmake_mentions(snap.head, source):
                continue
            still = [
                label
                for label in twins
                if source in after.buck_sources.get(label, ()) and source in before.buck_sources.get(label, ())
            ]
            if not still:
                continue
            holder = source_twins.buck_target(snap.head, still[0])
            evidence = ()
            if holder is not None:
                text = snap.head.text(holder.path) or ""
                line = item_line(text, holder, _relative(source, holder.package)) or holder.line
                evidence = (Evidence(holder.path, line, f"Buck still compiles `{source}` in `{still[0]}`"),)
            yield Hit(
                path=target.path,
                line=target.line,
                message=(
                    f"`{source}` is dropped from the CMake target `{name}`, but its Buck twin `{still[0]}` still compiles "
                    "it, and no CMake file mentions it any more. Drop it from the Buck target too, or keep it in CMake."
                ),
                key=f"{name}|{source}",
                target=name,
                offending_text=f"dropped {source}",
                evidence=evidence,
            )


def _family_note(family: list[str], other: str) -> str:
    named = ", ".join(f"`{posixpath.basename(s)}`" for s in family[:4])
    return (
        f" Its siblings {named} were already built on this side only (no {other} target compiles them), so this "
        f"continues a family {other} has never built: reported at minor. If {other} should build the family, "
        "add all of it."
    )


def _cmake_evidence(target, name: str, note: str) -> tuple[Evidence, ...]:
    return (Evidence(target.path, target.line, note),) if target is not None else ()


def _relative(source: str, package: str) -> str:
    return source[len(package) + 1 :] if package and source.startswith(package + "/") else source


_CMAKE_BASE = "add_library(aoti_cuda_shims SHARED runtime/shims/memory.cpp runtime/shims/cuda_guard.cpp)\n"
_BUCK_BASE = (
    "cxx_library(\n"
    '    name = "runtime_shims",\n'
    "    srcs = [\n"
    '        "shims/cuda_guard.cpp",\n'
    '        "shims/memory.cpp",\n'
    "    ],\n"
    ")\n"
)
_BUCK_HEAD = _BUCK_BASE.replace('"shims/memory.cpp",\n', '"shims/memory.cpp",\n        "shims/sort.cu",{marker}\n')
_FILES = {
    "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
    "backends/cuda/runtime/shims/memory.cpp": "",
    "backends/cuda/runtime/shims/cuda_guard.cpp": "",
    "backends/cuda/runtime/shims/sort.cu": "",
    "backends/cuda/runtime/shims/rand.cu": "",
}
_BASE = {**_FILES, "backends/cuda/CMakeLists.txt": _CMAKE_BASE, "backends/cuda/runtime/BUCK": _BUCK_BASE}


def _head(cmake: str, buck: str) -> dict[str, str]:
    return {**_FILES, "backends/cuda/CMakeLists.txt": cmake, "backends/cuda/runtime/BUCK": buck}


CHECK = Check(
    id="source-parity",
    inputs=BUCK_FILES + CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Source added to or dropped from one build of a target only",
    doc=__doc__,
    run=run,
    bad=(
        Example(base=_BASE, head=_head(_CMAKE_BASE, _BUCK_HEAD.format(marker="  # expect: source-parity"))),
        Example(
            base=_BASE,
            head=_head(
                _CMAKE_BASE
                + "target_sources(aoti_cuda_shims PRIVATE runtime/shims/rand.cu)  # expect: source-parity\n",
                _BUCK_BASE,
            ),
        ),
    ),
    good=(
        Example(
            base=_BASE,
            head=_head(_CMAKE_BASE.replace(")\n", " runtime/shims/sort.cu)\n"), _BUCK_HEAD.format(marker="")),
        ),
        Example(
            base=_BASE,
            head=_head(
                _CMAKE_BASE + "if(CMAKE_CUDA_COMPILER AND EXECUTORCH_BUILD_SORT)\n"
                "  target_sources(aoti_cuda_shims PRIVATE runtime/shims/sort.cu)\n"
                "endif()\n",
                _BUCK_HEAD.format(marker=""),
            ),
        ),
        # CMake compiles the x86_64 variant of a file whose aarch64 variant Buck compiles.
        Example(
            base={
                **_BASE,
                "backends/cuda/runtime/shims/x86_64/config.cpp": "",
                "backends/cuda/runtime/shims/aarch64/config.cpp": "",
            },
            head={
                **_head(
                    _CMAKE_BASE + "target_sources(aoti_cuda_shims PRIVATE runtime/shims/x86_64/config.cpp)\n",
                    _BUCK_BASE.replace(
                        '"shims/memory.cpp",\n', '"shims/memory.cpp",\n        "shims/aarch64/config.cpp",\n'
                    ),
                ),
                "backends/cuda/runtime/shims/x86_64/config.cpp": "",
                "backends/cuda/runtime/shims/aarch64/config.cpp": "",
            },
        ),
        # CMake picks one file of the directory by an option (`PAL=posix|android`, the PAL choice):
        # every file there is built by some configuration.
        Example(
            base=_BASE,
            head=_head(
                _CMAKE_BASE.replace(")\n", " ${CMAKE_CURRENT_SOURCE_DIR}/runtime/shims/${SHIM}.cu)\n"),
                _BUCK_HEAD.format(marker=""),
            ),
        ),
    ),
)
