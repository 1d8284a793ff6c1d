"""C++ span edits (bot/cpp/edits.py): gating a declaration by moving the `#if` above it.
Expectations written by hand."""

from __future__ import annotations

from bot.cpp.edits import gate_declaration


def test_the_if_moves_above_the_declaration():
    text = (
        "#pragma once\n"
        "namespace cuda {\n"
        "int attach(int slot);\n"
        "#if defined(LLM)\n"
        "class Cache {};\n"
        "#endif\n"
        "}  // namespace cuda\n"
    )
    assert gate_declaration("a.h", text, 3, 4) == (
        "#pragma once\n"
        "namespace cuda {\n"
        "#if defined(LLM)\n"
        "int attach(int slot);\n"
        "class Cache {};\n"
        "#endif\n"
        "}  // namespace cuda\n"
    )


def test_the_doc_comment_goes_inside_and_blank_lines_stay_where_they_separate():
    text = (
        "namespace cuda {\n"
        "\n"
        "// Attaches the cache.\n"
        "/* Returns the slot. */\n"
        "int attach(int slot);\n"
        "\n"
        "#ifdef LLM\n"
        "\n"
        "class Cache {};\n"
        "#endif\n"
        "}\n"
    )
    assert gate_declaration("a.h", text, 5, 7) == (
        "namespace cuda {\n"
        "\n"
        "#ifdef LLM\n"
        "// Attaches the cache.\n"
        "/* Returns the slot. */\n"
        "int attach(int slot);\n"
        "\n"
        "class Cache {};\n"
        "#endif\n"
        "}\n"
    )


def test_a_comment_separated_by_a_blank_line_is_not_the_declarations():
    text = "// File comment.\n\nint attach(int slot);\n#if LLM\nint other();\n#endif\n"
    assert (
        gate_declaration("a.h", text, 3, 4)
        == "// File comment.\n\n#if LLM\nint attach(int slot);\nint other();\n#endif\n"
    )


def test_template_and_attribute_lines_belong_to_the_declaration():
    text = (
        "template <typename T>\n"
        "[[nodiscard]]\n"
        "T* slot_as(int slot);\n"
        "#if defined(LLM) && \\\n"
        "    defined(CUDA)\n"
        "int other();\n"
        "#endif\n"
    )
    assert gate_declaration("a.h", text, 3, 4) == (
        "#if defined(LLM) && \\\n"
        "    defined(CUDA)\n"
        "template <typename T>\n"
        "[[nodiscard]]\n"
        "T* slot_as(int slot);\n"
        "int other();\n"
        "#endif\n"
    )


def test_inside_extern_c_braces():
    text = 'extern "C" {\n// doc\nint c_attach(int);\n#ifdef LLM\nint c_other(int);\n#endif\n}\n'
    assert (
        gate_declaration("a.h", text, 3, 4)
        == 'extern "C" {\n#ifdef LLM\n// doc\nint c_attach(int);\nint c_other(int);\n#endif\n}\n'
    )


def test_refused_across_another_directive():
    text = "int attach(int);\n#include <x.h>\n#if LLM\nint other();\n#endif\n"
    assert gate_declaration("a.h", text, 1, 3) is None


def test_refused_when_the_if_is_outside_the_declarations_namespace():
    text = "namespace cuda {\nint attach(int);\n}\n#if LLM\nint other();\n#endif\n"
    assert gate_declaration("a.h", text, 2, 4) is None


def test_refused_when_the_line_opens_no_block_or_the_declaration_is_below():
    text = "#if LLM\nint other();\n#endif\nint attach(int);\n"
    assert gate_declaration("a.h", text, 4, 1) is None
    assert gate_declaration("a.h", text, 2, 3) is None
