"""source-missing in a CMake file decides by what the builds read (#3339).

CMake stops at configure on a missing source only in a run that reads the file. A standalone
project nothing configures (#3339's `examples/llm_manual/CMakeLists.txt`, the LLM manual's
template, whose `third-party/executorch` the user adds) stops nobody: information, not a blocker.
The same gap in a file a profile reads, in a component directory a profile reads into, or in a
project a CI script configures, still blocks.
"""

from __future__ import annotations

from pathlib import Path

from fixtures.cases import commit_base_and_head
from pr_check.review import review_repository

BASE = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.19)\nproject(executorch)\nadd_subdirectory(runtime)\n",
    "runtime/CMakeLists.txt": "add_library(runtime core.cpp)\n",
    "runtime/core.cpp": "int core;\n",
    # A backend's own test project: configured by hand, under the backend the root build reads.
    "runtime/test/CMakeLists.txt": "project(runtime_tests)\nadd_executable(core_test core_test.cpp)\n",
    "runtime/test/core_test.cpp": "int main() { return 0; }\n",
    # A standalone example that CI configures on its own.
    "examples/app/CMakeLists.txt": "project(app)\nadd_executable(app main.cpp)\n",
    "examples/app/main.cpp": "int main() { return 0; }\n",
    ".ci/scripts/build_app.sh": "cmake -S examples/app -B cmake-out/app\ncmake --build cmake-out/app\n",
}
TEMPLATE = (
    "cmake_minimum_required(VERSION 3.19)\n"
    "project(nanogpt_runner)\n"
    "add_subdirectory(\n"
    "    ${CMAKE_CURRENT_SOURCE_DIR}/third-party/executorch\n"
    "    ${CMAKE_BINARY_DIR}/executorch)\n"
    "add_executable(nanogpt_runner main.cpp)\n"
)


def _review(tmp_path: Path, head_changes: dict[str, str | None]):
    repo = tmp_path / "repo"
    base, head = commit_base_and_head(repo, BASE, head_changes)
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    return [(f.path, f.line, f.severity.label, f.message) for f in report.findings if f.rule == "source-missing"]


def test_a_template_no_build_reads_is_information_only(tmp_path):
    found = _review(
        tmp_path, {"examples/llm_manual/CMakeLists.txt": TEMPLATE, "examples/llm_manual/main.cpp": "int main();\n"}
    )
    assert [(path, line, severity) for path, line, severity, _m in found] == [
        ("examples/llm_manual/CMakeLists.txt", 4, "info")
    ]
    assert "No build of this repository reads this file" in found[0][3]


def test_a_missing_source_in_a_file_a_profile_reads_still_blocks(tmp_path):
    found = _review(tmp_path, {"runtime/core.cpp": None})
    assert [(path, line, severity) for path, line, severity, _m in found] == [("runtime/CMakeLists.txt", 1, "blocker")]
    assert "CMake stops at configure in every build that reads this file" in found[0][3]


def test_a_project_under_a_read_component_still_blocks(tmp_path):
    found = _review(tmp_path, {"runtime/test/core_test.cpp": None})
    assert [(path, line, severity) for path, line, severity, _m in found] == [
        ("runtime/test/CMakeLists.txt", 2, "blocker")
    ]


def test_a_project_ci_configures_still_blocks(tmp_path):
    found = _review(tmp_path, {"examples/app/main.cpp": None})
    assert [(path, line, severity) for path, line, severity, _m in found] == [
        ("examples/app/CMakeLists.txt", 2, "blocker")
    ]
