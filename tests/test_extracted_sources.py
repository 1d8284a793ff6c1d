"""The source lists build/extract_sources.py wrote for ExecuTorch's CMake before 2a692c2da9, from the Buck model.

The trees are real git repositories written here (Buck files, a cmake_deps.toml, CMake files in the
shapes of ExecuTorch's 2023 root CMakeLists.txt and its 2024 `extract_sources()` helper); every
expected list is written by hand from what extract_sources.py computes: `inputs(deps(...))` of the
`buck_targets`, kept when every `filters` pattern matches, dropped when an `excludes` pattern does,
minus the final list of each `deps` entry, sorted, as `_<name>__srcs`.
"""

from __future__ import annotations

from pathlib import Path

from bot.facts import cmake_models
from bot.repo import GitRepository
from bot.snapshot import BuildModel
from fixtures.cases import git
from pr_check.review import review_repository

BUCKCONFIG = "[repositories]\n  root = .\n[buildfile]\n  name = TARGETS\n"

BUCK = {
    "runtime/executor/TARGETS": (
        'cxx_library(name = "program", srcs = ["method.cpp", ("program.cpp", ["-O2"])],\n'
        '    exported_headers = ["program.h"], deps = ["//kernels/prim_ops:prim_ops_registry", "//schema:program"])\n'
        'cxx_library(name = "program_no_prim_ops", srcs = ["method.cpp", "program.cpp"], deps = ["//schema:program"])\n'
    ),
    "kernels/prim_ops/TARGETS": (
        'cxx_library(name = "prim_ops_registry", srcs = ["register_prim_ops.cpp"], link_whole = True,\n'
        '    deps = [":et_copy_index"] + select({"DEFAULT": [], "ovr_config//os:android": [":android_only"]}))\n'
        'cxx_library(name = "et_copy_index", srcs = ["et_copy_index.cpp"])\n'
        'cxx_library(name = "android_only", srcs = ["android_only.cpp"])\n'
    ),
    # The schema's headers come from a genrule running a tool: deps() follows both.
    "schema/TARGETS": (
        'genrule(name = "program_gen", srcs = ["program.fbs"], out = "program_generated.h",\n'
        '    cmd = "$(exe //third-party:flatc) $SRCS")\n'
        'cxx_library(name = "program", exported_headers = [":program_gen[program_generated.h]"])\n'
    ),
    "third-party/TARGETS": 'cxx_binary(name = "flatc", srcs = ["flatc.cpp"])\n',
    "examples/runner/TARGETS": (
        'cxx_binary(name = "executor_runner", srcs = ["runner.cpp"],\n'
        '    deps = ["//runtime/executor:program", "//kernels/portable:operators"])\n'
    ),
    "kernels/portable/TARGETS": 'cxx_library(name = "operators", srcs = ["op_add.cpp", "op_mul.cpp"])\n',
}

CONFIG = """\
[target_base]
excludes = ["^third-party"]

[targets.program_schema]
buck_targets = ["//schema:program"]
filters = [".fbs$"]

[targets.executorch]
buck_targets = ["//runtime/executor:program"]
deps = ["executorch_no_prim_ops"]
filters = [".cpp$"]

[targets.executorch_no_prim_ops]
buck_targets = ["//runtime/executor:program_no_prim_ops"]
deps = ["program_schema"]
filters = [".cpp$"]

[targets.executor_runner]
buck_targets = ["//examples/runner:executor_runner"]
filters = [".cpp$"]
excludes = ["/op_mul"]
deps = ["executorch"]
"""

# What the script writes for CONFIG, by hand. executor_runner subtracts only `executorch`'s final
# list, which lost method.cpp and program.cpp to executorch_no_prim_ops: they stay in the runner's.
EXPECTED = {
    "_program_schema__srcs": ["schema/program.fbs"],
    "_executorch__srcs": ["kernels/prim_ops/et_copy_index.cpp", "kernels/prim_ops/register_prim_ops.cpp"],
    "_executorch_no_prim_ops__srcs": ["runtime/executor/method.cpp", "runtime/executor/program.cpp"],
    "_executor_runner__srcs": [
        "examples/runner/runner.cpp",
        "kernels/portable/op_add.cpp",
        "runtime/executor/method.cpp",
        "runtime/executor/program.cpp",
    ],
}

