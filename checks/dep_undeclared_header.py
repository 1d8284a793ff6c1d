"""A target includes a header whose owning target is not among its dependencies.

Buck puts on a target's include path the exported headers of its `deps` and `exported_deps`,
and, through each of those, of their `exported_deps` transitively; nothing else. An include
of a header owned by a target outside that closure compiles only while some other path
happens to bring the header in (a sibling's dependency, a dependent that declares it), and
breaks when that path goes away: a build of the target on its own, a new consumer, a
refactor elsewhere. For a header, every dependent inherits the gap.

A target without sources compiles nothing itself: its headers are compiled in its dependents,
with their include paths. Its gap is raised only where a compiling dependent (reached directly
or through source-less dependents that export it) lacks the owner too, and names that
dependent; where every one of them has it, the header builds (irunner.h including
runtime/core/error.h, used only by runners that depend on runtime/core). A bundle's private
deps pass nothing on: a target that reaches a header only through `deps` of a dependency
(`all_deps` listing its members as `deps`, before 4014cc613d exported them) has the gap.

What counts: the sources and headers of a C++ target, those given as labels of an
`export_file` included (`//executorch/extension/pybindings:pybindings.cpp`), and the repository
headers no target owns that they pull in, with the target's preprocessor flags applied, including the flags a
macro adds (`use_cuda = True` adding `-DEXECUTORCH_PYBINDINGS_CUDA`): an include under an `#if`
is considered only when the target's flags make the condition provably true. Targets whose
closure runs through a label the cell does not define are skipped, as are headers no target
owns (system and third-party headers). The internal cells fold in the dependencies
ExecuTorch's wrapper adds, as seen where it is evaluated (OSS), and skip targets made by
macros the repository does not contain. Every cell is held to the same rule, fbcode too: a
header reached only through a chain of private deps builds there today by accident (the seed
review of #24643: "builds only because cuda_backend re-exports it through slimtensor ->
storage"), and the real tree fixed such gaps later (cfd51c25b9, fixed by 12d7518d3a).

Example (bad): with `use_cuda = True`, `pybindings_cuda.h` includes
`<executorch/extension/cuda/cuda_allocator.h>`, but the macro adds only `:caller_stream`,
which does not export `:cuda_allocator`.

Deps are a fact of a configuration: an owner the target sees only through a dep a `select()`
leaves out on some platform of the cell (`select({"ovr_config//cuda:has_cuda": [":guard"],
"DEFAULT": []})`) is a gap on that platform, named in the finding, where the target builds
and compiles the including file (a source under the same `select()` is not built there).

A header-only target that gains a source is blamed for the old gaps of its headers: they are
compiled in the target itself from then on (ca39d86f4f, fixed by 48e866b90e).

Confirmed before posting: with the compiled tier on, a gap the change adds is asked of the
compiler (the target's source that includes it, or the dependents a header compiles in, in the
cell's configurations): one it confirms carries the compiler's own line, the configuration and the
build that fails; one where the include resolves is not posted; one no source compiles yet is info.

Use instead: add the owning target (`//executorch/extension/cuda:cuda_allocator`) to the
deps the macro or the target declares (to `exported_deps` when a public header includes it).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterator

from bot.buck import edits
from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example, Share
from bot.facts import verdicts, xref
from bot.facts.header_gaps import HeaderGap, activated_targets, gaps_in_cell
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, ReviewMode, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line, call_of, item_line
from checks.support.compiler_confirmation import confirmed, new_hits


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    hits = verdicts.whole_tree(snap.head, "dep-undeclared-header", lambda: _undeclared(snap.head))
    if snap.mode is ReviewMode.BASELINE:
        yield from hits
        return
    activated = activated_targets(snap)
    named = [
        _blamed_on_activation(hit, sources) if sources and hit.path not in sources else hit
        for hit in hits
        for sources in [activated.get(hit.target or "")]
    ]
    # The gaps the change adds are asked of the compiler (the target's sources, or the dependents
    # a header compiles in): refuted ones are not posted, an include nothing compiles is info.
    base = (
        () if snap.is_scan else verdicts.whole_tree(snap.base, "dep-undeclared-header", lambda: _undeclared(snap.base))
    )
    new, old = new_hits(snap, named, base)
    yield from old
    yield from confirmed(snap.head, new, own=True, uncompiled_at_info=True)


def _blamed_on_activation(hit: Hit, sources: tuple[str, ...]) -> Hit:
    """The gap, named as this change's doing: the target now compiles the header itself."""
    named = ", ".join(f"`{path}`" for path in sources[:3])
    return dataclasses.replace(
        hit,
        key=f"{hit.key}|activated",
        message=(
            f"{hit.message} The gap predates this change, but `{hit.target}` was header-only and now "
            f"compiles {named}, so `{hit.path}` is built with the target's own deps: this change makes it "
            "a build error."
        ),
    )


