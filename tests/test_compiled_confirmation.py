"""Confirm before posting: a predicted missing header is asked of the compiler's preprocessor.

Trees written here; the expectations follow from buck2's rule (a private dep's headers are not
passed on) and the cell table (fbcode shows plain `headers` to dependents, xplat does not).
"""

from __future__ import annotations

import pytest

from bot.facts.confirmation import confirm_missing_header
from bot.model import EvidenceRole
from bot.snapshot import BuildModel
from bot.store.memo import FactCache, reviewing
from bot.toolchain.runner import discover
from bot.toolchain.switch import compiling
from bot.tree import memory_tree

pytestmark = pytest.mark.skipif(discover() is None, reason="no C++ compiler on this machine")

_KERNEL = 'cxx_library(name = "kernel_includes", exported_headers = ["kernel_includes.h"], visibility = ["PUBLIC"])\n'
_UTIL = (
    'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], exported_headers = ["stack_util.h"],\n'
    '    deps = ["//runtime/kernel:kernel_includes"], visibility = ["PUBLIC"])\n'
)
HEADER = "util/stack_util.h"
INCLUDE = "executorch/runtime/kernel/kernel_includes.h"


def _model(dependent_deps: str) -> BuildModel:
    return BuildModel(
        memory_tree(
            {
                "runtime/kernel/BUCK": _KERNEL,
                "runtime/kernel/kernel_includes.h": "#pragma once\nint k();\n",
                "util/BUCK": _UTIL,
                "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
                "util/stack_util.h": f"#pragma once\n#include <{INCLUDE}>\n#include <gtest/gtest.h>\n",
                "ops/BUCK": f'cxx_library(name = "op", srcs = ["op.cpp"], deps = [{dependent_deps}])\n',
                "ops/op.cpp": "#include <executorch/util/stack_util.h>\nint op() { return k(); }\n",
            }
        )
    )


def test_a_dependent_without_the_owner_confirms_the_prediction():
    model = _model('"//util:stack_util"')
    with reviewing(FactCache(None)):
        verdict = confirm_missing_header(model, "xplat", "//util:stack_util", HEADER, INCLUDE)
    # A header the tree lacks (gtest) comes after: it does not hide the answer.
    assert verdict.state == "confirmed", verdict.reason
    assert verdict.reason.startswith("the compiler agrees")
    assert verdict.evidence[0][0] == "ops/op.cpp"
    # The compiler's own line: the include in stack_util.h (line 2), as op.cpp compiles it.
    words = verdict.words
    assert words is not None
    assert words.error == f"util/stack_util.h:2: fatal error: {INCLUDE}: No such file or directory"
    assert (words.source, words.owner, words.path, words.line) == ("ops/op.cpp", "//ops:op", HEADER, 2)
    assert words.configuration.startswith("xplat ")
    assert words.command == "buck2 build fbsource//xplat/executorch/ops:op"


def test_a_dependent_that_has_the_owner_another_way_refutes_it():
    model = _model('"//util:stack_util", "//runtime/kernel:kernel_includes"')
    with reviewing(FactCache(None)):
        verdict = confirm_missing_header(model, "xplat", "//util:stack_util", HEADER, INCLUDE)
    assert verdict.state == "refuted", verdict.reason


def test_no_dependent_including_the_header_refutes_it():
    model = _model('"//runtime/kernel:kernel_includes"')
    with reviewing(FactCache(None)):
        verdict = confirm_missing_header(model, "xplat", "//util:stack_util", HEADER, INCLUDE)
    assert verdict.state == "refuted"
    assert "no dependent" in verdict.reason


def test_with_the_tier_off_the_prediction_stands():
    model = _model('"//util:stack_util"')
    with reviewing(FactCache(None)), compiling(False):
        verdict = confirm_missing_header(model, "xplat", "//util:stack_util", HEADER, INCLUDE)
    assert verdict.state == "unknown"


def test_the_rule_passes_its_predictions_through_the_compiler():
    from checks.dep_private_for_exported_header import cell_hits
    from checks.support.compiler_confirmation import confirmed

    breaking, covered = _model('"//util:stack_util"'), _model('"//util:stack_util", "//runtime/kernel:kernel_includes"')
    with reviewing(FactCache(None)):
        predicted = list(cell_hits(breaking, "xplat").values())
        assert [(h.path, h.offending_text) for h in predicted] == [(HEADER, INCLUDE)]
        (kept,) = confirmed(breaking, predicted, own=False)
        assert f"The compiler agrees: `util/stack_util.h:2: fatal error: {INCLUDE}" in kept.message
        said = kept.evidence[0]
        assert (said.role, said.path, said.line) == (EvidenceRole.COMPILER, HEADER, 2)
        assert "reproduce: `buck2 build fbsource//xplat/executorch/ops:op`" in said.note
        # The same prediction where the one dependent reaches the owner another way: not posted.
        assert list(confirmed(covered, list(cell_hits(covered, "xplat").values()), own=False)) == []
