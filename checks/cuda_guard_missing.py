"""A CUDA target is compatible with a CPU-only platform of a cell that builds for one.

The `xplat` cell builds every target of a package for every platform it is asked for: Android,
Apple, CPU-only Linux, wildcard builds such as `xplat/executorch/...`. A target that, as
configured on such a platform, compiles `.cu` sources, passes `nvcc_flags` or depends on a CUDA
external dep (`cuda-lazy`, `cudart`, ...) cannot build there: `cuda_runtime.h` is not found. The
constraint `compatible_with = ["ovr_config//cuda:has_cuda"]` (with `platforms = [CXX]`) makes
those builds skip it, and buck2 then skips every target that depends on it there as well: so
the finding is on the target that breaks, per platform, and its dependents are listed on it, not
reported again. Each platform is read as buck2 configures it: a dep under
`select({"ovr_config//cuda:has_cuda": [...], "DEFAULT": []})` is absent on a CPU-only platform,
so the target holding that select is no CUDA target there (SlimTensor `storage`, #24817).

Example (bad): `runtime.cxx_library(name = "caller_stream", srcs = ["caller_stream.cu"])` in a
`targets.bzl` that `non_fbcode_target(_kind = define_common_targets)` makes visible in xplat.

Use instead: the guard the package already uses: its guard dict where it has one; where its
other CUDA targets are defined fbcode-only (the real tree's idiom before any package used the
constraint), define this one fbcode-only too; otherwise both `compatible_with` and `platforms`,
and in a file other cells evaluate too, only outside fbcode (a dict conditioned on `is_fbcode`,
splatted).

A guard is never the fix where it is worse than the defect: when targets that built on a CPU-only
platform before the change depend on the target there (a `.cu` added to the shared
`//extension/tensor:tensor`, on which the Android JNI layer, Qualcomm and the LLM runners
depend), guarding it would take every one of them off that platform. The finding names them and
offers the split instead: the CUDA source listed under `select()` on the constraint (mechanical
where `srcs` is a plain list), or the CUDA code moved into a CUDA-only target the CUDA dependents
reach (`checks/support/cuda_split.py`).

When the change did not touch the targets but a line that makes a package's targets visible in
the cell (`non_fbcode_target(_kind = define_common_targets)`), that line is the cause: one finding
there, with each exposed target as a related location.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import BUCK_FILES, Check, Example, Share
from bot.facts import xref
from bot.facts.cpu_breaks import built_before, cpu_breaks, fbcode_only_idiom, guard_dicts
from bot.model import Evidence, EvidenceRole, Fix, Hit, Severity
from bot.snapshot import Snapshot
from checks.support import cuda_split, guard_idiom
from checks.support.callsite import attribute_line, call_lines, item_line, outermost_frame


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    settings = snap.config.buck
    for cell in settings.cpu_only_cells:
        hits = list(_target_hits(snap, cell, settings))
        yield from _by_cause(snap, cell, hits)


_Guarded = tuple  # (Hit, BuckTarget, guard_idiom.Guard, labels of the dependents it takes along)


def _by_cause(snap: Snapshot, cell: str, guarded: list[_Guarded]) -> Iterator[Hit]:
    """Targets the change did not touch, exposed by a line it did: one finding at that line."""
    changes = snap.changes.by_path()
    exposed: dict[tuple[str, int], list[_Guarded]] = {}
    for hit, target, guard, followers in guarded:
        if guard is None:  # the guard is refused (dependents that build there today): its own finding
            yield hit
            continue
        own = changes.get(hit.path)
        touched_itself = own is not None and any(hit.line <= n <= (hit.end_line or hit.line) for n in own.added)
        root = next((e for e in hit.evidence if e.role is EvidenceRole.DEFINES), None)
        root_change = changes.get(root.path) if root is not None else None
        if touched_itself or root is None or root_change is None or root.line not in root_change.added:
            yield hit
        else:
            group = exposed.setdefault((root.path, root.line), [])
            if all(other[0].key != hit.key for other in group):  # the wrapper's `_static` twin folds in
                group.append((hit, target, guard, followers))
    for (path, line), members in sorted(exposed.items()):
        if len(members) == 1:
            yield members[0][0]
            continue
        group = [member[0] for member in members]
        labels = ", ".join(f"`{h.key}`" for h in group)
        keys = {h.key for h in group}
        followers = {label: None for member in members for label in member[3] if label not in keys}
        taken_along = [e for h in group for e in h.evidence if e.role is EvidenceRole.DEPENDENT]
        package = path.rsplit("/", 1)[0] if "/" in path else ""
        yield Hit(
            path=path,
            line=line,
            message=(
                f"This line makes {len(group)} CUDA targets of the package visible in the `{cell}` cell, which "
                f"builds for CPU-only platforms, and none is guarded: {labels}. A CPU-only or wildcard build "
                "fails to compile them. Guard each (see the related locations), or keep the package's CUDA "
                "targets out of this cell." + _dependents_note(dict.fromkeys(followers, ()), set(), "them")
            ),
            key=f"exposes-cuda:{cell}://{package}",
            target=f"//{package}",
            cell=cell,
            offending_text=(snap.head.text(path) or "").splitlines()[line - 1] if line else "",
            evidence=tuple(
                Evidence(h.path, h.line, f"`{h.key}`: {h.evidence[0].note if h.evidence else 'CUDA target'}")
                for h in group
            )
            + tuple(dict.fromkeys(taken_along)),
            fix=_guard_each(snap, members),
        )


def _guard_each(snap: Snapshot, members: list[_Guarded]) -> Fix | None:
    """One fix that guards every target of a group, when they sit in one file and each has a fix
    (the file is often one the change did not touch, so the fix is a patch, not a suggestion)."""
    if any(hit.fix is None for hit, *_ in members) or len({hit.path for hit, *_ in members}) != 1:
        return None
    advice = "; ".join(dict.fromkeys(guard.advice for _hit, _target, guard, _followers in members))
    return guard_idiom.guard_fix(
        snap,
        members[0][0].path,
        [(target, guard) for _hit, target, guard, _followers in members],
        f"guard each of them: {advice}",
    )


def _target_hits(snap: Snapshot, cell: str, settings) -> Iterator[_Guarded]:
    """One finding per target that breaks on a CPU-only platform of the cell: compatible there
    and CUDA by its own attributes, as configured there (select() resolved, so a dep under
    `select({"<constraint>": [...], "DEFAULT": []})` is absent). Its compatible dependents break
    with it, but guarding it makes them incompatible too: they are named on its finding."""
    graph = snap.head.cell(cell)
    constraint = settings.cuda_constraint
    found = cpu_breaks(snap.head, cell, settings)
    breaks, reason_of, dependents, explicit = found.breaks, found.reason_of, found.dependents, found.explicit
    guarded_splats = guard_dicts(snap, graph, constraint)
    fbcode_only = fbcode_only_idiom(snap, cell, constraint)
    for label, broken_on in sorted(breaks.items()):
        target = graph.targets[label]
        reason = reason_of[label]
        text = snap.head.text(target.path) or ""
        where = ", ".join(f"`{p.name}`" for p in broken_on)
        evidence = [_reason_evidence(snap, target, reason, text)]
        visible = outermost_frame(target)
        if visible is not None:
            evidence.append(
                Evidence(
                    visible.path,
                    visible.line,
                    f"this line defines the package's targets in `{cell}`",
                    EvidenceRole.DEFINES,
                )
            )
        followers = dependents.get(label, {})
        for dependent, chain in sorted(followers.items()):
            other = graph.targets[dependent]
            evidence.append(
                Evidence(other.path, other.line, "depends on it: " + " -> ".join(chain), EvidenceRole.DEPENDENT)
            )
        kept = built_before(snap, cell, sorted(followers), broken_on)
        if kept:
            # A guard would take these off platforms they build on today: worse than the defect.
            # The fix is the split: the CUDA part out of the CPU-only configurations.
            advice, fix = cuda_split.split_advice(snap, target, reason, constraint, len(kept))
            listed = ", ".join(f"`{label}`" for label in kept[:8]) + (
                f" and {len(kept) - 8} more" if len(kept) > 8 else ""
            )
            yield (
                Hit(
                    path=target.path,
                    line=target.line,
                    end_line=target.end_line,
                    message=(
                        f"`{label}` {reason.describe()} and is compatible with the CPU-only platform(s) {where} of "
                        f"the `{cell}` cell: a build there fails to compile it, and with it the "
                        f"{len(kept)} target{'s' if len(kept) != 1 else ''} that depend{'' if len(kept) != 1 else 's'} on it there and built there "
                        f"before this change: {listed}. Guarding `{label}` (`compatible_with`) would take every one "
                        f"of them off those platforms, so the guard is not the fix. Fix: {advice}."
                    ),
                    key=target.primary_label,
                    target=label,
                    cell=cell,
                    offending_text=target.kind,
                    evidence=tuple(evidence),
                    fix=fix,
                ),
                target,
                None,
                tuple(sorted(followers)),
            )
            continue
        guard = guard_idiom.guard_for(
            snap, target, cell, constraint, guarded_splats.get(target.path), target.package in fbcode_only
        )
        hit = Hit(
            path=target.path,
            line=target.line,
            end_line=target.end_line,
            message=(
                f"`{label}` {reason.describe()} and is compatible with the CPU-only platform(s) {where} of "
                f"the `{cell}` cell: a build there (a wildcard build of the package included) fails to compile "
                f"it. Fix: {guard.advice}.{_dependents_note(followers, explicit.get(label, set()))}"
            ),
            key=target.primary_label,
            target=label,
            cell=cell,
            offending_text=target.kind,
            evidence=tuple(evidence),
            fix=guard_idiom.guard_fix(snap, target.path, [(target, guard)], guard.advice),
        )
        yield hit, target, guard, tuple(sorted(followers))


def _dependents_note(followers: dict[str, tuple[str, ...]], explicit: set[str], it: str = "it") -> str:
    """What guarding the target does to the targets that depend on it there."""
    if not followers:
        return ""
    shown = sorted(followers)
    listed = ", ".join(f"`{label}`" for label in shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")
    note = (
        f" Targets that depend on {it} there fail with {it} now; once {'it is' if it == 'it' else 'they are'} guarded, "
        f"they become incompatible with those platforms too (skipped by wildcard builds, not separate defects): {listed}."
    )
    if explicit:
        named = ", ".join(f"`{label}`" for label in sorted(explicit))
        note += f" Of these, {named} name(s) those platforms in `compatible_with`: guard them too, or buck2 fails them."
    return note


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
        return Evidence(
            target.path,
            attribute_line(text, target, "nvcc_flags") or target.line,
            "`nvcc_flags` makes this a CUDA target",
        )
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


def _shared_tensor(srcs: str, marker: str = "") -> str:
    """A library every cell builds, with `srcs` as given, and a CPU-only target depending on it."""
    return (
        'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
        "\n"
        "def define_common_targets():\n"
        f"    runtime.cxx_library({marker}\n"
        '        name = "tensor",\n'
        f"{srcs}"
        '        visibility = ["PUBLIC"],\n'
        "    )\n"
        "    runtime.cxx_library(\n"
        '        name = "user",\n'
        '        srcs = ["user.cpp"],\n'
        '        deps = [":tensor"],\n'
        "    )\n"
    )


CHECK = Check(
    id="cuda-guard-missing",
    fixable=True,
    share=Share.WORKER,
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
                    "    runtime.cxx_library(\n"
                    '        name = "user",\n'
                    '        srcs = ["user.cpp"],\n'
                    '        deps = [":allocator"],\n'
                    "    )\n"
                ),
            },
            fixed={
                "extension/cuda/targets.bzl": (
                    'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
                    'load("@fbsource//tools/build_defs:platform_defs.bzl", "CXX")\n'
                    'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")\n'
                    "\n"
                    "def define_common_targets():\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "caller_stream",\n'
                    '        srcs = ["caller_stream.cu"],\n'
                    '        **({} if is_fbcode() else {"compatible_with": ["ovr_config//cuda:has_cuda"], "platforms": [CXX]})\n'
                    "    )\n"
                    "    runtime.cxx_library(  # expect: cuda-guard-missing\n"
                    '        name = "allocator",\n'
                    '        srcs = ["allocator.cpp"],\n'
                    '        external_deps = [("cuda", None, "cuda-lazy")],\n'
                    '        **({} if is_fbcode() else {"compatible_with": ["ovr_config//cuda:has_cuda"], "platforms": [CXX]})\n'
                    "    )\n"
                    "    runtime.cxx_library(\n"
                    '        name = "user",\n'
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
                    "        **cuda_kwargs\n"
                    "    )\n"
                ),
            },
        ),
        # Only xplat reads this BUCK file and the repository uses the constraint: both keywords.
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "slim/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'
                    "non_fbcode_target(\n"
                    "    _kind = cxx_library,\n"
                    '    name = "storage",\n'
                    '    srcs = ["storage.cpp"],\n'
                    '    deps = [":cuda_guard"],\n'
                    ")\n"
                    "non_fbcode_target(  # expect: cuda-guard-missing\n"
                    "    _kind = cxx_library,\n"
                    '    name = "cuda_guard",\n'
                    '    srcs = ["guard.cu"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "kernels",\n'
                    '    srcs = ["kernels.cu"],\n'
                    '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    ")\n"
                ),
            },
            fixed={
                "slim/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'
                    'load("@fbsource//tools/build_defs:platform_defs.bzl", "CXX")\n'
                    "non_fbcode_target(\n"
                    "    _kind = cxx_library,\n"
                    '    name = "storage",\n'
                    '    srcs = ["storage.cpp"],\n'
                    '    deps = [":cuda_guard"],\n'
                    ")\n"
                    "non_fbcode_target(  # expect: cuda-guard-missing\n"
                    "    _kind = cxx_library,\n"
                    '    name = "cuda_guard",\n'
                    '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    "    platforms = [CXX],\n"
                    '    srcs = ["guard.cu"],\n'
                    ")\n"
                    "cxx_library(\n"
                    '    name = "kernels",\n'
                    '    srcs = ["kernels.cu"],\n'
                    '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    ")\n"
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
        # A CUDA source added to a shared library that CPU-only targets already depend on
        # (`extension/tensor:tensor`): the guard would take `user` off the CPU-only platforms,
        # so the fix is the split, the source under select() on the constraint.
        Example(
            base={
                ".buckconfig": _BUCKCONFIG,
                "extension/tensor/BUCK": _XPLAT_BUCK,
                "extension/tensor/targets.bzl": _shared_tensor('        srcs = ["tensor.cpp"],\n'),
            },
            head={
                ".buckconfig": _BUCKCONFIG,
                "extension/tensor/BUCK": _XPLAT_BUCK,
                "extension/tensor/targets.bzl": _shared_tensor(
                    '        srcs = ["tensor.cpp", "tensor_cuda.cu"],\n', "  # expect: cuda-guard-missing"
                ),
            },
            fixed={
                "extension/tensor/targets.bzl": _shared_tensor(
                    '        srcs = ["tensor.cpp"] + select({"ovr_config//cuda:has_cuda": ["tensor_cuda.cu"], "DEFAULT": []}),\n',
                    "  # expect: cuda-guard-missing",
                ),
            },
        ),
    ),
    good=(
        # SlimTensor's `storage` (#24817): its CUDA dep comes only through select(has_cuda), so
        # on CPU-only platforms it is no CUDA target; the dep itself is guarded.
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "slim/BUCK": (
                    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'
                    'load("@fbsource//tools/build_defs:platform_defs.bzl", "CXX")\n'
                    "non_fbcode_target(\n"
                    "    _kind = cxx_library,\n"
                    '    name = "storage",\n'
                    '    srcs = ["storage.cpp"],\n'
                    '    deps = select({"ovr_config//cuda:has_cuda": [":cuda_guard"], "DEFAULT": []}),\n'
                    ")\n"
                    "non_fbcode_target(\n"
                    "    _kind = cxx_library,\n"
                    '    name = "cuda_guard",\n'
                    '    srcs = ["guard.cu"],\n'
                    '    compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    "    platforms = [CXX],\n"
                    ")\n"
                ),
            }
        ),
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
