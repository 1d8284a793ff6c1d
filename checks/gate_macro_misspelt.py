"""An `#if` tests a macro nothing defines, one or two letters away from one that is defined.

`#ifdef ET_UE_THREADPOOL` compiles: an undefined macro is simply false. The code it guards is
left out of every build, silently, although the author meant `ET_USE_THREADPOOL`, which the
Buck and CMake builds define (ExecuTorch carried exactly this in `reduce_util.h` until
a84b3c9c15). No compiler warns; only the missing speed-up or the missing feature shows it.

Reported: a macro tested by `#if`/`#ifdef`/`#elif`/`defined()` that no source or header
`#define`s, no build file passes as a flag or compile definition and no build file so much as
mentions (a script may define it), that is not a compiler, platform or third-party macro (those
are data), and that is one or two edits from a macro the repository does define, other than by
digits alone (`AVX2` and `AVX512` are different macros). A name the repository defines with
leading underscores on a name of its own (`-D__ET_BUILD_MODE_COV=1`) counts as defined for this,
although a leading underscore otherwise marks a compiler's macro: ExecuTorch's 187bd055fa dropped
the underscores from `#if __ET_BUILD_MODE_COV` in DeathTest.h while its Buck build modes kept
passing `-D__ET_BUILD_MODE_COV=1`. A near name that the gate's own branch `#define`s is another
macro whose value the gate picks (`#ifdef TILE_ROW_2` / `#define TILE_ROWS 2`), not a spelling of
it. Files of vendored third-party copies are their upstream's business and are left alone.

The same holds for a compiler's macro written without its underscores: clang and GCC define
`__XTENSA__` for Xtensa, never `XTENSA`, so the Xtensa PAL that `backends/cadence/runtime/et_pal.cpp`
guarded with `#if defined(XTENSA)` was compiled out until e42d013c4e (the spellings are data).

Example (bad): `#ifdef ET_UE_THREADPOOL` while the builds define `ET_USE_THREADPOOL`.

Use instead: the defined spelling, `#ifdef ET_USE_THREADPOOL`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.facts import change_scope, macro_table
from bot.facts.macro_table import MacroPlace
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, ReviewMode, Severity
from bot.snapshot import Snapshot
from checks.support.spelling import within_two_edits

_MIN_LENGTH = 6  # shorter names sit a letter or two from too many others to be typos


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    defined = macro_table.defined_macros(snap.head)
    mentioned = macro_table.build_mentions(snap.head)
    project = [name for name in defined if _is_ours(name)]
    changed = _changed_names(snap)
    for name, places in sorted(macro_table.tested_macros(snap.head).items()):
        if len(name) < _MIN_LENGTH or name in defined or name in mentioned or macro_table.is_platform_macro(name):
            continue
        if changed is not None and name not in changed[0] and not any(within_two_edits(name, d) for d in changed[1]):
            continue  # tested, defined and spelt near the same names at base: nothing the change did
        near = sorted(
            other
            for other in project
            if within_two_edits(name, other) and not _digits_only(name, other) and not _selects(snap, places, other)
        )
        compiler = macro_table.compiler_spelling(name)
        if not near and compiler is None:
            continue
        for place in places:
            if not macro_table.is_vendored(place.path):
                yield (
                    _hit(snap, place, [defined[other] for other in near])
                    if near
                    else _compiler_hit(snap, place, compiler)
                )


def _selects(snap: Snapshot, places: tuple[MacroPlace, ...], other: str) -> bool:
    """Whether a gate on the name `#define`s `other` in the branch it guards (`#ifdef TILE_ROW_2`
    / `#define TILE_ROWS 2`): the name picks the other's value, so it is not a misspelling of it."""
    define = re.compile(rf"#\s*define\s+{re.escape(other)}\b")
    for place in places:
        depth = 0  # conditionals opened inside the guarded branch
        for line in (snap.head.text(place.path) or "").split("\n")[place.line :]:
            text = line.strip()
            directive = text[1:].lstrip() if text.startswith("#") else ""
            if directive.startswith("if"):
                depth += 1
            elif directive.startswith("endif") and depth:
                depth -= 1
            elif directive.startswith(("endif", "else", "elif")) and not depth:
                break  # the end of the branch the gate guards
            elif not depth and define.match(text):
                return True
    return False


