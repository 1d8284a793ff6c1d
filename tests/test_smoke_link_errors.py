"""Link and load failures named by their cause, not by the linker's last line.

The parser is checked on linker and loader lines written out by hand in GNU ld's and glibc's formats;
the whole path (compile, failed link, trace to sources, place in the diff, consequences not repeated) on
the miniature tree with the machine's real g++ and nvcc, where a second source joins the shim library
and defines a shim its whole-archived common library already defines: the tensor_attribute.cpp defect.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from smoke.backend_build import find_toolset
from smoke.backend_compare import backend_summary, compare
from smoke.backend_stages import run_backend
from smoke.build_plan import model_of_directory, plan_build
from smoke.link_errors import explain, parse_link_errors, trace_object
from smoke.regressions import tree_diff

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "fixtures" / "smoke_backend_mini"
TOOLS = find_toolset()
needs_compilers = pytest.mark.skipif(
    TOOLS.cxx is None or TOOLS.nvcc is None or TOOLS.cuda_include is None, reason="needs g++ and nvcc with its toolkit"
)

LD_DUPLICATE = """\
/usr/bin/ld: /b/objects/aoti_cuda_shims/backends__cuda__runtime__shims__tensor_attribute.cpp.o: in function `aoti_torch_get_device_type':
tensor_attribute.cpp:(.text+0x0): multiple definition of `aoti_torch_get_device_type'; /b/lib/libaoti_common_shims_slim.a(backends__aoti__common_shims_slim.cpp.o):common_shims_slim.cpp:(.text+0x120): first defined here
/usr/bin/ld: /b/objects/aoti_cuda_shims/backends__cuda__runtime__shims__tensor_attribute.cpp.o: in function `aoti_torch_device_type_cuda':
tensor_attribute.cpp:(.text+0x40): multiple definition of `aoti_torch_device_type_cuda'; /b/lib/libaoti_common_shims_slim.a(backends__aoti__common_shims_slim.cpp.o):common_shims_slim.cpp:(.text+0x10): first defined here
/usr/bin/ld: /b/objects/smoke_backend_host/smoke__backend_host.cpp.o: in function `main':
backend_host.cpp:(.text.startup+0x2a): undefined reference to `et_pal_init'
collect2: error: ld returned 1 exit status
"""
OBJECTS = {
    "backends__cuda__runtime__shims__tensor_attribute.cpp.o": (
        "aoti_cuda_shims",
        "backends/cuda/runtime/shims/tensor_attribute.cpp",
    ),
    "backends__aoti__common_shims_slim.cpp.o": ("aoti_common_shims_slim", "backends/aoti/common_shims_slim.cpp"),
    "smoke__backend_host.cpp.o": ("smoke_backend_host", "@smoke/backend_host.cpp"),
}
ARCHIVES = {"libaoti_common_shims_slim.a": "aoti_common_shims_slim"}


def test_the_first_lines_are_read_not_the_drivers_last():
    errors = parse_link_errors(LD_DUPLICATE)
    assert [(error.kind, error.symbol) for error in errors] == [
        ("multiple-definition", "aoti_torch_get_device_type"),
        ("multiple-definition", "aoti_torch_device_type_cuda"),
        ("undefined-reference", "et_pal_init"),
    ]
    assert errors[0].objects == (
        "/b/objects/aoti_cuda_shims/backends__cuda__runtime__shims__tensor_attribute.cpp.o",
        "/b/lib/libaoti_common_shims_slim.a(backends__aoti__common_shims_slim.cpp.o)",
    )
    assert errors[2].objects == ("/b/objects/smoke_backend_host/smoke__backend_host.cpp.o",)


def test_the_loaders_undefined_symbol_is_read():
    line = "dlopen failed: /w/model.wrapper.so: undefined symbol: aoti_torch_layout_strided"
    assert [(error.kind, error.symbol) for error in parse_link_errors(line)] == [
        ("undefined-symbol", "aoti_torch_layout_strided")
    ]


def test_objects_and_archive_members_trace_back_to_sources_and_targets():
    assert trace_object(
        "/b/lib/libaoti_common_shims_slim.a(backends__aoti__common_shims_slim.cpp.o)", OBJECTS, ARCHIVES
    ) == (
        "aoti_common_shims_slim",
        "backends/aoti/common_shims_slim.cpp",
        "libaoti_common_shims_slim.a(backends__aoti__common_shims_slim.cpp.o)",
    )
    assert trace_object("/usr/lib/libfoo.a(bar.o)", OBJECTS, ARCHIVES) == (None, None, "libfoo.a(bar.o)")


def test_one_problem_per_pair_of_objects_blamed_on_the_cmake_line_that_adds_the_source(tmp_path):
    for path, text in {
        "backends/aoti/common_shims_slim.cpp": 'extern "C" {\nint aoti_torch_get_device_type(int *r) {\n',
        "backends/cuda/runtime/shims/tensor_attribute.cpp": "// x\n\nint aoti_torch_get_device_type(\n",
    }.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    diff = (
        "--- a/backends/cuda/CMakeLists.txt\n+++ b/backends/cuda/CMakeLists.txt\n@@ -235,2 +235,3 @@\n"
        " set(_aoti_cuda_shim_sources runtime/cuda_allocator.cpp runtime/shims/memory.cpp\n"
        "+                            runtime/shims/tensor_attribute.cpp\n"
        "                             runtime/shims/cuda_guard.cpp\n"
    )
    problems = explain(parse_link_errors(LD_DUPLICATE), "aoti_cuda_shims", OBJECTS, ARCHIVES, tmp_path, diff)
    duplicate = problems[0]
    assert (duplicate.kind, duplicate.symbol, duplicate.also) == (
        "multiple-definition",
        "aoti_torch_get_device_type",
        1,
    )
    assert [item.definition for item in duplicate.objects] == [
        ("backends/cuda/runtime/shims/tensor_attribute.cpp", 3),
        ("backends/aoti/common_shims_slim.cpp", 2),
    ]
    assert duplicate.cause == ("backends/cuda/CMakeLists.txt", 236)
    message = duplicate.message()
    assert "tensor_attribute.cpp:3" in message and "common_shims_slim.cpp:2" in message
    assert "collect2" not in message
    # The host's undefined reference is a second, separate problem with no line of the diff to blame.
    assert [(problem.kind, problem.cause) for problem in problems[1:]] == [("undefined-reference", None)]


# -- compiled: the miniature with a duplicate shim source joined to the shim library ------------------

DUPLICATE_SOURCE = (
    "#include <cstdint>\n"
    "// A second definition of a shim common_shims_slim.cpp already defines.\n"
    'extern "C" int32_t aoti_torch_dtype_float32(void) { return 6; }\n'
)


def _tree(tmp_path: Path, name: str, joined: bool) -> Path:
    tree = tmp_path / name / "executorch"
    shutil.copytree(MINI, tree)
    (tree / "backends/cuda/runtime/shims/tensor_attribute.cpp").write_text(DUPLICATE_SOURCE)
    if joined:
        cmake = tree / "backends/cuda/CMakeLists.txt"
        old = "set(_shim_sources runtime/shims/memory.cpp runtime/shims/fill.cu)\n"
        assert old in cmake.read_text()
        cmake.write_text(
            cmake.read_text().replace(
                old,
                "set(_shim_sources runtime/shims/memory.cpp runtime/shims/fill.cu\n"
                "    runtime/shims/tensor_attribute.cpp)\n",
            )
        )
    return tree


@needs_compilers
def test_a_source_joined_to_the_shims_is_reported_as_the_duplicate_definition_it_makes(tmp_path):
    base_tree, head_tree = _tree(tmp_path, "base", False), _tree(tmp_path, "head", True)
    base = run_backend(plan_build(model_of_directory(base_tree)), base_tree, tmp_path / "base-build", TOOLS)
    head = run_backend(plan_build(model_of_directory(head_tree)), head_tree, tmp_path / "head-build", TOOLS)
    assert base.compile.status == "passed", base.compile.reason
    assert head.compile.status == "failed"
    reason = head.compile.reason
    assert "multiple definition of `aoti_torch_dtype_float32`" in reason, reason
    assert (
        "backends/aoti/common_shims_slim.cpp:10" in reason
        and "backends/cuda/runtime/shims/tensor_attribute.cpp:3" in reason
    )
    assert "collect2" not in reason and "ld returned" not in reason
    diff = tree_diff(base_tree, head_tree)
    new = compare(backend_summary(base), backend_summary(head), diff, head_tree)
    # One cause, at the CMake line that added the source; the shim library that did not build loses
    # every export, and that is not reported again as lost symbols or failed later stages.
    assert [(item.kind, item.path, item.line, item.in_diff) for item in new] == [
        ("link-error", "backends/cuda/CMakeLists.txt", 9, True)
    ], new
    assert "tensor_attribute.cpp" in new[0].message and "common_shims_slim.cpp" in new[0].message


def test_a_load_failing_on_a_lost_symbol_is_said_with_the_lost_symbol_not_again():
    base = {
        "errors": [],
        "exported": ["aoti_torch_dtype_float32", "aoti_torch_get_numel"],
        "duplicated": [],
        "statuses": {"compile": "passed", "exports": "passed", "load": "passed"},
        "reasons": {"compile": "ok", "exports": "ok", "load": "ok"},
    }
    head = {
        **base,
        "exported": ["aoti_torch_get_numel"],
        "statuses": {"compile": "passed", "exports": "passed", "load": "failed"},
        "reasons": {
            "compile": "ok",
            "exports": "ok",
            "load": "dlopen failed: /w/m.wrapper.so: undefined symbol: aoti_torch_dtype_float32",
        },
    }
    new = compare(base, head)
    assert [item.kind for item in new] == ["symbol-lost"], new
    assert "load fails on it (undefined symbol: aoti_torch_dtype_float32)" in new[0].message
    # A load failing on a symbol head still exports is a failure of its own.
    other = {
        **head,
        "reasons": {**head["reasons"], "load": "dlopen failed: x.so: undefined symbol: aoti_torch_other"},
    }
    assert [item.kind for item in compare(base, other)] == ["symbol-lost", "stage-failed"]