def _undeclared(model: BuildModel) -> tuple[Hit, ...]:
    """Hits of one revision."""
    gaps: dict[tuple[str, str, str], list[HeaderGap]] = {}
    for cell in CELLS:
        for gap in gaps_in_cell(model, cell):
            gaps.setdefault((gap.target.primary_label, gap.path, gap.include), []).append(gap)
    return tuple(_hit(model, found) for _key, found in sorted(gaps.items()))


def _hit(model: BuildModel, gaps: list[HeaderGap]) -> Hit:
    gap = min(gaps, key=lambda g: CELLS.index(g.cell))
    cells = sorted({g.cell for g in gaps}, key=CELLS.index)
    target, owner = gap.target, gap.owner
    owner_label = owner.primary_label
    owner_text = model.text(owner.path) or ""
    header_name = gap.include.rsplit("/", 1)[-1]
    evidence = [
        Evidence(
            owner.path,
            item_line(owner_text, owner, _listed_name(owner, gap.include)) or owner.line,
            f"`{owner_label}` owns `{header_name}` (`{gap.owner_attribute}`)",
        ),
    ]
    for step_path, step_line, step_include in gap.chain:
        evidence.append(
            Evidence(step_path, step_line, f"`{target.primary_label}` reaches `{gap.path}` through `{step_include}`")
        )
    flag_origin = _flag_origin(model, target, gap.conditions)
    if flag_origin is not None:
        evidence.append(flag_origin)
    target_text = model.text(target.path) or ""
    deps_line = attribute_line(target_text, target, "deps") or target.line
    evidence.append(
        Evidence(target.path, deps_line, f"`{target.primary_label}` declares its deps here, without `{owner_label}`")
    )
    dependent = gap.dependent
    if dependent is not None:
        evidence.append(
            Evidence(
                dependent.path,
                attribute_line(model.text(dependent.path) or "", dependent, "deps") or dependent.line,
                f"`{dependent.primary_label}` compiles `{gap.path}` and does not see `{owner_label}` either",
            )
        )
    active = f" (active for it: `{' && '.join(gap.conditions)}`)" if gap.conditions else ""
    # A header-only target's headers compile in its dependents, which see only its exported deps.
    attribute = "exported_deps" if dependent is not None else "deps"
    compiled_by = (
        f" `{target.primary_label}` has no sources: its headers compile in its dependents, and "
        f"`{dependent.primary_label}` does not have `{owner_label}` either."
        if dependent is not None
        else " It compiles only while something else brings the header in."
    )
    if gap.platform:
        return _configured_hit(gap, target, owner_label, active, evidence)
    message = (
        f"`{target.primary_label}` includes `{gap.include}`{active}, owned by `{owner_label}`, which none of its "
        f"dependencies provides (not in its `deps` or, through them, their `exported_deps`; "
        f"in {', '.join(f'`{c}`' for c in cells)})."
        f"{compiled_by} Add `{owner_label}` to the {attribute}"
        + (" the macro adds with that flag." if flag_origin is not None else ".")
    )
    fix = None if gap.conditions else _add_dep_fix(target_text, target, owner_label, attribute)
    return Hit(
        path=gap.path,
        line=gap.line,
        message=message,
        key=f"{target.primary_label}<-{gap.include}",
        target=target.primary_label,
        cell=gap.cell,
        offending_text=gap.include,
        evidence=tuple(evidence),
        fix=fix,
    )


