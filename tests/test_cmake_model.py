"""The CMake model: syntax, evaluation under profiles, scoping, and the facts checks rely on.

Every CMake file here is written for these tests; it mirrors the *constructs* ExecuTorch's
CUDA backend uses (nested platform `if`s, an export flag in a variable, a PRIVATE
whole-archive pair, compiler-id generator expressions), not its text.
"""

from __future__ import annotations

import pytest

from bot.cmake.generator_expressions import GenexContext, evaluate_generator_expressions
from bot.cmake.interpreter import evaluate_cmake, evaluate_cmake_dirs
from bot.cmake.model import SOURCE_ROOT, Scoped
from bot.cmake.profiles import DEFAULT_PROFILE, PROFILES
from bot.cmake.syntax import parse_cmake, parse_cmake_cached
from bot.cmake.values import expand_references, split_list
from bot.cmake.whole_archive import whole_archives
from bot.tree import memory_tree

# ---------------------------------------------------------------------------------------
# A miniature repository: option presets, a helper module, one GPU backend directory.
# ---------------------------------------------------------------------------------------

PRESET_HELPERS = """\
# Options a preset may override; a value given on the command line wins.
macro(define_overridable_option NAME DOC KIND DEFAULT)
  if(NOT DEFINED CACHE{${NAME}})
    set(${NAME} ${DEFAULT} CACHE ${KIND} "${DOC}")
  endif()
endmacro()
"""

PRESET_DEFAULTS = """\
define_overridable_option(EXECUTORCH_BUILD_CUDA "GPU backend" BOOL OFF)
define_overridable_option(EXECUTORCH_BUILD_EXTENSION_LLM "LLM pieces" BOOL OFF)
define_overridable_option(GPU_FLAVOUR "which flavour" STRING "plain")
"""

HELPERS = """\
# Keep a library's registration objects when something links it.
function(gpu_keep_library target)
  get_target_property(_kind ${target} TYPE)
  if(_kind STREQUAL "STATIC_LIBRARY")
    if(MSVC)
      target_link_options(${target} INTERFACE "SHELL:LINKER:/WHOLEARCHIVE:$<TARGET_FILE:${target}>")
    else()
      target_link_options(
        ${target} INTERFACE
        "SHELL:LINKER:--whole-archive $<TARGET_FILE:${target}> LINKER:--no-whole-archive"
      )
    endif()
    return()
  endif()
  target_link_options(${target} INTERFACE "LINKER:--no-as-needed")
endfunction()

function(gpu_library)
  cmake_parse_arguments(ARG "SHARED" "NAME" "SOURCES;DEFINES" ${ARGN})
  if(ARG_SHARED)
    add_library(${ARG_NAME} SHARED ${ARG_SOURCES})
  else()
    add_library(${ARG_NAME} STATIC ${ARG_SOURCES})
  endif()
  target_compile_definitions(${ARG_NAME} PUBLIC ${ARG_DEFINES})
endfunction()
"""

GPU_BACKEND = """\
# A miniature GPU backend.
if(NOT PROJECT_ROOT)
  set(PROJECT_ROOT ${CMAKE_CURRENT_SOURCE_DIR}/../..)
endif()
include(${PROJECT_ROOT}/tools/cmake/GpuHelpers.cmake)

set(_gpu_uses_msvc OFF)
if(MSVC)
  set(_gpu_uses_msvc ON)
endif()

set(_gpu_export_flag "")
if(NOT _gpu_uses_msvc)
  if(APPLE)
    set(_gpu_export_flag -Wl,-export_dynamic)
  else()
    set(_gpu_export_flag -Wl,--export-dynamic)
  endif()
endif()

set(_gpu_sources src/alloc.cpp src/guard.cpp)
if(CMAKE_CUDA_COMPILER)
  list(APPEND _gpu_sources src/kernels.cu)
endif()
if(EXECUTORCH_BUILD_EXTENSION_LLM)
  list(APPEND _gpu_sources src/kv_pool.cpp)
endif()

add_library(gpu_common STATIC common/shims.cpp)
target_compile_options(
  gpu_common
  PUBLIC
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:MSVC>>:/EHsc /GR>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CXX_COMPILER_ID:MSVC>>>:-fexceptions
    -frtti>
)
target_compile_definitions(gpu_common PRIVATE $<$<PLATFORM_ID:Windows>:GPU_EXPORTS>)
gpu_keep_library(gpu_common)

add_library(gpu_shims SHARED ${_gpu_sources})
target_compile_definitions(gpu_shims PRIVATE GPU_AVAILABLE=1)
if(_gpu_export_flag)
  target_link_options(gpu_shims PUBLIC ${_gpu_export_flag})
endif()
if(_gpu_uses_msvc)
  target_link_libraries(gpu_shims PRIVATE gpu_common)
else()
  target_link_libraries(
    gpu_shims
    PRIVATE -Wl,--whole-archive gpu_common -Wl,--no-whole-archive
    PUBLIC gpu_runtime ${CMAKE_DL_LIBS}
  )
endif()
gpu_keep_library(gpu_shims)
install(TARGETS gpu_shims DESTINATION lib)
install(FILES include/gpu.h DESTINATION include)
install(DIRECTORY include/ DESTINATION include FILES_MATCHING PATTERN "*.h" PATTERN "private_*" EXCLUDE)

gpu_library(NAME gpu_extra SHARED SOURCES extra/a.cpp extra/b.cpp DEFINES GPU_EXTRA=1)
frobnicate_the_build(gpu_shims WITH everything)
"""

