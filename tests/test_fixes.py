"""bot/fixes.py: fixes made from before/after texts, applied alone and together (hand-written cases)."""

from __future__ import annotations

import pytest

from bot.fixes import StaleFix, apply_fix, apply_fixes, fix_between
from bot.model import Fix


def test_equal_texts_make_no_fix():
    assert fix_between("f", "a\nb\n", "a\nb\n", "nothing") is None


def test_an_insertion_at_the_top_anchors_on_the_first_line():
    fix = fix_between("f", "a\nb\n", "x\na\nb\n", "add x")
    assert fix == Fix("f", 1, 1, "x\na", "add x", "a", above="", below="b")
    assert apply_fix("a\nb\n", fix) == "x\na\nb\n"


def test_an_insertion_at_the_end_of_a_file_without_a_final_newline_keeps_it_without():
    fix = fix_between("f", "a\nb", "a\nb\nc", "add c")
    assert fix == Fix("f", 2, 2, "b\nc", "add c", "b", above="a", below="")
    assert apply_fix("a\nb", fix) == "a\nb\nc"


def test_an_insertion_after_the_last_line_stays_inside_the_file():
    fix = fix_between("f", "a\n", "a\nb\n", "add b")
    assert fix == Fix("f", 1, 1, "a\nb", "add b", "a")
    assert apply_fix("a\n", fix) == "a\nb\n"


def test_a_deletion_keeps_the_line_above_as_its_anchor():
    fix = fix_between("f", "a\nb\nc\n", "a\nc\n", "drop b")
    assert fix == Fix("f", 1, 2, "a", "drop b", "a\nb", above="", below="c")
    assert apply_fix("a\nb\nc\n", fix) == "a\nc\n"


def test_a_changed_line_is_replaced_alone():
    fix = fix_between("f", "a\nb\nc\n", "a\nB\nc\n", "upper b")
    assert fix == Fix("f", 2, 2, "B", "upper b", "b", above="a", below="c")


def test_fixes_apply_bottom_up_so_an_insertion_above_does_not_shift_the_one_below():
    text = "a\nb\nc\n"
    top = Fix("f", 1, 1, "a0\na", "", "a")
    bottom = Fix("f", 3, 3, "C", "", "c")
    result = apply_fixes(text, [top, bottom])
    assert result.text == "a0\na\nb\nC\n"
    assert set(result.applied) == {top, bottom} and result.overlapping == ()


def test_of_two_overlapping_fixes_the_first_is_applied_and_the_other_returned():
    first = Fix("f", 1, 2, "A\nB", "", "a\nb")
    second = Fix("f", 2, 3, "b2\nC", "", "b\nc")
    result = apply_fixes("a\nb\nc\n", [second, first])
    assert result.text == "A\nB\nc\n"
    assert result.applied == (first,) and result.overlapping == (second,)


def test_a_duplicate_fix_is_applied_once():
    fix = Fix("f", 1, 1, "a\nx", "", "a")
    result = apply_fixes("a\nb\n", [fix, fix])
    assert result.text == "a\nx\nb\n" and result.applied == (fix,) and result.overlapping == ()


def test_a_stale_fix_is_refused():
    fix = Fix("f", 2, 2, "B", "", "b")
    with pytest.raises(StaleFix):
        apply_fix("a\nz\nc\n", fix)


def test_a_fix_past_the_end_is_an_error_but_not_a_stale_one():
    with pytest.raises(ValueError) as raised:
        apply_fix("a\n", Fix("f", 3, 3, "x", "", "c"))
    assert not isinstance(raised.value, StaleFix)


def test_a_fix_without_its_original_lines_is_applied_where_it_says():
    assert apply_fix("a\nb\n", Fix("f", 2, 2, "B")) == "a\nB\n"