def _configured_hit(gap: HeaderGap, target: BuckTarget, owner_label: str, active: str, evidence: list) -> Hit:
    """A gap on one platform only: the owner comes through a dependency chosen by a select()."""
    message = (
        f"`{target.primary_label}` includes `{gap.include}`{active}, owned by `{owner_label}`, but on "
        f"`{gap.platform}` (in `{gap.cell}`) none of its dependencies provides it: the owner is reached only "
        "through a dependency a `select()` leaves out there, and the target still builds there. Put the include "
        f"under the same condition as the dependency, depend on `{owner_label}` outside the `select()`, or make "
        f"`{target.primary_label}` incompatible with `{gap.platform}`."
    )
    deps = evidence[-1]
    evidence = [*evidence[:-1], Evidence(deps.path, deps.line, f"`{target.primary_label}` declares its deps here")]
    return Hit(
        path=gap.path,
        line=gap.line,
        message=message,
        key=f"{target.primary_label}<-{gap.include}|{gap.platform}",
        target=target.primary_label,
        cell=gap.cell,
        offending_text=gap.include,
        evidence=tuple(evidence),
    )


def _listed_name(owner: BuckTarget, include: str) -> str:
    for attribute in ("exported_headers", "headers"):
        for include_name, repo_path in xref.header_entries(owner, attribute):
            if include_name == include:
                return posixpath.relpath(repo_path, owner.package) if owner.package else repo_path
    return include.rsplit("/", 1)[-1]


_DEFINED = re.compile(r"defined\s*\(?\s*(\w+)")


def _flag_origin(model: BuildModel, target: BuckTarget, conditions: tuple[str, ...]) -> Evidence | None:
    """Where the `-D` flag that makes the include active is written (often inside a macro)."""
    for condition in conditions:
        for macro in _DEFINED.findall(condition) or re.findall(r"\w+", condition)[:1]:
            for frame in reversed(target.stack):
                text = model.text(frame.path) or ""
                for number, line in enumerate(text.splitlines(), start=1):
                    if f"-D{macro}" in line:
                        return Evidence(frame.path, number, f"`-D{macro}` is added here for `{target.primary_label}`")
    return None


def _add_dep_fix(text: str, target: BuckTarget, owner_label: str, attribute: str = "deps") -> Fix | None:
    """Add the owner to the `deps = [...]` (or `exported_deps`) list written in the target's call, or
    write the keyword where the call has none; a list computed by a macro is left to its author."""
    call = call_of(text, target)
    if call is None or call.keyword("name") is None:
        return None
    written = _written_label(text, target, owner_label)
    deps = call.keyword(attribute)
    if deps is None:
        # Where build files write it: after the sources and headers (and `deps`), before the rest.
        placed_after = ("name", "srcs", "headers", "exported_headers") + (("deps",) if attribute != "deps" else ())
        written_before = [k for k in call.keywords if k.name in placed_after]
        after = max(written_before, key=lambda k: k.span.start).name
        fixed = edits.insert_keyword(text, call, attribute, f"[{edits.string_literal(text, written)}]", after=after)
    elif deps.value_list is not None:
        fixed = edits.add_list_element(text, deps.value_list, written)
    else:
        return None
    return fix_between(target.path, text, fixed, f"add `{written}` to {attribute}")


def _written_label(text: str, target: BuckTarget, label: str) -> str:
    """The label as this file writes labels: `:name` in the same package, `//executorch/...` if used."""
    package, name = label[2:].split(":", 1)
    if package == target.package:
        return f":{name}"
    if "//executorch/" in text:
        return f"//executorch/{package}:{name}"
    return label


