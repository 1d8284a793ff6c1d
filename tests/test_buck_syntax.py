"""The Starlark syntax layer and its edits, against expectations written by hand."""

from __future__ import annotations

from bot.buck import edits
from bot.buck.syntax import SyntaxProblem, parse_starlark


def _deps(text: str, line: int = 1):
    return parse_starlark(text).call_at(line).keyword("deps").value_list


# -- parsing ------------------------------------------------------------------------------------


def test_calls_keywords_lists_and_comments_are_indexed():
    text = (
        'load("@fbcode_macros//build_defs:native_rules.bzl", "buck_genrule")\n'
        "\n"
        "# The runtime.\n"
        "runtime.cxx_library(\n"
        '    name = "core",\n'
        "    srcs = ['a.cpp', 'b.cpp'],  # both\n"
        "    **cuda_kwargs\n"
        ")\n"
    )
    syntax = parse_starlark(text)
    assert syntax.errors == ()
    call = syntax.call_at(4)
    assert call.callee == "runtime.cxx_library"
    assert (call.span.line, call.span.end_line) == (4, 8)
    assert [k.name for k in call.keywords] == ["name", "srcs"]
    assert call.splats == ("cuda_kwargs",)
    srcs = call.keyword("srcs")
    assert text[srcs.name_span.start : srcs.name_span.end] == "srcs"
    assert text[srcs.value_span.start : srcs.value_span.end] == "['a.cpp', 'b.cpp']"
    assert [(e.string, e.quote, e.span.column) for e in srcs.value_list.elements] == [
        ("a.cpp", "'", 13),
        ("b.cpp", "'", 22),
    ]
    assert [(c.span.line, c.text) for c in syntax.comments] == [(3, "# The runtime."), (6, "# both")]
    assert syntax.call_at(5) is None
    assert syntax.call_at(1).callee == "load"


def test_three_errors_in_one_file_are_all_located():
    text = (
        "cxx_library(\n"
        '    name = "a",\n'
        '    srcs = ["a.cpp"]]\n'  # 3:21: a stray bracket
        ")\n"
        'cxx_library(name = "b", deps = [":a" ":c"])\n'  # 5:38: two elements without a comma
        'cxx_library(name = "c", srcs = )\n'  # 6:30: a keyword without a value
        'cxx_library(name = "d")\n'
    )
    syntax = parse_starlark(text)
    assert [(p.line, p.column) for p in syntax.errors] == [(3, 21), (5, 38), (6, 30)]
    assert syntax.errors[0].message == 'unexpected symbol \']\' here, expected one of ")" or ","'
    assert syntax.errors[1].message == 'unexpected string literal `":c"`, expected `,`'
    assert syntax.errors[2].message == "`srcs =` has no value"
    # Recovery still indexes what follows the errors.
    assert syntax.call_at(7).keyword("name").value_span.line == 7


def test_python_that_starlark_rejects_is_an_error_where_the_interpreter_rejects_the_file():
    text = "x = 1\nwhile x:\n    pass\ncxx_library(name = 'a')\nclass A:\n    pass\n"
    syntax = parse_starlark(text)
    assert syntax.errors == (
        SyntaxProblem(2, 1, "cannot use reserved keyword `while`"),
        SyntaxProblem(5, 1, "cannot use reserved keyword `class`"),
    )
    assert syntax.recovered == ()  # valid Python: tree-sitter alone sees nothing


def test_the_interpreters_error_is_kept_when_tree_sitter_sees_none():
    syntax = parse_starlark("x = 1_000\n")
    assert [(p.line, p.column) for p in syntax.errors] == [(1, 6)]
    assert "_000" in syntax.errors[0].message


def test_a_file_the_interpreter_accepts_has_no_errors():
    assert parse_starlark("def f(x: int) -> int:\n    return x\nf(**{'x': 1})\n").errors == ()


def test_statements_know_their_depth():
    syntax = parse_starlark("def f():\n    a = 1\n    b = 2\nf()\n")
    assert [(s.span.line, s.kind, s.depth) for s in syntax.statements] == [
        (1, "function_definition", 0),
        (2, "expression_statement", 1),
        (3, "expression_statement", 1),
        (4, "expression_statement", 0),
    ]


# -- edits: list elements -----------------------------------------------------------------------


def test_sorted_multi_line_list_gets_the_element_in_order():
    text = 'cxx_library(\n    name = "a",\n    deps = [\n        ":b",\n        ":d",\n    ],\n)\n'
    assert edits.add_list_element(text, _deps(text), ":c") == (
        'cxx_library(\n    name = "a",\n    deps = [\n        ":b",\n        ":c",\n        ":d",\n    ],\n)\n'
    )


