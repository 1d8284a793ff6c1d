"""The CUDA targets that break on a cell's CPU-only platforms, and how the repository guards them.

Per cell and CPU-only platform, as configured there: C++ targets that are compatible there and CUDA
by their own attributes (select() resolved), with why each is CUDA; the compatible dependents that
break only through one of them; the dicts a guarded target's call splats (the file's guard idiom);
and the packages the repository keeps fbcode-only instead of guarding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.buck import platforms
from bot.buck.syntax import syntax_of
from bot.buck.targets import Platform
from bot.facts import revision, xref
from bot.snapshot import BuildModel, Snapshot

_CXX_KINDS = re.compile(r"cxx_|cpp_|cuda|gpu_")


def cpu_breaks(model: BuildModel, cell: str, settings) -> CpuBreaks:
    """The cell's C++ targets that break on its CPU-only platforms, as configured on each (a
    target incompatible there is skipped; select() resolved), with why each is CUDA, and the
    compatible dependents that break only through one of them (by the target they follow)."""
    graph = model.cell(cell)
    constraint = settings.cuda_constraint
    breaks: dict[str, list[Platform]] = {}
    reason_of: dict[str, xref.CudaReason] = {}
    dependents: dict[str, dict[str, tuple[str, ...]]] = {}
    explicit: dict[str, set[str]] = {}
    for platform in settings.platforms_of(cell):
        if platform.satisfies(constraint):
            continue
        incompatible = revision.incompatible(model, cell, platform)
        for label, reason in sorted(revision.cuda_reasons(model, cell, platform).items()):
            target = graph.targets[label]
            if label in incompatible or not _CXX_KINDS.search(target.kind):
                continue
            end = graph.targets.get(reason.chain[-1]) if reason.kind == "dependency" else None
            if end is not None and _CXX_KINDS.search(end.kind):
                # It breaks because a C++ CUDA target it depends on does: that one is the finding.
                if target.primary_label != label and target.primary_label in graph.targets:
                    continue  # the wrapper's `_static` twin of a dependent: the dependent stands for it
                root = _folded(graph, reason.chain[-1])
                dependents.setdefault(root, {}).setdefault(label, reason.chain)
                if platforms.explicitly_compatible(target, platform):
                    explicit.setdefault(root, set()).add(label)
                continue
            if _folded(graph, label) != label:
                continue  # the wrapper's `_static` twin breaks with the target it copies: one finding
            breaks.setdefault(label, []).append(platform)
            reason_of.setdefault(label, reason)
    return CpuBreaks(breaks, reason_of, dependents, explicit)


def built_before(snap: Snapshot, cell: str, labels: list[str], on: list[Platform]) -> list[str]:
    """Those of `labels` that built on one of `on` at base (defined in the cell, compatible with the
    platform and not CUDA there): taking one of them off that platform is a loss a fix must not cause."""
    base = snap.base.cell(cell)
    built = []
    for label in labels:
        if label in base.targets and any(
            label not in revision.incompatible(snap.base, cell, platform)
            and label not in revision.cuda_reasons(snap.base, cell, platform)
            for platform in on
        ):
            built.append(label)
    return built


@dataclass(frozen=True, slots=True)
class CpuBreaks:
    """What `cpu_breaks` finds in one cell."""

    breaks: dict[str, list[Platform]]  # label -> the CPU-only platforms it breaks on
    reason_of: dict[str, xref.CudaReason]  # label -> why it is CUDA (on the first such platform)
    dependents: dict[str, dict[str, tuple[str, ...]]]  # label -> dependent -> the chain to it
    explicit: dict[str, set[str]]  # label -> dependents that name those platforms in compatible_with


def _folded(graph, label: str) -> str:
    """The label that stands for `label`: the target a wrapper's `_static` twin copies, else itself."""
    target = graph.targets.get(label)
    primary = target.primary_label if target is not None else label
    return primary if primary in graph.targets else label


def fbcode_only_idiom(snap: Snapshot, cell: str, constraint: str) -> frozenset[str]:
    """Packages whose CUDA targets the repository keeps fbcode-only: it guards none with the
    constraint, and fbcode defines CUDA targets of the package that this cell does not."""
    graph = snap.head.cell(cell)
    if any(_is_guarded(target, constraint) for target in graph.targets.values()):
        return frozenset()  # the repository uses the constraint: that is its idiom
    fbcode = snap.head.cell("fbcode")
    return frozenset(
        fbcode.targets[label].package
        for label in revision.cuda_reasons(snap.head, "fbcode")
        if label not in graph.targets and label in fbcode.targets
    )


def _is_guarded(target, constraint: str) -> bool:
    """Whether the target names the constraint in any configuration (the package uses the guard)."""
    return constraint in target.values("compatible_with") or constraint in target.values("target_compatible_with")


def guard_dicts(snap: Snapshot, graph, constraint: str) -> dict[str, str]:
    """file -> name of a dict splatted into a guarded target defined in that file."""
    found: dict[str, str] = {}
    for target in graph.targets.values():
        if target.path in found or not _is_guarded(target, constraint):
            continue
        text = snap.head.text(target.path) or ""
        call = syntax_of(text).call_at(target.line) if text else None
        named = [splat for splat in (call.splats if call is not None else ()) if splat.isidentifier()]
        if named:
            found[target.path] = named[0]
    return found
