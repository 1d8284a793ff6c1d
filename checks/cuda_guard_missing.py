"""A CUDA target is defined in a cell that builds for CPU-only platforms without the CUDA guard.

The `xplat` cell builds every target of a package for every platform it is asked for: Android,
Apple, CPU-only Linux, wildcard builds such as `xplat/executorch/...`. A target that compiles
`.cu` sources, passes `nvcc_flags`, depends on a CUDA external dep (`cuda-lazy`, `cudart`, ...)
or on another CUDA target cannot build there: `cuda_runtime.h` is not found. The constraint
`compatible_with = ["ovr_config//cuda:has_cuda"]` (with `platforms = [CXX]`) makes those builds
skip the target. A guard dict splatted (`**cuda_kwargs`) into some CUDA targets of a package
but not others leaves the rest unguarded.

Example (bad): `runtime.cxx_library(name = "caller_stream", srcs = ["caller_stream.cu"])` in a
`targets.bzl` that `non_fbcode_target(_kind = define_common_targets)` makes visible in xplat.

Use instead: the guard the package already uses: its guard dict where it has one; where its
other CUDA targets are defined fbcode-only (the real tree's idiom: none of its packages uses the
constraint), define this one fbcode-only too; the configured constraint otherwise.

When the change did not touch the targets but a line that makes a package's targets visible in
the cell (`non_fbcode_target(_kind = define_common_targets)`), that line is the cause: one finding
there, with each exposed target as a related location.
"""

from __future__ import annotations

import re
from typing import Iterator

from bot.facts import xref
from bot.buck import edits
from bot.fixes import apply_fixes, fix_between
from checks.support.callsite import attribute_line, call_lines, call_of, item_line, outermost_frame
from bot.check import BUCK_FILES, Check, Example
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import Snapshot

_CXX_KINDS = re.compile(r"cxx_|cpp_|cuda|gpu_")


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    settings = snap.config.buck
    for cell in settings.cpu_only_cells:
        hits = list(_target_hits(snap, cell, settings))
        yield from _by_cause(snap, cell, hits)


def _by_cause(snap: Snapshot, cell: str, hits: list[Hit]) -> Iterator[Hit]:
    """Targets the change did not touch, exposed by a line it did: one finding at that line."""
    changes = snap.changes.by_path()
    exposed: dict[tuple[str, int], list[Hit]] = {}
    for hit in hits:
        own = changes.get(hit.path)
        touched_itself = own is not None and any(hit.line <= n <= (hit.end_line or hit.line) for n in own.added)
        root = next((e for e in hit.evidence if e.note.startswith("this line defines")), None)
        root_change = changes.get(root.path) if root is not None else None
        if touched_itself or root is None or root_change is None or root.line not in root_change.added:
            yield hit
        else:
            group = exposed.setdefault((root.path, root.line), [])
            if all(other.key != hit.key for other in group):  # the wrapper's `_static` twin folds in
                group.append(hit)
    for (path, line), group in sorted(exposed.items()):
        if len(group) == 1:
            yield group[0]
            continue
        labels = ", ".join(f"`{h.key}`" for h in group)
        package = path.rsplit("/", 1)[0] if "/" in path else ""
        yield Hit(
            path=path,
            line=line,
            message=(
                f"This line makes {len(group)} CUDA targets of the package visible in the `{cell}` cell, which "
                f"builds for CPU-only platforms, and none is guarded: {labels}. A CPU-only or wildcard build "
                "fails to compile them. Guard each (see the related locations), or keep the package's CUDA "
                "targets out of this cell."
            ),
            key=f"exposes-cuda:{cell}://{package}",
            target=f"//{package}",
            cell=cell,
            offending_text=(snap.head.text(path) or "").splitlines()[line - 1] if line else "",
            evidence=tuple(
                Evidence(h.path, h.line, f"`{h.key}`: {h.evidence[0].note if h.evidence else 'CUDA target'}")
                for h in group
            ),
            fix=_guard_each(snap, group),
        )


def _guard_each(snap: Snapshot, group: list[Hit]) -> Fix | None:
    """One fix that guards every target of a group, when they sit in one file and each has a fix.

    Their fixes were computed on the same text and touch different calls, so they are applied
    together and turned into one edit of that file (the file is often one the change did not
    touch, so the fix is a patch rather than a suggestion).
    """
    fixes = [hit.fix for hit in group]
    if any(fix is None for fix in fixes) or len({fix.path for fix in fixes}) != 1:
        return None
    path = fixes[0].path
    text = snap.head.text(path)
    if text is None:
        return None
    together = apply_fixes(text, fixes)
    if together.overlapping:
        return None
    advice = "; ".join(dict.fromkeys(fix.description for fix in fixes))
    return fix_between(path, text, together.text, f"guard each of them: {advice}")


