"""source-parity's softer cases, written from the two false findings of the fourth precision sample
(tests/real_tree/precision_2026.toml): a source added to one build is drift when the other build
builds its kind, and only a minor note when the other build has never built what it belongs to.

- One more member of a family the target builds on its side alone (69af9841a7: `int5_plain_mm.cu`
  joins CMake beside `int4/6/8_plain_mm.cu`, which no Buck target builds).
- A CMake source that needs a library only CMake builds (d277202c05: `jni_layer_asr.cpp` includes
  `extension/asr/runner/runner.h`, and nothing under `extension/asr/runner/` has a Buck target).
Each has a twin that must stay major: the family both builds share, and a header of a directory
Buck builds (the shape of the corpus pair 710edda251, VGFNeuralStatistics.cpp).
"""

from __future__ import annotations

from bot import engine
from bot.check import Example
from bot.model import Severity
from checks import BY_ID
from tests.test_check_examples import _snapshot

_SHIMS = "backends/cuda/runtime/shims"


def _kernels_tree(cmake_sources: list[str], buck_sources: list[str]) -> dict[str, str]:
    files = {f"{_SHIMS}/{name}": "" for name in {*cmake_sources, *buck_sources, "int5_plain_mm.cu"}}
    cmake = "add_library(aoti_cuda_shims SHARED\n" + "".join(f"  runtime/shims/{s}\n" for s in cmake_sources) + ")\n"
    buck = (
        'cxx_library(\n    name = "runtime_shims",\n    srcs = [\n'
        + "".join(f'        "shims/{s}",\n' for s in buck_sources)
        + "    ],\n)\n"
    )
    return {
        **files,
        "CMakeLists.txt": "add_subdirectory(backends/cuda)\n",
        "backends/cuda/CMakeLists.txt": cmake,
        "backends/cuda/runtime/BUCK": buck,
    }


def _parity(example: Example) -> list[tuple[str, Severity]]:
    """(the file name of the source the finding names, its severity) for every source-parity finding."""
    result = engine.run([BY_ID["source-parity"]], _snapshot(example))
    found = [f for f in result.findings if f.rule == "source-parity"]
    return [(f.message.split("`")[1].rsplit("/", 1)[-1], f.severity) for f in found]


def _add_int5(cmake_base: list[str], buck: list[str]) -> Example:
    base = _kernels_tree(cmake_base, buck)
    head = _kernels_tree([*cmake_base, "int5_plain_mm.cu"], buck)
    return Example(base=base, head=head)


def test_a_member_of_a_family_only_cmake_builds_is_minor():
    shared = ["memory.cpp", "cuda_guard.cpp", "sort.cu"]
    example = _add_int5([*shared, "int4_plain_mm.cu", "int6_plain_mm.cu", "int8_plain_mm.cu"], shared)
    found = _parity(example)
    assert found == [("int5_plain_mm.cu", Severity.MINOR)]


def test_a_member_of_a_family_both_build_is_drift():
    both = ["memory.cpp", "cuda_guard.cpp", "int4_plain_mm.cu", "int6_plain_mm.cu", "int8_plain_mm.cu"]
    assert _parity(_add_int5(both, both)) == [("int5_plain_mm.cu", Severity.MAJOR)]


def test_a_family_mostly_built_by_both_is_drift():
    # One odd member was CMake-only; three are built by both: the family is Buck's too.
    both = ["memory.cpp", "int4_plain_mm.cu", "int6_plain_mm.cu", "int7_plain_mm.cu"]
    found = _parity(_add_int5([*both, "int8_plain_mm.cu"], both))
    assert found == [("int5_plain_mm.cu", Severity.MAJOR)]


def test_a_buck_only_family_member_is_minor_the_other_way():
    shared = ["memory.cpp", "cuda_guard.cpp", "sort.cu"]
    base = _kernels_tree(shared, [*shared, "int4_plain_mm.cu", "int8_plain_mm.cu"])
    head = _kernels_tree(shared, [*shared, "int4_plain_mm.cu", "int5_plain_mm.cu", "int8_plain_mm.cu"])
    assert _parity(Example(base=base, head=head)) == [("int5_plain_mm.cu", Severity.MINOR)]


_JNI_BUCK = (
    "cxx_library(\n"
    '    name = "executorch_llama_jni",\n'
    '    srcs = ["jni_layer.cpp", "jni_layer_llama.cpp", "jni_layer_runtime.cpp", "jni_helper.cpp"],\n'
    '    exported_headers = ["jni_helper.h"],\n'
    ")\n"
)
_JNI_CMAKE = (
    "add_library(executorch_jni SHARED jni/jni_layer.cpp jni/jni_layer_runtime.cpp jni/jni_helper.cpp)\n"
    "target_sources(executorch_jni PRIVATE jni/jni_layer_llama.cpp{more})\n"
)
_JNI_FILES = {
    "CMakeLists.txt": "add_subdirectory(extension/android)\n",
    "extension/android/jni/BUCK": _JNI_BUCK,
    "extension/android/jni/jni_layer.cpp": "",
    "extension/android/jni/jni_layer_llama.cpp": "",
    "extension/android/jni/jni_layer_runtime.cpp": "",
    "extension/android/jni/jni_helper.cpp": "",
    "extension/android/jni/jni_helper.h": "",
    # A library only CMake builds: no build file, no Buck target lists its files.
    "extension/asr/runner/CMakeLists.txt": "add_library(extension_asr_runner runner.cpp)\n",
    "extension/asr/runner/runner.cpp": "",
    "extension/asr/runner/runner.h": "",
}


def _jni(include: str) -> Example:
    base = {**_JNI_FILES, "extension/android/CMakeLists.txt": _JNI_CMAKE.format(more="")}
    head = {
        **base,
        "extension/android/CMakeLists.txt": _JNI_CMAKE.format(more=" jni/jni_layer_asr.cpp"),
        "extension/android/jni/jni_layer_asr.cpp": f"#include <{include}>\n",
    }
    return Example(base=base, head=head)


def test_a_source_needing_a_library_only_cmake_builds_is_minor():
    found = _parity(_jni("executorch/extension/asr/runner/runner.h"))
    assert found == [("jni_layer_asr.cpp", Severity.MINOR)]


def test_a_source_whose_headers_buck_builds_is_drift():
    found = _parity(_jni("executorch/extension/android/jni/jni_helper.h"))
    assert found == [("jni_layer_asr.cpp", Severity.MAJOR)]
