"""The commit `/pr-check fix` pushes: which files change and which findings it fixes (pure)."""

from __future__ import annotations

from bot.fix_commit import fix_commit_message, plan_fix_commit
from bot.model import Finding, Fix, Severity

HEAD_FILES = {"BUCK": "a\nb\nc\n", "x.bzl": "one\ntwo\n", "gone.txt": None}


def finding(rule: str, path: str, line: int, fix: Fix | None) -> Finding:
    return Finding(
        rule,
        Severity.MAJOR,
        f"{rule} title",
        path,
        line,
        line,
        "why",
        f"fp-{rule}-{line}",
        target=f"//:{rule}",
        fix=fix,
    )


def test_fixes_are_applied_once_per_file_and_the_rest_is_explained():
    findings = [
        finding("r1", "BUCK", 1, Fix("BUCK", 1, 1, "A", "", "a")),
        finding("r2", "BUCK", 3, Fix("BUCK", 3, 3, "C", "", "c")),
        finding("r3", "BUCK", 3, Fix("BUCK", 2, 3, "BC", "", "b\nc")),  # overlaps r2's lines, starts first
        finding("r4", "x.bzl", 2, Fix("x.bzl", 2, 2, "TWO", "", "deux")),  # stale: the file says "two"
        finding("r5", "gone.txt", 1, Fix("gone.txt", 1, 1, "x", "", "y")),
        finding("r6", "BUCK", 2, None),
    ]
    plan = plan_fix_commit(findings, HEAD_FILES.get)
    assert plan.files == (("BUCK", "A\nBC\n"),)
    assert [f.rule for f in plan.fixed] == ["r1", "r3"]
    assert [(f.rule, why.split(":")[0]) for f, why in plan.left] == [
        ("r2", "its lines overlap another fix; a new review recomputes it"),
        ("r5", "`gone.txt` is not a text file of the head"),
        ("r4", "the lines it replaces are no longer in the file"),
    ]
    assert fix_commit_message(plan, 9, "f" * 40, "maria") == (
        "pr-check: fix 2 findings of #9\n\n"
        "- r1 at BUCK:1 on //:r1: r1 title\n"
        "- r3 at BUCK:3 on //:r3: r3 title\n\n"
        "Not applied:\n"
        "- r2 at BUCK:3 on //:r2: its lines overlap another fix; a new review recomputes it\n"
        "- r5 at gone.txt:1 on //:r5: `gone.txt` is not a text file of the head\n"
        "- r4 at x.bzl:2 on //:r4: the lines it replaces are no longer in the file\n\n"
        "Fixes computed by pr-check on ffffffffffff, pushed at the request of @maria."
    )


def test_nothing_to_fix_changes_no_file():
    plan = plan_fix_commit([finding("r6", "BUCK", 2, None)], HEAD_FILES.get)
    assert (plan.files, plan.fixed, plan.left) == ((), (), ())


def test_a_fix_that_would_leave_a_build_file_unparsable_is_not_applied():
    # A fix is made from spans of a file that parses; a result that does not parse is the fix's bug.
    text = 'cxx_library(\n    name = "a",\n)\n'
    good = finding(
        "ok",
        "pkg/BUCK",
        2,
        Fix("pkg/BUCK", 2, 2, '    name = "a",\n    visibility = ["PUBLIC"],', "", '    name = "a",'),
    )
    breaking = finding("bad", "other/BUCK", 3, Fix("other/BUCK", 3, 3, "]", "", ")"))
    plan = plan_fix_commit([good, breaking], {"pkg/BUCK": text, "other/BUCK": text}.get)
    assert plan.files == (("pkg/BUCK", 'cxx_library(\n    name = "a",\n    visibility = ["PUBLIC"],\n)\n'),)
    assert [f.rule for f in plan.fixed] == ["ok"]
    assert [(f.rule, why.split(" (")[0]) for f, why in plan.left] == [("bad", "with it the file would not parse")]


def test_a_fix_that_would_leave_a_cmake_file_unparsable_is_not_applied():
    text = "add_library(a a.cpp)\ntarget_link_libraries(a PRIVATE b)\n"
    breaking = finding(
        "bad",
        "CMakeLists.txt",
        2,
        Fix("CMakeLists.txt", 2, 2, "target_link_libraries(a PUBLIC b", "", "target_link_libraries(a PRIVATE b)"),
    )
    plan = plan_fix_commit([breaking], {"CMakeLists.txt": text}.get)
    assert plan.files == () and plan.fixed == ()
    assert [why.split(" (")[0] for _, why in plan.left] == ["with it the file would not parse"]


def test_withhold_keeps_only_files_a_verdict_clears_for_exactly_their_contents():
    # `/pr-check fix` pushes a planned file only where the review child judged those very contents
    # and found no platform loss (webhooks/fix_judgment.py); anything else is named, not pushed.
    from bot.tree import blob_id_of
    from pr_check.fix_platforms import FileVerdict, PlatformLoss
    from webhooks.fix_judgment import UNJUDGED, withhold

    files = {"a/BUCK": "a\n", "b/BUCK": "b\n", "c/BUCK": "c\n", "d/BUCK": "d\n"}
    findings = [
        finding(f"r-{path[0]}", path, 1, Fix(path, 1, 1, text.strip().upper(), "", text.strip()))
        for path, text in files.items()
    ]
    plan = plan_fix_commit(findings, files.get)
    loss = PlatformLoss("xplat", "android-arm64", "//a:jni", "//a:a")
    verdicts = [
        FileVerdict("a/BUCK", blob_id_of(b"A\n"), (loss,)),
        FileVerdict("b/BUCK", blob_id_of(b"B\n"), ()),
        FileVerdict("c/BUCK", blob_id_of(b"something else\n"), ()),  # judged other contents
    ]  # d/BUCK: no verdict at all
    kept = withhold(plan, verdicts)
    assert kept.files == (("b/BUCK", "B\n"),)
    assert [f.rule for f in kept.fixed] == ["r-b"]
    assert [(f.rule, why) for f, why in kept.left] == [
        ("r-a", verdicts[0].reason),
        ("r-c", UNJUDGED),
        ("r-d", UNJUDGED),
    ]
    assert verdicts[0].reason.startswith("applying it takes `//a:jni` (xplat) off `android-arm64`, through `//a:a`")
