"""Buck and CMake compile one source with different macros, and an `#if` in it takes different branches.

The same file is built twice: by a Buck target and by its CMake twin (the target compiling the
same sources). When one build defines a macro for it (Buck `preprocessor_flags`, a dep's
`exported_preprocessor_flags`; CMake `target_compile_definitions`, or a library's PUBLIC
definitions) and the other does not, an `#if` in the file compiles one branch in Buck and another
in CMake: a feature present in one build only, or a declaration one build sees and the other
does not, failing at link time there.

Reported: an `#if` block of a source both targets compile whose condition evaluates to
different values under the two builds' definitions (undefined macros are 0, as in C). Only
plain, unconditional flags are compared: a target whose flags sit in a `select()` is left out
(which branch a build takes is a configuration question). When several Buck targets pair with
one CMake target (ATen and portable variants), all of them must disagree with CMake.

Example (bad): the Buck target passes `-DET_USE_THREADPOOL` and the CMake twin does not, while
the source tests `#ifdef ET_USE_THREADPOOL`.

Use instead: define the macro in both builds (or in neither).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.cmake.model import CMakeModel, Scoped
from bot.cpp.conditions import defines_from_flags, evaluate_condition
from bot.facts import cmake_links, cmake_models, pairing
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line

_FLAG_ATTRIBUTES = ("preprocessor_flags", "exported_preprocessor_flags", "compiler_flags")
_COMPILER = {"__cplusplus": "201703L"}


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    reported: set[tuple[str, int]] = set()
    targets = _buck_targets(snap.head)
    for profile in snap.config.cmake_profiles:
        model = cmake_models.cmake_model(snap.head, profile)
        pairs = pairing.pairing(snap.head, profile)
        for name, cmake_target in sorted(model.targets.items()):
            twins = [targets[label] for label in pairs.closest_buck(name) if label in targets]
            evaluated = [_buck_defines(snap.head, targets, twin) for twin in twins]
            buck_sets = [defines for defines in evaluated if defines is not None]
            if not twins or len(buck_sets) != len(evaluated):
                continue
            cmake_defines = _cmake_defines(model, name)
            for source in sorted(set().union(*(pairs.shared(t.label, name) for t in twins))):
                facts = snap.head.source_facts(source)
                for block in facts.conditional_blocks if facts else ():
                    if (source, block.line) in reported:
                        continue
                    in_cmake = _evaluate(block.condition, cmake_defines)
                    in_buck = {_evaluate(block.condition, defines) for defines in buck_sets}
                    if in_cmake is None or len(in_buck) != 1 or in_cmake in in_buck:
                        continue
                    (buck_value,) = in_buck  # the twins agree
                    if buck_value is None:
                        continue
                    reported.add((source, block.line))
                    yield _hit(
                        snap,
                        name,
                        cmake_target,
                        twins[0],
                        source,
                        block.line,
                        block.condition,
                        buck_sets[0],
                        cmake_defines,
                        buck_value,
                    )


def _evaluate(condition: str, defines: Mapping[str, tuple[str, str, int]]) -> bool | None:
    values = {**_COMPILER, **{name: value for name, (value, _path, _line) in defines.items()}}
    return evaluate_condition(condition, values, assume_undefined_false=True)


def _buck_targets(build: BuildModel) -> dict[str, BuckTarget]:
    """Label -> the target, first cell that defines it (C++ libraries and binaries only)."""
    found: dict[str, BuckTarget] = {}
    for cell in CELLS:
        for target in pairing.cell_primary_targets(build, cell):
            if "cxx" in target.kind or "cpp" in target.kind:
                found.setdefault(target.label, target)
    return found


def _plain_flags(target: BuckTarget, attribute: str) -> list[str] | None:
    value = target.attr(attribute)
    if value is None:
        return []
    if isinstance(value, (list, tuple)) and all(isinstance(flag, str) for flag in value):
        return list(value)
    return None  # a select() or a computed value: not a plain, unconditional list


def _buck_defines(
    build: BuildModel, targets: Mapping[str, BuckTarget], twin: BuckTarget
) -> dict[str, tuple[str, str, int]] | None:
    """macro -> (value, path, line) the Buck build compiles the twin's sources with; None when unknown."""
    found: dict[str, tuple[str, str, int]] = {}
    own = [(twin, attribute) for attribute in _FLAG_ATTRIBUTES]
    # exported_preprocessor_flags reach direct dependents, and through exported_deps further.
    visible = list(twin.labels("deps") + twin.labels("exported_deps"))
    seen = set(visible)
    queue = deque(visible)
    while queue:
        dep = targets.get(queue.popleft())
        if dep is None:
            continue
        own.append((dep, "exported_preprocessor_flags"))
        for label in dep.labels("exported_deps"):
            if label not in seen:
                seen.add(label)
                queue.append(label)
    for target, attribute in own:
        flags = _plain_flags(target, attribute)
        if flags is None:
            return None
        line = attribute_line(build.text(target.path) or "", target, attribute) or target.line
        for name, value in defines_from_flags(flags).items():
            if value is not None:
                found.setdefault(name, (value, target.path, line))
    return found


