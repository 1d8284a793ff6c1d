"""Every fix is judged by what it does to where targets build before `fix` applies it: a fix that
takes a target off a platform where the target built before the change is withheld and left as a
suggestion, whichever rule offers it and whatever kind of rule the dependent is; the summary names
the targets each applied fix changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures.cases import git

ROOT = Path(__file__).resolve().parents[1]
BUCKCONFIG = "[repositories]\n  root = .\n"
LOAD = 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'


def _tensor(srcs: str, jni: bool) -> str:
    """An xplat-only C++ library and, optionally, the Android JNI layer that depends on it (an
    `android_library`: not a C++ rule, so `cuda-guard-missing` does not count it as a dependent)."""
    text = LOAD + (f'non_fbcode_target(_kind = cxx_library, name = "tensor", srcs = {srcs}, visibility = ["PUBLIC"])\n')
    if jni:
        text += 'non_fbcode_target(_kind = android_library, name = "jni", deps = [":tensor"])\n'
    return text


def _repo(tmp_path: Path, jni: bool) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".buckconfig").write_text(BUCKCONFIG)
    (repo / "tensor").mkdir()
    (repo / "tensor/tensor.cpp").write_text("int tensor() { return 0; }\n")
    (repo / "tensor/BUCK").write_text(_tensor('["tensor.cpp"]', jni))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "tensor/tensor_cuda.cu").write_text("__global__ void k() {}\n")
    (repo / "tensor/BUCK").write_text(_tensor('["tensor.cpp", "tensor_cuda.cu"]', jni))
    return repo, base


def _fix(repo: Path, base: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pr_check.cli",
            "fix",
            "--repo",
            str(repo),
            "--base",
            base,
            "--select",
            "cuda-guard-missing",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_a_guard_that_takes_a_dependent_off_the_cpu_only_platforms_is_withheld(tmp_path):
    repo, base = _repo(tmp_path, jni=True)
    before = (repo / "tensor/BUCK").read_text()
    done = _fix(repo, base)
    assert (repo / "tensor/BUCK").read_text() == before, done.stdout  # nothing applied
    left = [line for line in done.stdout.splitlines() if line.startswith("left: tensor/BUCK")]
    assert left, done.stdout + done.stderr
    assert "takes `//tensor:jni` (xplat) off `" in left[0] and "through `//tensor:tensor`" in left[0], left[0]
    assert "where it built before the change" in left[0] and "left as a suggestion" in left[0]


def test_the_same_guard_without_that_dependent_is_applied_and_the_summary_names_its_target(tmp_path):
    repo, base = _repo(tmp_path, jni=False)
    done = _fix(repo, base)
    assert "compatible_with" in (repo / "tensor/BUCK").read_text(), done.stdout + done.stderr
    fixed = [line for line in done.stdout.splitlines() if line.startswith("fixed: tensor/BUCK")]
    assert fixed and fixed[0].endswith("(changed `//tensor:tensor`)"), done.stdout
