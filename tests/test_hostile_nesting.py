"""CMake and C++ nested thousands deep: a limit on that file, never a crash, and no other finding lost.

Every walk over a tree-sitter tree keeps its own stack; what the CMake evaluator and the C++
declaration reader follow by recursion is bounded (bot/cmake/budgets.py, bot/cpp/declarations.py)
and a bound that runs out is a `cmake-eval-limit` finding at its line (CMake) or a problem in the
file's facts (C++). The end-to-end tests run `pr-check review` as a process on real git repositories.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cmake.budgets import MAX_BLOCK_DEPTH, MAX_DEPTH, MAX_NESTING
from bot.cmake.interpreter import evaluate_cmake
from bot.cmake.syntax import parse_cmake
from bot.cpp.declarations import MAX_SCOPE_DEPTH, source_facts
from bot.tree import memory_tree
from fixtures.cases import git

ROOT = Path(__file__).resolve().parent.parent
DEPTH = 5000
DEEP_IFS = "if(TRUE)\n" * DEPTH + "endif()\n" * DEPTH
AFTER = "add_library(after STATIC after.cpp)\n"


def review_json(repo: Path, base: str) -> tuple[int, list[dict], str]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pr_check.cli",
            "review",
            "--repo",
            str(repo),
            "--base",
            base,
            "--head",
            "HEAD",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    findings = json.loads(result.stdout)["findings"] if result.stdout.strip() else []
    return result.returncode, findings, result.stderr


def test_the_whole_archive_finding_survives_5000_nested_ifs_in_front_of_it(case_repo):
    repo, base, _ = case_repo("whole-archive-public-scope")
    path = repo / "backends/cuda/CMakeLists.txt"
    original = path.read_text()
    pair_line = (
        original.splitlines().index("    PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive") + 1
    )
    path.write_text(DEEP_IFS + original)
    git(repo, "commit", "-q", "-am", "5,000 nested if(TRUE) ahead of the whole-archive change")

    code, findings, stderr = review_json(repo, base)

    assert code == 1, stderr
    assert [f for f in findings if f["rule"] == "internal-error"] == []
    [whole] = [f for f in findings if f["rule"] == "link-whole-archive-public"]
    assert (whole["path"], whole["severity"]) == ("backends/cuda/CMakeLists.txt", "major")
    # The call spans lines; the pair is inside it, 10,000 lines further down than before.
    assert whole["line"] <= 2 * DEPTH + pair_line <= whole["end_line"]
    limits = [f for f in findings if f["rule"] == "cmake-eval-limit"]
    assert [(f["path"], f["severity"]) for f in limits] == [("backends/cuda/CMakeLists.txt", "major")]
    assert f"blocks nested deeper than {MAX_BLOCK_DEPTH} at if()" in limits[0]["message"]
    # The root CMakeLists.txt holds one block open around add_subdirectory(backends/cuda).
    assert limits[0]["line"] == MAX_BLOCK_DEPTH


def test_tree_sitter_reads_5000_and_20000_nested_ifs():
    for depth in (DEPTH, 20_000):
        parsed = parse_cmake("if(TRUE)\n" * depth + "endif()\n" * depth + AFTER, "CMakeLists.txt")
        assert parsed.problems == ()
        assert len(parsed.commands) == 2 * depth + 1
        assert [c.name for c in parsed.commands[:2]] == ["if", "if"] and parsed.commands[depth].name == "endif"
        assert (parsed.commands[-1].name, parsed.commands[-1].line) == ("add_library", 2 * depth + 1)


def test_an_unclosed_deep_nest_is_a_syntax_problem_not_a_crash():
    parsed = parse_cmake("if(TRUE)\n" * DEPTH + "foo(((\n", "CMakeLists.txt")
    assert parsed.problems and all(p.path == "CMakeLists.txt" for p in parsed.problems)
    assert sum(c.name == "if" for c in parsed.commands) == DEPTH


def _nested(opener: str, closer: str) -> str:
    return opener * DEPTH + closer * DEPTH


HOSTILE_CMAKE = {
    # name: (text, line of the limit, what the limit says)
    "if": (_nested("if(TRUE)\n", "endif()\n"), MAX_BLOCK_DEPTH + 1, "blocks nested deeper than"),
    "foreach": (_nested("foreach(x a)\n", "endforeach()\n"), MAX_BLOCK_DEPTH + 1, "blocks nested deeper than"),
    "while": (
        "while(TRUE)\n" * DEPTH + "break()\nendwhile()\n" * DEPTH,
        MAX_BLOCK_DEPTH + 1,
        "blocks nested deeper than",
    ),
    "block": (_nested("block()\n", "endblock()\n"), MAX_BLOCK_DEPTH + 1, "blocks nested deeper than"),
    "parentheses": ("if(" + "(" * DEPTH + "TRUE" + ")" * DEPTH + ")\nendif()\n", 1, "parentheses nested deeper than"),
    "references": ("set(x " + "${" * DEPTH + "a" + "}" * DEPTH + ")\n", 1, "`${}` references nested deeper than"),
    "generator expressions": (
        "add_library(a STATIC a.cpp)\ntarget_link_options(a PUBLIC "
        + "$<$<BOOL:1>:" * DEPTH
        + "x"
        + ">" * DEPTH
        + ")\n",
        2,
        "generator expressions nested deeper than",
    ),
    "definitions": (_nested("function(f)\n", "endfunction()\n"), None, None),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CMAKE))
def test_deep_cmake_is_a_limit_at_its_line_and_what_follows_is_evaluated(name):
    text, line, message = HOSTILE_CMAKE[name]
    model = evaluate_cmake(memory_tree({"CMakeLists.txt": text + AFTER}))
    assert "after" in model.targets  # the command after the nest ran
    if line is None:  # nothing is followed deeper than it is written: no limit needed
        assert model.limits == ()
        return
    [limit] = model.limits
    assert (limit.path, limit.line) == ("CMakeLists.txt", line)
    assert message in limit.message


def test_a_limit_inside_a_block_leaves_the_rest_of_the_block_evaluated():
    deep = "set(x " + "${" * 100 + "a" + "}" * 100 + ")\n"
    model = evaluate_cmake(memory_tree({"CMakeLists.txt": "if(TRUE)\n" + deep + AFTER + "endif()\n"}))
    assert [(p.line, f"nested deeper than {MAX_NESTING}" in p.message) for p in model.limits] == [(2, True)]
    assert "after" in model.targets


def test_every_bound_at_once_stays_inside_pythons_recursion_limit():
    # include() nested to MAX_DEPTH (the most Python frames a level), then at the bottom blocks
    # to MAX_BLOCK_DEPTH and every argument kind nested to its bound: the deepest the evaluator
    # ever recurses (about 450 frames; it ends when started 500 frames down, not 550). Started 250
    # frames down, as a check deep in the pipeline would start it, it ends with a limit.
    bottom = (
        "if(" + "(" * MAX_NESTING + "TRUE" + ")" * MAX_NESTING + ")\n"
        "  target_link_options(a PUBLIC " + "$<$<BOOL:1>:" * (MAX_NESTING // 2) + "x" + ">" * (MAX_NESTING // 2) + ")\n"
        "  set(v " + "${" * MAX_NESTING + "a" + "}" * MAX_NESTING + ")\n"
        "endif()\n"
    )
    blocks = MAX_BLOCK_DEPTH - 1
    files = {
        "CMakeLists.txt": "add_library(a STATIC a.cpp)\ninclude(a.cmake)\n" + AFTER,
        "a.cmake": "include(a.cmake)\n" + "if(TRUE)\n" * blocks + bottom + "endif()\n" * blocks,
    }

    def descend(levels: int):
        return descend(levels - 1) if levels else evaluate_cmake(memory_tree(files))

    model = descend(250)
    assert "after" in model.targets
    assert [(p.path, p.message) for p in model.limits] == [("a.cmake", f"nesting deeper than {MAX_DEPTH} at a.cmake")]
    # The root file is one level: a.cmake ran MAX_DEPTH - 1 times, each time down to the bottom.
    assert [o.value for o in model.targets["a"].link_options] == ["x"] * (MAX_DEPTH - 1)


def test_a_list_file_nested_5000_deep_is_refused_not_parsed():
    # starlark-rust's parser overflowed the native stack on it (the process died with SIGSEGV).
    files = {
        "CMakeLists.txt": (
            "execute_process(COMMAND python -c \"exec(open('${CMAKE_CURRENT_SOURCE_DIR}/vars.bzl').read());"
            "print(';'.join(SRCS))\" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE code)\n"
            "add_library(after STATIC ${out} after.cpp)\n"
        ),
        "vars.bzl": "SRCS = " + "[" * DEPTH + "]" * DEPTH + "\n",
    }
    code = (
        "import sys; sys.path.insert(0, '.')\n"
        "from bot.cmake.interpreter import evaluate_cmake\nfrom bot.tree import memory_tree\n"
        f"model = evaluate_cmake(memory_tree({files!r}))\n"
        "print([s.path_repo_relative for s in model.targets['after'].sources])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "['after.cpp']"


HOSTILE_CPP = {
    "namespaces": "namespace deep {\n" * DEPTH + "int hidden(void);\n" + "}\n" * DEPTH,
    'extern "C" blocks': 'extern "C" {\n' * DEPTH + "int hidden(void);\n" + "}\n" * DEPTH,
    "structs": "struct deep {\n" * DEPTH + "int hidden;\n" + "};\n" * DEPTH,
    "templates": "template <class T>\n" * DEPTH + "int hidden(void);\n",
    "broken namespaces": "namespace deep {\n" * DEPTH + "int hidden(( ;\n" + "}\n" * DEPTH,
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CPP))
def test_deep_cpp_scopes_are_a_problem_and_the_declarations_around_them_are_read(name):
    source = "int before(void);\n" + HOSTILE_CPP[name] + "int after(void);\n"
    facts = source_facts("deep.h", source)
    names = [d.name for d in facts.declarations]
    assert names[0] == "before" and names[-1] == "after"
    assert "hidden" not in names
    [problem] = facts.problems
    assert problem.path == "deep.h" and f"scopes nested deeper than {MAX_SCOPE_DEPTH}" in problem.message
    assert 2 <= problem.line <= MAX_SCOPE_DEPTH + 2


def test_deep_braces_inside_a_function_are_not_walked():
    facts = source_facts("deep.cpp", "void f() " + "{" * 4 * DEPTH + "}" * 4 * DEPTH + "\nint after(void);\n")
    assert [d.name for d in facts.declarations] == ["f", "after"] and facts.problems == ()


def test_a_gate_finding_survives_deep_if_namespace_and_brace_nesting_in_its_header(case_repo):
    repo, base, _ = case_repo("llm-gate-declaration-outside")
    header = repo / "backends/cuda/runtime/cuda_kv_cache.h"
    hostile = (
        "".join(f"#if DEEP_{i}\n" for i in range(DEPTH))
        + "namespace deep {\n" * DEPTH
        + "}\n" * DEPTH
        + "#endif\n" * DEPTH
        + "inline void braces() "
        + "{" * DEPTH
        + "}" * DEPTH
        + "\n"
    )
    original = header.read_text()
    header.write_text(original + hostile)
    git(repo, "commit", "-q", "-am", "a header nested 5,000 deep three ways")

    code, findings, stderr = review_json(repo, base)

    assert code == 1, stderr
    assert [f for f in findings if f["rule"] == "internal-error"] == []
    gates = [f for f in findings if f["rule"] == "gate-declaration-outside"]
    assert [(f["path"], f["line"]) for f in gates] == [("backends/cuda/runtime/cuda_kv_cache.h", 10)]
    # What was not read is said, at the first scope left out (the 65th namespace).
    unread = [(f["path"], f["line"], f["severity"]) for f in findings if f["rule"] == "cpp-read-limit"]
    first_namespace = original.count("\n") + DEPTH + 1
    assert unread == [("backends/cuda/runtime/cuda_kv_cache.h", first_namespace + MAX_SCOPE_DEPTH, "major")]
