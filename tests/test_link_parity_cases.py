"""Link contract and Buck/CMake parity: fixture PRs with hand-written expected findings.

Each situation of the seed reviews comes as a pair: the defect, and a clean twin that makes the
same kind of change correctly and must stay silent. The expected findings are written from
the invariants (design section 4), not from running the checks.
"""

from __future__ import annotations

import pytest

from bot import engine
from bot.check import Example
from bot.tree import Gitlink
from checks import BY_ID
from pr_check.review import review_repository
from tests.test_check_examples import _snapshot

RUNTIME = "backends/cuda/runtime/targets.bzl"

CASES = {
    # The CUDA runtime becomes visible in xplat, where libraries link statically. CMake exports
    # --export-dynamic PUBLIC on both twins (aoti_cuda_shims, aoti_cuda_backend); Buck exports
    # nothing. cuda_backend links runtime_shims, so the lower one is where the flag belongs.
    "link-export-dynamic-missing-xplat": {
        ("link-export-dynamic-missing", RUNTIME, 10, "xplat"),
    },
    "link-export-dynamic-exported-xplat": set(),
    # aoti_cuda_shims is a shared library; its whole-archive of aoti_common_shims_slim moves to PUBLIC.
    "whole-archive-public-scope": {
        ("link-whole-archive-public", "backends/cuda/CMakeLists.txt", 41, None),
    },
    # The same call gains a PUBLIC group of its own; the pair stays PRIVATE. aoti_cuda_backend keeps
    # its own archive INTERFACE (the idiom), which is not a finding either.
    "whole-archive-private-scope": set(),
    # common_shims_slim becomes link_whole; the force-linked runtime_shims still builds
    # tensor_attribute.cpp, and both define aoti_torch_get_device_type (C linkage from a header).
    "shim-duplicate-symbol-link-whole": {
        ("shim-duplicate-symbol", "backends/aoti/targets.bzl", 9, "fbcode"),
    },
    "shim-duplicate-symbol-removed": set(),
    # int4mm.cuh has sm_80-only kernels with no fallback; only fbcode gets get_nvcc_arch_args().
    "cell-arch-flags-missing-xplat": {
        ("cell-arch-flags-missing", RUNTIME, 14, "xplat"),
    },
    "cell-arch-flags-given-xplat": set(),
    # sort.cu joins the Buck runtime_shims and not its CMake twin aoti_cuda_shims.
    "source-parity-buck-only": {
        ("source-parity", RUNTIME, 11, None),
    },
    "source-parity-both-builds": set(),
}