# The 2023 root CMakeLists.txt's shape: the script run from the source directory, then included.
ROOT_2023 = """\
cmake_minimum_required(VERSION 3.13)
project(executorch)
if(NOT EXECUTORCH_SRCS_FILE)
  set(EXECUTORCH_SRCS_FILE "${CMAKE_CURRENT_BINARY_DIR}/executorch_srcs.cmake")
  execute_process(
    COMMAND python3 build/extract_sources.py --buck2=${BUCK2}
            --config=build/cmake_deps.toml --out=${EXECUTORCH_SRCS_FILE}
    OUTPUT_VARIABLE gen_srcs_output
    ERROR_VARIABLE gen_srcs_error
    RESULT_VARIABLE gen_srcs_exit_code
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  if(NOT gen_srcs_exit_code EQUAL 0)
    message(FATAL_ERROR "executorch: source list generation failed: ${gen_srcs_error}")
  endif()
endif()
include(${EXECUTORCH_SRCS_FILE})
add_library(executorch_no_prim_ops ${_executorch_no_prim_ops__srcs})
add_library(executorch ${_executorch__srcs})
target_link_libraries(executorch PRIVATE executorch_no_prim_ops)
add_executable(executor_runner ${_executor_runner__srcs})
target_link_libraries(executor_runner executorch)
"""

# The 2024 helper's shape (build/Utils.cmake): an absolute script path after ${PYTHON_EXECUTABLE},
# which the model leaves empty, and an existence test of the generated file first.
UTILS_2024 = """\
function(extract_sources sources_file)
  if(EXISTS "${sources_file}")
    message(STATUS "executorch: Using source file list ${sources_file}")
  else()
    set(executorch_root ${CMAKE_CURRENT_SOURCE_DIR})
    execute_process(
      COMMAND ${PYTHON_EXECUTABLE} ${executorch_root}/build/extract_sources.py
              --config=${executorch_root}/build/cmake_deps.toml --out=${sources_file}
              --buck2=${BUCK2}
      OUTPUT_VARIABLE gen_srcs_output
      ERROR_VARIABLE gen_srcs_error
      RESULT_VARIABLE gen_srcs_exit_code
      WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    if(NOT gen_srcs_exit_code EQUAL 0)
      message(FATAL_ERROR "executorch: source list generation failed: ${gen_srcs_error}")
    endif()
  endif()
endfunction()
"""
ROOT_2024 = """\
cmake_minimum_required(VERSION 3.19)
project(executorch)
include(build/Utils.cmake)
set(EXECUTORCH_SRCS_FILE "${CMAKE_CURRENT_BINARY_DIR}/executorch_srcs.cmake")
extract_sources(${EXECUTORCH_SRCS_FILE})
include(${EXECUTORCH_SRCS_FILE})
add_library(executorch ${_executorch__srcs})
"""


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Write `files` into the repository and commit them; returns the commit."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def repository(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    repo = tmp_path / "executorch"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo, commit(repo, files, "base")


def build_of(tmp_path: Path, files: dict[str, str]) -> BuildModel:
    repo, head = repository(tmp_path, files)
    with GitRepository(repo) as opened:
        tree = opened.tree(head)
    return BuildModel(tree)


def tree_2023(**overrides: str) -> dict[str, str]:
    files = {
        ".buckconfig": BUCKCONFIG,
        **BUCK,
        "build/extract_sources.py": "# runs buck2 cquery; the model computes its output instead\n",
        "build/cmake_deps.toml": CONFIG,
        "CMakeLists.txt": ROOT_2023,
    }
    files.update(overrides)
    return files


def sources(build: BuildModel, target: str) -> list[str]:
    return [
        source.path_repo_relative
        for source in cmake_models.cmake_model(build, "linux-gcc-cuda").targets[target].sources
    ]


