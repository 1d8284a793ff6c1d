"""The static-link gaps of a revision: libraries linked statically without `--export-dynamic` in their closure
whose CMake twin exports the flag to its consumers (an AOTInductor library loaded by such an
executable cannot bind to the shims it needs).

Per cell and per platform: which libraries a static link pulls in, which of them carry the flag
(`exported_linker_flags`) in their closure, and which CMake twins export it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from bot.buck.targets import BuckTarget, Platform, attribute_on
from bot.cmake.model import CMakeTarget, Scoped
from bot.facts import cmake_models, linkage, pairing
from bot.model import ReviewMode
from bot.snapshot import BuildModel, Snapshot

_EXPORTING_SCOPES = ("PUBLIC", "INTERFACE")


def exports_dynamic(flag: str) -> bool:
    """Whether a linker flag exports the executable's symbols to libraries it loads."""
    return "--export-dynamic" in flag or flag in ("-rdynamic", "-Wl,-E", "LINKER:-E")


@dataclass(frozen=True)
class StaticLinkGap:
    """A statically linked library that lacks the flag on `platforms` (every platform where it
    builds, when `everywhere`)."""

    target: BuckTarget
    twin: tuple[str, str]  # (CMake profile, CMake target that exports the flag)
    platforms: tuple[Platform | None, ...]
    everywhere: bool

    @property
    def named(self) -> tuple[str, ...]:
        """The platforms to name: none where the gap is on every platform the library builds on."""
        return () if self.everywhere else tuple(p.name for p in self.platforms if p is not None)


def missing_libraries(
    model: BuildModel, cell: str, exporting: dict[str, tuple[str, str]], force_static_only: bool
) -> dict[str, StaticLinkGap]:
    """label -> where it links statically without the flag in its closure, for every library of
    the cell whose twin exports the flag."""
    graph = model.cell(cell)
    missing: dict[str, StaticLinkGap] = {}
    for label, cmake_target in sorted(exporting.items()):
        target = graph.targets.get(label)
        if target is None or "library" not in target.kind or target.kind.startswith(("python", "prebuilt")):
            continue
        static = []
        for platform in linkage.built_on(model, cell, label):
            if attribute_on(target, "preferred_linkage", platform) == "shared":
                continue  # linked as a shared object even here
            if force_static_only and attribute_on(target, "force_static", platform) is not True:
                continue
            static.append(platform)
        lacking = tuple(p for p in static if label not in carrying(model, cell, p))
        if lacking:
            missing[label] = StaticLinkGap(
                target, cmake_target, lacking, len(lacking) == len(linkage.built_on(model, cell, label))
            )
    return missing


def gap_below(model: BuildModel, cell: str, label: str, gap: StaticLinkGap, missing: dict[str, StaticLinkGap]) -> bool:
    """Whether, on each platform where `label` lacks the flag, a library it links lacks it too."""
    return all(
        any(
            other != label
            and platform in lower.platforms
            and other in linkage.dependency_closure(model, cell, label, platform)
            for other, lower in missing.items()
        )
        for platform in gap.platforms
    )


STATIC_LINK_STYLES = ("static", "static_pic")


def exporting_targets(snap: Snapshot, profile: str, pairs: pairing.Pairing) -> dict[str, str]:
    """Buck label -> the CMake twin that exports `--export-dynamic` to its consumers."""
    model = cmake_models.cmake_model(snap.head, profile)
    found: dict[str, str] = {}
    for name in sorted(pairs.by_cmake):
        target = model.targets.get(name)
        if target is None or not exported_option(target):
            continue
        for label in pairs.closest_buck(name):
            found.setdefault(label, name)
    return found


def exported_option(target: CMakeTarget) -> Scoped | None:
    for option in target.link_options:
        if option.scope in _EXPORTING_SCOPES and exports_dynamic(option.value):
            return option
    return None


def carrying(model: BuildModel, cell: str, platform: Platform | None) -> frozenset[str]:
    """Labels of the cell whose closure on `platform` exports the executable's symbols."""
    return linkage.carried(model, cell, platform, "exports-dynamic", _exports_dynamic)