def _findings(report):
    return {(f.rule, f.path, f.line, f.cell) for f in report.findings}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Every case reviewed once (each is a real git repository with a base and a PR commit)."""
    from fixtures.cases import build_case_repository

    found = {}
    for case in CASES:
        directory = tmp_path_factory.mktemp(case)
        repo, base, head = build_case_repository(case, directory)
        found[case] = review_repository(repo, base, head, cache_dir=directory / "cache")
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_reports_exactly_the_expected_findings(reports, case):
    assert _findings(reports[case]) == CASES[case], [f.message for f in reports[case].findings]


def test_export_dynamic_evidence_spans_both_builds_and_suggests_the_flag(reports):
    (finding,) = reports["link-export-dynamic-missing-xplat"].findings
    evidence = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/CMakeLists.txt", 33) in evidence  # target_link_options(aoti_cuda_shims PUBLIC ...)
    assert (RUNTIME, 10) in evidence
    assert "//backends/cuda/runtime:cuda_backend" in finding.message  # fixed by the same change
    assert finding.fix.path == RUNTIME
    assert finding.fix.replacement.endswith('exported_linker_flags = ["-Wl,--export-dynamic"],')


def test_whole_archive_fix_moves_the_pair_to_private(reports):
    (finding,) = reports["whole-archive-public-scope"].findings
    assert finding.fix.line == 41
    assert finding.fix.replacement.split() == [
        "PRIVATE",
        "-Wl,--whole-archive",
        "aoti_common_shims_slim",
        "-Wl,--no-whole-archive",
    ]
    assert ("backends/aoti/CMakeLists.txt", 6) in {(e.path, e.line) for e in finding.evidence}


def test_duplicate_symbol_evidence_is_both_definitions(reports):
    (finding,) = reports["shim-duplicate-symbol-link-whole"].findings
    evidence = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/aoti/common_shims_slim.cpp", 3) in evidence
    assert ("backends/cuda/runtime/shims/tensor_attribute.cpp", 4) in evidence
    assert "tensor_attribute.h" in " ".join(e.note for e in finding.evidence)  # C linkage from the header


def test_arch_evidence_is_the_gate_and_the_fbcode_helper(reports):
    (finding,) = reports["cell-arch-flags-missing-xplat"].findings
    evidence = {(e.path, e.line) for e in finding.evidence}
    assert ("backends/cuda/runtime/shims/int4mm.cuh", 6) in evidence
    assert (RUNTIME, 23) in evidence  # the line calling get_nvcc_arch_args()


# ---------------------------------------------------------------------------------------
# Situations the cases do not cover, on small in-memory trees.


def _run(rule: str, base: dict, head: dict) -> set[tuple[str, int]]:
    result = engine.run([BY_ID[rule]], _snapshot(Example(head=head, base=base)))
    return {(f.path, f.line) for f in result.findings}


_CMAKE = "add_subdirectory(backends/cuda)\n"
_SHIMS_CMAKE = "add_library(aoti_cuda_shims SHARED runtime/memory.cpp runtime/guard.cpp)\n"
_SHIMS_BUCK = (
    'cxx_library(\n    name = "shims",\n    srcs = [\n        "guard.cpp",\n        "memory.cpp",\n    ],\n)\n'
)
_SOURCES = {"CMakeLists.txt": _CMAKE, "backends/cuda/runtime/memory.cpp": "", "backends/cuda/runtime/guard.cpp": ""}


def _parity_tree(cmake: str, buck: str) -> dict[str, str]:
    return {**_SOURCES, "backends/cuda/CMakeLists.txt": cmake, "backends/cuda/runtime/BUCK": buck}


def test_source_parity_reports_a_source_dropped_from_one_side_only():
    base = _parity_tree(_SHIMS_CMAKE, _SHIMS_BUCK)
    dropped_in_buck = _parity_tree(_SHIMS_CMAKE, _SHIMS_BUCK.replace('        "guard.cpp",\n', ""))
    assert _run("source-parity", base, dropped_in_buck) == {("backends/cuda/runtime/BUCK", 3)}
    dropped_in_cmake = _parity_tree(_SHIMS_CMAKE.replace(" runtime/guard.cpp", ""), _SHIMS_BUCK)
    assert _run("source-parity", base, dropped_in_cmake) == {("backends/cuda/CMakeLists.txt", 1)}


def test_source_parity_ignores_a_source_moved_within_one_build():
    base = _parity_tree(_SHIMS_CMAKE, _SHIMS_BUCK)
    moved = _parity_tree(
        _SHIMS_CMAKE,
        _SHIMS_BUCK.replace('        "guard.cpp",\n', "") + 'cxx_library(name = "guard", srcs = ["guard.cpp"])\n',
    )
    assert _run("source-parity", base, moved) == set()


def test_whole_archive_of_a_static_library_is_not_reported():
    # A static library's PRIVATE link items are replayed too: the scope changes nothing there.
    head = {
        "CMakeLists.txt": (
            "add_library(kernels STATIC kernels.cpp)\n"
            "add_library(registry STATIC registry.cpp)\n"
            "target_link_libraries(registry PUBLIC -Wl,--whole-archive kernels -Wl,--no-whole-archive)\n"
        )
    }
    assert _run("link-whole-archive-public", {}, head) == set()


def test_two_sources_of_one_force_linked_library_defining_a_symbol():
    head = {
        "backends/aoti/BUCK": (
            'cxx_library(\n    name = "shims",\n    srcs = ["a.cpp", "b.cpp"],\n    link_whole = True,\n)\n'
        ),
        "backends/aoti/a.cpp": 'extern "C" int aoti_torch_device_type_cuda(void) { return 1; }\n',
        "backends/aoti/b.cpp": 'extern "C" {\nint aoti_torch_device_type_cuda(void) { return 1; }\n}\n',
    }
    assert _run("shim-duplicate-symbol", {}, head) == {("backends/aoti/BUCK", 3)}


def test_weak_static_and_select_alternative_definitions_do_not_collide():
    head = {
        "runtime/platform/BUCK": (
            "cxx_library(\n"
            '    name = "platform",\n'
            '    srcs = ["weak.cpp", "local.cpp"] + select({"android": ["android.cpp"], "DEFAULT": ["posix.cpp"]}),\n'
            "    link_whole = True,\n"
            ")\n"
        ),
        "runtime/platform/weak.cpp": 'extern "C" __attribute__((weak)) void et_pal_init(void) {}\n',
        "runtime/platform/local.cpp": 'extern "C" {\nstatic void et_pal_init(void) {}\n}\n',
        "runtime/platform/android.cpp": 'extern "C" void et_pal_init(void) {}\n',
        "runtime/platform/posix.cpp": 'extern "C" void et_pal_init(void) {}\n',
    }
    assert _run("shim-duplicate-symbol", {}, head) == set()


def test_export_dynamic_is_reported_once_and_in_oss_only_when_forced_static():
    cmake = {
        "CMakeLists.txt": _CMAKE,
        "backends/cuda/CMakeLists.txt": (
            "add_library(aoti_cuda_backend STATIC runtime/backend.cpp)\n"
            "target_link_options(aoti_cuda_backend INTERFACE -Wl,--export-dynamic)\n"
        ),
    }
    # Defined in every cell: reported once, for xplat (where libraries always link statically).
    everywhere = {**cmake, "backends/cuda/runtime/BUCK": 'cxx_library(name = "backend", srcs = ["backend.cpp"])\n'}
    assert _run("link-export-dynamic-missing", {}, everywhere) == {("backends/cuda/runtime/BUCK", 1)}
    # Defined in fbcode and oss only: fbcode links dynamically; oss counts when the wrapper forces static.
    for force_static, expected in ((False, set()), (True, {("backends/cuda/runtime/BUCK", 2)})):
        head = {
            **cmake,
            "shim": Gitlink("52196a3be467802f1cadce1debe7d8712e7327ee"),
            ".buckconfig": "[repositories]\n  root = .\n  shim = shim\n\n[repository_aliases]\n  fbcode_macros = shim\n",
            "backends/cuda/runtime/BUCK": (
                'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
                f'fbcode_target(_kind = cxx_library, name = "backend", srcs = ["backend.cpp"], force_static = {force_static})\n'
            ),
        }
        assert _run("link-export-dynamic-missing", {}, head) == expected


# ---------------------------------------------------------------------------------------
# The real regression behind link-whole-archive-public, when a mirror of ExecuTorch is present.

INTRODUCED = "eac0673bd5"  # "Add slimtensor INTERFACE target and refactor CMake dependencies"
FIXED = "3a00cc1897"  # "Ship the CUDA delegate in the wheel (#21645)"


@pytest.mark.parametrize(
    ("commit", "expected"),
    ((INTRODUCED, {("backends/cuda/CMakeLists.txt", 145)}), (FIXED, set())),
)
def test_the_real_public_whole_archive_regression_is_caught_where_it_came_in(commit, expected, executorch_mirror):
    from bot.diff import parse_diff
    from bot.errors import UnknownRevision
    from bot.repo import GitRepository
    from bot.snapshot import BuildModel, Snapshot

    with GitRepository(executorch_mirror) as repo:
        try:
            repo.resolve(commit)
        except UnknownRevision:
            pytest.skip(f"{commit} is not in the mirror at {executorch_mirror}")
        changes = parse_diff(repo.diff(f"{commit}^", commit))
        snapshot = Snapshot(BuildModel(repo.tree(f"{commit}^")), BuildModel(repo.tree(commit)), changes)
        result = engine.run([BY_ID["link-whole-archive-public"]], snapshot)
    assert {(f.path, f.line) for f in result.findings} == expected
