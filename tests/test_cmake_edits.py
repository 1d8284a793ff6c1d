"""CMake span edits (bot/cmake/edits.py) and the whole-archive run finder, with expectations
written by hand as a maintainer would lay the file out."""

from __future__ import annotations

import pytest

from bot.cmake import edits
from bot.cmake.whole_archive import whole_archive_run


def move(text: str, line: int, values: list[str], scope: str) -> str | None:
    """Move the items of the call on `line` whose values are `values` to `scope`."""
    invocation = edits.invocation_at(text, line)
    assert invocation is not None
    items = [a for a in invocation.arguments[1:] if a.value in values and not a.is_scope]
    assert [a.value for a in items] == values
    return edits.set_scope(text, invocation, items, scope)


def test_arguments_carry_their_text_value_and_span():
    text = 'set(A 1)\ntarget_compile_definitions(t PRIVATE "X=a b" -DY="c d" ${Z})\n'
    invocation = edits.invocation_at(text, 2)
    assert invocation.name == "target_compile_definitions"
    assert [(a.text, a.value, a.line) for a in invocation.arguments] == [
        ("t", "t", 2),
        ("PRIVATE", "PRIVATE", 2),
        ('"X=a b"', "X=a b", 2),
        ('-DY="c d"', '-DY="c d"', 2),
        ("${Z}", "${Z}", 2),
    ]
    data = text.encode()
    assert all(data[a.start : a.end].decode() == a.text for a in invocation.arguments)


def test_invocation_at_finds_the_call_spanning_a_line_and_filters_by_name():
    text = "if(A)\n  target_link_libraries(\n    t\n    PUBLIC x\n  )\nendif()\n"
    assert edits.invocation_at(text, 4).line == 2
    assert edits.invocation_at(text, 4, ("target_compile_definitions",)) is None
    assert edits.invocation_at(text, 1) is None  # if() is no normal command


def test_scope_groups_split_at_keywords():
    invocation = edits.invocation_at("target_link_libraries(t a PUBLIC b c LINK_PRIVATE d)\n", 1)
    groups = [(g.scope, [i.value for i in g.items]) for g in edits.scope_groups(invocation)]
    assert groups == [(None, ["a"]), ("PUBLIC", ["b", "c"]), ("PRIVATE", ["d"])]


def test_the_whole_group_changes_its_keyword():
    text = "target_compile_definitions(t PRIVATE A)\n"
    assert move(text, 1, ["A"], "PUBLIC") == "target_compile_definitions(t PUBLIC A)\n"


def test_a_scope_already_right_changes_nothing():
    text = "target_compile_definitions(t PUBLIC A)\n"
    assert move(text, 1, ["A"], "PUBLIC") == text


def test_one_line_call_is_split_in_place():
    text = "target_compile_definitions(t PRIVATE A B C)\n"
    assert move(text, 1, ["B"], "PUBLIC") == "target_compile_definitions(t PRIVATE A PUBLIC B PRIVATE C)\n"
    assert move(text, 1, ["A"], "PUBLIC") == "target_compile_definitions(t PUBLIC A PRIVATE B C)\n"
    assert move(text, 1, ["C"], "PUBLIC") == "target_compile_definitions(t PRIVATE A B PUBLIC C)\n"


def test_continuation_lines_follow_the_new_keyword_width():
    text = (
        "target_link_libraries(\n"
        "  shims\n"
        "  PUBLIC -Wl,--whole-archive slim  # one copy per process\n"
        "         -Wl,--no-whole-archive\n"
        ")\n"
    )
    assert move(text, 3, ["-Wl,--whole-archive", "slim", "-Wl,--no-whole-archive"], "PRIVATE") == (
        "target_link_libraries(\n"
        "  shims\n"
        "  PRIVATE -Wl,--whole-archive slim  # one copy per process\n"
        "          -Wl,--no-whole-archive\n"
        ")\n"
    )


def test_a_run_inside_an_aligned_group_gets_lines_of_its_own():
    text = (
        "target_link_libraries(\n"
        "  shims\n"
        "  PUBLIC platform -Wl,--whole-archive slim\n"
        "         -Wl,--no-whole-archive ${RUNTIME} extension_cuda\n"
        "         dl\n"
        ")\n"
    )
    assert move(text, 3, ["-Wl,--whole-archive", "slim", "-Wl,--no-whole-archive"], "PRIVATE") == (
        "target_link_libraries(\n"
        "  shims\n"
        "  PUBLIC platform\n"
        "  PRIVATE -Wl,--whole-archive slim\n"
        "          -Wl,--no-whole-archive\n"
        "  PUBLIC ${RUNTIME} extension_cuda\n"
        "         dl\n"
        ")\n"
    )


def test_keywords_on_lines_of_their_own_stay_so():
    text = "target_link_libraries(\n  shims\n  PUBLIC\n    platform\n    slim\n    dl\n)\n"
    assert move(text, 5, ["slim"], "PRIVATE") == (
        "target_link_libraries(\n  shims\n  PUBLIC\n    platform\n  PRIVATE\n    slim\n  PUBLIC\n    dl\n)\n"
    )