REPOSITORY = {
    "tools/cmake/common/preset.cmake": PRESET_HELPERS,
    "tools/cmake/preset/default.cmake": PRESET_DEFAULTS,
    "tools/cmake/GpuHelpers.cmake": HELPERS,
    "backends/gpu/CMakeLists.txt": GPU_BACKEND,
    "backends/gpu/include/gpu.h": "",
    "backends/gpu/include/gpu_types.h": "",
    "backends/gpu/include/private_detail.h": "",
    "backends/gpu/include/notes.txt": "",
}


def line_of(text, needle):
    """1-based line of the first line containing `needle`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def gpu_model(profile=DEFAULT_PROFILE):
    return evaluate_cmake_dirs(memory_tree(REPOSITORY), profile, ["backends/gpu"])


def values(items, scope=None):
    return [i.value for i in items if scope is None or i.scope == scope]


# ---------------------------------------------------------------------------------------
# The facts the CUDA checks are built on
# ---------------------------------------------------------------------------------------


def test_default_profile_exports_dynamic_public_through_the_variable():
    shims = gpu_model().targets["gpu_shims"]
    export = [o for o in shims.link_options if o.value == "-Wl,--export-dynamic"]
    assert len(export) == 1
    assert export[0].scope == "PUBLIC"
    assert export[0].condition_text == "_gpu_export_flag"
    assert (export[0].path, export[0].line) == (
        "backends/gpu/CMakeLists.txt",
        line_of(GPU_BACKEND, "target_link_options(gpu_shims PUBLIC"),
    )


def test_default_profile_whole_archive_pair_is_private():
    shims = gpu_model().targets["gpu_shims"]
    assert [(w.library, w.scope) for w in shims.whole_archive] == [("gpu_common", "PRIVATE")]
    assert shims.whole_archive[0].line == line_of(GPU_BACKEND, "PRIVATE -Wl,--whole-archive gpu_common")
    assert values(shims.link_libraries, "PUBLIC") == ["gpu_runtime", "dl"]


def test_msvc_profile_has_neither_export_dynamic_nor_the_whole_archive_pair():
    shims = gpu_model(PROFILES["msvc"]).targets["gpu_shims"]
    assert not any("export" in o.value for o in shims.link_options)
    assert shims.whole_archive == ()
    assert values(shims.link_libraries) == ["gpu_common"]


def test_helper_function_bodies_are_evaluated_and_reported_at_the_call_site():
    model = gpu_model()
    common = model.targets["gpu_common"]
    # The static library gets an INTERFACE whole-archive of itself from the helper.
    assert [(w.library, w.scope) for w in common.whole_archive] == [("gpu_common", "INTERFACE")]
    archive = common.whole_archive[0]
    assert (archive.path, archive.line) == (
        "backends/gpu/CMakeLists.txt",
        line_of(GPU_BACKEND, "gpu_keep_library(gpu_common)"),
    )
    assert archive.via and archive.via[-1][0] == "tools/cmake/GpuHelpers.cmake"
    # The shared library takes the other branch and return()s before the static case.
    assert values(model.targets["gpu_shims"].link_options, "INTERFACE") == ["LINKER:--no-as-needed"]
    msvc_common = gpu_model(PROFILES["msvc"]).targets["gpu_common"]
    assert [(w.library, w.scope) for w in msvc_common.whole_archive] == [("gpu_common", "INTERFACE")]


def test_compile_options_follow_the_compiler_and_keep_their_language():
    gnu = gpu_model().targets["gpu_common"]
    assert [(o.value, o.language, o.scope) for o in gnu.compile_options] == [
        ("-fexceptions", "CXX", "PUBLIC"),
        ("-frtti", "CXX", "PUBLIC"),
    ]
    assert gnu.compile_definitions == ()
    msvc = gpu_model(PROFILES["msvc"]).targets["gpu_common"]
    assert [(o.value, o.language) for o in msvc.compile_options] == [("/EHsc", "CXX"), ("/GR", "CXX")]
    assert values(msvc.compile_definitions) == ["GPU_EXPORTS"]


def test_sources_carry_the_condition_they_were_appended_under():
    shims = gpu_model().targets["gpu_shims"]
    by_path = {s.path_repo_relative: s for s in shims.sources}
    assert list(by_path) == ["backends/gpu/src/alloc.cpp", "backends/gpu/src/guard.cpp", "backends/gpu/src/kernels.cu"]
    assert by_path["backends/gpu/src/alloc.cpp"].condition_text == ""
    assert by_path["backends/gpu/src/kernels.cu"].condition_text == "CMAKE_CUDA_COMPILER"

    llm = gpu_model(DEFAULT_PROFILE.with_variables(EXECUTORCH_BUILD_EXTENSION_LLM="ON")).targets["gpu_shims"]
    kv_pool = [s for s in llm.sources if s.path_repo_relative.endswith("kv_pool.cpp")]
    assert [s.condition_text for s in kv_pool] == ["EXECUTORCH_BUILD_EXTENSION_LLM"]


def test_cpu_only_profile_drops_cuda_sources():
    model = gpu_model(PROFILES["cpu-only"])
    paths = [s.path_repo_relative for s in model.targets["gpu_shims"].sources]
    assert "backends/gpu/src/kernels.cu" not in paths
    assert model.options["EXECUTORCH_BUILD_CUDA"] == "OFF"


def test_profiles():
    assert DEFAULT_PROFILE.name == "linux-gcc-cuda"
    assert (DEFAULT_PROFILE.platform, DEFAULT_PROFILE.compiler_id, DEFAULT_PROFILE.cuda) == ("Linux", "GNU", True)
    assert DEFAULT_PROFILE.variables["EXECUTORCH_BUILD_CUDA"] == "ON"
    assert "CMAKE_CUDA_COMPILER" in DEFAULT_PROFILE.variables
    msvc, cpu = PROFILES["msvc"], PROFILES["cpu-only"]
    assert (msvc.platform, msvc.compiler_id, msvc.cuda) == ("Windows", "MSVC", True)
    assert (cpu.cuda, cpu.variables["EXECUTORCH_BUILD_CUDA"]) == (False, "OFF")
    assert "CMAKE_CUDA_COMPILER" not in cpu.variables
    llm = DEFAULT_PROFILE.with_variables(EXECUTORCH_BUILD_EXTENSION_LLM="ON")
    assert (
        llm.variables["EXECUTORCH_BUILD_EXTENSION_LLM"] == "ON"
        and "EXECUTORCH_BUILD_EXTENSION_LLM" not in DEFAULT_PROFILE.variables
    )


def test_options_come_from_presets_and_profiles_override_them():
    assert gpu_model().options["EXECUTORCH_BUILD_CUDA"] == "ON"
    assert gpu_model().options["EXECUTORCH_BUILD_EXTENSION_LLM"] == "OFF"
    assert gpu_model().options["GPU_FLAVOUR"] == "plain"
    llm = gpu_model(DEFAULT_PROFILE.with_variables(EXECUTORCH_BUILD_EXTENSION_LLM="ON"))
    assert llm.options["EXECUTORCH_BUILD_EXTENSION_LLM"] == "ON"


def test_cmake_parse_arguments_helper_creates_the_described_target():
    extra = gpu_model().targets["gpu_extra"]
    assert extra.kind == "SHARED_LIBRARY"
    assert [s.path_repo_relative for s in extra.sources] == ["backends/gpu/extra/a.cpp", "backends/gpu/extra/b.cpp"]
    assert [(d.value, d.scope) for d in extra.compile_definitions] == [("GPU_EXTRA=1", "PUBLIC")]
    assert (extra.path, extra.line) == (
        "backends/gpu/CMakeLists.txt",
        line_of(GPU_BACKEND, "gpu_library(NAME gpu_extra"),
    )


def test_installs_and_unknown_commands():
    model = gpu_model()
    assert model.targets["gpu_shims"].installed and not model.targets["gpu_common"].installed
    installed = sorted({f.repo_path for f in model.installed_files})
    assert installed == ["backends/gpu/include/gpu.h", "backends/gpu/include/gpu_types.h"]
    # frobnicate_the_build() is unknown: ignored, and not a problem.
    assert model.problems == ()
    assert model.files_read == (
        "tools/cmake/common/preset.cmake",
        "tools/cmake/preset/default.cmake",
        "backends/gpu/CMakeLists.txt",
        "tools/cmake/GpuHelpers.cmake",
    )


# ---------------------------------------------------------------------------------------
# Scoping and control flow
# ---------------------------------------------------------------------------------------


def model_of(files, profile=DEFAULT_PROFILE):
    return evaluate_cmake(memory_tree(files), profile)


def made(model):
    """Names of the custom targets a script made: how these tests observe values."""
    return sorted(name for name, t in model.targets.items() if t.kind == "UTILITY")


def test_function_scope_does_not_leak_but_parent_scope_does():
    model = model_of(
        {
            "CMakeLists.txt": """
        set(OUTER before)
        function(change)
          set(OUTER inside)
          set(FROM_FUNCTION yes PARENT_SCOPE)
          if(OUTER STREQUAL "inside")
            add_custom_target(seen_own_change)
          endif()
        endfunction()
        change()
        if(OUTER STREQUAL "before")
          add_custom_target(outer_unchanged)
        endif()
        if(FROM_FUNCTION)
          add_custom_target(parent_scope_set)
        endif()
        macro(change_here)
          set(OUTER from_macro)
        endmacro()
        change_here()
        if(OUTER STREQUAL "from_macro")
          add_custom_target(macro_changed_caller)
        endif()
    """
        }
    )
    assert made(model) == ["macro_changed_caller", "outer_unchanged", "parent_scope_set", "seen_own_change"]


def test_macro_conditions_are_reported_with_parameters_filled_in():
    model = model_of(
        {
            "CMakeLists.txt": """\
