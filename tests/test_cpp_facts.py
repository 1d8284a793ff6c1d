"""C, C++ and CUDA source facts: includes and declarations under `#if`, extern "C", arch gates,
and the preprocessor expression evaluator. All sources here are written for these tests."""

from __future__ import annotations

import pytest

from bot.cpp.conditions import conditions_hold, defines_from_flags, evaluate_condition
from bot.cpp.declarations import source_facts, source_facts_in_tree
from bot.tree import memory_tree

HEADER = """\
/* A shim header.
#if THIS_IS_A_COMMENT
#endif
*/
#pragma once
#include <cstdint>
#include "gpu/export.h"  // export macros

#if defined(GPU_AVAILABLE)
#include <cuda_runtime.h>
#if GPU_VERSION >= 12000 && \\
    !defined(GPU_LEGACY)
#include "gpu/modern.h"
#else
#include "gpu/legacy.h"
#endif
#else
#include "gpu/host_only.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

GPU_EXPORT GpuError gpu_create_tensor(void* data, int64_t ndim);
GpuError gpu_free_tensor(void* tensor);

#if defined(EXECUTORCH_BUILD_LLM)
GpuError gpu_attach_cache(void* cache);
#endif
GpuError gpu_detach_cache(void* cache);

int gpu_counter;

#ifdef __cplusplus
}
#endif

extern "C" int gpu_single_c(int);
extern "C" int gpu_external_flag;
int cpp_linkage_function(int);

namespace gpu::detail {
class Pool {
 public:
  void reset();
};
void Pool::reset() {}
inline int helper() { return 1; }
}  // namespace gpu::detail

#define GPU_MAX_DIMS 8
#define GPU_CHECK(x) do { if (!(x)) return 1; } while (0)
"""

SOURCE = """\
#include "gpu/header.h"

extern "C" {
GpuError gpu_create_tensor(void* data, int64_t ndim) { return 0; }
GpuError gpu_free_tensor(void* tensor) { return 0; }
#if defined(EXECUTORCH_BUILD_LLM)
GpuError gpu_attach_cache(void* cache) { return 0; }
#endif
}

GpuError init_path(int x) {
#ifdef EXECUTORCH_BUILD_LLM
  return attach();
#else
  if (x < 0) {
    return Error::InvalidArgument;
  }
  return Error::Ok;
#endif
}
"""

KERNELS = """\
#include <cuda_runtime.h>

__global__ void fill(float* out, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ int tensor_core_path(int x) { return x; }
#endif

#if __CUDA_ARCH__ < 900
__device__ int older_path(int x) { return x; }
#else
__device__ int hopper_path(int x) { return x; }
#endif

#if __CUDA_ARCH__ > 750
__device__ int after_turing(int x) { return x; }
#endif

void launch(float* out, int n) {
  fill<<<(n + 255) / 256, 256>>>(out, 0.f, n);
}

extern "C" void gpu_launch_fill(float* out, int n) { launch(out, n); }
"""


def by_name(facts):
    return {d.name: d for d in facts.declarations}


def test_includes_carry_the_nested_condition_stack():
    facts = source_facts("gpu/header.h", HEADER)
    includes = {i.target_text: i for i in facts.includes}
    assert list(includes) == [
        "cstdint",
        "gpu/export.h",
        "cuda_runtime.h",
        "gpu/modern.h",
        "gpu/legacy.h",
        "gpu/host_only.h",
    ]
    assert includes["cstdint"].system and not includes["gpu/export.h"].system
    assert includes["cstdint"].conditions == ()
    assert includes["cuda_runtime.h"].conditions == ("defined(GPU_AVAILABLE)",)
    assert includes["gpu/modern.h"].conditions == (
        "defined(GPU_AVAILABLE)",
        "GPU_VERSION >= 12000 && !defined(GPU_LEGACY)",
    )
    assert includes["gpu/legacy.h"].conditions == (
        "defined(GPU_AVAILABLE)",
        "!(GPU_VERSION >= 12000 && !defined(GPU_LEGACY))",
    )
    assert includes["gpu/host_only.h"].conditions == ("!(defined(GPU_AVAILABLE))",)
    assert includes["gpu/modern.h"].line == 13


def test_directives_inside_block_comments_are_ignored():
    facts = source_facts("gpu/header.h", HEADER)
    assert all(block.line > 4 for block in facts.conditional_blocks)
    assert "THIS_IS_A_COMMENT" not in {m.name for m in facts.macros_tested}
    assert facts.problems == ()


def test_include_activity_for_a_target_from_its_flags():
    facts = source_facts("gpu/header.h", HEADER)
    includes = {i.target_text: i for i in facts.includes}
    flags = defines_from_flags(["-DGPU_AVAILABLE=1", "-DGPU_VERSION=12040"])
    assert conditions_hold(includes["cuda_runtime.h"].conditions, flags) is True
    assert conditions_hold(includes["gpu/host_only.h"].conditions, flags) is False
    # GPU_LEGACY is not mentioned: unknown, unless undefined macros are taken as 0.
    assert conditions_hold(includes["gpu/modern.h"].conditions, flags) is None
    assert conditions_hold(includes["gpu/modern.h"].conditions, flags, assume_undefined_false=True) is True
    assert conditions_hold(includes["gpu/legacy.h"].conditions, flags, assume_undefined_false=True) is False