_BUCKCONFIG = "[repositories]\n  root = .\n"
_CUDA_BUCK = (
    "cxx_library(\n"
    '    name = "runtime_api",\n'
    '    exported_headers = ["runtime_api.h"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
    "cxx_library(\n"
    '    name = "cuda_allocator",\n'
    '    srcs = ["cuda_allocator.cpp"],\n'
    '    exported_headers = ["cuda_allocator.h"],\n'
    '    exported_deps = [":runtime_api"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
    "cxx_library(\n"
    '    name = "caller_stream",\n'
    '    exported_headers = ["caller_stream.h"],\n'
    '    exported_deps = [":runtime_api"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
)


def _pybindings_macro(extra_deps: str) -> str:
    return (
        "def executorch_pybindings(name, srcs = [], deps = [], use_cuda = False):\n"
        "    preprocessor_flags = []\n"
        "    if use_cuda:\n"
        '        preprocessor_flags.append("-DEXECUTORCH_PYBINDINGS_CUDA")\n'
        f"        deps = deps + [{extra_deps}]\n"
        "    native.cxx_python_extension(\n"
        "        name = name,\n"
        "        srcs = srcs,\n"
        "        deps = deps,\n"
        "        preprocessor_flags = preprocessor_flags,\n"
        "    )\n"
    )


def _pybindings_files(extra_deps: str, marker: str, source: str = '"pybindings.cpp"') -> dict[str, str]:
    return {
        ".buckconfig": _BUCKCONFIG,
        "extension/cuda/BUCK": _CUDA_BUCK,
        "extension/cuda/runtime_api.h": "#pragma once\n",
        "extension/cuda/caller_stream.h": "#pragma once\n#include <executorch/extension/cuda/runtime_api.h>\n",
        "extension/cuda/cuda_allocator.h": "#pragma once\n#include <executorch/extension/cuda/runtime_api.h>\n",
        "extension/pybindings/pybindings.bzl": _pybindings_macro(extra_deps),
        "extension/pybindings/BUCK": (
            'load(":pybindings.bzl", "executorch_pybindings")\n'
            'executorch_pybindings(name = "portable_lib", srcs = ["pybindings.cpp"])\n'
            'native.export_file(name = "pybindings.cpp")\n'
            f'executorch_pybindings(name = "cuda_lib", srcs = [{source}], use_cuda = True)\n'
        ),
        "extension/pybindings/pybindings.cpp": (
            "#if defined(EXECUTORCH_PYBINDINGS_CUDA)\n"
            "#include <executorch/extension/cuda/caller_stream.h>\n"
            f"#include <executorch/extension/cuda/cuda_allocator.h>{marker}\n"
            "#endif\n"
        ),
    }


_RUNNER_BUCK = (
    "cxx_library(\n"
    '    name = "core",\n'
    '    exported_headers = ["error.h"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
    "cxx_library(\n"
    '    name = "result",\n'
    '    exported_headers = ["result.h"],\n'
    '    deps = [":core"],\n'
    '    visibility = ["PUBLIC"],\n'
    ")\n"
)


def _header_only_files(runner_deps: str, marker: str = "") -> dict[str, str]:
    return {
        ".buckconfig": _BUCKCONFIG,
        "runtime/core/BUCK": _RUNNER_BUCK,
        "runtime/core/error.h": "#pragma once\n",
        "runtime/core/result.h": "#pragma once\n",
        "runner/BUCK": (
            'cxx_library(name = "irunner", exported_headers = ["irunner.h"], visibility = ["PUBLIC"])\n'
            "cxx_library(\n"
            '    name = "text_runner",\n'
            '    srcs = ["text_runner.cpp"],\n'
            f"    deps = [{runner_deps}],\n"
            ")\n"
        ),
        "runner/irunner.h": f"#pragma once\n#include <executorch/runtime/core/error.h>{marker}\n",
        "runner/text_runner.cpp": "#include <executorch/runner/irunner.h>\n",
    }


