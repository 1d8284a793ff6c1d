"""CMake evaluation under its budgets: a file from a pull request cannot make the model hang or
grow without bound, and a budget that runs out is a problem with a place, never silence.

Assertions are on the reported problems and on the values the model keeps, never on time.
"""

from __future__ import annotations

import time

import pytest

from bot.cmake.budgets import MAX_EXPANDED_CHARS, MAX_EXPANDED_ITEMS, MAX_LIST_ITEMS, MAX_VALUE_CHARS
from bot.cmake.commands.variables import integer_expression
from bot.cmake.interpreter import evaluate_cmake
from bot.cmake.profiles import DEFAULT_PROFILE
from bot.cmake.regexes import RegexGuard, RegexTimeout
from bot.cmake.syntax import ParseProblem
from bot.model import Severity
from bot.tree import memory_tree

TRUNCATED = f"a value longer than {MAX_VALUE_CHARS} characters was truncated"
STOPPED = f"expansions produced more than {MAX_EXPANDED_CHARS} characters; evaluation stopped"


def model_of(text: str):
    return evaluate_cmake(memory_tree({"CMakeLists.txt": text}), DEFAULT_PROFILE)


LIST_TRUNCATED = f"a list longer than {MAX_LIST_ITEMS} elements was truncated"
LIST_STOPPED = f"expansions produced more than {MAX_EXPANDED_ITEMS} list elements; evaluation stopped"


@pytest.mark.parametrize(
    ("doubling", "truncated", "stopped"),
    [
        ('set(x "${x}${x}")', TRUNCATED, STOPPED),
        ('string(APPEND x "${x}")', TRUNCATED, STOPPED),
        ('string(CONCAT x "${x}" "${x}")', TRUNCATED, STOPPED),
        # Unquoted, the value is split: its element count doubles long before its size matters.
        ("list(APPEND x ${x})", LIST_TRUNCATED, LIST_STOPPED),
    ],
)
def test_a_doubling_value_is_truncated_then_the_evaluation_stops_with_the_place(doubling, truncated, stopped):
    # Unbounded, 80 doublings of two characters would be 2**81 characters.
    model = model_of(f'set(x "a;b")\nforeach(i RANGE 80)\n  {doubling}\nendforeach()\nadd_custom_target(after)\n')
    assert set(model.limits) == {
        ParseProblem("CMakeLists.txt", 3, truncated),
        ParseProblem("CMakeLists.txt", 3, stopped),
    }
    assert set(model.limits) <= set(model.problems)
    assert "after" not in model.targets  # the evaluation stopped inside the loop


def test_many_references_in_one_argument_are_cut_before_they_are_joined():
    # 4 MiB expanded 64 times in one argument would be 256 MiB at once.
    references = "${big}" * 64
    model = model_of(
        'set(big "0123456789abcdef")\n'
        "foreach(i RANGE 17)\n"
        '  string(APPEND big "${big}")\n'
        "endforeach()\n"
        f'set(huge "{references}")\n'
        'string(LENGTH "${huge}" size)\n'
        "add_custom_target(size_${size})\n"
    )
    assert ParseProblem("CMakeLists.txt", 5, TRUNCATED) in model.limits
    assert f"size_{MAX_VALUE_CHARS}" in model.targets


def test_replace_with_a_long_replacement_is_cut_to_the_value_budget():
    model = model_of(
        'set(big "0123456789abcdef")\n'
        "foreach(i RANGE 15)\n"  # 16 * 2**16 = 1 MiB
        '  string(APPEND big "${big}")\n'
        "endforeach()\n"
        'string(REPLACE "a" "${big}" out "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")\n'
        'string(LENGTH "${out}" size)\n'
        "add_custom_target(size_${size})\n"
    )
    assert model.limits == (ParseProblem("CMakeLists.txt", 5, TRUNCATED),)
    (target,) = model.targets
    assert 3 * 2**20 <= int(target.removeprefix("size_")) <= MAX_VALUE_CHARS  # whole replacements that fit


def test_regex_replace_that_repeats_each_match_is_cut_to_the_value_budget():
    model = model_of(
        'set(big "0123456789abcdef")\n'
        "foreach(i RANGE 15)\n"
        '  string(APPEND big "${big}")\n'
        "endforeach()\n"
        'string(REGEX REPLACE "(.)" "\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1\\\\1" out "${big}")\n'
    )
    assert model.limits == (ParseProblem("CMakeLists.txt", 5, TRUNCATED),)


def test_nested_quantifier_regex_matches_without_backtracking_and_without_a_problem():
    # `(a+)+$` against a's ending in b is exponential for a backtracking matcher (Python's `re`
    # and CMake's own); the `regex` package decides it at once.
    subject = "a" * 40 + "b"
    model = model_of(
        f'string(REGEX MATCH "(a+)+$" tail "{subject}")\n'
        f'string(REGEX MATCH "(a+)+b$" whole "{subject}")\n'
        'if("${tail}" STREQUAL "" AND "${whole}" STREQUAL "' + subject + '")\n'
        "  add_custom_target(decided)\n"
        "endif()\n"
    )
    assert model.problems == ()
    assert "decided" in model.targets


