"""Confirm before posting, through the engine: the rules that predict a compile failure ask g++.

Small trees written here, reviewed base against head with the real compiler. The expectations
follow from buck2's rule as the defect states it: a target sees the exported headers of its deps
and, through them, of their `exported_deps`; a private dep passes nothing on. Where that leaves an
include unresolved, the compiler's own line is `<file>:<line of the include>: fatal error: <name>:
No such file or directory`, in the configuration that compiles the file.
"""

from __future__ import annotations

import pytest

from bot import engine
from bot.diff import ChangeSet, FileChange
from bot.model import EvidenceRole, Severity
from bot.snapshot import BuildModel, Snapshot
from bot.store.memo import FactCache, reviewing
from bot.toolchain.runner import discover, runs_so_far
from bot.toolchain.switch import compiling
from bot.tree import memory_tree
from checks import BY_ID

pytestmark = pytest.mark.skipif(discover() is None, reason="no C++ compiler on this machine")

UNDECLARED = BY_ID["dep-undeclared-header"]
PRIVATE = BY_ID["dep-private-for-exported-header"]
HELPER = "executorch/util/helper.h"
MISSING = f"fatal error: {HELPER}: No such file or directory"

_UTIL = {
    "util/BUCK": 'cxx_library(name = "helper", exported_headers = ["helper.h"], visibility = ["PUBLIC"])\n',
    "util/helper.h": "#pragma once\nint helper();\n",
}


def _review(check, base: dict[str, str], head: dict[str, str], *, tier: bool = True):
    changed = sorted(p for p in set(base) | set(head) if base.get(p) != head.get(p))
    changes = []
    for path in changed:
        lines = frozenset(range(1, (head.get(path) or "").count("\n") + 2))
        status = "modified" if path in base and path in head else ("added" if path in head else "deleted")
        changes.append(FileChange(path, path, status, added=lines, removed=frozenset(), commentable=lines))
    snapshot = Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet(tuple(changes)))
    with reviewing(FactCache(None)), compiling(tier):
        return engine.run([check], snapshot).findings


# --- dep-undeclared-header: the target's own source -----------------------------------------------


def _app(source: str, deps: str = "", headers: str = "") -> dict[str, str]:
    return {
        **_UTIL,
        "app/BUCK": f'cxx_library(name = "app", srcs = ["app.cpp"]{headers}, deps = [{deps}])\n',
        "app/app.cpp": source,
    }


def test_an_undeclared_include_the_compiler_confirms_says_so_with_its_line():
    # app.cpp includes helper.h (line 2); //util:helper is not among app's deps.
    base = _app("int main() { return 0; }\n")
    head = _app(f"#include <vector>\n#include <{HELPER}>\nint main() {{ return helper(); }}\n")
    (finding,) = _review(UNDECLARED, base, head)
    assert (finding.rule, finding.path, finding.line, finding.severity.label) == (
        "dep-undeclared-header",
        "app/app.cpp",
        2,
        "major",
    )
    said = finding.evidence[0]
    assert said.role is EvidenceRole.COMPILER
    assert (said.path, said.line) == ("app/app.cpp", 2)
    assert said.note.startswith(f"the compiler agrees: app/app.cpp:2: {MISSING} (fbcode ")
    assert said.note.endswith("reproduce: `buck2 build fbcode//executorch/app:app`")
    assert f"The compiler agrees: `app/app.cpp:2: {MISSING}`" in finding.message


def test_with_the_owner_declared_there_is_nothing_to_confirm():
    base = _app("int main() { return 0; }\n", '"//util:helper"')
    head = _app(f"#include <{HELPER}>\nint main() {{ return helper(); }}\n", '"//util:helper"')
    assert _review(UNDECLARED, base, head) == ()