def test_the_lists_are_the_scripts_output_from_the_oss_buck_graph(tmp_path):
    build = build_of(tmp_path, tree_2023())
    (lists,) = cmake_models.extracted_source_lists(build)
    assert lists.config == "build/cmake_deps.toml" and lists.failure is None
    assert {variable: value.split(";") for variable, value in lists.variables()} == EXPECTED
    assert [name for name, _ in lists.lists] == [
        "program_schema",
        "executorch",
        "executorch_no_prim_ops",
        "executor_runner",
    ]


def test_the_cmake_model_includes_the_generated_file(tmp_path):
    build = build_of(tmp_path, tree_2023())
    model = cmake_models.cmake_model(build, "linux-gcc-cuda")
    assert sources(build, "executorch") == EXPECTED["_executorch__srcs"]
    assert sources(build, "executor_runner") == EXPECTED["_executor_runner__srcs"]
    assert model.generated == ("/build/executorch_srcs.cmake",)
    assert model.problems == () and model.skipped == () and model.processes_not_run == ()


def test_the_2024_helper_with_an_absolute_script_path_and_no_python(tmp_path):
    build = build_of(tmp_path, tree_2023(**{"build/Utils.cmake": UTILS_2024, "CMakeLists.txt": ROOT_2024}))
    assert sources(build, "executorch") == EXPECTED["_executorch__srcs"]
    assert cmake_models.cmake_model(build, "linux-gcc-cuda").problems == ()


def test_a_config_the_script_cannot_follow_fails_it_and_cmake_stops(tmp_path):
    broken = CONFIG.replace('deps = ["executorch"]', 'deps = ["executorch", "no_such_list"]')
    build = build_of(tmp_path, tree_2023(**{"build/cmake_deps.toml": broken}))
    (lists,) = cmake_models.extracted_source_lists(build)
    assert lists.lists == () and lists.failure is not None and "no_such_list" in lists.failure
    model = cmake_models.cmake_model(build, "linux-gcc-cuda")
    assert [problem.line for problem in model.problems] == [13]  # the message(FATAL_ERROR)
    assert model.generated == () and model.targets["executorch"].sources == ()


def test_a_label_the_buck_model_lacks_contributes_nothing_and_is_named(tmp_path):
    config = CONFIG.replace('["//runtime/executor:program"]', '["//runtime/executor:program", "//gone:lib"]')
    build = build_of(tmp_path, tree_2023(**{"build/cmake_deps.toml": config}))
    from bot.facts.extracted_sources import extracted_sources

    extraction = extracted_sources(build)["build/cmake_deps.toml"]
    assert extraction.unresolved == ("//gone:lib",)
    assert sources(build, "executorch") == EXPECTED["_executorch__srcs"]


def test_trees_without_the_config_beside_the_script_are_left_as_they_were(tmp_path):
    no_script = tree_2023()
    del no_script["build/extract_sources.py"]
    build = build_of(tmp_path, no_script)
    model = cmake_models.cmake_model(build, "linux-gcc-cuda")
    assert cmake_models.extracted_source_lists(build) == ()
    assert model.targets["executorch"].sources == () and model.generated == ()
    # Nothing asked for the Buck graph: a CMake-only model of a newer tree never evaluates a cell.
    assert build._cells == {}
    assert [problem.message for problem in model.skipped] == [
        "include: /build/executorch_srcs.cmake is not in the tree"
    ]


def test_the_prim_ops_drop_of_7cffa86857_is_caught_and_its_fix_is_silent(tmp_path):
    """The class of 7cffa86857 -> 41fe5d2e0c in miniature: `executorch` gathers the Buck closure of
    the executor, prim ops registry included (link_whole, a registering static initializer), and
    executor_runner links it on demand; the fix links it whole."""
    registering = "static auto success_with_op_reg = register_operators(op_array_ref);\n"
    files = tree_2023(**{"kernels/prim_ops/register_prim_ops.cpp": registering})
    repo, base = repository(tmp_path, {k: v for k, v in files.items() if k != "CMakeLists.txt"})
    introducer = commit(repo, {"CMakeLists.txt": ROOT_2023}, "CMakeLists.txt for executor_runner")
    whole = "target_link_libraries(executor_runner -Wl,--whole-archive executorch -Wl,--no-whole-archive)\n"
    fix = commit(
        repo, {"CMakeLists.txt": ROOT_2023.replace("target_link_libraries(executor_runner executorch)\n", whole)}, "fix"
    )
    cache = tmp_path / "cache"

    def link_whole_parity(base: str, head: str) -> list:
        report = review_repository(repo, base, head, cache_dir=cache)
        return [f for f in report.findings if f.rule == "link-whole-parity"]

    found = link_whole_parity(base, introducer)
    assert [(f.path, f.line, f.target) for f in found] == [("CMakeLists.txt", 21, "executorch")]
    assert "//kernels/prim_ops:prim_ops_registry" in found[0].message
    assert link_whole_parity(introducer, fix) == []


