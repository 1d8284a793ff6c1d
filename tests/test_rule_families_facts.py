"""The facts under the issue-18 rules: what a CMake link takes, what a package config names,
what the macro table holds, how far apart two names are. Trees are written for these tests."""

from __future__ import annotations

from bot.cmake.interpreter import evaluate_cmake
from bot.cmake.profiles import DEFAULT_PROFILE
from bot.cmake.syntax import parse_cmake
from bot.facts import cmake_links, package_configs
from bot.facts.macro_table import compiler_spelling, is_platform_macro, scan_file
from bot.tree import memory_tree
from checks.support.spelling import edit_distance, within_two_edits

_LINKS = """
add_library(core STATIC core.cpp)
add_library(kernels STATIC kernels.cpp)
add_library(registry STATIC registry.cpp)
target_link_libraries(registry PRIVATE -Wl,--whole-archive kernels -Wl,--no-whole-archive)
add_library(objects OBJECT objects.cpp)
add_library(backend STATIC backend.cpp)
target_link_options(backend INTERFACE "SHELL:LINKER:--whole-archive $<TARGET_FILE:backend> LINKER:--no-whole-archive")
add_library(plugin SHARED plugin.cpp)
target_link_libraries(plugin PRIVATE -Wl,--whole-archive core -Wl,--no-whole-archive)
add_executable(runner main.cpp)
target_link_libraries(runner PRIVATE registry objects backend plugin)
"""


def _model():
    files = {
        "CMakeLists.txt": _LINKS,
        **{f"{n}.cpp": "int f();\n" for n in ("core", "kernels", "registry", "objects", "backend", "plugin", "main")},
    }
    return evaluate_cmake(memory_tree(files), DEFAULT_PROFILE)


def test_a_link_takes_own_objects_object_libraries_and_archives_linked_whole():
    units = {(u.target, u.how) for u in cmake_links.linked_units(_model(), "runner")}
    # kernels: a static library replays its PRIVATE whole-archive pair at the consumer's link;
    # backend: names itself for its consumers; core stays inside the shared plugin.
    assert units == {
        ("runner", "sources"),
        ("objects", "objects"),
        ("kernels", "whole-archive"),
        ("backend", "whole-archive"),
    }


def test_archives_a_link_takes_on_demand_are_the_rest_of_its_static_libraries():
    assert set(cmake_links.archives_linked_on_demand(_model(), "runner")) == {"registry"}
    assert set(cmake_links.archives_linked_on_demand(_model(), "plugin")) == set()


_CONFIG = """
if(TARGET executorch-shared AND NOT APPLE)
  set(required_lib_list portable_kernels)
endif()
set(optional_lib_list aoti_cuda xnnpack_backend)
set(not_tested_list flatccrt)
foreach(lib ${optional_lib_list})
  if(TARGET ${lib})
    list(APPEND EXECUTORCH_LIBRARIES ${lib})
  endif()
endforeach()
foreach(lib IN LISTS not_tested_list)
  message(STATUS ${lib})
endforeach()
"""


def test_a_config_names_what_it_tests_with_target():
    names = [n.name for n in package_configs.named_targets(parse_cmake(_CONFIG, "executorch-config.cmake"))]
    # required_lib_list is found with find_library, not tested as a target; not_tested_list never is.
    assert names == ["executorch-shared", "aoti_cuda", "xnnpack_backend"]
    assert package_configs.is_package_config("tools/cmake/executorch-config.cmake")
    assert package_configs.is_package_config("cmake/FooConfig.cmake.in")
    assert not package_configs.is_package_config("tools/cmake/Utils.cmake")


def test_the_macro_table_reads_defines_tests_and_build_flags():
    source = scan_file(
        "a.h",
        b'#if __has_warning("-Wfloat") && defined(ET_LOG_ENABLED) // X_IN_COMMENT\n#  define ET_X 1\n#undef ET_Y\n',
    )
    assert dict(source.defined) == {"ET_X": 2, "ET_Y": 3}
    assert set(dict(source.tested)) == {"__has_warning", "ET_LOG_ENABLED"}
    build = scan_file(
        "kernels/CMakeLists.txt", b"target_compile_definitions(k PRIVATE ET_USE_THREADPOOL=1)\nset(F -DET_FLAG)\n"
    )
    assert set(dict(build.defined)) == {"k", "PRIVATE", "ET_USE_THREADPOOL", "ET_FLAG"}
    assert (
        is_platform_macro("__ANDROID__")
        and is_platform_macro("TARGET_OS_IPHONE")
        and not is_platform_macro("ET_USE_THREADPOOL")
    )


def test_a_compiler_macro_without_its_underscores_is_named_by_its_spelling():
    # clang and GCC define __XTENSA__ and never a bare XTENSA; GNU C does define a bare `linux`.
    assert compiler_spelling("XTENSA") == "__XTENSA__" and compiler_spelling("x86_64") == "__x86_64__"
    assert compiler_spelling("linux") is None and compiler_spelling("__XTENSA__") is None


def test_two_edits_make_a_typo_three_do_not():
    assert edit_distance("ET_UE_THREADPOOL", "ET_USE_THREADPOOL") == 1
    assert within_two_edits("aoti_cuda", "aoti_cudaa") and not within_two_edits("aoti_cuda", "aoti_cuda")
    assert not within_two_edits("aoti_cuda", "aoti_cuda_shims")