def test_a_prediction_on_a_header_nothing_compiles_drops_to_info_with_the_reason():
    # The policy, given a gap on app.h, which app exports and which no source of app, nor any
    # dependent, includes: real in the graph, but nothing fails to compile today.
    import dataclasses

    from checks.support.compiler_confirmation import confirmed

    files = {**_app("int main() { return 0; }\n", headers=', exported_headers = ["app.h"]')}
    head = {**files, "app/app.h": f"#pragma once\n#include <{HELPER}>\n"}
    (gap,) = _hits_of_the_rule_on(_app(f"#include <{HELPER}>\n"))
    on_header = dataclasses.replace(gap, path="app/app.h", line=2)
    model = BuildModel(memory_tree(head))
    with reviewing(FactCache(None)):
        (kept,) = confirmed(model, [on_header], own=True, uncompiled_at_info=True)
        assert list(confirmed(model, [on_header], own=True)) == []  # a rule that drops such a gap
    assert kept.at_most is Severity.INFO
    assert kept.message.endswith(
        "Nothing fails to compile yet: no source of `//app:app` or of its dependents compiles a source that "
        "includes `app/app.h` in `fbcode`."
    )
    assert not any(e.role is EvidenceRole.COMPILER for e in kept.evidence)


def test_with_the_tier_off_the_prediction_stands_without_a_word_of_the_compiler():
    base = _app("int main() { return 0; }\n")
    head = _app(f"#include <{HELPER}>\nint main() {{ return helper(); }}\n")
    (finding,) = _review(UNDECLARED, base, head, tier=False)
    assert finding.severity.label == "major"
    assert "compiler" not in finding.message
    assert not any(e.role is EvidenceRole.COMPILER for e in finding.evidence)


def test_a_gap_only_a_cuda_source_compiles_stands_as_predicted_and_says_it_was_not_checked():
    # nvcc is not run: the .cu source's verdict is unknown, so the rule's finding stands.
    head = {
        **_UTIL,
        "app/BUCK": 'cxx_library(name = "app", srcs = ["app.cu"])\n',
        "app/app.cu": f"#include <{HELPER}>\n",
    }
    base = {**head, "app/app.cu": "int x;\n"}
    (finding,) = _review(UNDECLARED, base, head)
    assert finding.severity.label == "major"
    assert "Not checked by the compiler: only CUDA sources include `app/app.cu`" in finding.message


def test_a_gap_the_base_has_too_is_not_compiled_for():
    # The change edits an unrelated line: the gap predates it, the engine's baseline filters it,
    # and no compile is run for it.
    source = f"#include <{HELPER}>\nint main() {{ return helper(); }}\n"
    before = runs_so_far()
    assert _review(UNDECLARED, _app(source + "// a\n"), _app(source + "// b\n")) == ()
    assert runs_so_far() == before


def test_the_policy_drops_a_prediction_the_compiler_refutes():
    # A prediction that app.cpp cannot find helper.h, where app declares its owner: the
    # compiler's preprocessor finds it, so it is not posted.
    import dataclasses

    from checks.support.compiler_confirmation import confirmed

    model = BuildModel(memory_tree(_app(f"#include <{HELPER}>\n", '"//util:helper"')))
    (gap,) = _hits_of_the_rule_on(_app(f"#include <{HELPER}>\n"))
    with reviewing(FactCache(None)):
        assert list(confirmed(model, [dataclasses.replace(gap, cell="xplat")], own=True)) == []


def _hits_of_the_rule_on(files: dict[str, str]):
    from bot.model import ReviewMode

    model = BuildModel(memory_tree(files))
    with reviewing(FactCache(None)):
        return list(UNDECLARED.run(Snapshot(model, model, ChangeSet(()), mode=ReviewMode.BASELINE), None))


# --- dep-private-for-exported-header: the dependent that includes the exported header ---------------

_KERNEL = {
    "runtime/kernel/BUCK": (
        'cxx_library(name = "kernel_includes", exported_headers = ["kernel_includes.h"], visibility = ["PUBLIC"])\n'
    ),
    "runtime/kernel/kernel_includes.h": "#pragma once\nint k();\n",
    "util/BUCK": (
        'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], exported_headers = ["stack_util.h"],\n'
        '    deps = ["//runtime/kernel:kernel_includes"], visibility = ["PUBLIC"])\n'
    ),
    "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
    "ops/BUCK": 'cxx_library(name = "op", srcs = ["op.cpp"], deps = ["//util:stack_util"])\n',
    "ops/op.cpp": "#include <executorch/util/stack_util.h>\nint op() { return k(); }\n",
}
KERNEL = "executorch/runtime/kernel/kernel_includes.h"