def test_the_2024_executorch_library_holds_the_prim_ops_registry(executorch_mirror):
    """At 2d39c223f2 (2024-01-12) build/cmake_deps.toml builds `executorch` from the Buck closure of
    //runtime/executor:program (minus program_schema's .fbs files); :program deps on
    //kernels/prim_ops:prim_ops_registry, whose srcs are register_prim_ops.cpp (read at that commit)."""
    with GitRepository(executorch_mirror) as repo:
        build = BuildModel(repo.tree(repo.resolve("2d39c223f2")))
        model = cmake_models.cmake_model(build, "linux-gcc-cuda")
    executorch = {source.path_repo_relative for source in model.targets["executorch"].sources}
    assert {
        "kernels/prim_ops/register_prim_ops.cpp",
        "kernels/prim_ops/et_copy_index.cpp",
        "runtime/executor/method.cpp",
        "runtime/executor/program.cpp",
    } <= executorch
    assert not {path for path in executorch if not path.endswith(".cpp") or path.startswith("third-party/")}
    assert model.generated == ("/build/executorch_srcs.cmake",)


def test_a_buck_only_change_of_such_a_tree_reaches_the_cmake_only_rules(tmp_path):
    """link-duplicate-symbol reads only CMake and C++ files, but before 2a692c2da9 a Buck file decides
    what a CMake library compiles: the engine runs it on a Buck-only change of such a tree, and not
    on one of a tree without the script."""
    from bot.diff import parse_diff
    from bot.engine import _may_change
    from bot.snapshot import Snapshot
    from checks import BY_ID

    added = BUCK["kernels/portable/TARGETS"].replace('"op_mul.cpp"]', '"op_mul.cpp", "op_sub.cpp"]')
    newer = tree_2023()
    del newer["build/extract_sources.py"]
    verdicts = []
    for name, files in (("older", tree_2023()), ("newer", newer)):
        (tmp_path / name).mkdir()
        repo, base = repository(tmp_path / name, files)
        head = commit(repo, {"kernels/portable/TARGETS": added}, "a Buck-only change")
        with GitRepository(repo) as opened:
            changes = parse_diff(opened.diff(base, head))
            snapshot = Snapshot(BuildModel(opened.tree(base)), BuildModel(opened.tree(head)), changes)
            verdicts.append(_may_change(BY_ID["link-duplicate-symbol"], snapshot))
    assert verdicts == [True, False]


def test_a_list_computed_from_buck_is_no_source_parity_drift(tmp_path):
    """abc8a5fabd's shape (a false finding of the fifth precision sample): executor_runner's Buck
    target drops a dep, so the CMake list computed from its Buck closure drops that dep's source,
    while the Buck library still compiles it. The CMake list follows Buck by construction."""
    files = tree_2023()
    repo, base = repository(tmp_path, files)
    runner = BUCK["examples/runner/TARGETS"].replace(', "//kernels/portable:operators"', "")
    head = commit(repo, {"examples/runner/TARGETS": runner}, "the runner drops the operators")
    with GitRepository(repo) as opened:
        before = cmake_models.cmake_model(BuildModel(opened.tree(base)), "linux-gcc-cuda")
        after = cmake_models.cmake_model(BuildModel(opened.tree(head)), "linux-gcc-cuda")
    dropped = {s.path_repo_relative for s in before.targets["executor_runner"].sources} - {
        s.path_repo_relative for s in after.targets["executor_runner"].sources
    }
    assert dropped == {"kernels/portable/op_add.cpp"}  # the situation is what the test says
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert [f for f in report.findings if f.rule == "source-parity"] == []