def _is_ours(name: str) -> bool:
    """A macro the repository names for itself: not a compiler's, SDK's or library's, or one it
    spells with leading underscores on such a name (`__ET_BUILD_MODE_COV`), long enough to tell
    a typo of it from a different name."""
    bare = name.lstrip("_")
    if len(bare) < _MIN_LENGTH:
        return False
    return not macro_table.is_platform_macro(name) or (bare != name and not macro_table.is_platform_macro(bare))


def _changed_names(snap: Snapshot) -> tuple[frozenset[str], frozenset[str]] | None:
    """What the change can affect (None for a scan: everything): the names its files test,
    define or mention at either revision, and the names they define. A name outside the first
    is tested in the same places and defined or mentioned alike at base and head; unless one of
    the second is spelt near it, its near misses are the same too."""
    review = change_scope.scope_models(snap)
    if review.mode is ReviewMode.SCAN:
        return None
    paths = {path for change in review.changes.files for path in (change.path, change.old_path) if path}
    touched: set[str] = set()
    defines: set[str] = set()
    for model in (review.base, review.head):
        for macros in macro_table.macros_of(model, sorted(paths)).values():
            touched.update(name for name, _line in (*macros.defined, *macros.tested))
            touched.update(macros.mentioned)
            defines.update(name for name, _line in macros.defined)
    return frozenset(touched), frozenset(defines)


def _digits_only(first: str, second: str) -> bool:
    """Names that differ only in their digits: variants (`AVX2`, `AVX512`), not typos."""
    return re.sub(r"\d+", "#", first) == re.sub(r"\d+", "#", second)


def _hit(snap: Snapshot, place: MacroPlace, near: list[MacroPlace]) -> Hit:
    spelled = " or ".join(f"`{other.name}`" for other in near)
    return Hit(
        path=place.path,
        line=place.line,
        message=(
            f"`{place.name}` is tested here but nothing defines it (no `#define`, no build flag or compile definition, "
            f"no build file names it), so the code it guards is compiled out of every build; it is one or two letters "
            f"from {spelled}, which the repository defines. Test the defined spelling."
        ),
        key=f"{place.name}|{place.path}",
        target=place.name,
        offending_text=place.name,
        evidence=(
            Evidence(place.path, place.line, f"tests `{place.name}`"),
            *(Evidence(other.path, other.line, f"`{other.name}` is defined here ({other.how})") for other in near),
        ),
        fix=_respell(snap, place, near[0].name) if len(near) == 1 else None,
    )


def _compiler_hit(snap: Snapshot, place: MacroPlace, compiler: str | None) -> Hit:
    spelling = compiler or ""
    return Hit(
        path=place.path,
        line=place.line,
        message=(
            f"`{place.name}` is tested here but nothing defines it (no `#define`, no build flag or compile definition, "
            f"no build file names it), so the code it guards is compiled out of every build; compilers define "
            f"`{spelling}`, with the underscores, not `{place.name}`. Test the compiler's spelling."
        ),
        key=f"{place.name}|{place.path}",
        target=place.name,
        offending_text=place.name,
        evidence=(Evidence(place.path, place.line, f"tests `{place.name}`; the compiler defines `{spelling}`"),),
        fix=_respell(snap, place, spelling),
    )


def _respell(snap: Snapshot, place: MacroPlace, spelling: str) -> Fix | None:
    text = snap.head.text(place.path) or ""
    lines = text.split("\n")
    if place.line > len(lines):
        return None
    pattern = re.compile(rf"(?<!\w){re.escape(place.name)}(?!\w)")
    changed = pattern.sub(spelling, lines[place.line - 1])
    fixed = "\n".join([*lines[: place.line - 1], changed, *lines[place.line :]])
    return fix_between(place.path, text, fixed, f"test `{spelling}`")


_REDUCE = (
    "#pragma once\n"
    "template <typename Func>\n"
    "bool parallel_for_each_reduce(Func f) {\n"
    "#ifdef {gate}\n"
    "  return parallel_for(f);\n"
    "#else\n"
    "  return f();\n"
    "#endif\n"
    "}\n"
)
_DEATH_TEST = "#pragma once\n#if {gate}\n#define ET_EXPECT_DEATH(s, m) ((void)0)\n#else\n#define ET_EXPECT_DEATH(s, m) EXPECT_DEATH(s, m)\n#endif\n"
_BUILD_MODES = 'def build_mode_flags(mode):\n    return ["-D__ET_BUILD_MODE_COV=1"] if "-cov" in mode else []\n'
_PAL = "#if defined({gate})  // expect: gate-macro-misspelt\n#include <stdio.h>\nvoid et_pal_init(void) {{}}\n#endif\n"
_TARGETS = 'cxx_library(\n    name = "reduce_util",\n    exported_headers = ["reduce_util.h"],\n    exported_preprocessor_flags = ["-DET_USE_THREADPOOL"],\n)\n'