def test_extern_c_block_guarded_by_cplusplus():
    declarations = by_name(source_facts("gpu/header.h", HEADER))
    for name in ("gpu_create_tensor", "gpu_free_tensor", "gpu_attach_cache", "gpu_detach_cache"):
        assert declarations[name].extern_c, name
        assert declarations[name].kind == "function"
        assert not declarations[name].is_definition
    assert declarations["gpu_single_c"].extern_c
    assert not declarations["cpp_linkage_function"].extern_c
    assert declarations["gpu_create_tensor"].line == 25


def test_variables_declared_and_defined():
    declarations = by_name(source_facts("gpu/header.h", HEADER))
    assert (declarations["gpu_counter"].kind, declarations["gpu_counter"].is_definition) == ("variable", True)
    external = declarations["gpu_external_flag"]
    assert (external.kind, external.is_definition, external.extern_c) == ("variable", False, True)


def test_declaration_outside_versus_inside_the_gate():
    header = by_name(source_facts("gpu/header.h", HEADER))
    source = by_name(source_facts("gpu/shims.cpp", SOURCE))
    assert header["gpu_attach_cache"].conditions == ("defined(EXECUTORCH_BUILD_LLM)",)
    assert header["gpu_detach_cache"].conditions == ()
    assert source["gpu_attach_cache"].conditions == ("defined(EXECUTORCH_BUILD_LLM)",)
    assert source["gpu_attach_cache"].is_definition and source["gpu_attach_cache"].extern_c
    assert source["init_path"].conditions == () and not source["init_path"].extern_c


def test_qualified_names_and_member_definitions():
    declarations = [
        (d.qualified_name, d.kind, d.is_definition) for d in source_facts("gpu/header.h", HEADER).declarations
    ]
    assert ("gpu::detail::Pool", "class", True) in declarations
    assert ("gpu::detail::Pool::reset", "function", False) in declarations
    assert ("gpu::detail::Pool::reset", "function", True) in declarations
    assert ("gpu::detail::helper", "function", True) in declarations


def test_conditional_blocks_keep_branch_texts():
    blocks = source_facts("gpu/shims.cpp", SOURCE).conditional_blocks
    gate = [b for b in blocks if b.condition == "defined(EXECUTORCH_BUILD_LLM)" and b.else_line is not None]
    assert len(gate) == 1
    block = gate[0]
    assert (block.line, block.else_line, block.end_line) == (12, 14, 19)
    assert block.branch_conditions == ("defined(EXECUTORCH_BUILD_LLM)", "#else")
    assert "return attach();" in block.branch_texts[0]
    assert "Error::InvalidArgument" in block.branch_texts[1]
    assert "#else" not in block.branch_texts[1]


def test_macros_tested_and_defined():
    facts = source_facts("gpu/header.h", HEADER)
    tested = {(m.name, m.line) for m in facts.macros_tested}
    assert {
        ("GPU_AVAILABLE", 9),
        ("GPU_VERSION", 11),
        ("GPU_LEGACY", 11),
        ("__cplusplus", 21),
        ("EXECUTORCH_BUILD_LLM", 28),
    } <= tested
    assert "defined" not in {m.name for m in facts.macros_tested}
    defined = {m.name: m for m in facts.macros_defined}
    assert defined["GPU_MAX_DIMS"].value == "8" and defined["GPU_MAX_DIMS"].parameters is None
    assert defined["GPU_CHECK"].parameters == ("x",)


def test_cuda_kernels_parse_and_arch_gates_are_found():
    facts = source_facts("gpu/kernels.cu", KERNELS)
    declarations = by_name(facts)
    assert declarations["fill"].is_definition
    assert declarations["gpu_launch_fill"].extern_c and declarations["gpu_launch_fill"].is_definition
    assert declarations["launch"].is_definition
    requirements = [(r.min_arch, r.line) for r in facts.arch_requirements]
    assert requirements == [(800, 8), (900, 14), (751, 18)]
    assert declarations["tensor_core_path"].conditions == ("defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",)
    assert declarations["hopper_path"].conditions == ("!(__CUDA_ARCH__ < 900)",)


def test_unbalanced_directives_are_problems_not_exceptions():
    facts = source_facts("bad.h", "#endif\n#if A\nint x;\n#else\n#else\n")
    messages = [p.message for p in facts.problems]
    assert messages == ["#endif without #if", "#if without #endif"]
    assert facts.declarations[0].conditions == ("A",)


def test_facts_are_cached_by_blob():
    tree = memory_tree({"gpu/header.h": HEADER})
    assert source_facts_in_tree(tree, "gpu/header.h") is source_facts_in_tree(tree, "gpu/header.h")
    assert source_facts_in_tree(tree, "missing.h") is None