def test_sorted_by_label_order_puts_local_labels_first():
    text = 'cxx_library(name = "a", deps = [":z", "//b:b"])\n'
    assert (
        edits.add_list_element(text, _deps(text), "//a:a")
        == 'cxx_library(name = "a", deps = [":z", "//a:a", "//b:b"])\n'
    )


def test_unsorted_list_gets_the_element_at_the_end():
    text = 'cxx_library(\n    name = "a",\n    deps = [\n        ":d",\n        ":b",\n    ],\n)\n'
    assert edits.add_list_element(text, _deps(text), ":c") == (
        'cxx_library(\n    name = "a",\n    deps = [\n        ":d",\n        ":b",\n        ":c",\n    ],\n)\n'
    )


def test_multi_line_list_without_trailing_comma_stays_without():
    text = "cxx_library(\n    deps = [\n        ':d',\n        ':b'\n    ],\n)\n"
    assert edits.add_list_element(text, _deps(text, 1), ":c") == (
        "cxx_library(\n    deps = [\n        ':d',\n        ':b',\n        ':c'\n    ],\n)\n"
    )


def test_short_one_line_list_stays_one_line_with_the_lists_quotes():
    text = "cxx_library(name = 'a', deps = [':b'])\n"
    assert edits.add_list_element(text, _deps(text), ":c") == "cxx_library(name = 'a', deps = [':b', ':c'])\n"


def test_empty_list_takes_the_files_quotes():
    text = "cxx_library(name = 'a', deps = [])\n"
    assert edits.add_list_element(text, _deps(text), ":c") == "cxx_library(name = 'a', deps = [':c'])\n"


def test_long_one_line_list_becomes_one_element_a_line():
    text = '    cxx_library(name = "a", deps = ["//runtime/core/exec_aten:lib", "//runtime/core/portable_type:type"])\n'
    assert edits.add_list_element(text, _deps(text), "//runtime/platform:platform") == (
        '    cxx_library(name = "a", deps = [\n'
        '        "//runtime/core/exec_aten:lib",\n'
        '        "//runtime/core/portable_type:type",\n'
        '        "//runtime/platform:platform",\n'
        "    ])\n"
    )


def test_comments_in_the_list_are_kept():
    text = 'cxx_library(\n    deps = [\n        ":a",  # for the allocator\n        # the stream\n        ":c",\n    ],\n)\n'
    assert edits.add_list_element(text, _deps(text), ":b") == (
        'cxx_library(\n    deps = [\n        ":a",  # for the allocator\n        # the stream\n        ":b",\n        ":c",\n    ],\n)\n'
    )
    assert edits.add_list_element(text, _deps(text), ":d") == (
        'cxx_library(\n    deps = [\n        ":a",  # for the allocator\n        # the stream\n        ":c",\n        ":d",\n    ],\n)\n'
    )


# -- edits: keywords, values, statements --------------------------------------------------------


def test_insert_keyword_after_a_named_one_in_a_multi_line_call():
    text = 'cxx_library(\n    name = "a",\n    link_whole = True,  # keep the shims\n    srcs = ["a.cpp"],\n)\n'
    call = parse_starlark(text).call_at(1)
    assert edits.insert_keyword(text, call, "supports_python_dlopen", "True", after="link_whole") == (
        'cxx_library(\n    name = "a",\n    link_whole = True,  # keep the shims\n    supports_python_dlopen = True,\n    srcs = ["a.cpp"],\n)\n'
    )


def test_insert_keyword_after_a_last_argument_without_comma():
    text = 'cxx_library(\n    name="a",\n    srcs=["a.cpp"]\n)\n'
    call = parse_starlark(text).call_at(1)
    assert edits.insert_keyword(text, call, "deps", '[":b"]') == (
        'cxx_library(\n    name="a",\n    srcs=["a.cpp"],\n    deps=[":b"]\n)\n'
    )


def test_insert_keyword_in_a_one_line_call_and_before_splats():
    text = 'cxx_library(name = "a", **kwargs)\n'
    call = parse_starlark(text).call_at(1)
    assert (
        edits.insert_keyword(text, call, "link_whole", "True")
        == 'cxx_library(name = "a", link_whole = True, **kwargs)\n'
    )


def test_insert_keyword_first_then_rename_the_callee():
    text = 'runtime.cxx_library(\n    name = "a",\n)\n'
    call = parse_starlark(text).call_at(1)
    inserted = edits.insert_keyword(text, call, "_kind", "runtime.cxx_library", first=True)
    assert edits.replace_callee(inserted, call, "fbcode_target") == (
        'fbcode_target(\n    _kind = runtime.cxx_library,\n    name = "a",\n)\n'
    )


