"""Review benchmark: a generated tree of ~400 packages (or a real repository), cold and warm.

Prints both times and their ratio; no thresholds here (goals: warm < 2 s and cold < 60 s for a
5-file PR on the real ExecuTorch tree). Usage:
    python -m bench.bench_review [--packages 400] [--repo PATH --base REV --head REV]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from pr_check.review import review_repository
from fixtures.cases import git, init_base_repository


def generate_tree(repo: Path, packages: int) -> None:
    """Add `packages` ExecuTorch-shaped packages (targets.bzl + BUCK, both binding styles)."""
    for index in range(packages):
        package = repo / "generated" / f"pkg{index:03d}"
        package.mkdir(parents=True)
        binding = (
            'load(":targets.bzl", "define_common_targets")\n\ndefine_common_targets()\n'
            if index % 2
            else 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
            'load(":targets.bzl", "define_common_targets")\n\nfbcode_target(_kind = define_common_targets,)\n'
            "non_fbcode_target(_kind = define_common_targets,)\n"
        )
        (package / "BUCK").write_text(binding)
        previous = f'"//executorch/generated/pkg{index - 1:03d}:lib{index - 1}"' if index else ""
        (package / "targets.bzl").write_text(
            'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n\n'
            "def define_common_targets():\n"
            "    for variant in (\"\", \"_aten\"):\n"
            "        runtime.cxx_library(\n"
            f'            name = "lib{index}" + variant,\n'
            f'            srcs = ["lib{index}.cpp"],\n'
            f'            exported_headers = ["lib{index}.h"],\n'
            f"            deps = [{previous}],\n"
            '            visibility = ["PUBLIC"],\n'
            "        )\n"
        )


def measure(repo: Path, base: str, head: str, cache: Path) -> tuple[float, float, dict]:
    started = time.perf_counter()
    review_repository(repo, base, head, cache_dir=cache)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    report = review_repository(repo, base, head, cache_dir=cache)
    warm = time.perf_counter() - started
    return cold, warm, dict(report.stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=400)
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--base")
    parser.add_argument("--head")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pr-check-bench-") as directory:
        cache = Path(directory) / "cache"
        if arguments.repo:
            repo, base, head = arguments.repo, arguments.base, arguments.head
        else:
            repo, _ = init_base_repository(Path(directory))
            generate_tree(repo, arguments.packages)
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", "generated packages")
            base = git(repo, "rev-parse", "HEAD")
            for index in range(5):  # a 5-file PR
                bzl = repo / "generated" / f"pkg{index * 7:03d}" / "targets.bzl"
                bzl.write_text(bzl.read_text().replace('visibility = ["PUBLIC"]', 'visibility = ["PUBLIC"], link_whole = True'))
            git(repo, "commit", "-qam", "five-file change")
            head = git(repo, "rev-parse", "HEAD")
        cold, warm, stats = measure(repo, base, head, cache)
        cells = stats.get("cells", {})
        packages = {cell: values["packages"] for cell, values in cells.items()}
        print(f"review {base[:10]}..{head[:10]}  packages per cell: {packages}")
        print(f"cold {cold:.3f} s   warm {warm:.3f} s   cold/warm {cold / warm:.1f}x")
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
