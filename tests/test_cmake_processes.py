"""The CMake model's execute_process(), foreach(ZIP_LISTS) and list(TRANSFORM): what ExecuTorch's root
CMakeLists.txt needs to get its source lists from build_variables.bzl (executorch_load_build_variables).

The CMake text is written for these tests in the shape of tools/cmake/Codegen.cmake's
executorch_append_filelist, not copied from it; values are observed through the sources of targets.
"""

from __future__ import annotations

from bot.cmake.interpreter import evaluate_cmake
from bot.cmake.profiles import DEFAULT_PROFILE
from bot.tree import memory_tree

LISTS = """\
# Valid Starlark and Python, as ExecuTorch's build_variables.bzl is.
PLATFORM = ["log.cpp", "abort.cpp"]
CORE_SRCS = sorted(["runtime/core/evalue.cpp"] + ["runtime/platform/" + x for x in PLATFORM])
TENSOR_SRCS = ["extension/tensor/tensor_ptr.cpp"]
NOT_A_LIST = 3
"""

APPEND_FILELIST = """\
function(append_filelist name outputvar)
  execute_process(
    COMMAND "${PYTHON_EXECUTABLE}" -c
            "exec(open('${PROJECT_SOURCE_DIR}/build/lists.bzl').read());print(';'.join(${name}))"
    RESULT_VARIABLE _retval OUTPUT_VARIABLE _tempvar ERROR_VARIABLE _stderr
  )
  if(NOT _retval EQUAL 0)
    message(FATAL_ERROR "cannot read ${name}: ${_stderr}")
  endif()
  string(REPLACE "\\n" "" _tempvar "${_tempvar}")
  list(APPEND ${outputvar} ${_tempvar})
  set(${outputvar} "${${outputvar}}" PARENT_SCOPE)
endfunction()
"""


def model_of(root_cmake: str, lists: str | None = LISTS):
    files = {"CMakeLists.txt": "project(p)\n" + APPEND_FILELIST + root_cmake}
    if lists is not None:
        files["build/lists.bzl"] = lists
    return evaluate_cmake(memory_tree(files), DEFAULT_PROFILE)


def sources(model, name: str) -> list[str]:
    return [source.path_repo_relative for source in model.targets[name].sources]


def test_the_list_printing_script_is_evaluated_as_starlark():
    model = model_of("append_filelist(CORE_SRCS _core__srcs)\nadd_library(core ${_core__srcs})\n")
    assert sources(model, "core") == [
        "runtime/core/evalue.cpp",
        "runtime/platform/abort.cpp",
        "runtime/platform/log.cpp",
    ]
    assert model.problems == () and model.processes_not_run == ()


def test_lists_zipped_with_their_variables_are_loaded_in_a_loop():
    model = model_of("""
        function(load_lists)
          set(LISTS CORE_SRCS TENSOR_SRCS)
          set(NAMES _core__srcs _tensor__srcs)
          foreach(pair IN ZIP_LISTS LISTS NAMES)
            append_filelist(${pair_0} "${pair_1}")
            set(${pair_1} "${${pair_1}}" PARENT_SCOPE)
          endforeach()
        endfunction()
        load_lists()
        add_library(core ${_core__srcs})
        add_library(tensor ${_tensor__srcs})
    """)
    assert len(sources(model, "core")) == 3
    assert sources(model, "tensor") == ["extension/tensor/tensor_ptr.cpp"]


def test_a_missing_list_file_fails_the_script_as_python_would():
    model = model_of("append_filelist(CORE_SRCS _core__srcs)\n", lists=None)
    assert [problem.message for problem in model.problems] == [
        f"message(FATAL_ERROR) reached under profile {DEFAULT_PROFILE.name}: cannot read CORE_SRCS: No such file or "
        "directory: '/src/executorch/build/lists.bzl'"
    ]


def test_an_unknown_name_or_a_value_that_is_not_a_list_of_strings_fails():
    for name, error in (("ABSENT", "NameError"), ("NOT_A_LIST", "TypeError")):
        model = model_of(f"append_filelist({name} out)\n")
        assert len(model.problems) == 1 and error in model.problems[0].message


def test_a_list_file_that_is_not_starlark_fails_without_running_python():
    model = model_of("append_filelist(CORE_SRCS out)\n", lists="import os\nCORE_SRCS = os.listdir('/')\n")
    assert len(model.problems) == 1 and "lists.bzl" in model.problems[0].message


def test_any_other_process_succeeds_empty_and_is_listed_as_not_run():
    model = model_of("""
        execute_process(COMMAND git rev-parse HEAD OUTPUT_VARIABLE rev RESULT_VARIABLE code)
        add_library(lib "x${rev}.cpp")
        if(code EQUAL 0)
          add_library(ran y.cpp)
        endif()
    """)
    assert sources(model, "lib") == ["x.cpp"] and "ran" in model.targets
    assert [(p.line, p.message) for p in model.processes_not_run] == [
        (16, "execute_process: `git rev-parse HEAD` not run; its output taken as empty")
    ]


def test_list_transform_prepends_appends_and_changes_case():
    model = model_of("""
        set(names a.cpp b.cpp)
        list(TRANSFORM names PREPEND "src/")
        add_library(prefixed ${names})
        list(TRANSFORM names TOUPPER OUTPUT_VARIABLE upper)
        add_library(upper ${upper})
        list(TRANSFORM names APPEND .in AT 0)
        add_library(selected ${names})
    """)
    assert sources(model, "prefixed") == ["src/a.cpp", "src/b.cpp"]
    assert sources(model, "upper") == ["SRC/A.CPP", "SRC/B.CPP"]
    # A selector is not modelled: the list is left as it was rather than half-transformed.
    assert sources(model, "selected") == ["src/a.cpp", "src/b.cpp"]