def test_replace_value_and_rename_keyword():
    text = 'cxx_library(name = "a", preprocessor_flags = ["-DX"])\n'
    flags = parse_starlark(text).call_at(1).keyword("preprocessor_flags")
    assert edits.rename_keyword(text, flags, "exported_preprocessor_flags") == (
        'cxx_library(name = "a", exported_preprocessor_flags = ["-DX"])\n'
    )
    assert edits.replace_value(text, flags, '["-DY"]') == 'cxx_library(name = "a", preprocessor_flags = ["-DY"])\n'


def test_move_statement_above_another_at_its_indentation():
    text = "def f():\n    a = 1\n    if a:\n        b = 2\n    c = 3\n"
    syntax = parse_starlark(text)
    assert edits.move_statement(text, syntax.statement_at(5), before=syntax.statement_at(3)) == (
        "def f():\n    a = 1\n    c = 3\n    if a:\n        b = 2\n"
    )
    assert edits.move_statement(text, syntax.statement_at(2), before=syntax.statement_at(4)) == (
        "def f():\n    if a:\n        a = 1\n        b = 2\n    c = 3\n"
    )


def test_insert_splat_goes_last_without_a_trailing_comma():
    text = 'cxx_library(\n    name = "a",\n    deps = [":b"],\n)\n'
    call = parse_starlark(text).call_at(1)
    assert (
        edits.insert_splat(text, call, "cuda_kwargs")
        == 'cxx_library(\n    name = "a",\n    deps = [":b"],\n    **cuda_kwargs\n)\n'
    )


def test_a_bracket_left_open_at_the_end_of_the_file_is_placed_at_the_bracket():
    # The interpreter points at 1:1 when it runs out of text; the opening bracket is the place.
    text = 'load(":targets.bzl", "define_common_targets")\ndefine_common_targets(\n'
    assert parse_starlark(text).errors == (SyntaxProblem(2, 22, "`(` is never closed, expected `)`"),)


def test_a_file_nested_too_deep_is_refused_not_reported_as_a_syntax_error():
    syntax = parse_starlark("deep = " + "[" * 5000 + "]" * 5000 + "\n")
    assert (syntax.errors, syntax.calls, syntax.refused) == ((), (), "brackets nested 5000 deep on line 1")


def test_insert_keyword_first_below_a_comment_on_the_parenthesis_line():
    text = 'cxx_library(  # the kernels\n    name = "a",\n)\n'
    call = parse_starlark(text).call_at(1)
    assert edits.insert_keyword(text, call, "_kind", "cxx_library", first=True) == (
        'cxx_library(  # the kernels\n    _kind = cxx_library,\n    name = "a",\n)\n'
    )
    one_line = 'cxx_library(name = "a")\n'
    call = parse_starlark(one_line).call_at(1)
    assert (
        edits.insert_keyword(one_line, call, "_kind", "cxx_library", first=True)
        == 'cxx_library(_kind = cxx_library, name = "a")\n'
    )


def test_remove_list_element_one_line_and_multi_line():
    text = 'cxx_library(name = "a", deps = [":a", ":b", ":c"])\n'
    assert edits.remove_list_element(text, _deps(text), 0) == 'cxx_library(name = "a", deps = [":b", ":c"])\n'
    assert edits.remove_list_element(text, _deps(text), 2) == 'cxx_library(name = "a", deps = [":a", ":b"])\n'
    multi = 'cxx_library(\n    deps = [\n        ":a",\n        ":b",  # why\n    ],\n)\n'
    assert edits.remove_list_element(multi, _deps(multi), 1) == 'cxx_library(\n    deps = [\n        ":a",\n    ],\n)\n'
    bare = 'cxx_library(\n    deps = [\n        ":a",\n        ":b"\n    ],\n)\n'
    assert edits.remove_list_element(bare, _deps(bare), 1) == 'cxx_library(\n    deps = [\n        ":a"\n    ],\n)\n'


def test_parse_error_reports_each_error_of_a_file_with_line_and_column():
    from bot import engine
    from checks import parse_error
    from tests.test_check_examples import _snapshot

    result = engine.run([parse_error.CHECK], _snapshot(parse_error.CHECK.bad[1]))
    assert [(f.line, f.message) for f in result.findings] == [
        (
            3,
            '`pkg/BUCK` does not parse (`//pkg` fails to load): line 3, column 21: unexpected symbol \']\' here, expected one of ")" or ","',
        ),
        (
            5,
            '`pkg/BUCK` does not parse (`//pkg` fails to load): line 5, column 38: unexpected string literal `":c"`, expected `,`',
        ),
        (6, "`pkg/BUCK` does not parse (`//pkg` fails to load): line 6, column 30: `srcs =` has no value"),
    ]