@pytest.mark.parametrize(
    "expression,defines,expected",
    [
        ("defined(X)", {"X": "1"}, True),
        ("defined X", {}, None),
        ("!defined(X)", {"X": None}, True),
        ("X", {"X": None}, False),
        ("X && Y", {"X": "0"}, False),
        ("X || Y", {"X": "1"}, True),
        ("X || Y", {"X": "0"}, None),
        ("X >= 800", {"X": "750"}, False),
        ("X >= 800", {"X": "860"}, True),
        ("V == 2", {"V": "W", "W": "2"}, True),
        ("SELF", {"SELF": "SELF + 1"}, None),
        ("(1 + 2) * 3 == 9 && 7 / 2 == 3 && -7 / 2 == -3 && 7 % 3 == 1", {}, True),
        ("1 << 4 == 16 && (0xF0 >> 4) == 15 && (6 & 3) == 2 && (6 | 1) == 7 && (6 ^ 3) == 5", {}, True),
        ("~0 == -1 && !0 && 010 == 8 && 0b11 == 3 && 10UL == 10 && 'A' == 65", {}, True),
        ("1 ? 2 : 3", {}, True),
        ("0 ? 1 : 0", {}, False),
        ("1 / 0", {}, None),
        ("__has_include(<cuda.h>)", {}, None),
        ("FUNCTION_LIKE(3)", {}, None),
        ("true && !false", {}, True),
        ("1 +", {}, None),
        ("", {}, None),
    ],
)
def test_evaluate_condition(expression, defines, expected):
    assert evaluate_condition(expression, defines) is expected


def test_undefined_identifiers_are_zero_only_when_asked():
    assert evaluate_condition("UNDEFINED_MACRO == 0", {}) is None
    assert evaluate_condition("UNDEFINED_MACRO == 0", {}, assume_undefined_false=True) is True
    assert evaluate_condition("defined(UNDEFINED_MACRO)", {}, assume_undefined_false=True) is False
    assert evaluate_condition("SELF", {"SELF": "SELF + 1"}, assume_undefined_false=True) is True


def test_defines_from_flags():
    flags = [
        "-DCUDA_AVAILABLE=1",
        "-DPLAIN",
        "/DWINDOWS_STYLE",
        "-D",
        "SPLIT=2",
        '-DQUOTED="x y"',
        "-UREMOVED",
        "-O2",
        "-I/include",
    ]
    assert defines_from_flags(flags) == {
        "CUDA_AVAILABLE": "1",
        "PLAIN": "1",
        "WINDOWS_STYLE": "1",
        "SPLIT": "2",
        "QUOTED": "x y",
        "REMOVED": None,
    }


def test_ten_thousand_nested_ifs_are_tracked_in_linear_space():
    import tracemalloc

    depth = 10_000
    source = (
        "".join(f"#if LEVEL_{i}\n" for i in range(depth))
        + "#include <deep.h>\nint deepest(void);\n"
        + "#endif\n" * depth
    )
    tracemalloc.start()
    facts = source_facts("deep.h", source)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(facts.conditional_blocks) == depth and facts.problems == ()
    (include,) = facts.includes
    assert include.conditions == tuple(f"LEVEL_{i}" for i in range(depth))
    (declaration,) = [d for d in facts.declarations if d.name == "deepest"]
    assert declaration.conditions == include.conditions
    outermost = min(facts.conditional_blocks, key=lambda b: b.line)
    assert outermost.branch_texts[0].startswith("#if LEVEL_1\n") and "#include <deep.h>" in outermost.branch_texts[0]
    # Quadratic tracking (a stack or a branch text copied per line) needs gigabytes here.
    assert peak < 200 << 20


def test_a_file_over_the_size_cap_is_a_problem_not_read():
    from bot.cpp.declarations import MAX_SOURCE_BYTES

    line = "#include <x.h>\n"
    source = line * (MAX_SOURCE_BYTES // len(line) + 1)
    facts = source_facts("generated.h", source)
    assert facts.includes == () and facts.declarations == ()
    (problem,) = facts.problems
    assert problem.line == 1 and "not read" in problem.message and str(MAX_SOURCE_BYTES) in problem.message
    huge = b"/* generated */\n" + b"int x;\n" * (100 * (1 << 20) // 7)  # about 100 MB
    tree = memory_tree({"big.h": huge})
    facts = source_facts_in_tree(tree, "big.h")
    assert facts is not None and facts.declarations == () and "not read" in facts.problems[0].message


def test_a_chain_of_ten_thousand_elifs_is_read():
    count = 10_000
    source = "#if V == 0\n" + "".join(f"#elif V == {i}\n\n" for i in range(1, count - 1))
    source += f"#elif V == {count - 1}\nint f{count - 1}(void);\n#endif\n"
    facts = source_facts("chain.h", source)
    (block,) = facts.conditional_blocks
    assert len(block.branch_conditions) == count and block.branch_lines[-1] == 2 * count - 2
    (last,) = [d for d in facts.declarations if d.name == f"f{count - 1}"]
    assert last.conditions[-1] == f"V == {count - 1}" and last.conditions[0] == "!(V == 0)"