def _cmake_defines(model: CMakeModel, name: str) -> dict[str, tuple[str, str, int]]:
    """macro -> (value, path, line) for the CMake target's compile line: its own definitions and
    the PUBLIC/INTERFACE ones of what it links, transitively through PUBLIC/INTERFACE links."""
    target = model.targets[name]
    items: list[Scoped] = [d for d in target.compile_definitions if d.scope in ("PRIVATE", "PUBLIC")]
    queue = deque(cmake_links.resolve(model, item.value) for item in target.link_libraries)
    seen = {name}
    while queue:
        library = model.targets.get(queue.popleft())
        if library is None or library.name in seen:
            continue
        seen.add(library.name)
        items += [d for d in library.compile_definitions if d.scope in ("PUBLIC", "INTERFACE")]
        queue.extend(
            cmake_links.resolve(model, i.value) for i in library.link_libraries if i.scope in ("PUBLIC", "INTERFACE")
        )
    found: dict[str, tuple[str, str, int]] = {}
    for item in items:
        if item.value and "$<" not in item.value:
            for macro, value in defines_from_flags(["-D" + item.value]).items():
                if value is not None:
                    found.setdefault(macro, (value, item.path, item.line))
    return found


def _hit(
    snap: Snapshot,
    name: str,
    cmake_target,
    twin: BuckTarget,
    source: str,
    line: int,
    condition: str,
    buck: Mapping[str, tuple[str, str, int]],
    cmake: Mapping[str, tuple[str, str, int]],
    in_buck: bool,
) -> Hit:
    differing = sorted(
        m for m in set(buck) | set(cmake) if m in condition and buck.get(m, ("",))[0] != cmake.get(m, ("",))[0]
    )
    evidence = [
        Evidence(
            source,
            line,
            f"`#if {condition}` is {'true' if in_buck else 'false'} in Buck, {'false' if in_buck else 'true'} in CMake",
        )
    ]
    for macro in differing:
        if macro in buck:
            evidence.append(Evidence(buck[macro][1], buck[macro][2], f"Buck defines `{macro}` for `{twin.label}`"))
        if macro in cmake:
            evidence.append(Evidence(cmake[macro][1], cmake[macro][2], f"CMake defines `{macro}` for `{name}`"))
    which = ", ".join(f"`{m}`" for m in differing) or "its macros"
    return Hit(
        path=source,
        line=line,
        message=(
            f"`{source}` is compiled by `{twin.label}` (Buck) and `{name}` (CMake), which define {which} differently: "
            f"`#if {condition}` takes a different branch in each build, so one of them compiles code the other leaves out. "
            "Define the macro in both builds, or in neither."
        ),
        key=f"{source}|{condition}",
        target=name,
        offending_text=condition,
        evidence=tuple(evidence),
    )


_SOURCE = "int parallel_grain() {\n#ifdef ET_USE_THREADPOOL{marker}\n  return 512;\n#else\n  return 1;\n#endif\n}\n"
_ROOT = "cmake_minimum_required(VERSION 3.29)\nproject(demo)\nadd_subdirectory(kernels)\n"


def _files(buck_flags: str, cmake_definitions: str, marker: str = "") -> dict[str, str]:
    return {
        "CMakeLists.txt": _ROOT,
        "kernels/BUCK": f'cxx_library(\n    name = "reduce_util",\n    srcs = ["reduce_util.cpp"],\n    preprocessor_flags = [{buck_flags}],\n)\n',
        "kernels/CMakeLists.txt": "add_library(kernels_util STATIC reduce_util.cpp)\n" + cmake_definitions,
        "kernels/reduce_util.cpp": _SOURCE.replace("{marker}", marker),
    }


CHECK = Check(
    id="gate-macro-build-parity",
    inputs=BUCK_FILES + CMAKE_FILES + CPP_FILES,
    severity=Severity.MINOR,
    title="Buck and CMake compile one source with macros that pick different #if branches",
    doc=__doc__,
    run=run,
    bad=(Example(head=_files('"-DET_USE_THREADPOOL"', "", "  // expect: gate-macro-build-parity")),),
    good=(
        Example(
            head=_files('"-DET_USE_THREADPOOL"', "target_compile_definitions(kernels_util PRIVATE ET_USE_THREADPOOL)\n")
        ),
        # `=0` and absent read the same in `#if X`: no branch differs.
        Example(
            head={
                **_files('"-DET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0"', ""),
                "kernels/reduce_util.cpp": "#if ET_ENABLE_DEPRECATED_CONSTANT_BUFFER\nint legacy();\n#endif\n",
            }
        ),
    ),
)