def test_a_regex_that_backtracks_for_ever_is_stopped_and_reported_where_it_is():
    subject = "a" * 40 + "b"
    model = model_of(
        f'string(REGEX MATCH "(a|a)*$" out "{subject}")\n'
        f'if("{subject}" MATCHES "(a|aa)+$")\n'
        "  add_custom_target(matched)\n"
        "endif()\n"
        "add_custom_target(after)\n"
    )
    assert [(p.path, p.line) for p in model.limits] == [("CMakeLists.txt", 1), ("CMakeLists.txt", 2)]
    assert all("ran past" in p.message or "spent" in p.message for p in model.limits)
    assert "(a|a)*$" in model.limits[0].message and "(a|aa)+$" in model.limits[1].message
    assert set(model.targets) == {"after"}  # the condition counts as false; evaluation goes on


def test_a_spent_regex_budget_refuses_at_once():
    with pytest.raises(RegexTimeout):
        RegexGuard(seconds=0.0).search("a", "a")


def test_glob_with_many_stars_matches_like_fnmatch():
    tree = {
        "CMakeLists.txt": (
            'file(GLOB found "${CMAKE_CURRENT_SOURCE_DIR}/src/*a*a*a*a*a*a*a*a*a*a*a*a*b")\n'
            'file(GLOB cpp RELATIVE "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}/src/*.c*")\n'
            "add_library(found SHARED ${found} ${cpp})\n"
        ),
        "src/" + "a" * 60 + "c": "",
        "src/aaaaaaaaaaaab": "",
        "src/x.cpp": "",
        "src/y.cu": "",
    }
    model = evaluate_cmake(memory_tree(tree), DEFAULT_PROFILE)
    assert sorted(s.path_repo_relative for s in model.targets["found"].sources) == [
        "src/aaaaaaaaaaaab",
        "src/x.cpp",
        "src/y.cu",
    ]
    assert model.problems == ()


def test_math_wraps_to_64_bits_instead_of_building_huge_integers():
    assert integer_expression("1 << 100000000") == 1 << (100000000 % 64)
    assert integer_expression("9223372036854775807 + 1") == -9223372036854775808
    assert integer_expression("-" * 100_000 + "1") in (None, 1)  # too deep for the parser, or right
    assert integer_expression("(1 + 2) * 3") == 9


# ---------------------------------------------------------------------------------------
# End to end: a budget that runs out keeps the review red.

BUSY_LOOP = (
    "foreach(busy RANGE 9999)\n" + "".join(f"  set(busy_{n} ${{busy}})\n" for n in range(45)) + "endforeach()\n"
)  # 47 lines, 450,000 commands: more than the step budget allows


def test_a_busy_loop_ahead_of_a_major_finding_still_fails_the_review(tmp_path):
    from fixtures.cases import build_case_repository, git
    from pr_check.review import review_repository

    assert BUSY_LOOP.count("\n") == 47
    repo, base, _head = build_case_repository("whole-archive-public-scope", tmp_path)
    path = repo / "backends/cuda/CMakeLists.txt"
    path.write_text(BUSY_LOOP + path.read_text())
    git(repo, "commit", "-q", "-am", "a busy loop ahead of the whole-archive change")
    head = git(repo, "rev-parse", "HEAD")

    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")

    limits = [f for f in report.findings if f.rule == "cmake-eval-limit"]
    assert [(f.path, f.severity) for f in limits] == [("backends/cuda/CMakeLists.txt", Severity.MAJOR)]
    assert 2 <= limits[0].line <= 46  # a command inside the loop's body
    assert "evaluation stopped after 400000 commands" in limits[0].message
    assert any(f.severity >= report.fail_level for f in report.findings)  # exit 1, not 0


def test_waiting_for_a_core_spends_no_regex_time():
    """The budget is the matching thread's CPU time: on a loaded machine a thread that waits for a
    core (here: sleeps) must not run out of it, or one tree gives different models at different loads."""
    guard = RegexGuard(seconds=0.5)
    for _ in range(4):  # 1.2 s of wall time against a 0.5 s budget
        assert guard._timed(lambda timeout: time.sleep(0.3) or "matched") == "matched"
    assert guard.seconds_left > 0.4


def test_a_match_stopped_while_waiting_is_tried_again_and_one_spinning_is_not():
    """regex's timeout is wall time: one that fires with little CPU spent is a wait, retried with
    more time; one that fires after the CPU bound is spent is a runaway pattern, reported."""
    guard = RegexGuard(seconds=2.0)
    walls: list[float] = []

    def waits_once(timeout: float) -> str:
        walls.append(timeout)
        if len(walls) == 1:
            time.sleep(0.05)
            raise TimeoutError
        return "matched"

    assert guard._timed(waits_once) == "matched"
    assert walls[1] > walls[0]  # the second try had more wall time

    def spins(timeout: float) -> str:
        deadline = time.thread_time() + timeout
        while time.thread_time() < deadline:
            pass
        raise TimeoutError

    with pytest.raises(RegexTimeout):
        guard._timed(spins)