def _target_hits(snap: Snapshot, cell: str, settings) -> Iterator[Hit]:
        graph = snap.head.cell(cell)
        reasons = snap.head.cuda_reasons(cell)
        guarded_splats = _guard_dicts(snap, graph, settings.cuda_constraint)
        fbcode_only = _fbcode_only_idiom(snap, cell, settings.cuda_constraint)
        for label, reason in sorted(reasons.items()):
            target = graph.targets[label]
            if not _CXX_KINDS.search(target.kind) or _is_guarded(target, settings.cuda_constraint):
                continue
            text = snap.head.text(target.path) or ""
            evidence = [_reason_evidence(snap, target, reason, text)]
            visible = outermost_frame(target)
            if visible is not None:
                evidence.append(
                    Evidence(visible.path, visible.line, f"this line defines the package's targets in `{cell}`")
                )
            splat = guarded_splats.get(target.path)
            call = call_of(text, target)
            if call is not None and call.keyword("name") is None:
                call = None  # not the rule's own call: nowhere to put the guard
            if splat:
                advice = f"splat the package's guard dict (`**{splat}`) as its other CUDA targets do"
                fix = None if call is None else fix_between(target.path, text, edits.insert_splat(text, call, splat), advice)
            elif target.package in fbcode_only:
                advice = (
                    "define it fbcode-only, as this repository defines its CUDA targets: with "
                    "`fbcode_target(_kind = ...)` in BUCK, or below an `if not is_fbcode(): return` in targets.bzl"
                )
                fix = _fbcode_target_fix(text, target, call, advice)
            else:
                constraint = f"[{edits.string_literal(text, settings.cuda_constraint)}]"
                advice = f"add `compatible_with = {constraint}`"
                fixed = None if call is None else edits.insert_keyword(text, call, "compatible_with", constraint, after="name")
                fix = None if fixed is None else fix_between(target.path, text, fixed, advice)
            yield Hit(
                path=target.path,
                line=target.line,
                end_line=target.end_line,
                message=(
                    f"`{label}` is defined in the `{cell}` cell, which builds for CPU-only platforms, "
                    f"and it {reason.describe()}; without the `{settings.cuda_constraint}` constraint a CPU-only "
                    f"or wildcard build of this package fails to compile it. Fix: {advice}."
                ),
                key=target.primary_label,
                target=label,
                cell=cell,
                offending_text=target.kind,
                evidence=tuple(evidence),
                fix=fix,
            )


def _fbcode_only_idiom(snap: Snapshot, cell: str, constraint: str) -> frozenset[str]:
    """Packages whose CUDA targets the repository keeps fbcode-only: it guards none with the
    constraint, and fbcode defines CUDA targets of the package that this cell does not."""
    graph = snap.head.cell(cell)
    if any(_is_guarded(target, constraint) for target in graph.targets.values()):
        return frozenset()  # the repository uses the constraint: that is its idiom
    fbcode = snap.head.cell("fbcode")
    return frozenset(
        fbcode.targets[label].package
        for label in snap.head.cuda_reasons("fbcode")
        if label not in graph.targets and label in fbcode.targets
    )


def _fbcode_target_fix(text: str, target, call, advice: str):
    """In a BUCK file that loads `fbcode_target`, wrap the call: `fbcode_target(_kind = K, ...)`."""
    if call is None or target.path.endswith(".bzl") or "fbcode_target" not in text:
        return None
    fixed = edits.insert_keyword(text, call, "_kind", call.callee, first=True)
    return fix_between(target.path, text, edits.replace_callee(fixed, call, "fbcode_target"), advice)


def _is_guarded(target, constraint: str) -> bool:
    return constraint in target.values("compatible_with") or constraint in target.values("target_compatible_with")


def _guard_dicts(snap: Snapshot, graph, constraint: str) -> dict[str, str]:
    """file -> name of a dict splatted into a guarded target defined in that file."""
    found: dict[str, str] = {}
    for target in graph.targets.values():
        if target.path in found or not _is_guarded(target, constraint):
            continue
        call = call_of(snap.head.text(target.path) or "", target)
        named = [splat for splat in (call.splats if call is not None else ()) if splat.isidentifier()]
        if named:
            found[target.path] = named[0]
    return found


