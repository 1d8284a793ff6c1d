"""Syntax errors: the root error of each statement, once, where the interpreter puts it (issue 24, cause 6)."""

from __future__ import annotations

from bot.buck.syntax import parse_starlark


def _located(text: str) -> list[tuple[int, int]]:
    return [(p.line, p.column) for p in parse_starlark(text).errors]


def test_three_missing_commas_in_three_statements_are_three_errors():
    text = (
        "cxx_library(\n"
        '    name = "a"\n'
        '    srcs = ["a.cpp"],\n'  # 3:5, the comma after "a" is missing
        ")\n"
        "cxx_library(\n"
        '    name = "b",\n'
        '    srcs = ["b.cpp"]\n'
        '    deps = [":a"],\n'  # 8:5
        ")\n"
        "cxx_library(\n"
        '    name = "c",\n'
        "    deps = [\n"
        '        ":a"\n'
        '        ":b",\n'  # 14:9
        "    ],\n"
        ")\n"
        'cxx_library(name = "d", srcs = ["d.cpp"])\n'
    )
    assert _located(text) == [(3, 5), (8, 5), (14, 9)]


def test_three_missing_commas_on_one_line_keep_their_own_columns():
    text = 'f(name = "a" srcs = ["a.cpp"] deps = [":b"] visibility = [])\nf(name = "b")\n'
    assert _located(text) == [(1, 14), (1, 31), (1, 45)]


def test_a_stray_bracket_sets_its_statement_aside_and_nothing_after_it_is_flagged():
    text = 'cxx_library(\n    name = "a",\n    srcs = ["a.cpp"]],\n    deps = [":b"],\n)\ncxx_library(name = "b")\n'
    assert _located(text) == [(3, 21)]


def test_missing_commas_inside_a_macro_body():
    text = (
        "def define():\n"
        "    runtime.cxx_library(\n"
        '        name = "a"\n'
        '        srcs = ["a.cpp"],\n'  # 4:9
        "    )\n"
        "    runtime.cxx_library(\n"
        '        name = "b",\n'
        '        srcs = ["b.cpp"]\n'
        '        deps = [":a"],\n'  # 9:9
        "    )\n"
    )
    assert _located(text) == [(4, 9), (9, 9)]


def test_valid_text_has_no_error():
    assert _located('cxx_library(name = "a", srcs = ["a.cpp"], deps = [":b"])\n') == []
