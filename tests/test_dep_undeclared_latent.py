"""dep-undeclared-latent reads which lines the change edited: the examples' harness counts every
line of a changed file, so these tests give the diff line by line."""

from __future__ import annotations

from bot import engine
from bot.diff import ChangeSet, FileChange
from bot.model import EvidenceRole
from bot.snapshot import BuildModel, Snapshot
from bot.tree import memory_tree
from checks import BY_ID

MACRO = "extension/pybindings/pybindings.bzl"
CHECK = BY_ID["dep-undeclared-latent"]

FILES = {
    ".buckconfig": "[repositories]\n  root = .\n",
    "extension/cuda/BUCK": (
        'cxx_library(name = "cuda_allocator", exported_headers = ["cuda_allocator.h"], visibility = ["PUBLIC"])\n'
        'cxx_library(name = "caller_stream", exported_headers = ["caller_stream.h"], visibility = ["PUBLIC"])\n'
    ),
    "extension/cuda/cuda_allocator.h": "#pragma once\n",
    "extension/cuda/caller_stream.h": "#pragma once\n",
    "extension/pybindings/BUCK": (
        'load(":pybindings.bzl", "executorch_pybindings")\n'
        'executorch_pybindings(name = "portable_lib", srcs = ["pybindings.cpp"])\n'
    ),
    "extension/pybindings/pybindings.cpp": (
        "#ifdef EXECUTORCH_PYBINDINGS_CUDA\n"
        "#include <executorch/extension/cuda/caller_stream.h>\n"
        "#include <executorch/extension/cuda/cuda_allocator.h>\n"
        "#endif\n"
    ),
}


def _macro(line_3: str, line_4: str) -> str:
    return (
        "def executorch_pybindings(name, srcs = [], use_cuda = False):\n"
        '    cuda_flags = ["-DEXECUTORCH_PYBINDINGS_CUDA"] if use_cuda else []\n'
        f"{line_3}\n"
        f"{line_4}\n"
        "    native.cxx_python_extension(\n"
        "        name = name,\n"
        "        srcs = srcs,\n"
        "        deps = cuda_deps,\n"
        "        preprocessor_flags = cuda_flags,\n"
        '        compiler_flags = ["-Wall"] + extra_flags,\n'
        "    )\n"
    )


BRANCH_DEPS = '    cuda_deps = ["//extension/cuda:caller_stream"] if use_cuda else []'


def _review(base_macro: str, head_macro: str, edited: frozenset[int]):
    base = memory_tree({**FILES, MACRO: base_macro})
    head = memory_tree({**FILES, MACRO: head_macro})
    change = FileChange(MACRO, MACRO, "modified", added=edited, removed=edited, commentable=edited)
    return engine.run([CHECK], Snapshot(BuildModel(base), BuildModel(head), ChangeSet((change,)))).findings


def test_an_edit_inside_the_branch_no_caller_takes_is_evaluated_with_the_parameter_set():
    findings = _review(
        _macro(BRANCH_DEPS, "    extra_flags = []"),
        _macro(BRANCH_DEPS, '    extra_flags = ["-DX"] if use_cuda else []'),
        frozenset({4}),
    )
    assert [(f.rule, f.path, f.line, f.severity.label) for f in findings] == [
        ("dep-undeclared-latent", MACRO, 4, "minor")
    ]
    assert "cuda_allocator" in findings[0].message
    assert ("extension/pybindings/pybindings.cpp", 3) in {(e.path, e.line) for e in findings[0].evidence}


def test_an_edit_outside_the_branch_is_left_to_the_ordinary_review():
    # The same gap sits in the branch, but the change edits what every caller builds.
    findings = _review(
        _macro(BRANCH_DEPS, "    extra_flags = []"),
        _macro(BRANCH_DEPS, '    extra_flags = ["-DX"]'),
        frozenset({4}),
    )
    assert findings == ()


def test_a_branch_whose_deps_hold_the_owner_is_quiet():
    complete = (
        '    cuda_deps = ["//extension/cuda:caller_stream", "//extension/cuda:cuda_allocator"] if use_cuda else []'
    )
    findings = _review(
        _macro(complete, "    extra_flags = []"),
        _macro(complete, '    extra_flags = ["-DX"] if use_cuda else []'),
        frozenset({4}),
    )
    assert findings == ()


def test_with_the_compiled_tier_on_the_compiler_confirms_the_gap_in_the_branchs_own_source():
    import pytest

    from bot.store.memo import FactCache, reviewing
    from bot.toolchain.runner import discover
    from bot.toolchain.switch import compiling

    if discover() is None:
        pytest.skip("no C++ compiler on this machine")
    macros = (
        _macro(BRANCH_DEPS, "    extra_flags = []"),
        _macro(BRANCH_DEPS, '    extra_flags = ["-DX"] if use_cuda else []'),
    )
    with reviewing(FactCache(None)), compiling(True):
        (finding,) = _review(*macros, frozenset({4}))
    # pybindings.cpp, with the branch's define and deps, does not find cuda_allocator.h: the
    # compiler's own line, at the include (pybindings.cpp line 3), first among the evidence.
    error = (
        "extension/pybindings/pybindings.cpp:3: fatal error: executorch/extension/cuda/cuda_allocator.h: "
        "No such file or directory"
    )
    assert f"The compiler agrees: `{error}` (fbcode fbcode-linux-x86_64-cuda)." in finding.message
    said = finding.evidence[0]
    assert (said.role, said.path, said.line) == (EvidenceRole.COMPILER, "extension/pybindings/pybindings.cpp", 3)
    assert said.note.endswith("reproduce: `buck2 build fbcode//executorch/extension/pybindings:portable_lib`")
    with reviewing(FactCache(None)), compiling(False):
        (finding,) = _review(*macros, frozenset({4}))
    assert "The compiler agrees" not in finding.message  # the tier off: the prediction as the rule made it