def test_keyword_after_the_target_aligns_the_new_keywords_under_it():
    text = (
        "  target_link_libraries(\n"
        "    shims PRIVATE platform ${RUNTIME}\n"
        "                  extension_cuda ${CMAKE_DL_LIBS}\n"
        "  )\n"
    )
    assert move(text, 3, ["extension_cuda"], "PUBLIC") == (
        "  target_link_libraries(\n"
        "    shims PRIVATE platform ${RUNTIME}\n"
        "          PUBLIC extension_cuda\n"
        "          PRIVATE ${CMAKE_DL_LIBS}\n"
        "  )\n"
    )


def test_a_run_next_to_a_group_of_its_new_scope_joins_it():
    # The shape ExecuTorch had before "Ship the CUDA delegate in the wheel" made the pair PRIVATE.
    text = (
        "  target_link_libraries(\n"
        "    aoti_cuda_shims\n"
        "    PRIVATE cuda_platform\n"
        "    PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n"
        "           ${_cuda_shim_libraries} extension_cuda ${CMAKE_DL_LIBS}\n"
        "  )\n"
    )
    assert move(text, 4, ["-Wl,--whole-archive", "aoti_common_shims_slim", "-Wl,--no-whole-archive"], "PRIVATE") == (
        "  target_link_libraries(\n"
        "    aoti_cuda_shims\n"
        "    PRIVATE cuda_platform\n"
        "            -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n"
        "    PUBLIC ${_cuda_shim_libraries} extension_cuda ${CMAKE_DL_LIBS}\n"
        "  )\n"
    )


def test_joining_the_next_group_takes_its_keyword_forward():
    text = "target_link_libraries(\n  t\n  PUBLIC a\n         b\n  PRIVATE c\n          d\n)\n"
    assert (
        move(text, 4, ["b"], "PRIVATE")
        == "target_link_libraries(\n  t\n  PUBLIC a\n  PRIVATE b\n          c\n          d\n)\n"
    )
    one_line = "target_compile_definitions(t PRIVATE A B PUBLIC C)\n"
    assert move(one_line, 1, ["B"], "PUBLIC") == "target_compile_definitions(t PRIVATE A PUBLIC B C)\n"
    assert move("target_compile_definitions(t PRIVATE A PUBLIC B C)\n", 1, ["B"], "PRIVATE") == (
        "target_compile_definitions(t PRIVATE A B PUBLIC C)\n"
    )


def test_joining_with_keywords_on_lines_of_their_own_drops_the_keyword_line():
    text = "target_link_libraries(\n  t\n  PUBLIC\n    a\n  PRIVATE\n    b\n    c\n)\n"
    assert move(text, 6, ["b", "c"], "PUBLIC") == "target_link_libraries(\n  t\n  PUBLIC\n    a\n    b\n    c\n)\n"


def test_legacy_keywords_stay_legacy():
    text = "target_link_libraries(t LINK_PUBLIC a b)\n"
    assert move(text, 1, ["b"], "PRIVATE") == "target_link_libraries(t LINK_PUBLIC a LINK_PRIVATE b)\n"


def test_offsets_are_bytes_so_text_before_may_be_any_utf8():
    text = "# Ünïcode — comment\ntarget_compile_definitions(t PRIVATE A)  # déjà\n"
    assert move(text, 2, ["A"], "PUBLIC") == "# Ünïcode — comment\ntarget_compile_definitions(t PUBLIC A)  # déjà\n"


def test_items_that_are_no_run_of_one_keyword_group_are_refused():
    text = "target_link_libraries(t PUBLIC a b c)\n"
    invocation = edits.invocation_at(text, 1)
    a, _b, c = invocation.arguments[2:]
    assert edits.set_scope(text, invocation, (a, c), "PRIVATE") is None
    plain = "target_link_libraries(t a b)\n"
    plain_call = edits.invocation_at(plain, 1)
    assert edits.set_scope(plain, plain_call, plain_call.arguments[1:2], "PRIVATE") is None
    with pytest.raises(ValueError):
        edits.set_scope(text, invocation, (a,), "SHARED")


@pytest.mark.parametrize(
    "items, library, expected",
    [
        (["platform", "-Wl,--whole-archive", "slim", "-Wl,--no-whole-archive", "dl"], "slim", (1, 4)),
        (["-Wl,--whole-archive", "a", "slim", "-Wl,--no-whole-archive"], "slim", (0, 4)),
        (["x", "$<LINK_LIBRARY:WHOLE_ARCHIVE,slim>", "y"], "slim", (1, 2)),
        (
            ["-Wl,--push-state", "-Wl,--whole-archive", "slim", "-Wl,--no-whole-archive", "-Wl,--pop-state"],
            "slim",
            (0, 5),
        ),
        (["-Wl,--push-state,--whole-archive", "slim", "-Wl,--pop-state"], "slim", (0, 3)),
        (["-Wl,--whole-archive,slim,--no-whole-archive", "dl"], "slim", (0, 1)),
        (["-Wl,-force_load", "slim"], "slim", (0, 2)),
        (["-Wl,--whole-archive", "$<TARGET_FILE:slim>", "-Wl,--no-whole-archive"], "slim", (0, 3)),
        (["-Wl,--whole-archive", "slim"], "slim", None),  # the pair closes in another group
        (["slim"], "slim", None),
        (["-Wl,--whole-archive", "other", "-Wl,--no-whole-archive", "slim"], "slim", None),
    ],
)
def test_whole_archive_run(items, library, expected):
    assert whole_archive_run(items, library) == expected
