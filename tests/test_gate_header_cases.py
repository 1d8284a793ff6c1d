"""Fixture PRs for the header and gate checks, each with a clean twin that must stay silent.

Expected findings are written by hand from the invariants (design section 4), as (rule, path,
line, cell); every case is a real git repository built from `fixtures/cases/<name>/`.
"""

from __future__ import annotations

import pytest

from pr_check.review import review_repository

CASES = {
    # use_cuda turns on pybindings_cuda.h (through -DEXECUTORCH_PYBINDINGS_CUDA), whose line 6
    # includes cuda_allocator.h; the macro adds only :caller_stream, which does not export
    # :cuda_allocator. OSS cannot evaluate extension/cuda, so only fbcode can say.
    "pybindings-cuda-allocator-undeclared": {
        ("dep-undeclared-header", "extension/pybindings/pybindings_cuda.h", 6, "fbcode"),
    },
    "pybindings-cuda-allocator-declared": set(),
    # attach_offgraph_kv_cache is declared on line 10, above the LLM #if; cuda_kv_cache.cpp,
    # its only definition, is added to aoti_cuda_backend only under if(EXECUTORCH_BUILD_EXTENSION_LLM).
    "llm-gate-declaration-outside": {
        ("gate-declaration-outside", "backends/cuda/runtime/cuda_kv_cache.h", 10, None),
    },
    "llm-gate-declaration-inside": set(),
    # Outside fbcode (xplat; OSS's is_fbcode() is true) kv_cache builds without
    # cuda_kv_pool.cpp but still exports cuda_kv_pool.h (line 14 of targets.bzl).
    "kv-pool-header-exported-unbuilt": {
        ("gate-header-of-unbuilt-source", "backends/cuda/kv/targets.bzl", 14, "xplat"),
    },
    "kv-pool-header-follows-source": set(),
    # The header now gates its declarations on the macro that CMake defines PRIVATE (line 9),
    # and test_cuda_kv_cache links the backend and includes the header.
    "llm-macro-private-cmake": {
        ("gate-macro-not-exported", "backends/cuda/CMakeLists.txt", 9, None),
    },
    "llm-macro-public-cmake": set(),
    # The #else returning NotSupported is gone; the #if survives and closes on line 16.
    "llm-else-notsupported-removed": {
        ("gate-else-removed", "backends/cuda/runtime/cuda_backend.cpp", 16, None),
    },
    "llm-else-notsupported-kept": set(),
}


