"""The toolchain layer on the host's real compiler: confined runs, diagnostics read back as values.

Each expectation is written from what GCC and GNU ld print for a file written here; nothing is
captured from pr-check's own output.
"""

from __future__ import annotations

import time

import pytest

from bot.facts.compiled import Status, compile_files
from bot.toolchain.diagnostics import first_error, link_problems
from bot.toolchain.runner import Limits, discover, run_confined

TOOLCHAIN = discover()
pytestmark = pytest.mark.skipif(TOOLCHAIN is None, reason="no C++ compiler on this machine")
FLAGS = ("-std=c++17", "-fsyntax-only")


def _compile(files: dict[str, str], unit: str, limits: Limits | None = None):
    assert TOOLCHAIN is not None
    encoded = tuple((path, text.encode()) for path, text in files.items())
    return compile_files(TOOLCHAIN, encoded, FLAGS, unit, limits or Limits())


def test_the_first_error_is_the_compilers_with_its_file_and_line():
    outcome = _compile(
        {"src/a.cpp": '#include "a.h"\nint f() { return g(); }\nint h() { return k(); }\n', "src/a.h": "int x;\n"},
        "src/a.cpp",
    )
    assert outcome.status is Status.ERROR
    assert outcome.error is not None
    assert (outcome.error.path, outcome.error.line) == ("src/a.cpp", 2)
    assert "'g' was not declared in this scope" in outcome.error.text
    assert outcome.error.missing_include is None


def test_a_missing_header_is_named_as_such():
    outcome = _compile({"src/a.cpp": "#include <flatbuffers/flatbuffers.h>\n"}, "src/a.cpp")
    assert outcome.error is not None and outcome.error.missing_include == "flatbuffers/flatbuffers.h"


def test_a_clean_file_compiles_clean():
    outcome = _compile(
        {"src/a.cpp": "#include <vector>\nint f() { return std::vector<int>(3).size(); }\n"}, "src/a.cpp"
    )
    assert (outcome.status, outcome.error) == (Status.CLEAN, None)


def test_a_template_bomb_costs_a_bounded_reported_timeout():
    bomb = (
        "constexpr long spin() {\n  long total = 0;\n  for (long i = 0; i < 200000; ++i)\n"
        "    for (long j = 0; j < 200000; ++j)\n      total += i ^ j;\n  return total;\n}\n"
        'static_assert(spin() != 1, "never decided in time");\n'
    )
    started = time.perf_counter()
    outcome = _compile({"src/bomb.cpp": bomb}, "src/bomb.cpp", Limits(cpu_seconds=2, wall_seconds=6.0))
    assert outcome.status is Status.TIMEOUT
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize(
    "include",
    ["/etc/passwd", "../../../etc/passwd", "../outside.h", "<../../usr/include/stdio.h>"],
)
def test_absolute_and_escaping_includes_are_refused_unread(include):
    written = include if include.startswith("<") else f'"{include}"'
    outcome = _compile({"src/a.cpp": f"#include {written}\n"}, "src/a.cpp")
    assert outcome.status is Status.REFUSED
    assert include.strip("<>") in outcome.excerpt


def test_a_relative_include_the_private_tree_answers_is_compiled():
    outcome = _compile(
        {"src/a/a.cpp": '#include "../b.h"\nint f() { return B; }\n', "src/b.h": "#define B 1\n"}, "src/a/a.cpp"
    )
    assert outcome.status is Status.CLEAN


def test_compiles_run_without_a_network_where_the_kernel_allows():
    assert TOOLCHAIN is not None
    # The probe `discover` ran: `unshare -n` works for this user here, or the reason is said.
    assert TOOLCHAIN.isolation == "unshare -n" or TOOLCHAIN.isolation.startswith("network not isolated")
    if TOOLCHAIN.isolation == "unshare -n":
        # Inside, the only interface is a loopback that is down: no route anywhere.
        result = run_confined(TOOLCHAIN, ("cat", "/proc/net/route"), __import__("pathlib").Path("/"), Limits())
        assert result.returncode == 0
        assert result.output.strip().splitlines()[1:] == []


def test_the_linker_words_for_undefined_and_duplicate_symbols(tmp_path):
    assert TOOLCHAIN is not None
    (tmp_path / "a.cpp").write_text("int g();\nint f() { return g(); }\n")
    (tmp_path / "b.cpp").write_text("int f() { return 1; }\n")
    for name in ("a", "b"):
        made = run_confined(TOOLCHAIN, (TOOLCHAIN.cxx, "-c", "-fPIC", f"{name}.cpp"), tmp_path, Limits())
        assert made.returncode == 0, made.output
    linked = run_confined(TOOLCHAIN, (TOOLCHAIN.cxx, "-shared", "-Wl,-z,defs", "a.o", "b.o"), tmp_path, Limits())
    problems = {(p.kind, p.symbol, p.object) for p in link_problems(linked.output)}
    assert problems == {("duplicate", "f()", "b.o"), ("undefined", "g()", "a.o")}


def test_reading_diagnostics_skips_warnings_and_notes():
    output = (
        "x.cpp:1:5: warning: unused variable 'v' [-Wunused-variable]\n"
        "x.cpp:3:1: note: declared here\n"
        "y.h:7:12: error: expected ';' before '}' token\n"
        "x.cpp:9:1: error: later\n"
    )
    error = first_error(output)
    assert error is not None and (error.path, error.line, error.text) == ("y.h", 7, "expected ';' before '}' token")


def test_a_header_name_that_would_be_written_outside_the_private_tree_is_refused(tmp_path):
    # A Buck header map key is the PR's text: `{"../../../x.h": "x.h"}` must not write anywhere.
    outcome = _compile({"src/a.cpp": "int a;\n", "include/../../../escaped.h": "int x;\n"}, "src/a.cpp")
    assert outcome.status is Status.REFUSED
    assert "escaped.h" in outcome.excerpt
