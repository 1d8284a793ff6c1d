"""Properties of the pure core under arbitrary input: our own errors or a result, never a crash.

Short runs in `make test`; `make fuzz` (HYPOTHESIS_PROFILE=fuzz) runs thousands of examples. Inputs
are built from the tokens each language is made of, so the runs reach the parsers' deep paths
rather than stopping at the first unknown byte.
"""

from __future__ import annotations

import contextlib
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.buck.cell_graphs import evaluate_cell
from bot.cmake.interpreter import evaluate_cmake
from bot.cmake.profiles import PROFILES
from bot.cpp.declarations import source_facts
from bot.diff import parse_diff
from bot.errors import PrCheckError
from bot.tree import memory_tree

settings.register_profile("core-default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("core-fuzz", max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = "core-fuzz" if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else "core-default"


def _text(tokens: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(tokens) | st.text(max_size=6), max_size=60).map("".join)


DIFF_TOKENS = [
    "diff --git a/x b/x\n",
    "--- a/x\n",
    "+++ b/x\n",
    "@@ -1,2 +1,3 @@\n",
    "@@ -a,b +c,d @@\n",
    "+line\n",
    "-line\n",
    " line\n",
    "\\ No newline at end of file\n",
    "new file mode 100644\n",
    "deleted file mode 100644\n",
    "rename from x\n",
    "rename to y\n",
    "Binary files a/x and b/x differ\n",
    "\n",
]
STARLARK_TOKENS = [
    "cxx_library(",
    ")",
    "name = ",
    '"n"',
    "[",
    "]",
    "{",
    "}",
    ",",
    "\n",
    "load(",
    '":x.bzl"',
    "def f():\n    ",
    "return ",
    "select(",
    '{"DEFAULT": []}',
    "*",
    "**",
    "x",
    " + ",
    "for x in []: pass\n",
    'glob(["*"])',
    'fail("f")',
]
CMAKE_TOKENS = [
    "add_library(a ",
    "a.cpp",
    ")",
    "\n",
    "set(x ",
    "${x}",
    "${x}${x}",
    "if(",
    "endif()",
    "foreach(i ",
    "endforeach()",
    "target_link_libraries(a PUBLIC b)",
    'string(REGEX MATCH "(a+)+$" out ',
    '"',
    "$<$<CONFIG:Debug>:-g>",
    "#",
    "(",
    "endwhile()",
]
CPP_TOKENS = [
    "#if ",
    "#ifdef X\n",
    "#else\n",
    "#endif\n",
    "#elif defined(Y)\n",
    "#include <a/b.h>\n",
    'extern "C" ',
    "int f(",
    ");\n",
    "{ return 0; }\n",
    "/*",
    "*/",
    "//",
    '"',
    "(",
    ")",
    "__has_include(<x>)",
    "\n",
    "AOTI_SHIM_EXPORT ",
]


@settings(settings.get_profile(PROFILE))
@given(_text(DIFF_TOKENS))
def test_diff_parser_gives_a_changeset_or_a_malformed_diff(text):
    with contextlib.suppress(PrCheckError):  # MalformedDiff: a clear input error, exit 2
        parse_diff(text)


@settings(settings.get_profile(PROFILE))
@given(_text(STARLARK_TOKENS), _text(STARLARK_TOKENS))
def test_starlark_host_turns_any_build_file_into_targets_or_an_error(build, macro):
    tree = memory_tree({".buckconfig": "[repositories]\n  root = .\n", "p/BUCK": build, "p/x.bzl": macro})
    for cell in ("oss", "xplat"):
        graph = evaluate_cell(tree, cell)
        assert set(graph.packages) == {"p"}  # evaluated or failed, never lost


@settings(settings.get_profile(PROFILE))
@given(_text(CMAKE_TOKENS))
def test_cmake_model_turns_any_file_into_a_model_with_problems(text):
    model = evaluate_cmake(memory_tree({"CMakeLists.txt": text}), PROFILES["linux-gcc-cuda"])
    lines = text.count("\n") + 1
    # Every problem is located in the file (or at its end), and nothing the file lacks is a target.
    assert all(0 <= problem.line <= lines + 1 and problem.message for problem in model.problems)
    assert set(model.targets) <= {"a"} | {name for name in model.targets if name.startswith("${")}


@settings(settings.get_profile(PROFILE))
@given(_text(CPP_TOKENS))
def test_cpp_facts_of_any_source(text):
    facts = source_facts("x.cpp", text)
    lines = text.count("\n") + 1
    assert facts.path == "x.cpp"
    assert all(1 <= include.line <= lines for include in facts.includes)
    assert {include.target_text for include in facts.includes} <= {"a/b.h"}  # the only include the tokens can spell
