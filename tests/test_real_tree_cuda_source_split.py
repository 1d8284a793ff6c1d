"""A `.cu` source added to the shared `//extension/tensor:tensor`, on the real tree (Aug 2026 main).

Every cell evaluates `extension/tensor/targets.bzl`, and one macro call makes `:tensor` and
`:tensor_aten`. Dozens of CPU-only targets depend on `:tensor` in xplat (the Android JNI layer,
Qualcomm, the LLM runners). The review must keep the loud finding (a CPU-only build of `:tensor`
fails to compile the `.cu`), say it once for the macro call, and never offer the guard on the
shared target: `compatible_with` / `platforms` there would take every one of those dependents off
the CPU-only platforms, which is worse than the defect. What it offers is the split: the source
under `select()` on the CUDA constraint (or a CUDA-only target the CUDA dependents reach).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.model import Severity
from bot.render.finding_groups import group_findings
from pr_check.review import review_repository

MAIN = "refs/heads/main"
TARGETS = "extension/tensor/targets.bzl"
SOURCE = "tensor_cuda.cu"
SOURCE_TEXT = "#include <cuda_runtime.h>\n\n__global__ void fill_ones(float* out) { out[threadIdx.x] = 1.0f; }\n"


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True, env={**os.environ, **(env or {})}
    )
    return done.stdout.decode().strip()


def _commit_with_cuda_source(mirror: Path, work: Path) -> tuple[Path, str, str]:
    """A repository borrowing the mirror's objects: main, and a commit adding the `.cu` to `:tensor`'s srcs."""
    repo = work / "tensor.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    objects = Path(_git(mirror, "rev-parse", "--path-format=absolute", "--git-path", "objects"))
    (repo / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    base = _git(mirror, "rev-parse", MAIN)
    text = _git(mirror, "show", f"{base}:{TARGETS}") + "\n"
    anchor = '                "tensor_ptr_maker.cpp",\n'
    assert anchor in text
    edited = text.replace(anchor, anchor + f'                "{SOURCE}",\n', 1)
    env = {"GIT_INDEX_FILE": str(work / "index")}
    _git(repo, "read-tree", base, env=env)
    for path, content in ((TARGETS, edited), (f"extension/tensor/{SOURCE}", SOURCE_TEXT)):
        blob = _git(repo, "hash-object", "-w", "--stdin", stdin=content.encode())
        _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = _git(repo, "write-tree", "--missing-ok", env=env)
    identity = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    head = _git(repo, "commit-tree", tree, "-p", base, env=identity, stdin=b"tensor: a CUDA source\n")
    return repo, base, head


@pytest.fixture(scope="module")
def report(executorch_mirror, real_tree_cache, tmp_path_factory):
    repo, base, head = _commit_with_cuda_source(executorch_mirror, tmp_path_factory.mktemp("tensor-cu"))
    return review_repository(repo, base, head, cache_dir=real_tree_cache)


def _on_tensor(report):
    return [
        f
        for f in report.findings
        if f.rule == "cuda-guard-missing"
        and f.target in ("//extension/tensor:tensor", "//extension/tensor:tensor_aten")
    ]


def test_the_loud_finding_is_kept_and_said_once_for_the_macro_call(report):
    found = _on_tensor(report)
    assert any(f.target == "//extension/tensor:tensor" and f.severity is Severity.BLOCKER for f in found)
    groups = [g for g in group_findings(report.findings) if set(g.members) & set(found)]
    assert len(groups) == 1


def test_no_fix_guards_the_shared_target(report):
    for finding in report.findings:
        if finding.fix is None or finding.fix.path != TARGETS:
            continue
        added = finding.fix.replacement
        assert "compatible_with" not in added and "platforms" not in added, finding.fix


def test_the_split_is_suggested(report):
    (finding,) = [f for f in _on_tensor(report) if f.target == "//extension/tensor:tensor"]
    assert "select(" in finding.message and SOURCE in finding.message
    # Mechanical here: `srcs` is a literal list in the file the change edits, so the fix moves the
    # source under the CUDA constraint and keeps the rest of the list as it was.
    assert finding.fix is not None
    assert SOURCE in finding.fix.replacement and "has_cuda" in finding.fix.replacement
    assert f'"{SOURCE}",' not in finding.fix.replacement.split("select(")[0]
    # The CPU-only dependents are named as what a guard would take along.
    assert "dependent" in finding.message