def _reason_evidence(snap: Snapshot, target, reason: xref.CudaReason, text: str) -> Evidence:
    if reason.kind == "source":
        relative = reason.detail[len(target.package) + 1 :] if target.package else reason.detail
        line = item_line(text, target, relative) or attribute_line(text, target, "srcs") or target.line
        return Evidence(target.path, line, f"`{relative}` is a CUDA source")
    if reason.kind == "external_dep":
        line = (
            item_line(text, target, reason.detail)
            or attribute_line(text, target, "external_deps")
            or attribute_line(text, target, "exported_external_deps")
            or target.line
        )
        return Evidence(target.path, line, f"`{reason.detail}` is a CUDA external dep")
    if reason.kind == "nvcc_flags":
        return Evidence(target.path, attribute_line(text, target, "nvcc_flags") or target.line, "`nvcc_flags` makes this a CUDA target")
    first_dep = reason.chain[1] if len(reason.chain) > 1 else reason.detail
    short = ":" + first_dep.split(":")[-1]
    line = item_line(text, target, short) or _label_line(text, target, first_dep) or target.line
    return Evidence(target.path, line, "depends on CUDA code: " + " -> ".join(reason.chain))


def _label_line(text: str, target, label: str) -> int | None:
    package_part = label[2:].split(":")[0]
    name = label.split(":")[-1]
    for number, line in call_lines(text, target):
        if package_part in line and name in line:
            return number
    return None


_BUCKCONFIG = "[repositories]\n  root = .\n"
_XPLAT_BUCK = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
    'load(":targets.bzl", "define_common_targets")\n'
    "fbcode_target(_kind = define_common_targets,)\n"
    "non_fbcode_target(_kind = define_common_targets,)\n"
)

CHECK = Check(
    id="cuda-guard-missing",
    fixable=True,
    inputs=BUCK_FILES,
    severity=Severity.BLOCKER,
    title="CUDA target visible to CPU-only builds without the CUDA guard",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _XPLAT_BUCK,
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "allocator",\n'
                    '        srcs = ["allocator.cpp"],\n'
                    '        external_deps = [("cuda", None, "cuda-lazy")],\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "user",\n'
                    '        srcs = ["user.cpp"],\n'
                    '        deps = [":allocator"],\n'
                    "    )\n"
                ),
            },
            fixed={
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "caller_stream",\n'
                    '        compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "allocator",\n'
                    '        compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    '        srcs = ["allocator.cpp"],\n'
                    '        external_deps = [("cuda", None, "cuda-lazy")],\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "user",\n'
                    '        compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    '        srcs = ["user.cpp"],\n'
                    '        deps = [":allocator"],\n'
                    "    )\n"
                ),
            },
        ),
        # The package guards its CUDA targets with a dict: the new one gets the dict too, last.
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _XPLAT_BUCK,
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    '    cuda_kwargs = {"compatible_with": ["ovr_config//cuda:has_cuda"]}\n'
                    "    runtime.cxx_library(\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "        **cuda_kwargs\n"
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "memory",\n'
                    '        srcs = ["memory.cu"],\n'
                    '        deps = [":caller_stream"],\n'
                    "    )\n"
                ),
            },
            fixed={
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    '    cuda_kwargs = {"compatible_with": ["ovr_config//cuda:has_cuda"]}\n'
                    "    runtime.cxx_library(\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "        **cuda_kwargs\n"
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "memory",\n'
                    '        srcs = ["memory.cu"],\n'
                    '        deps = [":caller_stream"],\n'
                    "        **cuda_kwargs\n"
                    "    )\n"
                ),
            },
        ),
        # No target uses the constraint; the package's CUDA targets are fbcode-only: so is this one.
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "gpu/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
                    'fbcode_target(_kind = cxx_library, name = "old_kernels", srcs = ["old.cu"])\n'
                    "cxx_library(  # expect: cuda-guard-missing\n"
                    '    name = "new_kernels",\n'
                    '    srcs = ["new.cu"],\n'
                    ")\n"
                ),
            },
            fixed={
                "gpu/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
                    'fbcode_target(_kind = cxx_library, name = "old_kernels", srcs = ["old.cu"])\n'
                    "fbcode_target(  # expect: cuda-guard-missing\n"
                    "    _kind = cxx_library,\n"
                    '    name = "new_kernels",\n'
                    '    srcs = ["new.cu"],\n'
                    ")\n"
                ),
            },
        ),
    ),
    good=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": _XPLAT_BUCK,
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    '    cuda_kwargs = {"compatible_with": ["ovr_config//cuda:has_cuda"]}\n'
                    "    runtime.cxx_library(\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    "        **cuda_kwargs\n"
                    "    )\n"
                    "    runtime.cxx_library(\n"
                    '        name = "cpu_only",\n'
                    '        srcs = ["cpu_only.cpp"],\n'
                    "    )\n"
                ),
            }
        ),
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/cuda/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
                    'load(":targets.bzl", "define_common_targets")\n'
                    "fbcode_target(_kind = define_common_targets,)\n"
                ),
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    "\n"
                    "def define_common_targets():\n"
                    "    runtime.cxx_library(\n"
                    '        name = "fbcode_only",\n'
                    '        srcs = ["fbcode_only.cu"],\n'
                    "    )\n"
                ),
            }
        ),
    ),
)