macro(optional_library NAME)
  if(${NAME}_ENABLED)
    add_library(${NAME} STATIC ${NAME}.cpp)
  endif()
endmacro()
set(cache_ENABLED ON)
optional_library(cache)
optional_library(other)
"""
        }
    )
    assert sorted(model.targets) == ["cache"]
    cache = model.targets["cache"]
    assert (cache.condition_text, cache.path, cache.line) == ("cache_ENABLED", "CMakeLists.txt", 7)
    assert cache.via == (("CMakeLists.txt", 3),)
    assert cache.sources[0].path_repo_relative == "cache.cpp"


def test_parent_scope_does_not_change_the_current_scope():
    model = model_of(
        {
            "CMakeLists.txt": """
        set(V outer)
        function(f)
          set(V changed PARENT_SCOPE)
          if(V STREQUAL "outer")
            add_custom_target(function_still_sees_old)
          endif()
        endfunction()
        f()
        if(V STREQUAL "changed")
          add_custom_target(caller_sees_new)
        endif()
    """
        }
    )
    assert made(model) == ["caller_sees_new", "function_still_sees_old"]


def test_add_subdirectory_scope():
    model = model_of(
        {
            "CMakeLists.txt": """
            set(FROM_PARENT visible)
            add_subdirectory(child)
            if(NOT CHILD_LOCAL)
              add_custom_target(child_local_did_not_leak)
            endif()
            if(CHILD_EXPORTED STREQUAL "up")
              add_custom_target(child_parent_scope_leaked)
            endif()
            if(TARGET child_lib)
              add_custom_target(targets_are_global)
            endif()
        """,
            "child/CMakeLists.txt": """
            if(FROM_PARENT STREQUAL "visible")
              add_custom_target(child_sees_parent)
            endif()
            set(CHILD_LOCAL yes)
            set(CHILD_EXPORTED up PARENT_SCOPE)
            add_library(child_lib STATIC lib.cpp)
        """,
            "child/lib.cpp": "",
        }
    )
    assert made(model) == [
        "child_local_did_not_leak",
        "child_parent_scope_leaked",
        "child_sees_parent",
        "targets_are_global",
    ]
    assert model.targets["child_lib"].sources[0].path_repo_relative == "child/lib.cpp"
    assert model.targets["child_lib"].path == "child/CMakeLists.txt"


def test_conditions_of_add_subdirectory_reach_the_targets_inside():
    files = {
        "CMakeLists.txt": 'option(WANT_CACHE "" OFF)\nif(WANT_CACHE)\n  add_subdirectory(cache)\nendif()\n',
        "cache/CMakeLists.txt": "add_library(cache STATIC cache.cpp)\n",
    }
    assert "cache" not in model_of(files).targets
    wanted = model_of(files, DEFAULT_PROFILE.with_variables(WANT_CACHE="ON"))
    assert wanted.targets["cache"].condition_text == "WANT_CACHE"
    assert wanted.targets["cache"].sources[0].condition_text == "WANT_CACHE"
    assert wanted.options["WANT_CACHE"] == "ON"


def test_runaway_while_ends_with_a_problem_and_evaluation_goes_on():
    model = model_of(
        {
            "CMakeLists.txt": """
        set(i 0)
        while(TRUE)
          math(EXPR i "${i} + 1")
        endwhile()
        add_custom_target(after_the_loop)
    """
        }
    )
    assert made(model) == ["after_the_loop"]
    assert len(model.problems) == 1
    assert "while()" in model.problems[0].message and model.problems[0].line == 3


def test_unbounded_recursion_is_stopped():
    model = model_of(
        {
            "CMakeLists.txt": """
        function(forever)
          forever()
        endfunction()
        forever()
        add_custom_target(survived)
    """
        }
    )
    assert made(model) == ["survived"]
    assert any("deeper than" in p.message for p in model.problems)


def test_step_budget_stops_a_runaway_script_once(monkeypatch):
    from bot.cmake import interpreter as cmake

    monkeypatch.setattr(cmake, "_MAX_STEPS", 2_000)
    model = model_of(
        {
            "CMakeLists.txt": "add_subdirectory(slow)\nadd_subdirectory(after)\n",
            "slow/CMakeLists.txt": "foreach(i RANGE 100)\n  foreach(j RANGE 100)\n    set(x ${i}${j})\n"
            "  endforeach()\nendforeach()\n",
            "after/CMakeLists.txt": "add_custom_target(never_reached)\n",
        }
    )
    assert [(p.path, p.message) for p in model.problems] == [
        ("slow/CMakeLists.txt", "evaluation stopped after 2000 commands")
    ]
    assert made(model) == []


def test_bounded_while_and_foreach_forms():
    model = model_of(
        {
            "CMakeLists.txt": """
        set(i 0)
        set(seen "")
        while(i LESS 3)
          list(APPEND seen w${i})
          math(EXPR i "${i} + 1")
        endwhile()
        foreach(n RANGE 1 5 2)
          list(APPEND seen r${n})
        endforeach()
        set(names a b)
        foreach(x IN LISTS names ITEMS c)
          if(x STREQUAL "b")
            continue()
          endif()
          list(APPEND seen l${x})
        endforeach()
        foreach(x p q stop z)
          if(x STREQUAL "stop")
            break()
          endif()
          list(APPEND seen p${x})
        endforeach()
        if(NOT DEFINED x)
          add_custom_target(loop_variable_restored)
        endif()
        string(JOIN "," joined ${seen})
        add_custom_target(${joined})
    """
        }
    )
    assert made(model) == ["loop_variable_restored", "w0,w1,w2,r1,r3,r5,la,lc,pp,pq"]


def test_return_leaves_the_function_only():
    model = model_of(
        {
            "CMakeLists.txt": """
        function(early)
          add_custom_target(before_return)
          return()
          add_custom_target(after_return)
        endfunction()
        early()
        add_custom_target(caller_continues)
    """
        }
    )
    assert made(model) == ["before_return", "caller_continues"]


def test_include_resolution_module_path_and_unknown_modules():
    model = model_of(
        {
            "CMakeLists.txt": """
            list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_SOURCE_DIR}/cmake/modules)
            include(Mine)
            include(FromTools)
            include(GNUInstallDirs)
            include(NotAnywhere)
            include(missing/file.cmake)
            add_custom_target(done_${MINE}_${TOOLS})
        """,
            "cmake/modules/Mine.cmake": "set(MINE mine)\n",
            "tools/cmake/FromTools.cmake": "set(TOOLS tools)\n",
        }
    )
    assert made(model) == ["done_mine_tools"]
    assert [p.message for p in model.skipped] == ["include: missing/file.cmake is not in the tree"]
    assert model.problems == ()


def test_parse_errors_are_data():
    model = model_of(
        {
            "CMakeLists.txt": "add_subdirectory(broken)\nadd_custom_target(root_ok)\n",
            "broken/CMakeLists.txt": 'add_custom_target(broken_first)\nset(x "unterminated\n',
        }
    )
    assert "root_ok" in made(model)
    assert [p.path for p in model.problems] == ["broken/CMakeLists.txt"]


def test_mismatched_blocks_are_problems():
    model = model_of({"CMakeLists.txt": "if(TRUE)\nadd_custom_target(inside)\n\nendforeach()\n"})
    messages = {p.message for p in model.problems}
    assert {"endforeach() without foreach()", "if() without endif()"} <= messages
    assert made(model) == ["inside"]


# ---------------------------------------------------------------------------------------
# Conditions
# ---------------------------------------------------------------------------------------

CONDITION_SETUP = """
set(ON_VAR ON)
set(OFF_VAR OFF)
set(EMPTY "")
set(NOTFOUND_VAR lib-NOTFOUND)
set(NUMBER 7)
set(VERSION 3.24.1)
set(LIST a;b;c)
set(NAME_OF_VAR ON_VAR)
add_library(real_target STATIC real.cpp)
"""

CONDITIONS = [
    ("ON_VAR", True),
    ("OFF_VAR", False),
    ("EMPTY", False),
    ("NOTFOUND_VAR", False),
    ("UNDEFINED_VAR", False),
    ("NUMBER", True),
    ("0", False),
    ("1", True),
    ("2", True),
    ("TRUE", True),
    ("off", False),
    ("foo-NOTFOUND", False),
    ('"quoted string"', False),
    ("NOT ON_VAR", False),
    ("NOT OFF_VAR AND ON_VAR", True),
    ("OFF_VAR OR ON_VAR AND OFF_VAR", False),
    ("(OFF_VAR OR ON_VAR) AND ON_VAR", True),
    ("NOT (ON_VAR AND (OFF_VAR OR NOT EMPTY))", False),
    ("DEFINED EMPTY", True),
    ("DEFINED UNDEFINED_VAR", False),
    ("DEFINED CACHE{EXECUTORCH_BUILD_CUDA}", True),
    ("DEFINED ENV{SURELY_NOT_SET}", False),
    ("NUMBER EQUAL 7", True),
    ("NUMBER GREATER 10", False),
    ('NUMBER LESS_EQUAL "7"', True),
    ('"${NUMBER}" STREQUAL "7"', True),
    ("VERSION VERSION_GREATER_EQUAL 3.24", True),
    ("VERSION VERSION_LESS 3.9", False),
    ('"x86_64-linux" MATCHES "^x86"', True),
    ('CMAKE_SYSTEM_NAME STREQUAL "Linux"', True),
    ("b IN_LIST LIST", True),
    ("TARGET real_target", True),
    ("TARGET imaginary", False),
    ("EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/real.cpp", True),
    ("EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/nope.cpp", False),
    ("IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/sub", True),
    ("${NAME_OF_VAR}", True),
    ("${${NAME_OF_VAR}}", True),
    ("NOT ${UNDEFINED_VAR}", False),
    ("APPLE", False),
    ("UNIX AND NOT WIN32", True),
    ("CMAKE_CUDA_COMPILER", True),
    ("COMMAND add_library", True),
]


@pytest.mark.parametrize("condition,expected", CONDITIONS)
def test_if_condition_grammar(condition, expected):
    files = {
        "CMakeLists.txt": CONDITION_SETUP + f"if({condition})\n  add_custom_target(yes)\nelse()\n"
        "  add_custom_target(no)\nendif()\n",
        "real.cpp": "",
        "sub/x.h": "",
    }
    model = model_of(files)
    assert made(model) == (["yes"] if expected else ["no"])
    assert model.problems == ()


def test_elseif_chain_records_negated_conditions():
    model = model_of(
        {
            "CMakeLists.txt": """
        if(APPLE)
          add_library(picked STATIC apple.cpp)
        elseif(WIN32)
          add_library(picked STATIC windows.cpp)
        else()
          add_library(picked STATIC other.cpp)
        endif()
    """
        }
    )
    picked = model.targets["picked"]
    assert picked.sources[0].path_repo_relative == "other.cpp"
    assert picked.condition_text == "NOT APPLE AND NOT WIN32"


def test_matches_sets_match_groups():
    model = model_of(
        {
            "CMakeLists.txt": """
        if("v1.2.3" MATCHES "^v([0-9]+)\\\\.([0-9]+)")
          add_custom_target(major_${CMAKE_MATCH_1}_minor_${CMAKE_MATCH_2})
        endif()
    """
        }
    )
    assert made(model) == ["major_1_minor_2"]


# ---------------------------------------------------------------------------------------
# Values: syntax, references, lists, generator expressions, link lines
# ---------------------------------------------------------------------------------------


def test_syntax_arguments():
    parsed = parse_cmake(
        'set(A "x ${B} \\n y" [==[raw ${not}]==] un${q}quoted -DX="a b") # c\n#[[ block comment ]]\nIF(A)\nendif()\n',
        "f.cmake",
    )
    assert [c.name for c in parsed.commands] == ["set", "if", "endif"]
    args = parsed.commands[0].args
    assert [(a.text, a.quoted, a.bracket) for a in args] == [
        ("A", False, False),
        ("x ${B} \\n y", True, False),
        ("raw ${not}", True, True),
        ("un${q}quoted", False, False),
        ('-DX="a b"', False, False),
    ]
    assert parsed.problems == ()


def test_parse_cache_returns_the_same_result_for_the_same_blob():
    first = parse_cmake_cached("blob-1", "set(x 1)\n", "a/CMakeLists.txt")
    second = parse_cmake_cached("blob-1", "ignored: the blob id decides", "a/CMakeLists.txt")
    assert first is second


def test_reference_expansion_and_list_splitting():
    variables = {"A": "x", "NAME": "A", "LIST": "p;q"}

    def lookup(kind, name):
        return {"ENV": {"HOME": "/home/u"}}.get(kind, variables).get(name, "")

    assert expand_references("${${NAME}}-${A}", lookup) == "x-x"
    assert expand_references("$ENV{HOME}/\\$x\\t", lookup) == "/home/u/$x\t"
    assert split_list(expand_references("${LIST};r", lookup)) == ["p", "q", "r"]
    assert split_list("a\\;b;[c;d];;e") == ["a\\;b", "[c;d]", "e"]


GNU = GenexContext("GNU", "Linux", True)
MSVC = GenexContext("MSVC", "Windows", True)


@pytest.mark.parametrize(
    "text,context,expected",
    [
        ("$<$<CXX_COMPILER_ID:MSVC>:/W4>", MSVC, "/W4"),
        ("$<$<CXX_COMPILER_ID:MSVC>:/W4>", GNU, ""),
        ("$<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-Wl,--whole-archive>", GNU, "-Wl,--whole-archive"),
        ("$<$<BOOL:OFF>:x>$<$<BOOL:yes>:y>", GNU, "y"),
        ("$<$<OR:$<PLATFORM_ID:Darwin>,$<PLATFORM_ID:Linux>>:posix>", GNU, "posix"),
        ("$<$<AND:$<PLATFORM_ID:Linux>,$<STREQUAL:a,b>>:no>", GNU, ""),
        ("$<BUILD_INTERFACE:/src/include>$<INSTALL_INTERFACE:include>", GNU, "/src/include"),
        ("$<TARGET_FILE:lib>", GNU, "$<TARGET_FILE:lib>"),
        ("$<LINK_LIBRARY:WHOLE_ARCHIVE,lib>", GNU, "$<LINK_LIBRARY:WHOLE_ARCHIVE,lib>"),
        ("$<$<CONFIG:Debug>:-g>", GNU, "$<$<CONFIG:Debug>:-g>"),
        ("$<$<COMPILE_LANGUAGE:CXX>:-frtti>", GNU, "$<$<COMPILE_LANGUAGE:CXX>:-frtti>"),
        ("$<$<COMPILE_LANGUAGE:CXX>:-frtti>", GenexContext("GNU", "Linux", True, "CXX"), "-frtti"),
        ("$<$<COMPILE_LANGUAGE:CXX>:-frtti>", GenexContext("GNU", "Linux", True, "CUDA"), ""),
        ("$<IF:$<CXX_COMPILER_ID:GNU>,gcc,other>", GNU, "gcc"),
        ("a$<SEMICOLON>b$<COMMA>c", GNU, "a;b,c"),
    ],
)
def test_generator_expressions(text, context, expected):
    assert evaluate_generator_expressions(text, context) == expected


def scoped(value, scope="PRIVATE", line=1):
    return Scoped(value, scope, "CMakeLists.txt", line, "")


@pytest.mark.parametrize(
    "items,expected",
    [
        (["-Wl,--whole-archive", "a", "-Wl,--no-whole-archive", "b"], ["a"]),
        (["LINKER:--push-state,--whole-archive,$<TARGET_FILE:c>,--pop-state", "d"], ["c"]),
        (["SHELL:LINKER:--whole-archive $<TARGET_FILE:e> LINKER:--no-whole-archive"], ["e"]),
        (["$<LINK_LIBRARY:WHOLE_ARCHIVE,f,g>"], ["f", "g"]),
        (["-Wl,-force_load,h", "i"], ["h"]),
        (["-force_load", "j", "k"], ["j"]),
        (["SHELL:LINKER:/WHOLEARCHIVE:$<TARGET_FILE:l>"], ["l"]),
        (["/WHOLEARCHIVE:m.lib", "n"], ["m.lib"]),
        (["-Wl,--export-dynamic", "o"], []),
    ],
)
def test_whole_archive_forms(items, expected):
    assert [w.library for w in whole_archives([scoped(i) for i in items])] == expected


def test_whole_archive_keeps_scope_and_line_of_the_library():
    found = whole_archives([scoped("-Wl,--whole-archive", "PUBLIC", 3), scoped("lib", "PUBLIC", 4)])
    assert [(w.library, w.scope, w.line) for w in found] == [("lib", "PUBLIC", 4)]


def test_target_commands_on_undefined_targets_and_aliases():
    model = model_of(
        {
            "CMakeLists.txt": """
        add_library(base STATIC base.cpp)
        add_library(ns::base ALIAS base)
        target_link_libraries(ns::base PUBLIC dep)
        target_link_options(ghost PRIVATE -Wl,-z,defs)
        set_target_properties(base PROPERTIES OUTPUT_NAME renamed)
        set_property(TARGET base APPEND PROPERTY INTERFACE_LINK_OPTIONS -Wl,--as-needed)
    """
        }
    )
    base = model.targets["base"]
    assert values(base.link_libraries) == ["dep"]
    assert model.targets["ns::base"].alias_of == "base"
    assert base.property("OUTPUT_NAME") == "renamed"
    assert [(o.value, o.scope) for o in base.link_options] == [("-Wl,--as-needed", "INTERFACE")]
    assert [p.message for p in model.problems] == ["target_link_options(): target 'ghost' is not defined"]


def test_directory_definitions_apply_to_later_targets_in_subdirectories():
    model = model_of(
        {
            "CMakeLists.txt": "add_definitions(-DGPU_AVAILABLE=1 -Wall)\nadd_subdirectory(sub)\n",
            "sub/CMakeLists.txt": "add_library(inner STATIC inner.cpp)\n",
        }
    )
    inner = model.targets["inner"]
    assert values(inner.compile_definitions) == ["GPU_AVAILABLE=1"]
    assert values(inner.compile_options) == ["-Wall"]
    assert inner.compile_definitions[0].path == "CMakeLists.txt"


def test_file_glob_and_paths_are_repository_relative():
    model = model_of(
        {
            "CMakeLists.txt": """
            file(GLOB_RECURSE _kernels CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cu)
            file(GLOB _top ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp)
            add_library(k STATIC ${_kernels} ${_top})
            target_include_directories(k PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/..>)
        """,
            "kernels/a.cu": "",
            "kernels/deep/b.cu": "",
            "kernels/c.cpp": "",
            "kernels/deep/d.cpp": "",
        }
    )
    k = model.targets["k"]
    assert [s.path_repo_relative for s in k.sources] == ["kernels/a.cu", "kernels/deep/b.cu", "kernels/c.cpp"]
    assert values(k.include_directories) == [SOURCE_ROOT.rsplit("/", 1)[0]]


def test_second_model_of_the_same_tree_reuses_parses():
    tree = memory_tree(REPOSITORY)
    first = evaluate_cmake_dirs(tree, DEFAULT_PROFILE, ["backends/gpu"])
    second = evaluate_cmake_dirs(tree, DEFAULT_PROFILE, ["backends/gpu"])
    assert first.targets["gpu_shims"] == second.targets["gpu_shims"]
    path = "backends/gpu/CMakeLists.txt"
    cached = parse_cmake_cached(tree.blob_id(path), b"", path)
    assert [c.name for c in cached.commands][:2] == ["if", "set"]


def test_a_command_the_model_cannot_evaluate_is_a_problem_not_an_exception():
    from bot.cmake.interpreter import evaluate_cmake
    from bot.cmake.profiles import PROFILES
    from bot.tree import memory_tree

    tree = memory_tree({"CMakeLists.txt": 'file(RELATIVE_PATH rel "" "")\nadd_library(kept STATIC kept.cpp)\n'})
    model = evaluate_cmake(tree, PROFILES["linux-gcc-cuda"])
    assert "kept" in model.targets
