"""The eight causes of false or missed findings seen on real ExecuTorch history, each pinned.

Every cause comes as a fixture PR (a real git repository, expected findings written by hand
from the invariant) and, where the mirror is present, as the real commit that showed it (real_tree/verdicts.toml),
with the verdict a maintainer gave after reading the commit and what followed it.
"""

from __future__ import annotations

import pytest

from pr_check.review import review_repository


def _found(report) -> set[tuple]:
    return {(f.rule, f.path, f.line, f.cell) for f in report.findings}


FIXTURES = {
    # 1. Identity: a package that failed to load in OSS moves from TARGETS to BUCK + targets.bzl
    #    and fails the same way: not newly broken.
    "history-moved-targets-to-buck": set(),
    #    ... while a new package failing to load in OSS is (its twin). The finding sits on the
    #    BUCK file's load of targets.bzl, whose own load of the missing file the message names.
    "history-new-package-fails-oss": {("buck-eval-error", "backends/nxp/BUCK", 1, "oss")},
    # 2. A commit repairs an OSS evaluation: the private include the test always had is not its doing.
    "history-evaluation-repaired": set(),
    # 3. The open-source CI builds //runtime/core/... only: an fbcode-only test is never built there.
    "history-oss-unbuilt-test": set(),
    #    ... and when the CI does build //backends/cuda/..., the same private include breaks it.
    "history-oss-built-test": {
        ("header-private-across-cells", "backends/cuda/runtime/shims/tests/test_memory_slim.cpp", 1, "oss"),
    },
    # 4. `cpp_library` exports its `headers` (fbcode_macros, and the OSS shim's shims.bzl) ...
    "history-cpp-library-headers": set(),
    #    ... a plain `cxx_library` does not: private in xplat (and oss; one finding for both cells).
    "history-cxx-library-private-headers": {
        ("header-private-across-cells", "extension/pybindings_loader/pybindings_data_loader.cpp", 1, "xplat"),
    },
}


@pytest.mark.parametrize("case", sorted(FIXTURES))
def test_history_cause_fixture(case, case_repo, tmp_path):
    repo, base, head = case_repo(case)
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    assert _found(report) == FIXTURES[case]


# The real commits named for each cause are judged in real_tree/verdicts.toml and pinned by
# test_real_tree_verdicts.py.


def test_what_could_not_be_evaluated_is_said_not_hidden(case_repo, tmp_path):
    # The moved package draws no finding (it was broken before), but the review says the open-
    # source cell could not see it, and why: a reader knows its findings there are unknown.
    repo, base, head = case_repo("history-moved-targets-to-buck")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    unevaluated = [(item.cell, item.package, item.kind) for item in report.stats.unevaluated]
    assert unevaluated == [("oss", "//backends/nxp", "load")]
    assert "oxx_python.bzl" in report.stats.unevaluated[0].reason


def test_cuda_guard_fix_offers_the_repositorys_fbcode_only_idiom():
    # 7. No target of the tree uses the has_cuda constraint; the package's existing CUDA target is
    #    defined fbcode-only. A new CUDA target visible in xplat gets that form as its fix.
    from bot.check import Example
    from checks import cuda_guard_missing
    from tests.test_check_examples import _snapshot

    buck = (
        'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target")\n'
        'fbcode_target(_kind = cxx_library, name = "old_kernels", srcs = ["old.cu"])\n'
        "cxx_library(\n"
        '    name = "new_kernels",\n'
        '    srcs = ["new.cu"],\n'
        ")\n"
    )
    snap = _snapshot(Example(head={".buckconfig": "[repositories]\n  root = .\n", "gpu/BUCK": buck}))
    [hit] = list(cuda_guard_missing.run(snap, None))
    assert (hit.path, hit.line, hit.target) == ("gpu/BUCK", 3, "//gpu:new_kernels")
    assert "define it fbcode-only" in hit.message
    assert hit.fix is not None and hit.fix.replacement == "fbcode_target(\n    _kind = cxx_library,"