def _exports_dynamic(target: BuckTarget, platform: Platform | None) -> bool:
    return any(isinstance(f, str) and exports_dynamic(f) for f in target.values("exported_linker_flags", platform))


def newly_force_linked(
    snap: Snapshot, cell: str, exporting: dict[str, tuple[str, str]], broken: list[Mapping[str, str | None]]
) -> Iterator[tuple[BuckTarget, str, tuple[str, ...]]]:
    """Libraries of `cell` this change makes `link_whole` under a library whose twin exports the
    flag: (library, the first such exporter, the platforms to name).

    Force-linking is for symbols nothing in the executable calls: here, the shims an AOTInductor
    library binds to when it is loaded, which it finds only if the executable exports them. The
    cell links the library as a shared object by default, so no build breaks yet (hence minor),
    but every binary or test that links it statically has to rediscover the flag (#24643's review,
    item 2; its author's fbcode test failed with `undefined symbol: aoti_torch_dtype_float32`).
    Per platform: `link_whole`, the flag and the closures are those of one configuration.
    """
    if snap.mode is ReviewMode.BASELINE:
        return
    graph, before = snap.head.cell(cell), snap.base.cell(cell).targets
    for label, target in sorted(graph.targets.items()):
        earlier = before.get(label)
        if target.attr("link_whole") in (None, False) or earlier is None or "library" not in target.kind:
            continue
        if any(label in closure for closure in broken):
            continue  # a static binary linking it already fails, at major: not "nothing breaks yet"
        holding: list[tuple[Platform | None, str]] = []
        built_on = linkage.built_on(snap.head, cell, label)
        for platform in built_on:
            if attribute_on(target, "link_whole", platform) is not True:
                continue
            if attribute_on(earlier, "link_whole", platform) is True or label in carrying(snap.head, cell, platform):
                continue
            above = [
                e
                for e in sorted(exporting)
                if e in graph.targets
                and (e == label or label in linkage.dependency_closure(snap.head, cell, e, platform))
            ]
            if above:
                holding.append((platform, above[0]))
        if holding:
            named = () if len(holding) == len(built_on) else tuple(p.name for p, _e in holding if p is not None)
            yield target, holding[0][1], named


def static_binaries(
    snap: Snapshot, cell: str, exporting: dict[str, tuple[str, str]]
) -> Iterator[tuple[BuckTarget, str, tuple[str, ...], tuple[str, ...], tuple[Mapping[str, str | None], ...]]]:
    """Binaries and tests of `cell` that link statically a library whose twin exports the flag:
    (binary, the first such library, the path to it, the platforms to name, its dependency
    closures on the platforms where it does so without the flag)."""
    graph = snap.head.cell(cell)
    linked_libraries = [label for label in sorted(exporting) if label in graph.targets]
    if not linked_libraries:
        return
    for label, target in sorted(graph.targets.items()):
        if not ("binary" in target.kind or "test" in target.kind):  # a python_binary's native code too
            continue
        if target.attr("link_style") is None:
            continue  # the cell's default: linked dynamically on every platform
        built_on = linkage.built_on(snap.head, cell, label)
        holding = []
        for platform in built_on:
            if attribute_on(target, "link_style", platform) not in STATIC_LINK_STYLES:
                continue
            if label in carrying(snap.head, cell, platform) or any(
                isinstance(f, str) and exports_dynamic(f) for f in target.values("linker_flags", platform)
            ):
                continue
            closure = linkage.dependency_closure(snap.head, cell, label, platform)
            shims = [library for library in linked_libraries if library in closure]
            if shims:
                holding.append((platform, closure, shims[0]))
        if not holding:
            continue
        _platform, closure, shim = holding[0]
        named = () if len(holding) == len(built_on) else tuple(p.name for p, _c, _s in holding if p is not None)
        yield target, shim, linkage.path_to(closure, shim), named, tuple(closure for _p, closure, _s in holding)