def _slim_files(storage_flags: str, marker: str = "", condition: str = "") -> dict[str, str]:
    """SlimTensor's `storage` (#24817), whose CUDA guard dep is under select(has_cuda): absent on
    the CPU-only platforms xplat builds for, present on the CUDA one."""
    include = f"#include <executorch/slim/cuda/guard.h>{marker}\n"
    return {
        ".buckconfig": _BUCKCONFIG,
        "slim/cuda/BUCK": (
            "cxx_library(\n"
            '    name = "guard",\n'
            '    exported_headers = ["guard.h"],\n'
            '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
            '    visibility = ["PUBLIC"],\n'
            ")\n"
        ),
        "slim/cuda/guard.h": "#pragma once\n",
        "slim/core/BUCK": (
            "cxx_library(\n"
            '    name = "storage",\n'
            '    srcs = ["storage.cpp"],\n'
            '    deps = select({"ovr_config//cuda:has_cuda": ["//slim/cuda:guard"], "DEFAULT": []}),\n'
            f"{storage_flags}"
            ")\n"
        ),
        "slim/core/storage.cpp": f"#if {condition}\n{include}#endif\n" if condition else include,
    }


CHECK = Check(
    id="dep-undeclared-header",
    fixable=True,
    share=Share.WORKER,
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MAJOR,
    title="Header included from a target that is not a dependency",
    doc=__doc__,
    run=run,
    bad=(
        Example(head=_pybindings_files('"//extension/cuda:caller_stream"', "  // expect: dep-undeclared-header")),
        # The guard is a dep only with CUDA, but the include is unconditional: CPU-only builds break.
        Example(head=_slim_files("", "  // expect: dep-undeclared-header")),
        # The source given as a label (`export_file`, shared by several bindings) is read the same.
        Example(
            head=_pybindings_files(
                '"//extension/cuda:caller_stream"',
                "  // expect: dep-undeclared-header",
                '"//executorch/extension/pybindings:pybindings.cpp"',
            )
        ),
        # A header-only target gains a source: its header's old gap now breaks its own compile.
        Example(
            base={
                "ops/BUCK": 'cxx_library(name = "ops", headers = ["ops.h"])\n',
                "ops/ops.h": "#include <executorch/vec/vec.h>\n",
                "vec/BUCK": 'cxx_library(name = "vec", exported_headers = ["vec.h"], visibility = ["PUBLIC"])\n',
                "vec/vec.h": "int v();\n",
            },
            head={
                "ops/BUCK": 'cxx_library(name = "ops", srcs = ["ops.cpp"], headers = ["ops.h"])\n',
                "ops/ops.cpp": "#include <executorch/ops/ops.h>\nint ops();\n",
                "ops/ops.h": "#include <executorch/vec/vec.h>  // expect: dep-undeclared-header\n",
                "vec/BUCK": 'cxx_library(name = "vec", exported_headers = ["vec.h"], visibility = ["PUBLIC"])\n',
                "vec/vec.h": "int v();\n",
            },
            # ops now compiles ops.h itself, so vec is a dep of its own.
            fixed={
                "ops/BUCK": (
                    'cxx_library(name = "ops", srcs = ["ops.cpp"], headers = ["ops.h"], deps = ["//vec:vec"])\n'
                ),
            },
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "runtime/core/BUCK": _RUNNER_BUCK,
                "runtime/core/error.h": "#pragma once\n",
                # `:core` is a private dep of `:result`: its dependents do not see error.h.
                "runtime/core/result.h": "#pragma once\n#include <executorch/runtime/core/error.h>\n",
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:result"],\n'
                    ")\n"
                ),
                "runtime/executor/program.cpp": (
                    "#include <executorch/runtime/core/result.h>\n"
                    "#include <executorch/runtime/core/error.h>  // expect: dep-undeclared-header\n"
                ),
            },
            fixed={
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:core", "//runtime/core:result"],\n'
                    ")\n"
                ),
            },
        ),
        # The same header-only target, with a dependent that lacks the owner: that build breaks.
        # Header-only: its header compiles in text_runner, which sees only irunner's exported deps.
        Example(
            head=_header_only_files('"//runner:irunner"', "  // expect: dep-undeclared-header"),
            fixed={
                "runner/BUCK": (
                    'cxx_library(name = "irunner", exported_headers = ["irunner.h"], '
                    'exported_deps = ["//runtime/core:core"], visibility = ["PUBLIC"])\n'
                    "cxx_library(\n"
                    '    name = "text_runner",\n'
                    '    srcs = ["text_runner.cpp"],\n'
                    '    deps = ["//runner:irunner"],\n'
                    ")\n"
                ),
            },
        ),
        # No `deps` at all: the fix writes the keyword.
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "runtime/core/BUCK": _RUNNER_BUCK,
                "runtime/core/error.h": "#pragma once\n",
                "runtime/core/result.h": "#pragma once\n",
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                ),
                "runtime/executor/program.cpp": "#include <executorch/runtime/core/result.h>  // expect: dep-undeclared-header\n",
            },
            fixed={
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:result"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                ),
            },
        ),
    ),
    good=(
        # The include is compiled only where the dep is there: with CUDA both, on CPU-only neither.
        Example(
            head=_slim_files(
                '    preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DCUDA_AVAILABLE=1"], "DEFAULT": []}),\n',
                condition="defined(CUDA_AVAILABLE)",
            )
        ),
        # CUDA-only itself: it never builds where the dep is absent.
        Example(head=_slim_files('    compatible_with = ["ovr_config//cuda:has_cuda"],\n')),
        # The source that includes the guard is chosen by a select() of its own: compiled only with the dep.
        Example(
            head={
                **_slim_files(""),
                "slim/core/BUCK": (
                    "cxx_library(\n"
                    '    name = "storage",\n'
                    '    srcs = ["storage.cpp"] + select({"ovr_config//cuda:has_cuda": ["storage_cuda.cpp"], "DEFAULT": []}),\n'
                    '    deps = select({"ovr_config//cuda:has_cuda": ["//slim/cuda:guard"], "DEFAULT": []}),\n'
                    ")\n"
                ),
                "slim/core/storage.cpp": "int storage();\n",
                "slim/core/storage_cuda.cpp": "#include <executorch/slim/cuda/guard.h>\n",
            }
        ),
        Example(head=_pybindings_files('"//extension/cuda:caller_stream", "//extension/cuda:cuda_allocator"', "")),
        # A header-only target compiles nothing: its header builds in every dependent, all of
        # which have the owner (irunner.h including error.h, 08c07fa1d7).
        Example(head=_header_only_files('"//runtime/core:core", "//runner:irunner"')),
        # A compiling target exports a header its own source never includes: only dependents
        # compile it, and the one that does has the owner (6e63c47354's quantized_ops.h).
        Example(
            head={
                "ops/BUCK": (
                    'cxx_library(name = "quantize", srcs = ["quantize.cpp"], exported_headers = ["quantized.h"], '
                    'visibility = ["PUBLIC"])\n'
                ),
                "ops/quantize.cpp": "int quantize();\n",
                "ops/quantized.h": "#include <executorch/vec/vec.h>\n",
                "vec/BUCK": 'cxx_library(name = "vec", exported_headers = ["vec.h"], visibility = ["PUBLIC"])\n',
                "vec/vec.h": "int v();\n",
                "linear/BUCK": 'cxx_library(name = "linear", srcs = ["linear.cpp"], deps = ["//ops:quantize", "//vec:vec"])\n',
                "linear/linear.cpp": "#include <executorch/ops/quantized.h>\n",
            }
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "runtime/core/BUCK": _RUNNER_BUCK.replace('deps = [":core"]', 'exported_deps = [":core"]'),
                "runtime/core/error.h": "#pragma once\n",
                "runtime/core/result.h": "#pragma once\n#include <executorch/runtime/core/error.h>\n",
                "runtime/executor/BUCK": (
                    "cxx_library(\n"
                    '    name = "program",\n'
                    '    srcs = ["program.cpp"],\n'
                    '    deps = ["//runtime/core:result"],\n'
                    ")\n"
                ),
                "runtime/executor/program.cpp": (
                    "#include <executorch/runtime/core/result.h>\n"
                    "#include <executorch/runtime/core/error.h>\n"
                    "#include <vector>\n"
                ),
            }
        ),
    ),
)
