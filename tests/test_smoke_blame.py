"""The smoke job names the cause by evidence: the run's own error lines, the shim library's exports at
base and head, and the build line that changed them. No GPU is needed: the runs' outputs are written
here in the exact formats the code that prints them uses (the AOTInductor wrapper's "API call failed",
ExecuTorch's ET_LOG lines, the CUDA runtime's error strings), the builds are real (g++, nvcc), and the
trees are the real tree (a fetched mirror) or the miniature fixtures/smoke_backend_mini.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smoke.backend_build import find_toolset
from smoke.backend_compare import backend_summary, compare
from smoke.backend_run import BackendOptions, backend_stages
from smoke.backend_stages import run_backend
from smoke.blame import changed_lines, functions_of
from smoke.build_plan import RUNTIME_HOST_KERNELS, plan_directory
from smoke.machine import find_toolchain, inspect_machine
from smoke.regressions import (
    extract,
    halve_int4_group,
    hide_shims,
    refuse_device_zero,
    refuse_two_dimensions,
    scale_sdpa_by_dimension,
    shift_sort_indices,
    tree_diff,
)
from smoke.report import build_report
from smoke.runtime_errors import read_runtime_errors

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "fixtures" / "smoke_backend_mini"
TOOLS = find_toolset()
needs_compilers = pytest.mark.skipif(
    TOOLS.cxx is None or TOOLS.nvcc is None or TOOLS.cuda_include is None, reason="needs g++ and nvcc with its toolkit"
)
SORT = "backends/cuda/runtime/shims/sort.cu"
MEMORY = "backends/cuda/runtime/shims/memory.cpp"
MINI_CMAKE = "backends/cuda/CMakeLists.txt"

# What a run prints when aoti_torch_empty_strided returns an error: the shim's own check (ET_LOG through
# ET_CHECK_OR_RETURN_ERROR, the base name and line of the check), the wrapper's exception as the model
# container's handler prints it, then the backend's own line. A harmless log line comes first, as the
# static host prints it, and a CUDA error of the sort kernel is in the same output: neither is the cause.
FAILED_EMPTY_STRIDED = (
    "E 00:00:00.101010 executorch:aoti_delegate_handle.h:61] Failed to promote symbols to global\n"
    "E 00:00:00.412345 executorch:memory.cpp:{line}] aoti_torch_empty_strided: 2 dimensions\n"
    "Error: aoti_torch_empty_strided(2, int_array_0, int_array_1, cached_torch_dtype_float32, "
    "cached_torch_device_type_cuda, 0, &buf0_handle) API call failed at "
    "/tmp/torchinductor_root/cx/cxq4.wrapper.cpp, line 812\n"
    "E 00:00:00.412400 executorch:sort.cu:338] CUDA error: misaligned address\n"
    "E 00:00:00.412501 executorch:cuda_backend.cpp:418] AOTInductorModelContainerRun failed with error code 1\n"
)


def _summary(programs: list[dict], definitions: dict[str, str], status: str) -> dict:
    return {
        "errors": [],
        "exported": sorted(definitions),
        "duplicated": [],
        "link_problems": [],
        "statuses": {"compile": "passed", "program-run": status},
        "reasons": {"compile": "ok", "program-run": programs[0]["reason"]},
        "definitions": definitions,
        "programs": programs,
    }


@pytest.fixture(scope="module")
def real_pair(tmp_path_factory, executorch_mirror):
    root = tmp_path_factory.mktemp("real")
    return extract(executorch_mirror, "refs/heads/main", root / "base")


def _head(real_pair: Path, tmp_path: Path) -> Path:
    head = tmp_path / "head" / "executorch"
    shutil.copytree(real_pair, head)
    return head


def test_the_runs_error_lines_are_read_by_kind():
    errors = read_runtime_errors(FAILED_EMPTY_STRIDED.format(line=170), "failed: execute (error 0x1)\n")
    assert errors.failed_shims == ("aoti_torch_empty_strided",)
    assert [(place.file, place.line) for place in errors.places] == [
        ("memory.cpp", 170),
        ("sort.cu", 338),
        ("cuda_backend.cpp", 418),
    ]
    assert errors.cuda_errors == ("misaligned address",)
    # The failed call leads the summary, without its argument list or the wrapper's temporary file.
    assert errors.summary().startswith("aoti_torch_empty_strided(...) API call failed")
    assert "promote symbols" not in errors.summary() and "cxq4" not in errors.summary()


def test_a_failing_cpp_shim_is_blamed_at_its_changed_line_not_the_kernel(real_pair, tmp_path):
    head = _head(real_pair, tmp_path)
    regression = refuse_two_dimensions(head)
    diff = tree_diff(real_pair, head)
    definitions = {"aoti_torch_empty_strided": MEMORY, "aoti_torch_cuda_sort_stable": SORT}
    errors = read_runtime_errors(FAILED_EMPTY_STRIDED.format(line=regression.line)).to_json()
    failed = {"name": "tensor", "status": "failed", "reason": "did not run", "ran": False, "errors": errors}
    passed = {"name": "tensor", "status": "passed", "reason": "matches eager", "ran": True}
    new = compare(_summary([passed], definitions, "passed"), _summary([failed], definitions, "failed"), diff, head)
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("run-failure", MEMORY, regression.line, True)
    ], new
    assert "aoti_torch_empty_strided" in new[0].message and "sort.cu" not in new[0].message.split(";", 2)[-1]
    # Without the shim's own log line, the failed call alone leads to the same line of its definition.
    bare = read_runtime_errors(FAILED_EMPTY_STRIDED.format(line=regression.line).splitlines()[2]).to_json()
    new = compare(
        _summary([passed], definitions, "passed"),
        _summary([{**failed, "errors": bare}], definitions, "failed"),
        diff,
        head,
    )
    assert [(item.path, item.line) for item in new] == [(MEMORY, regression.line)], new


GUARD = "backends/cuda/runtime/shims/cuda_guard.cpp"
# What a run prints when the wrapper's stream guard cannot be made: the guard shim's own check, then the
# AOTInductor wrapper's exception (AOTICudaStreamGuard checks the shim's error code), then the backend's.
FAILED_STREAM_GUARD = (
    "E 00:00:00.300100 executorch:cuda_guard.cpp:{line}] aoti_torch_create_cuda_stream_guard failed: "
    "device 0 out of range\n"
    "Error: aoti_torch_create_cuda_stream_guard(stream, device_idx_, &stream_guard) API call failed at "
    "/tmp/torchinductor_root/ab/model.h, line 131\n"
    "E 00:00:00.300200 executorch:cuda_backend.cpp:736] AOTInductorModelContainerRun failed with error code 1\n"
)


def test_a_second_cpp_shim_failing_at_run_time_is_blamed_at_its_check(real_pair, tmp_path):
    head = _head(real_pair, tmp_path)
    regression = refuse_device_zero(head)
    definitions = {"aoti_torch_create_cuda_stream_guard": GUARD, "aoti_torch_cuda_sort_stable": SORT}
    errors = read_runtime_errors(FAILED_STREAM_GUARD.format(line=regression.line + 4)).to_json()
    failed = {"name": "sort", "status": "failed", "reason": "did not run", "ran": False, "errors": errors}
    passed = {"name": "sort", "status": "passed", "reason": "matches eager", "ran": True}
    new = compare(
        _summary([passed], definitions, "passed"),
        _summary([failed], definitions, "failed"),
        tree_diff(real_pair, head),
        head,
    )
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("run-failure", GUARD, regression.line, True)
    ], new
    assert "aoti_torch_create_cuda_stream_guard" in new[0].message


INT4MM = "backends/cuda/runtime/shims/int4mm.cu"
# A kernel's fatal check in a header the diff does not touch (ET_CHECK logs at Fatal level, then aborts):
# no shim call is reported failed, and the check's line is not the pull request's.
ABORTED_IN_INT4MM_HEADER = (
    "F 00:00:00.500100 executorch:int4mm.cuh:1197] In function _weight_int4pack_mm_cuda(), assert failed: "
    "qGroupSize == 32 || qGroupSize == 64 || qGroupSize == 128 || qGroupSize == 256\n"
)


def test_a_run_that_aborts_outside_the_diff_is_blamed_on_the_changed_shim_it_calls(real_pair, tmp_path):
    head = _head(real_pair, tmp_path)
    regression = halve_int4_group(head)
    calls = {"aoti_torch_cuda__weight_int4pack_mm": INT4MM, "aoti_torch_empty_strided": MEMORY}
    errors = read_runtime_errors(ABORTED_IN_INT4MM_HEADER).to_json()
    failed = {"name": "int4mm", "status": "failed", "reason": "did not run: killed by SIGABRT", "ran": False}
    failed |= {"errors": errors, "calls": calls}
    passed = {"name": "int4mm", "status": "passed", "reason": "matches eager", "ran": True, "calls": calls}
    new = compare(
        _summary([passed], calls, "passed"), _summary([failed], calls, "failed"), tree_diff(real_pair, head), head
    )
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("run-failure", INT4MM, regression.line, True)
    ], new
    assert "int4mm.cuh:1197" in new[0].message and "aoti_torch_cuda__weight_int4pack_mm" in new[0].message


def test_a_wrong_value_from_the_backends_triton_kernel_is_blamed_at_its_python_line(real_pair, tmp_path):
    # No native code changes: the SDPA kernel is compiled into the program at export from the backend's
    # Python, so the changed line of that Python is the place (said as such), not "no line".
    head = _head(real_pair, tmp_path)
    regression = scale_sdpa_by_dimension(head)
    calls = {"aoti_torch_empty_strided": MEMORY, "aoti_torch_create_cuda_stream_guard": GUARD}
    wrong = {"name": "sdpa", "status": "failed", "reason": "16384 of 16384 values differ", "ran": True, "calls": calls}
    right = {**wrong, "status": "passed", "reason": "matches eager"}
    new = compare(
        _summary([right], calls, "passed"), _summary([wrong], calls, "failed"), tree_diff(real_pair, head), head
    )
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("wrong-result", regression.path, regression.line, True)
    ], new
    assert "sdpa in backends/cuda/triton/kernels/sdpa.py" in new[0].message


def test_a_wrong_value_from_a_cpp_shim_is_blamed_there_not_on_the_cu_kernel(real_pair, tmp_path):
    head = _head(real_pair, tmp_path)
    text = (head / MEMORY).read_text()
    old = "new SlimTensor(self->as_strided(sizes, strides, storage_offset));"
    assert old in text
    (head / MEMORY).write_text(
        text.replace(old, "new SlimTensor(self->as_strided(sizes, strides, storage_offset + 1));")
    )
    line = text[: text.index(old)].count("\n") + 1
    calls = {"aoti_torch__reinterpret_tensor": MEMORY, "aoti_torch_cuda_sort_stable": SORT}
    wrong = {"name": "sort", "status": "failed", "reason": "9 of 16384 values differ", "ran": True, "calls": calls}
    right = {**wrong, "status": "passed", "reason": "matches eager"}
    new = compare(
        _summary([right], calls, "passed"), _summary([wrong], calls, "failed"), tree_diff(real_pair, head), head
    )
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [("wrong-result", MEMORY, line, True)]
    assert "aoti_torch__reinterpret_tensor" in new[0].message


def test_a_wrong_value_from_a_cu_kernel_names_the_kernel_and_the_shim_beside_it(real_pair, tmp_path):
    head = _head(real_pair, tmp_path)
    regression = shift_sort_indices(head)
    calls = {"aoti_torch_empty_strided": MEMORY, "aoti_torch_cuda_sort_stable": SORT}
    wrong = {"name": "sort", "status": "failed", "reason": "16384 of 16384 differ", "ran": True, "calls": calls}
    new = compare(
        _summary([{**wrong, "status": "passed"}], calls, "passed"),
        _summary([wrong], calls, "failed"),
        tree_diff(real_pair, head),
        head,
    )
    assert [(item.path, item.line) for item in new] == [(SORT, regression.line)]
    assert "init_indices_kernel" in new[0].message


def test_functions_are_found_with_their_spans_through_comments_and_strings():
    text = 'extern "C" {\n// f(x) {\nint f(int x) {\n  if (x) {\n    return g("}");\n  }\n  return 0;\n}\n}\n'
    assert [(item.name, item.start, item.end) for item in functions_of(text)] == [("f", 3, 8)]
    diff = "--- a/x.cpp\n+++ b/x.cpp\n@@ -3,3 +3,2 @@\n int f(int x) {\n-  a();\n-  b();\n+  c();\n"
    assert changed_lines(diff) == {"x.cpp": frozenset({4})}


# -- lost exports traced to the build line, with real builds of the miniature ------------------------------


def _mini(tmp_path: Path, name: str, edits: dict[str, tuple[str, str]] | None = None) -> Path:
    tree = tmp_path / name / "executorch"
    shutil.copytree(MINI, tree)
    for path, (old, new) in (edits or {}).items():
        text = (tree / path).read_text()
        assert old in text, f"{path} lost the text this test edits"
        (tree / path).write_text(text.replace(old, new, 1))
    return tree


def _built(tree: Path, build: Path) -> dict:
    plan = plan_directory(tree)
    return backend_summary(run_backend(plan, tree, build, TOOLS), plan)


@pytest.fixture(scope="module")
def mini_base(tmp_path_factory):
    if TOOLS.cxx is None or TOOLS.nvcc is None or TOOLS.cuda_include is None:
        pytest.skip("needs g++ and nvcc with its toolkit")
    root = tmp_path_factory.mktemp("mini-base")
    tree = _mini(root, "base")
    return tree, _built(tree, root / "build")


@needs_compilers
def test_a_cmake_line_that_drops_a_source_is_blamed_with_both_counts(tmp_path, mini_base):
    base_tree, base = mini_base
    old = "set(_shim_sources runtime/shims/memory.cpp runtime/shims/fill.cu)"
    head_tree = _mini(tmp_path, "head", {MINI_CMAKE: (old, "set(_shim_sources runtime/shims/memory.cpp)")})
    head = _built(head_tree, tmp_path / "build")
    new = compare(base, head, tree_diff(base_tree, head_tree), head_tree)
    line = (MINI / MINI_CMAKE).read_text().splitlines().index(old) + 1
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("symbol-lost", MINI_CMAKE, line, True)
    ], new
    counts = f"{len(base['exported'])} exported at base, {len(base['exported']) - 1} at head"
    assert "aoti_torch_cuda_fill" in new[0].message and "fill.cu" in new[0].message and counts in new[0].message


@needs_compilers
def test_a_visibility_flag_is_blamed_at_the_line_that_adds_it(tmp_path, mini_base):
    base_tree, base = mini_base
    anchor = "target_compile_definitions(aoti_cuda_shims PRIVATE CUDA_AVAILABLE=1)\n"
    hidden = "target_compile_options(aoti_cuda_shims PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fvisibility=hidden>)\n"
    head_tree = _mini(tmp_path, "head", {MINI_CMAKE: (anchor, anchor + hidden)})
    head = _built(head_tree, tmp_path / "build")
    new = compare(base, head, tree_diff(base_tree, head_tree), head_tree)
    line = (head_tree / MINI_CMAKE).read_text().splitlines().index(hidden.strip()) + 1
    lost = [item for item in new if item.kind == "symbol-lost"]
    assert [(item.path, item.line, item.in_diff) for item in lost] == [(MINI_CMAKE, line, True)], new
    assert "-fvisibility=hidden" in lost[0].message and "aoti_torch_cuda_allocate" in lost[0].message
    # The backend still calls the hidden shim, so the host's link fails on it: said once, by its cause.
    links = [item for item in new if item.kind == "link-error"]
    assert len(links) <= 1 and not [item for item in new if item.kind == "stage-failed"], new


# The H100 run of 2026-12-07 (smoke/reports/h100-2026-12-07-run1): main's and hidden-visibility's
# backend summaries as the GPU machine recorded them (exports 51 and 33, the host's link failure on
# CudaAllocator::instance(), the compile options of each shim-library source with their CMake lines).
H100_RUN = REPO / "smoke" / "reports" / "h100-2026-12-07-run1"


def test_a_visibility_flag_that_also_breaks_a_link_is_one_finding_at_its_line(real_pair, tmp_path):
    # On the GPU the link failure came out as a second finding with no cause; the definition it misses
    # (cuda_allocator.cpp) is hidden by the same added option, so it is that finding again.
    head = _head(real_pair, tmp_path)
    regression = hide_shims(head)
    base_summary = json.loads((H100_RUN / "main.json").read_text())["backend"]["head"]["summary"]
    head_summary = json.loads((H100_RUN / "hidden-visibility.json").read_text())["backend"]["head"]["summary"]
    new = compare(base_summary, head_summary, tree_diff(real_pair, head), head)
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("symbol-lost", regression.path, regression.line, True)
    ], new
    message = new[0].message
    assert "51 exported at base, 33 at head" in message and "-fvisibility=hidden" in message
    assert "CudaAllocator::instance()" in message and "smoke_backend_host" in message


@needs_compilers
def test_a_link_failure_is_reported_once(tmp_path, mini_base):
    base_tree, base = mini_base
    backend = "backends/cuda/runtime/cuda_backend.cpp"
    old = "int smoke_mini_backend_allocate(void **ret) { return aoti_torch_cuda_allocate(64, ret); }"
    edit = 'extern "C" int aoti_torch_cuda_gone(void);\nint smoke_mini_gone(void) { return aoti_torch_cuda_gone(); }\n'
    head_tree = _mini(tmp_path, "head", {backend: (old, old + "\n" + edit)})
    head = _built(head_tree, tmp_path / "build")
    assert head["statuses"]["backend-host"] == "failed"
    new = compare(base, head, tree_diff(base_tree, head_tree), head_tree)
    assert [item.kind for item in new] == ["link-error"], new
    assert "aoti_torch_cuda_gone" in new[0].message


# -- untested is never passed ----------------------------------------------------------------------------


def _verdict(tmp_path: Path, head: Path, base: Path) -> tuple[str, dict]:
    facts = inspect_machine(find_toolchain())
    stages, _ = backend_stages(BackendOptions(head=head, base=base), facts, TOOLS, tmp_path / "build")
    report = build_report(facts.to_json(), stages, {}, {}, None)
    return report["status"], {stage.name: stage for stage in stages}


MISSING_SOURCE = ("runtime/shims/fill.cu)", "runtime/shims/fill.cu runtime/shims/gone.cpp)")


@needs_compilers
def test_a_tree_that_does_not_build_at_base_or_head_fails_not_passes(tmp_path):
    head = _mini(tmp_path, "head", {MINI_CMAKE: MISSING_SOURCE})
    base = _mini(tmp_path, "base", {MINI_CMAKE: MISSING_SOURCE})
    status, stages = _verdict(tmp_path, head, base)
    assert status == "failed"
    assert stages["new-at-head"].reason.startswith("could not build at head: "), stages["new-at-head"].reason
    assert "gone.cpp" in stages["new-at-head"].reason


@needs_compilers
def test_a_base_that_does_not_build_leaves_the_run_neutral_and_says_so(tmp_path):
    head = _mini(tmp_path, "head")
    base = _mini(tmp_path, "base", {MINI_CMAKE: MISSING_SOURCE})
    status, stages = _verdict(tmp_path, head, base)
    assert status == "skipped"
    assert stages["new-at-head"].status == "skipped"
    assert stages["new-at-head"].reason.startswith("no comparison: could not build at base: ")


def test_the_plan_takes_the_runtime_hosts_kernels_only_where_the_tree_has_them(real_pair, tmp_path):
    head = _head(real_pair, tmp_path)
    for path in RUNTIME_HOST_KERNELS:
        (head / path).unlink()
    plan = plan_directory(head)
    assert plan.runtime_host is None
    assert any(RUNTIME_HOST_KERNELS[0] in gap.reason for gap in plan.gaps)
    assert plan.host is not None  # the backend host does not need them
