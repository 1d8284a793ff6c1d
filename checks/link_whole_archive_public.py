"""A shared library passes another library's `--whole-archive` link to its consumers.

`-Wl,--whole-archive L -Wl,--no-whole-archive` in PUBLIC or INTERFACE scope of a shared library
T applies to T's own link and is then replayed at the link of everything that links T: each of
those binaries extracts all of L again. State that must exist once per process (a registry, a
`thread_local` current stream, a static allocator) then exists once per binary, and the copies
disagree. ExecuTorch had exactly this with `aoti_common_shims_slim` in `aoti_cuda_shims`: the
archive landed in three shipped binaries. In PRIVATE scope the pair applies to T's link only.

A library naming its own archive in INTERFACE scope (`executorch_target_link_options_shared_lib`)
is the intended idiom for "keep my objects in whoever links me" and is not reported; nor are
static libraries (CMake replays their PRIVATE link items too, so the scope changes nothing) and
INTERFACE libraries (whose only scope is INTERFACE).

Example (bad): `target_link_libraries(aoti_cuda_shims PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive)`.

Use instead: `target_link_libraries(aoti_cuda_shims PRIVATE -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive)`.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import CMAKE_FILES, SMOKE_VERIFIED, Check, Example
from bot.cmake import edits
from bot.cmake.generator_expressions import GenexContext, evaluate_generator_expressions
from bot.cmake.model import CMakeModel, CMakeTarget, WholeArchive
from bot.cmake.profiles import CMakeProfile
from bot.cmake.whole_archive import whole_archive_run
from bot.facts import cmake_models
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot

_REPLAYING_SCOPES = ("PUBLIC", "INTERFACE")
_SHARED_KINDS = ("SHARED_LIBRARY", "MODULE_LIBRARY")


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    seen: set[tuple[str, int, str]] = set()
    for profile in snap.config.cmake_profiles:  # the first profile that shows a pair reports it
        model = cmake_models.cmake_model(snap.head, profile)
        for name, target in sorted(model.targets.items()):
            if target.kind not in _SHARED_KINDS or target.imported:
                continue
            for pair in target.whole_archive:
                if pair.scope not in _REPLAYING_SCOPES or _same_library(model, name, pair.library):
                    continue
                if (pair.path, pair.line, f"{name}:{pair.library}") in seen:
                    continue
                seen.add((pair.path, pair.line, f"{name}:{pair.library}"))
                yield _hit(snap, model.profile, name, target, pair, model.targets.get(pair.library))


def _same_library(model: CMakeModel, name: str, library: str) -> bool:
    """Whether `library` names `name` itself (directly or through an ALIAS)."""
    seen = set()
    while library not in seen:
        seen.add(library)
        if library == name:
            return True
        alias = model.targets.get(library)
        if alias is None or alias.alias_of is None:
            return False
        library = alias.alias_of
    return False


def _hit(
    snap: Snapshot,
    profile: CMakeProfile,
    name: str,
    target: CMakeTarget,
    pair: WholeArchive,
    library: CMakeTarget | None,
) -> Hit:
    text = snap.head.text(pair.path) or ""
    fix = None if pair.via else _private_fix(pair.path, text, pair, GenexContext.of(profile))
    advice = "move the pair into PRIVATE scope" + ("" if fix else " (in a `PRIVATE` group of its own)")
    evidence = [
        Evidence(target.path, target.line, f"`{name}` is defined here as a {target.kind.lower().replace('_', ' ')}")
    ]
    if library is not None and not library.imported:
        evidence.append(
            Evidence(
                library.path, library.line, f"`{pair.library}`, which every consumer of `{name}` would extract again"
            )
        )
    return Hit(
        path=pair.path,
        line=pair.line,
        message=(
            f"`{name}` is a shared library that links `{pair.library}` with `--whole-archive` in {pair.scope} scope: "
            f"the pair is replayed at the link of every target that links `{name}`, so each of them extracts all of "
            f"`{pair.library}` again and per-process state in it (registries, `thread_local`s) is duplicated across "
            f"binaries. Fix: {advice}."
        ),
        key=f"{name}:{pair.library}",
        target=name,
        offending_text=f"{pair.scope} {pair.library}",
        evidence=tuple(evidence),
        fix=fix,
    )


def _private_fix(path: str, text: str, pair: WholeArchive, context: GenexContext) -> Fix | None:
    """The pair's items moved into PRIVATE scope, splitting their group when it holds more.

    The items are read as the profile does (`$<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-Wl,--whole-archive>`
    is the flag under GCC) to find where the pair starts and ends; they are moved as written."""
    invocation = edits.invocation_at(text, pair.line, ("target_link_libraries", "target_link_options"))
    if invocation is None:
        return None
    for group in edits.scope_groups(invocation):
        if group.scope != pair.scope or not any(item.line == pair.line for item in group.items):
            continue
        run = whole_archive_run([evaluate_generator_expressions(i.value, context) for i in group.items], pair.library)
        if run is None:
            continue
        fixed = edits.set_scope(text, invocation, group.items[run[0] : run[1]], "PRIVATE")
        if fixed is not None:
            return fix_between(path, text, fixed, "link the archive whole for this library's own link only")
    return None


_HEADER = (
    "add_library(aoti_common_shims_slim STATIC common_shims_slim.cpp)\nadd_library(aoti_cuda_shims SHARED memory.cpp)\n"
)

CHECK = Check(
    id="link-whole-archive-public",
    tags=frozenset({SMOKE_VERIFIED}),
    fixable=True,
    inputs=CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Shared library replays another library's --whole-archive at every consumer's link",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "CMakeLists.txt": _HEADER + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PUBLIC -Wl,--whole-archive aoti_common_shims_slim  # expect: link-whole-archive-public\n"
                "         -Wl,--no-whole-archive\n"
                ")\n"
            },
            fixed={
                "CMakeLists.txt": _HEADER + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PRIVATE -Wl,--whole-archive aoti_common_shims_slim  # expect: link-whole-archive-public\n"
                "          -Wl,--no-whole-archive\n"
                ")\n"
            },
        ),
        # The pair shares its group with libraries that consumers need: the group is split
        # where the pair stands, so the link order stays as written.
        Example(
            head={
                "CMakeLists.txt": _HEADER + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PUBLIC cuda_platform -Wl,--whole-archive aoti_common_shims_slim  # expect: link-whole-archive-public\n"
                "         -Wl,--no-whole-archive extension_cuda\n"
                ")\n"
            },
            fixed={
                "CMakeLists.txt": _HEADER + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PUBLIC cuda_platform\n"
                "  PRIVATE -Wl,--whole-archive aoti_common_shims_slim  # expect: link-whole-archive-public\n"
                "          -Wl,--no-whole-archive\n"
                "  PUBLIC extension_cuda\n"
                ")\n"
            },
        ),
    ),
    good=(
        Example(
            head={
                "CMakeLists.txt": _HEADER + "target_link_libraries(\n"
                "  aoti_cuda_shims\n"
                "  PRIVATE -Wl,--whole-archive aoti_common_shims_slim\n"
                "          -Wl,--no-whole-archive\n"
                ")\n"
                "# A library keeping its own objects in whoever links it: the intended idiom.\n"
                "target_link_options(\n"
                '  aoti_cuda_shims INTERFACE "SHELL:LINKER:--whole-archive $<TARGET_FILE:aoti_cuda_shims> LINKER:--no-whole-archive"\n'
                ")\n"
            }
        ),
    ),
)