CHECK = Check(
    id="gate-macro-misspelt",
    inputs=CPP_FILES + BUCK_FILES + CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Preprocessor gate tests a misspelt macro that nothing defines",
    fixable=True,
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "kernels/util/BUCK": _TARGETS,
                "kernels/util/reduce_util.h": _REDUCE.replace(
                    "{gate}", "ET_UE_THREADPOOL  // expect: gate-macro-misspelt"
                ),
            },
            fixed={
                "kernels/util/reduce_util.h": _REDUCE.replace(
                    "{gate}", "ET_USE_THREADPOOL  // expect: gate-macro-misspelt"
                )
            },
        ),
        # The underscores dropped from the test, kept by the flag (187bd055fa, DeathTest.h).
        Example(
            head={
                "shim_et/xplat/executorch/build/runtime_wrapper.bzl": _BUILD_MODES,
                "test/utils/DeathTest.h": _DEATH_TEST.format(gate="ET_BUILD_MODE_COV  // expect: gate-macro-misspelt"),
            },
            fixed={
                "test/utils/DeathTest.h": _DEATH_TEST.format(gate="__ET_BUILD_MODE_COV  // expect: gate-macro-misspelt")
            },
        ),
        # A compiler's macro with its underscores dropped (6941d46f14, et_pal.cpp).
        Example(
            head={"backends/cadence/runtime/et_pal.cpp": _PAL.format(gate="XTENSA")},
            fixed={"backends/cadence/runtime/et_pal.cpp": _PAL.format(gate="__XTENSA__")},
        ),
    ),
    good=(
        Example(
            head={
                "kernels/util/BUCK": _TARGETS,
                "kernels/util/reduce_util.h": _REDUCE.replace("{gate}", "ET_USE_THREADPOOL"),
            }
        ),
        # Compiler and platform macros, digit variants and vendored copies are not ours to define.
        Example(
            head={
                "kernels/util/BUCK": _TARGETS.replace("ET_USE_THREADPOOL", "CPU_CAPABILITY_AVX2"),
                "kernels/util/reduce_util.h": _REDUCE.replace("{gate}", "CPU_CAPABILITY_AVX512"),
                "kernels/util/platform.h": _REDUCE.replace("{gate}", "__ANDROID__"),
                "third-party/lib/dtypes.h": _REDUCE.replace("{gate}", "CPU_CAPABILITY_AVX3"),
            }
        ),
        # The gate picks the value of the near name: a different macro (cac2c05d8c dropped
        # addmm_optimized.glsl's #define TILE_ROW_2; matmul.h's branch was dead, not misspelt).
        Example(
            head={
                "backends/vulkan/glsl/matmul.h": "#ifdef TILE_ROW_2\n#define TILE_ROWS 2\n#else\n#define TILE_ROWS 4\n#endif\n",
                "backends/vulkan/glsl/addmm_optimized.glsl": "#define TILE_ROWS ${TILE_ROWS}\n",
            }
        ),
        # A shader template defines it (Vulkan's addmm_optimized.glsl and glsl/matmul.h, Jun - Sep 2024).
        Example(
            head={
                "backends/vulkan/glsl/matmul.h": "#ifdef TILE_ROW_2\n#define TILE_ROWS 2\n#else\n#define TILE_ROWS 4\n#endif\n",
                "backends/vulkan/glsl/addmm_optimized.glsl": '$if TILE_ROW == "tile_row_2":\n  #define TILE_ROW_2\n#include "matmul.h"\n',
            }
        ),
        # A name a build script mentions may be defined by it.
        Example(
            head={
                "kernels/util/BUCK": _TARGETS,
                "kernels/util/reduce_util.h": _REDUCE.replace("{gate}", "ET_USE_THREADPOOLS"),
                "scripts/build.sh": 'cmake -DCMAKE_CXX_FLAGS="$EXTRA" # sets ET_USE_THREADPOOLS when asked\n',
            }
        ),
    ),
)
