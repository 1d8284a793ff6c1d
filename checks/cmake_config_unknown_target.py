"""An installed CMake package config names a target that the build no longer defines.

`find_package(executorch CONFIG)` runs the package config the build installs
(`tools/cmake/executorch-config.cmake`) in the consumer's project. It tests the package's
targets by name (`if(TARGET aoti_cuda)`, or a list such as `optional_lib_list` that a `foreach`
tests with `TARGET ${lib}`). When a target is renamed and the config keeps the old name, the test
is false in every consumer: the library silently drops out of `EXECUTORCH_LIBRARIES`, and
consumers link without the backend (ExecuTorch renamed `aoti_cuda` to `aoti_cuda_backend` and
`executorch-config.cmake` kept `aoti_cuda` until 1034a0f88f).

Reported: a name the config tests that no CMake file of the tree defines (`add_library`,
`add_executable`, `add_custom_target`, an `EXPORT_NAME`, or a call to a function of the tree
that adds targets from its arguments) while the base defined it, or while a target one or two
edits away is defined (a misspelling). Names of targets from submodules or installed
dependencies that the tree never defined are left alone.

Example (bad): `add_library(aoti_cuda_backend ...)` replaces `add_library(aoti_cuda ...)` and
the config still lists `aoti_cuda`.

Use instead: rename the entry in the config along with the target.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.check import CMAKE_FILES, Check, Example
from bot.facts import package_configs
from bot.facts.package_configs import NamedTarget
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.spelling import within_two_edits


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    defined = package_configs.defined_targets(snap.head)
    defined_at_base = package_configs.defined_targets(snap.base)
    for config in package_configs.shipped_configs(snap.head):
        parsed = package_configs.parsed(snap.head, config)
        if parsed is None:
            continue
        for named in package_configs.named_targets(parsed):
            if named.name in defined:
                continue
            near = sorted(name for name in defined if within_two_edits(named.name, name))
            was = defined_at_base.get(named.name)
            if (was is None and not near) or (was is not None and _unreadable(snap, was[0])):
                continue
            renamed = _renamed_to(snap, was, defined, defined_at_base) if was else ()
            yield _hit(snap, named, was, renamed or tuple(near))


def _unreadable(snap: Snapshot, path: str) -> bool:
    """The file that defined the name at base no longer parses: what it defines is unknown."""
    parsed = package_configs.parsed(snap.head, path)
    return parsed is not None and bool(parsed.problems)


def _renamed_to(snap: Snapshot, was: tuple[str, int], defined, defined_at_base) -> tuple[str, ...]:
    """Targets new at head in the file that defined the old name: what it was renamed to."""
    return tuple(
        sorted(name for name, (path, _line) in defined.items() if path == was[0] and name not in defined_at_base)
    )


def _hit(snap: Snapshot, named: NamedTarget, was: tuple[str, int] | None, candidates: tuple[str, ...]) -> Hit:
    evidence = [Evidence(named.path, named.line, f"the config tests for `{named.name}`")]
    if was is not None:
        evidence.append(Evidence(was[0], was[1], f"`{named.name}` was defined here at the base"))
    head_defined = package_configs.defined_targets(snap.head)
    for name in candidates:
        evidence.append(Evidence(*head_defined[name], f"`{name}` is defined here"))
    why = (
        "the base defined it"
        if was is not None
        else f"a target of a near name is defined ({', '.join(f'`{c}`' for c in candidates)})"
    )
    instead = f" (renamed to {' or '.join(f'`{c}`' for c in candidates)}?)" if candidates else ""
    return Hit(
        path=named.path,
        line=named.line,
        message=(
            f"The installed package config tests for the target `{named.name}`, which no CMake file of the tree defines "
            f"any more{instead}; {why}. In every consumer's `find_package` the test is false and the library silently "
            "drops out. Rename the entry along with the target."
        ),
        key=named.name,
        target=named.name,
        offending_text=named.name,
        evidence=tuple(evidence),
        fix=_rename_fix(snap, named, candidates[0]) if len(candidates) == 1 else None,
    )


def _rename_fix(snap: Snapshot, named: NamedTarget, new: str) -> Fix | None:
    text = snap.head.text(named.path) or ""
    lines = text.split("\n")
    line = lines[named.line - 1]
    words = line.split()
    if words.count(named.name) != 1 and f"TARGET {named.name}" not in line:
        return None
    changed = re.sub(rf"(?<![\w.+:-]){re.escape(named.name)}(?![\w.+:-])", new, line, count=1)
    fixed = "\n".join([*lines[: named.line - 1], changed, *lines[named.line :]])
    return fix_between(named.path, text, fixed, f"test for `{new}`")


_INSTALL = "install(FILES tools/cmake/executorch-config.cmake DESTINATION lib/cmake/ExecuTorch)\n"
_CONFIG = (
    "set(optional_lib_list\n"
    "    {name}\n"
    "    xnnpack_backend\n"
    "    torchao_ops_executorch\n"
    ")\n"
    "foreach(lib ${{optional_lib_list}})\n"
    "  if(TARGET ${{lib}})\n"
    "    list(APPEND EXECUTORCH_LIBRARIES ${{lib}})\n"
    "  endif()\n"
    "endforeach()\n"
)


def _tree(cuda_target: str, config_name: str) -> dict[str, str]:
    return {
        "CMakeLists.txt": "add_subdirectory(backends/cuda)\nadd_library(xnnpack_backend STATIC x.cpp)\n" + _INSTALL,
        "backends/cuda/CMakeLists.txt": f"add_library({cuda_target} STATIC cuda_backend.cpp)\n",
        "tools/cmake/executorch-config.cmake": _CONFIG.format(name=config_name),
    }


CHECK = Check(
    id="cmake-config-unknown-target",
    inputs=(*CMAKE_FILES, ".cmake.in"),
    severity=Severity.MAJOR,
    title="Installed package config names a target the build no longer defines",
    fixable=True,
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base=_tree("aoti_cuda", "aoti_cuda"),
            head=_tree("aoti_cuda_backend", "aoti_cuda  # expect: cmake-config-unknown-target"),
            fixed={
                "tools/cmake/executorch-config.cmake": _CONFIG.format(
                    name="aoti_cuda_backend  # expect: cmake-config-unknown-target"
                )
            },
        ),
    ),
    good=(
        Example(base=_tree("aoti_cuda", "aoti_cuda"), head=_tree("aoti_cuda_backend", "aoti_cuda_backend")),
        # torchao_ops_executorch comes from a submodule the tree does not hold: never defined here.
        Example(head=_tree("aoti_cuda_backend", "aoti_cuda_backend")),
    ),
)