def test_a_private_dep_behind_an_exported_header_breaks_the_dependent_and_the_compiler_agrees():
    # 19d22ab8de's shape: stack_util.h (exported) newly includes kernel_includes.h, whose owner
    # stack_util has only in `deps`; op includes stack_util.h and has no dep on the owner.
    base = {**_KERNEL, "util/stack_util.h": "#pragma once\n"}
    head = {**_KERNEL, "util/stack_util.h": f"#pragma once\n#include <{KERNEL}>\n"}
    findings = _review(PRIVATE, base, head)
    assert [(f.path, f.line, f.severity.label) for f in findings] == [("util/stack_util.h", 2, "minor")]
    said = findings[0].evidence[0]
    assert said.role is EvidenceRole.COMPILER
    assert (said.path, said.line) == ("util/stack_util.h", 2)
    assert f"util/stack_util.h:2: fatal error: {KERNEL}: No such file or directory" in said.note
    assert said.note.endswith("reproduce: `buck2 build fbcode//executorch/ops:op`")


def test_a_dependent_that_reaches_the_owner_another_way_is_latent_and_not_compiled_for():
    covered = {
        **_KERNEL,
        "ops/BUCK": _KERNEL["ops/BUCK"].replace(
            '"//util:stack_util"', '"//util:stack_util", "//runtime/kernel:kernel_includes"'
        ),
    }
    base = {**covered, "util/stack_util.h": "#pragma once\n"}
    head = {**covered, "util/stack_util.h": f"#pragma once\n#include <{KERNEL}>\n"}
    before = runs_so_far()
    findings = _review(PRIVATE, base, head)
    assert [(f.path, f.severity.label) for f in findings] == [("util/stack_util.h", "info")]
    assert not any(e.role is EvidenceRole.COMPILER for e in findings[0].evidence)
    assert runs_so_far() == before


def test_a_source_named_by_an_export_file_label_is_compiled_too():
    # `_C` of the pybindings names pybindings.cpp by an export_file's label: that source is the
    # target's, and the compiler is asked about it as about any other.
    def files(source: str) -> dict[str, str]:
        return {
            **_UTIL,
            "app/BUCK": 'export_file(name = "app.cpp")\ncxx_library(name = "app", srcs = [":app.cpp"])\n',
            "app/app.cpp": source,
        }

    (finding,) = _review(UNDECLARED, files("int x;\n"), files(f"#include <{HELPER}>\n"))
    said = finding.evidence[0]
    assert (finding.target, said.role, said.path, said.line) == ("//app:app", EvidenceRole.COMPILER, "app/app.cpp", 1)
    assert f"app/app.cpp:1: {MISSING}" in said.note


def test_a_review_asks_the_compiler_about_a_bounded_number_of_predictions():
    # A scan makes every hit new: past the cap, a prediction stands as the rule made it and says so.
    import dataclasses

    from checks.support.compiler_confirmation import MAX_PREDICTIONS, confirmed

    files = _app(f"#include <{HELPER}>\n")
    (gap,) = _hits_of_the_rule_on(files)
    many = [dataclasses.replace(gap, key=f"{gap.key}|{n}") for n in range(MAX_PREDICTIONS + 2)]
    with reviewing(FactCache(None)):
        kept = list(confirmed(BuildModel(memory_tree(files)), many, own=True))
    said = [any(e.role is EvidenceRole.COMPILER for e in h.evidence) for h in kept]
    assert said == [True] * MAX_PREDICTIONS + [False, False]
    assert kept[-1].message.endswith(
        f"Not checked by the compiler: over the {MAX_PREDICTIONS} predictions a review asks."
    )
