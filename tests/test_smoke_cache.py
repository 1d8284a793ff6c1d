"""The smoke job's caches and its choice of programs: objects kept by content (a header the tree changes
invalidates them, another checkout of the same content reuses them), programs chosen by the paths a
diff changes, and the coverage of the changed shims said per function."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from smoke.backend_build import find_toolset
from smoke.backend_run import coverage
from smoke.backend_stages import run_backend
from smoke.blame import Tree, changed_lines
from smoke.build_plan import plan_directory
from smoke.commands import CommandResult
from smoke.object_cache import ObjectCache
from smoke.program_run import catalogue, choose_programs, describe_export_failure

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "fixtures" / "smoke_backend_mini"
TOOLS = find_toolset()
needs_compilers = pytest.mark.skipif(
    TOOLS.cxx is None or TOOLS.nvcc is None or TOOLS.cuda_include is None, reason="needs g++ and nvcc with its toolkit"
)


def _tree(root: Path) -> Path:
    tree = root / "executorch"
    shutil.copytree(MINI, tree)
    return tree


@needs_compilers
def test_objects_are_served_by_content_across_checkouts_and_a_changed_header_recompiles(tmp_path):
    cache = ObjectCache(tmp_path / "cache")
    first = _tree(tmp_path / "first")
    run = run_backend(plan_directory(first), first, tmp_path / "build-1", TOOLS, cache)
    compiled = run.compile.details["objects_compiled"]
    assert run.compile.status == "passed" and compiled > 0 and run.compile.details["objects_from_cache"] == 0
    # Another checkout with the same content, another build directory: nothing is compiled again.
    second = _tree(tmp_path / "second")
    run = run_backend(plan_directory(second), second, tmp_path / "build-2", TOOLS, cache)
    assert (run.compile.details["objects_compiled"], run.compile.details["objects_from_cache"]) == (0, compiled)
    assert run.exported and run.compile.status == "passed"
    # A header the shims include changes: the sources that include it compile again, the rest do not.
    header = second / "backends/cuda/runtime/shims/memory.h"
    header.write_text(header.read_text() + "\n// a comment changes the header's bytes\n")
    run = run_backend(plan_directory(second), second, tmp_path / "build-3", TOOLS, cache)
    again = run.compile.details["objects_compiled"]
    assert 0 < again < compiled, run.compile.details


def test_programs_are_chosen_by_the_paths_the_diff_changes():
    assert choose_programs(["backends/cuda/runtime/shims/int4mm.cu"]) == ["int4mm"]
    assert choose_programs(["backends/cuda/runtime/shims/memory.cpp"]) == ["tensor"]
    assert set(choose_programs(["backends/cuda/CMakeLists.txt"])) == {"sort", "tensor"}
    # Nothing the catalogue names: the default programs, never none.
    defaults = [entry["name"] for entry in catalogue() if entry["default"]]
    assert defaults and choose_programs(["README.md"]) == defaults


def test_coverage_says_which_changed_functions_ran_on_the_gpu(tmp_path):
    tree = tmp_path / "executorch"
    source = tree / "backends/cuda/runtime/shims/sort.cu"
    source.parent.mkdir(parents=True)
    source.write_text(
        "__global__ void fill_kernel(int *d) {\n  d[0] = 1;\n}\n"
        'extern "C" int aoti_torch_cuda_sort_stable(int *d) {\n  return 0;\n}\n'
        'extern "C" int aoti_torch_cuda_unused(int *d) {\n  return 1;\n}\n'
    )
    path = "backends/cuda/runtime/shims/sort.cu"
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -2 +2 @@\n-  d[0] = 0;\n+  d[0] = 1;\n@@ -8 +8 @@\n-  return 2;\n+  return 1;\n"
    ran = {"name": "sort", "ran": True, "calls": {"aoti_torch_cuda_sort_stable": path}}
    rows = coverage(changed_lines(diff), {"programs": [ran]}, Tree(tree))
    assert [(row["function"], row["line"], row["ran_on_gpu"]) for row in rows] == [
        ("fill_kernel", 2, True),
        ("aoti_torch_cuda_unused", 8, False),  # a shim beside the called one is not reached through it
    ]
    # The backend's own tests are no code a program runs: not listed at all.
    test = "backends/cuda/runtime/test/test_cuda_allocator.cpp"
    (tree / test).parent.mkdir(parents=True)
    (tree / test).write_text("TEST_F(Allocator, Copies) {\n  EXPECT_TRUE(true);\n}\n")
    with_test = diff + f"--- a/{test}\n+++ b/{test}\n@@ -2 +2 @@\n-  EXPECT_TRUE(false);\n+  EXPECT_TRUE(true);\n"
    assert [row["path"] for row in coverage(changed_lines(with_test), {"programs": [ran]}, Tree(tree))] == [path, path]
    # The same diff when the program did not run: nothing counts as reached.
    rows = coverage(changed_lines(diff), {"programs": [{**ran, "ran": False}]}, Tree(tree))
    assert not any(row["ran_on_gpu"] for row in rows)
    assert rows[0]["how"] == "not reached by any program that ran"


def test_coverage_lists_a_changed_triton_kernel_reached_only_by_the_program_it_exported(tmp_path):
    tree = tmp_path / "executorch"
    path = "backends/cuda/triton/kernels/sdpa.py"
    (tree / path).parent.mkdir(parents=True)
    (tree / path).write_text("import math\n\n\ndef sdpa(D):\n    sm_scale = 1.0 / D\n    return sm_scale\n")
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -5 +5 @@\n-    sm_scale = 1.0 / math.sqrt(D)\n+    sm_scale = 1.0 / D\n"
    ran = {"name": "sdpa", "ran": True, "exporter": "tree", "calls": {}}
    rows = coverage(changed_lines(diff), {"programs": [ran]}, Tree(tree))
    assert [(row["path"], row["function"], row["line"], row["ran_on_gpu"]) for row in rows] == [(path, "sdpa", 5, True)]
    # Exported by the wheel's Python (the tree's did not import), or another program: not reached.
    for other in ({**ran, "exporter": "wheel"}, {**ran, "name": "sort"}):
        rows = coverage(changed_lines(diff), {"programs": [other]}, Tree(tree))
        assert [row["ran_on_gpu"] for row in rows] == [False]


def test_a_failed_export_is_described_by_its_exceptions_not_torchs_closing_advice():
    # The H100 run reported the sdpa export as "exit 1: Use tlparse to see full graph. (...)": the last
    # line. A compile error's stderr as PyTorch prints it (written by hand in its format): the exception
    # raised, the root it came from, then advice.
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "export_program.py", line 104, in export\n'
        "RuntimeError: Expected bfloat16 inputs\n"
        "\nThe above exception was the direct cause of the following exception:\n\n"
        "torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node with fake tensors: "
        "call_function triton.sdpa(*(FakeTensor(..., device='cuda:0', size=(1, 4, 64, 64)),)): got "
        "RuntimeError('Expected bfloat16 inputs')\n"
        '\nfrom user code:\n  File "sdpa.py", line 986, in sdpa\n\n'
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a bug"
        ' to PyTorch). For even more developer context, set TORCH_LOGS="+dynamo"\n'
        "Use tlparse to see full graph. (https://github.com/pytorch/tlparse?tab=readme-ov-file#tlparse-parse-structured-pt2-logs)\n"
    )
    said = describe_export_failure(CommandResult("python export_program.py sdpa out", 1, "", stderr, 40.0))
    assert said.startswith("exit 1: torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node")
    assert "Expected bfloat16 inputs" in said and "tlparse" not in said
    # No exception printed (a crash): how it ended and its last line, as before.
    crashed = describe_export_failure(CommandResult("python export_program.py sdpa out", -11, "", "Segfault\n", 3.0))
    assert crashed == "killed by signal 11: Segfault"
