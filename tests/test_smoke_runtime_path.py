"""The runtime path without a GPU: flatc's headers from the tree's own schemas, the program loader and
the runtime host compiled from the CMake model, the wrapper cut out of a program's data, and a wrong
result placed at the changed line of a .cu kernel the program calls.

flatc comes from the executorch wheel (smoke/device/fetch_wheels.sh downloads it; SMOKE_FLATC may point
at its executorch/data/bin/flatc); without it those tests skip, saying so. The real tree comes from the
ExecuTorch mirror, its flatbuffers submodule headers from a google/flatbuffers mirror.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from smoke.backend_build import Layout, compile_command, find_toolset
from smoke.backend_compare import compare
from smoke.build_plan import RUNTIME_HOST_NAME, plan_directory
from smoke.program_run import extract_wrapper
from smoke.regressions import FLATBUFFERS_MIRROR, extract, shift_sort_indices, tree_diff
from smoke.schema_gen import find_flatc, flatc_options, generate_schemas

TOOLS = find_toolset()
FLATC = find_flatc()
needs_flatc = pytest.mark.skipif(
    FLATC is None,
    reason="no flatc: the executorch wheel is not installed here "
    "(smoke/device/fetch_wheels.sh downloads it; set SMOKE_FLATC to "
    "its executorch/data/bin/flatc)",
)
needs_cxx = pytest.mark.skipif(
    TOOLS.cxx is None or TOOLS.cuda_include is None, reason="needs g++ and the CUDA toolkit's headers"
)


@pytest.fixture(scope="module")
def real_tree(executorch_mirror, tmp_path_factory) -> Path:
    if not (FLATBUFFERS_MIRROR / "HEAD").exists():
        pytest.skip(
            f"no google/flatbuffers mirror at {FLATBUFFERS_MIRROR} (set SMOKE_FLATBUFFERS_MIRROR): the "
            "generated headers include the submodule's flatbuffers/flatbuffers.h"
        )
    return extract(executorch_mirror, "refs/heads/main", tmp_path_factory.mktemp("main"))


def test_flatc_options_are_read_from_the_trees_own_custom_command(tmp_path):
    (tmp_path / "schema").mkdir()
    (tmp_path / "schema/CMakeLists.txt").write_text(
        "add_custom_command(\n  OUTPUT ${_outputs}\n  COMMAND flatc --cpp --cpp-std c++11 --gen-mutable\n"
        '          --scoped-enums -o\n          "${_out}" ${_schema_srcs}\n)\n'
    )
    assert flatc_options(tmp_path, "schema") == ["--cpp", "--cpp-std", "c++11", "--gen-mutable", "--scoped-enums"]
    assert flatc_options(tmp_path, "extension/flat_tensor/serialize") is None


def test_without_flatc_or_the_submodule_the_schema_stage_skips_and_says_why(tmp_path):
    skipped = generate_schemas(tmp_path, tmp_path / "build", None)
    assert skipped.status == "skipped" and "executorch wheel" in skipped.reason
    flatc = tmp_path / "flatc"
    flatc.write_text("#!/bin/sh\nexit 0\n")
    flatc.chmod(0o755)
    no_submodule = generate_schemas(tmp_path, tmp_path / "build", str(flatc))
    assert no_submodule.status == "skipped" and "third-party/flatbuffers" in no_submodule.reason


def test_the_plan_adds_a_runtime_host_with_the_loader_and_the_ptd_reader(real_tree):
    plan = plan_directory(real_tree)
    host = plan.runtime_host
    assert host is not None and host.name == RUNTIME_HOST_NAME
    linked = [item.value for item in host.link_items if item.kind.startswith("target")]
    assert {"aoti_cuda_backend", "extension_data_loader", "extension_flat_tensor", "executorch_core"} <= set(linked)
    # The backend archive is taken whole through its own usage requirements, as by a static runner.
    assert any(
        "--whole-archive" in item.value and "aoti_cuda_backend" in item.value
        for item in host.link_items
        if item.kind == "option"
    )
    assert [step.source for step in host.compile_steps] == [
        "@smoke/runtime_host.cpp",
        "kernels/portable/cpu/op__device_copy.cpp",
    ]
    generated = {gap.name.rsplit("/", 1)[-1] for gap in plan.generated}
    assert {"program_generated.h", "flat_tensor_generated.h"} <= generated


@needs_flatc
@needs_cxx
def test_the_wheels_flatc_generates_the_headers_and_the_loader_and_host_compile(real_tree, tmp_path):
    layout = Layout(real_tree, tmp_path / "build")
    layout.prepare()
    schema = generate_schemas(real_tree, layout.binary_root, FLATC)
    assert schema.status == "passed", schema.reason
    assert (layout.binary_root / "schema/include/executorch/schema/program_generated.h").is_file()
    assert (
        layout.binary_root / "extension/flat_tensor/include/executorch/extension/flat_tensor/serialize/"
        "flat_tensor_generated.h"
    ).is_file()
    plan = plan_directory(real_tree)
    steps = {step.source: step for target in plan.targets for step in target.compile_steps}
    steps.update({step.source: step for step in plan.runtime_host.compile_steps})
    # The loader, the .ptd reader and the host: each includes a generated header or the loader's API.
    for source in (
        "runtime/executor/program.cpp",
        "extension/flat_tensor/flat_tensor_data_map.cpp",
        "@smoke/runtime_host.cpp",
    ):
        command = compile_command(steps[source], layout, replace(TOOLS, ccache=None))
        result = subprocess.run(command, capture_output=True, text=True, cwd=layout.build_dir, timeout=600)
        assert result.returncode == 0, f"{source}: {result.stderr[-2000:]}"


def test_the_wrapper_is_cut_out_of_the_programs_data_by_its_own_header(tmp_path):
    cc = TOOLS.cc or shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler")
    source = tmp_path / "wrapper.c"
    source.write_text(
        "extern int aoti_torch_dtype_float32(void);\nint f(void) { return aoti_torch_dtype_float32(); }\n"
    )
    library = tmp_path / "wrapper.so"
    subprocess.run([cc, "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    data = tmp_path / "aoti_cuda_blob.ptd"
    # A stray ELF magic before it (not a 64-bit little-endian header) and other data after it.
    data.write_bytes(
        b"FH01" + b"\x00" * 60 + b"\x7fELF\x01\x01" + b"\x00" * 100 + library.read_bytes() + b"\xaa" * 4096
    )
    cut = extract_wrapper([str(data)], tmp_path / "cut.so")
    assert cut is not None and cut.read_bytes() == library.read_bytes()
    assert extract_wrapper([str(source)], tmp_path / "none.so") is None


def _summary(program_status: str, wrong: int = 0) -> dict:
    calls = {"aoti_torch_cuda_sort_stable": "backends/cuda/runtime/shims/sort.cu"}
    reason = "16384 of 16384 values differ from eager beyond atol 0.0001" if wrong else "matches eager"
    return {
        "errors": [],
        "exported": ["aoti_torch_cuda_sort_stable"],
        "duplicated": [],
        "link_problems": [],
        "statuses": {"compile": "passed", "program-run": program_status},
        "reasons": {"compile": "ok", "program-run": f"sort: {reason}"},
        "definitions": calls,
        "programs": [
            {
                "name": "sort",
                "status": program_status,
                "reason": reason,
                "ran": True,
                "calls": calls,
                "wrong_values": wrong,
            }
        ],
    }


def test_a_wrong_result_is_placed_at_the_changed_line_of_the_kernel_the_program_calls(executorch_mirror, tmp_path):
    base = extract(executorch_mirror, "refs/heads/main", tmp_path / "base")
    head = extract(executorch_mirror, "refs/heads/main", tmp_path / "head")
    regression = shift_sort_indices(head)
    diff = tree_diff(base, head)
    new = compare(_summary("passed"), _summary("failed", wrong=16384), diff, head)
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("wrong-result", regression.path, regression.line, True)
    ], new
    # The changed kernel is named, and the shim the program calls that lives beside it.
    assert "init_indices_kernel" in new[0].message and "aoti_torch_cuda_sort_stable" in new[0].message
    # With nothing changed that the evidence points at, no line is blamed: the finding says so.
    outside = compare(_summary("passed"), _summary("failed", wrong=3), "", head)
    assert [(item.kind, item.path, item.in_diff) for item in outside] == [("wrong-result", None, False)]
    assert "changes no definition" in outside[0].message


slow = pytest.mark.skipif(
    os.environ.get("PR_CHECK_SLOW") != "1",
    reason="set PR_CHECK_SLOW=1: builds the real tree's C++ (minutes on 2 cores)",
)


@slow
@needs_flatc
@needs_cxx
def test_the_runtime_host_links_the_trees_loader_and_backend(real_tree, tmp_path):
    from smoke.backend_stages import run_backend

    plan = plan_directory(real_tree)
    # The .cu shims only add symbols to the shim library; the C++ is what the loader and host need.
    plan = replace(
        plan,
        targets=tuple(
            replace(target, compile_steps=tuple(step for step in target.compile_steps if step.language != "CUDA"))
            for target in plan.targets
        ),
    )
    run = run_backend(plan, real_tree, tmp_path / "build", TOOLS)
    assert run.schema.status == "passed" and run.compile.status == "passed", (run.schema.reason, run.compile.reason)
    assert run.runtime_host.status == "passed", run.runtime_host.reason
    assert not run.build.not_generated
