"""On the Aug 2026 tree, every xplat package: the targets the model calls incompatible with each
CPU-only platform are exactly those their recorded `compatible_with`, `target_compatible_with`,
select()s and deps make so (run when a mirror is present).

The expectation is computed here from the recorded attributes by a separate, deliberately plain
evaluator (a fixpoint over the dep graph, no shared code with bot/buck/platforms.py beyond the
recorded values), so a mistake in the model's select() resolution or in its spread through deps
shows up as a package whose sets differ.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from bot.buck import platforms
from bot.buck.cell_graphs import evaluate_cell
from bot.buck.cells import cell_named
from bot.buck.targets import Select, normalize_label
from bot.facts.header_deps import DependencyTable
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache

CPU_ONLY = [p for p in cell_named("xplat").platforms if not p.satisfies("ovr_config//cuda:has_cuda")]


def _parts(key: str) -> set[str]:
    """`ovr_config//os:android-arm64` -> {os:android, cpu:arm64}; any other key stands for itself."""
    cell, _, name = key.partition("//os:")
    if name and "-" in name:
        os_name, cpu = name.split("-", 1)
        return {f"{cell}//os:{os_name}", f"{cell}//cpu:{cpu}"}
    return {key}


def _configured(value, have: set[str]):
    """The value with each select() replaced by its most specific matching branch, else DEFAULT."""
    if isinstance(value, Select):
        matching = [(len(_parts(k)), v) for k, v in value.branches if k != "DEFAULT" and _parts(k) <= have]
        if matching:
            return _configured(max(matching, key=lambda pair: pair[0])[1], have)
        default = [v for k, v in value.branches if k == "DEFAULT"]
        return _configured(default[0], have) if default else []
    if isinstance(value, list):
        out = []
        for item in value:
            picked = _configured(item, have)
            if isinstance(item, Select) and isinstance(picked, list):
                out.extend(picked)
            else:
                out.append(picked)
        return out
    return value


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _expected_incompatible(graph, have: set[str]) -> set[str]:
    excluded = set()
    deps: dict[str, list[str]] = {}
    for label, target in graph.targets.items():
        any_of = _strings(_configured(target.attrs.get("compatible_with"), have))
        all_of = _strings(_configured(target.attrs.get("target_compatible_with"), have))
        if (any_of and not any(_parts(k) <= have for k in any_of)) or (
            all_of and not all(_parts(k) <= have for k in all_of)
        ):
            excluded.add(label)
        deps[label] = [
            normalize_label(s, target.package)
            for attribute in ("deps", "exported_deps")
            for s in _strings(_configured(target.attrs.get(attribute), have))
            if ":" in s or s.startswith("//")
        ]
    grew = True
    while grew:
        grew = False
        for label, labels in deps.items():
            if label not in excluded and any(dep in excluded for dep in labels):
                excluded.add(label)
                grew = True
    return excluded


@pytest.fixture(scope="module")
def xplat(executorch_mirror, real_tree_cache):
    with GitRepository(executorch_mirror) as repository:
        graph = evaluate_cell(repository.tree("refs/heads/main"), "xplat", cache=EvaluationCache(real_tree_cache))
    return graph


@pytest.mark.parametrize("platform", CPU_ONLY, ids=lambda p: p.name)
def test_incompatible_targets_per_package_are_what_their_attributes_make_them(xplat, platform):
    model = platforms.incompatible_targets(xplat, platform)
    expected = _expected_incompatible(xplat, set(platform.constraints))
    by_package: dict[str, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    for label in model:
        by_package[label[2:].split(":")[0]][0].add(label)
    for label in expected:
        by_package[label[2:].split(":")[0]][1].add(label)
    differing = {package: sets for package, sets in by_package.items() if sets[0] != sets[1]}
    assert differing == {}
    # Read in the tree: the wasm bindings and cadence's xtensa macros exclude these platforms
    # themselves; portable runtime code does not; cadence vision's kernels name xtensa only under
    # a select() whose DEFAULT is empty, so they stay compatible.
    assert model["//extension/wasm:wasm"] == platforms.Incompatibility(("//extension/wasm:wasm",), "compatible_with")
    assert model["//backends/cadence/common:xt_macros"].chain == ("//backends/cadence/common:xt_macros",)
    assert "//runtime/core:core" not in model
    if "//backends/cadence/vision/kernels:cadence_kernels" in xplat.targets:
        assert "//backends/cadence/vision/kernels:cadence_kernels" not in model


def test_a_configured_dependency_table_is_the_any_configuration_one_with_its_selects_resolved(xplat):
    # The shortcut every per-platform view takes (DependencyTable.on) against the full computation,
    # on every xplat target of the tree, for each platform the cell builds for.
    everywhere = DependencyTable.of(xplat)
    assert everywhere.configurable  # the tree selects deps (SlimTensor's storage, among others)
    for platform in cell_named("xplat").platforms:
        assert everywhere.on(xplat, platform) == DependencyTable.of(xplat, platform), platform.name
