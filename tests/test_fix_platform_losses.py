"""Every fix is judged by what it does to where targets build before `fix` applies it: a fix that
takes a target off a platform where the target built before the change is withheld and left as a
suggestion, whichever rule offers it and whatever kind of rule the dependent is; the summary names
the targets each applied fix changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bot.snapshot import BuildModel
from bot.tree import blob_id_of, memory_tree, with_files
from fixtures.cases import git
from pr_check.fix_platforms import RoundJudge, judge_files

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


def _package(name: str, srcs: str, guarded: bool, jni: bool) -> str:
    guard = 'compatible_with = ["ovr_config//cuda:has_cuda"], ' if guarded else ""
    text = (
        LOAD
        + f'non_fbcode_target(_kind = cxx_library, name = "{name}", {guard}srcs = {srcs}, visibility = ["PUBLIC"])\n'
    )
    if jni:
        text += f'non_fbcode_target(_kind = android_library, name = "jni", deps = [":{name}"])\n'
    return text


def test_judge_files_withholds_the_file_whose_guard_takes_a_dependent_off_and_keeps_the_other():
    # What `/pr-check fix` asks of the files of its one commit (in the review's child process):
    # the guard on `//tensor:tensor` takes `//tensor:jni` off the CPU-only platforms, the guard on
    # `//other:other` (nothing depends on it) takes nothing off; each file is judged on its own.
    base = memory_tree(
        {
            ".buckconfig": BUCKCONFIG,
            "tensor/BUCK": _package("tensor", '["tensor.cpp"]', False, jni=True),
            "other/BUCK": _package("other", '["other.cpp"]', False, jni=False),
        }
    )
    cuda = {
        "tensor/BUCK": _package("tensor", '["tensor.cpp", "tensor_cuda.cu"]', False, jni=True),
        "other/BUCK": _package("other", '["other.cpp", "other_cuda.cu"]', False, jni=False),
    }
    head = with_files(base, cuda)
    fixes = {
        "tensor/BUCK": _package("tensor", '["tensor.cpp", "tensor_cuda.cu"]', True, jni=True).encode(),
        "other/BUCK": _package("other", '["other.cpp", "other_cuda.cu"]', True, jni=False).encode(),
    }
    judge = RoundJudge(BuildModel(base), BuildModel)
    other, tensor = judge_files(judge, head, fixes)
    assert (other.path, other.blob, other.losses, other.reason) == (
        "other/BUCK",
        blob_id_of(fixes["other/BUCK"]),
        (),
        "",
    )
    assert tensor.path == "tensor/BUCK" and tensor.alone
    assert [(loss.cell, loss.platform, loss.label, loss.follows) for loss in tensor.losses] == [
        ("xplat", platform, "//tensor:jni", "//tensor:tensor")
        for platform in ("android-arm64", "iphoneos-arm64", "linux-x86_64")
    ]
    assert tensor.reason == (
        "applying it takes `//tensor:jni` (xplat) off `android-arm64`, through `//tensor:tensor` and 2 more, "
        "where it built before the change; left as a suggestion: keep the change out of those platforms another way"
    )