def _findings(report):
    return {(f.rule, f.path, f.line, f.cell) for f in report.findings}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each case reviewed once; the tests below read the reports."""
    from fixtures.cases import build_case_repository

    built = {}
    for case in CASES:
        directory = tmp_path_factory.mktemp(case)
        repo, base, head = build_case_repository(case, directory)
        built[case] = review_repository(repo, base, head, cache_dir=directory / "cache")
    return built


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_reports_exactly_the_expected_findings(reports, case):
    assert _findings(reports[case]) == CASES[case], [f.message for f in reports[case].findings]


def _only(report, rule):
    (finding,) = [f for f in report.findings if f.rule == rule]
    return finding


def test_undeclared_header_evidence_walks_from_the_source_to_the_macro(reports):
    finding = _only(reports["pybindings-cuda-allocator-undeclared"], "dep-undeclared-header")
    places = {(e.path, e.line) for e in finding.evidence}
    assert ("extension/cuda/targets.bzl", 21) in places  # the owner lists the header
    # cuda_lib lists pybindings_cuda.h as its own header (header-unowned holds every included tree
    # file to a target), so the walk starts there: the finding is its allocator include.
    assert (finding.path, finding.line) == ("extension/pybindings/pybindings_cuda.h", 6)
    # (The include there is unconditional, so no -D is cited; the macro's call site is.)
    assert ("extension/pybindings/BUCK", 17) in places
    assert finding.target == "//extension/pybindings:cuda_lib"
    assert "//extension/cuda:cuda_allocator" in finding.message
    # The header is cuda_lib's own and includes the allocator unconditionally: the dep goes into
    # cuda_lib's literal deps at its call site.
    assert (finding.fix.path, finding.fix.line) == ("extension/pybindings/BUCK", 17)
    assert '"//executorch/extension/cuda:cuda_allocator"' in finding.fix.replacement


def test_declaration_outside_cites_header_definition_and_cmake(reports):
    finding = _only(reports["llm-gate-declaration-outside"], "gate-declaration-outside")
    places = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/runtime/cuda_kv_cache.h", 12) in places  # the #if
    assert ("backends/cuda/runtime/cuda_kv_cache.cpp", 24) in places  # the definition
    assert ("backends/cuda/CMakeLists.txt", 9) in places  # target_sources under if(LLM)
    fix = finding.fix
    assert (fix.path, fix.line, fix.end_line) == ("backends/cuda/runtime/cuda_kv_cache.h", 8, 12)
    assert fix.replacement.splitlines()[0] == "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)"
    assert fix.replacement.splitlines()[3] == "int attach_offgraph_kv_cache(void* handle, uint32_t slot);"


def test_header_of_unbuilt_source_cites_where_the_source_is_built(reports):
    finding = _only(reports["kv-pool-header-exported-unbuilt"], "gate-header-of-unbuilt-source")
    assert finding.target == "//backends/cuda/kv:kv_cache"
    assert ("backends/cuda/kv/targets.bzl", 7) in {(e.path, e.line) for e in finding.evidence}
    assert "fbcode" in finding.message


def test_private_macro_suggests_public(reports):
    finding = _only(reports["llm-macro-private-cmake"], "gate-macro-not-exported")
    places = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/runtime/cuda_kv_cache.h", 9) in places
    assert ("backends/cuda/runtime/tests/test_cuda_kv_cache.cpp", 1) in places
    assert finding.fix.replacement == "    aoti_cuda_backend PUBLIC EXECUTORCH_BUILD_EXTENSION_LLM"


def test_removed_else_cites_the_base_refusal(reports):
    finding = _only(reports["llm-else-notsupported-removed"], "gate-else-removed")
    assert ("backends/cuda/runtime/cuda_backend.cpp", 19) in {(e.path, e.line) for e in finding.evidence}
    assert "NotSupported" in finding.message


# -- The derived facts behind them ----------------------------------------------------------


def _facts(text: str):
    from bot.cpp.declarations import source_facts

    return source_facts("x.h", text)


def test_includes_are_active_only_when_the_targets_flags_prove_it():
    from bot.facts.header_deps import include_is_active

    guarded = _facts("#ifndef X_H\n#define X_H\n#include <executorch/a.h>\n#endif\n")
    assert include_is_active(guarded.includes[0], guarded, {})  # an include guard is not a gate
    gated = _facts("#pragma once\n#if defined(EXECUTORCH_PYBINDINGS_CUDA)\n#include <executorch/b.h>\n#endif\n")
    assert include_is_active(gated.includes[0], gated, {"EXECUTORCH_PYBINDINGS_CUDA": "1"})
    assert not include_is_active(gated.includes[0], gated, {})  # unknown is not active
    cplusplus = _facts("#ifdef __cplusplus\n#include <executorch/c.h>\n#endif\n")
    assert include_is_active(cplusplus.includes[0], cplusplus, {})


def _graph(files: dict[str, str], cell: str):
    from bot.buck.cell_graphs import evaluate_cell
    from bot.tree import memory_tree

    return evaluate_cell(memory_tree({".buckconfig": "[repositories]\n  root = .\n", **files}), cell)


def test_fbcode_sees_headers_through_private_deps_xplat_does_not():
    from bot.facts.header_deps import DependencyIndex, DependencyTable

    files = {
        "a/BUCK": 'cxx_library(name = "a", deps = [":b"])\ncxx_library(name = "b", deps = [":c"])\ncxx_library(name = "c")\n',
    }
    for cell, expected in (("fbcode", True), ("xplat", False)):
        graph = _graph(files, cell)
        index = DependencyIndex.build(graph, DependencyTable.of(graph), None, frozenset(), transitive=cell == "fbcode")
        assert index.reaches("//a:a", ["//a:c"]) is expected
        assert index.reaches("//a:a", ["//a:b"])


def test_rules_made_by_macros_the_repository_lacks_are_not_trusted():
    from bot.facts.header_deps import recorded_as_written

    files = {
        "a/BUCK": (
            'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n'
            'load("@fbcode//team/build:wrapper.bzl", "team_wrapper")\n'
            'runtime.cxx_library(name = "known")\n'
            'team_wrapper.cxx_test(name = "unknown")\n'
            'cxx_library(name = "native")\n'
        ),
    }
    graph = _graph(files, "fbcode")
    text = files["a/BUCK"]
    trusted = {label: recorded_as_written(t, lambda path: text) for label, t in graph.targets.items()}
    assert trusted["//a:known"] and trusted["//a:native"]
    assert not trusted["//a:unknown"]


def test_removing_a_whole_gate_is_not_removing_its_else():
    from bot import engine
    from bot.diff import ChangeSet, FileChange
    from bot.snapshot import BuildModel, Snapshot
    from bot.tree import memory_tree
    from checks import gate_else_removed

    path = "backends/cuda/runtime/cuda_backend.cpp"
    base = "int f() {\n#if defined(M)\n  return 0;\n#else\n  return Error::NotSupported;\n#endif\n}\n"
    head = "int f() {\n  return 0;\n}\n"  # the feature is unconditional now
    change = FileChange(path, path, "modified", added=frozenset(), removed=frozenset({2, 4, 5, 6}))
    snap = Snapshot(BuildModel(memory_tree({path: base})), BuildModel(memory_tree({path: head})), ChangeSet((change,)))
    assert engine.run([gate_else_removed.CHECK], snap).findings == ()
