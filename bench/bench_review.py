"""Review benchmark: cold and warm review time against tree size and against pull-request size.

A real git repository holds the miniature ExecuTorch tree plus generated ExecuTorch-shaped packages
(BUCK + targets.bzl in both binding styles, a .cpp and a .h each, deps on a parent package and
the root: a wide, shallow graph). Two sweeps:
- tree size: 100, 400, 1600, 6400 packages, each reviewed for the same 5-file pull request;
- pull-request size: 1, 10, 100, 1000 changed files (targets.bzl, .cpp, .h in turn, in distinct
  packages spread over the tree) on the 1600-package tree.
Every review runs in a fresh process (bench/child.py): cold with an empty cache directory, warm
five more reviews of the same base..head with the same directory (the median one is kept). Writes OUT/review.csv,
OUT/review_tree_size.png and OUT/review_pr_size.png, and prints a table. No thresholds here: the
goal is that warm cost stays flat in tree size and grows with the change.

    python -m bench.bench_review [--tree-sizes 100,400,1600,6400] [--pr-sizes 1,10,100,1000]
        [--pr-tree 1600] [--out docs/bench]
    python -m bench.bench_review --repo PATH --base REV --head REV      # one cold + warm pair
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from bench.child import Measured, review_in_child
from fixtures.cases import git, init_base_repository

TREE_PR_FILES = 5  # the pull request reviewed at every tree size
CHANGE_KINDS = ("targets.bzl", "cpp", "h")


@dataclass(frozen=True, slots=True)
class Point:
    """One cold + warm pair of reviews."""

    sweep: str  # "tree" or "pr"
    packages: int  # generated packages in the tree
    changed_files: int
    cold_s: float
    warm_s: float
    cold_cpu_s: float
    warm_cpu_s: float
    cold_rss_mb: float
    warm_rss_mb: float
    findings: int
    loadavg: str  # the 1-, 5- and 15-minute load when the pair finished


def _package(index: int) -> str:
    return f"pkg{index:04d}"


def parent_of(index: int) -> int | None:
    """Packages form a tree of fan-out 4 (depth about 6 at 6,400 packages), as a real build graph
    is wide and shallow; a chain instead would make every transitive closure quadratic."""
    return (index - 1) // 4 if index else None


def extend_tree(repo: Path, start: int, stop: int) -> None:
    """Add packages start..stop-1: each depends on its parent and the root, and includes their headers."""
    for index in range(start, stop):
        name = _package(index)
        package = repo / "generated" / name
        package.mkdir(parents=True)
        binding = (
            'load(":targets.bzl", "define_common_targets")\n\ndefine_common_targets()\n'
            if index % 2
            else 'load("@fbcode_macros//build_defs:build_file_migration.bzl", "fbcode_target", "non_fbcode_target")\n'
            'load(":targets.bzl", "define_common_targets")\n\nfbcode_target(_kind = define_common_targets,)\n'
            "non_fbcode_target(_kind = define_common_targets,)\n"
        )
        (package / "BUCK").write_text(binding)
        uses = sorted({p for p in (parent_of(index), 0) if p is not None and p != index})
        deps = ", ".join(f'"//executorch/generated/{_package(p)}:lib{p}" + variant' for p in uses)
        (package / "targets.bzl").write_text(
            'load("@fbsource//xplat/executorch/build:runtime_wrapper.bzl", "runtime")\n\n'
            "def define_common_targets():\n"
            '    for variant in ("", "_aten"):\n'
            "        runtime.cxx_library(\n"
            f'            name = "lib{index}" + variant,\n'
            f'            srcs = ["lib{index}.cpp"],\n'
            f'            exported_headers = ["lib{index}.h"],\n'
            f"            deps = [{deps}],\n"
            '            visibility = ["PUBLIC"],\n'
            "        )\n"
        )
        includes = "".join(f"#include <executorch/generated/{_package(p)}/lib{p}.h>\n" for p in uses)
        (package / f"lib{index}.h").write_text(f"#pragma once\n{includes}\nint lib{index}();\n")
        call = " + ".join([f"lib{p}()" for p in uses] + ["1"])
        (package / f"lib{index}.cpp").write_text(
            f"#include <executorch/generated/{name}/lib{index}.h>\n\nint lib{index}() {{\n  return {call};\n}}\n"
        )


def change_files(repo: Path, packages: int, count: int) -> list[str]:
    """Edit `count` files in distinct packages spread over the tree: targets.bzl, .cpp, .h in turn."""
    if count > packages:
        raise ValueError(f"{count} changed files need at least {count} packages, the tree has {packages}")
    changed = []
    for position in range(count):
        index = position * packages // count
        package = repo / "generated" / _package(index)
        kind = CHANGE_KINDS[position % len(CHANGE_KINDS)]
        if kind == "targets.bzl":
            path = package / "targets.bzl"
            path.write_text(
                path.read_text().replace(
                    '            visibility = ["PUBLIC"],\n',
                    f'            preprocessor_flags = ["-DLIB{index}_CHANGED"],\n            visibility = ["PUBLIC"],\n',
                )
            )
        elif kind == "cpp":
            path = package / f"lib{index}.cpp"
            path.write_text(path.read_text() + f"\nint lib{index}_changed() {{\n  return {index};\n}}\n")
        else:
            path = package / f"lib{index}.h"
            path.write_text(path.read_text() + f"int lib{index}_changed();\n")
        changed.append(str(path.relative_to(repo)))
    return changed


def pull_request(repo: Path, base: str, packages: int, count: int) -> str:
    """Commit a `count`-file change on top of `base` (detached) and return its sha; leaves base checked out."""
    git(repo, "checkout", "-q", "--detach", base)
    change_files(repo, packages, count)
    git(repo, "commit", "-qam", f"{count}-file change")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--detach", base)
    return head


WARM_REPEATS = 5  # warm reviews per point, the median kept: one sample of a 20 ms review is noise


def measure(repo: Path, base: str, head: str, cache: Path) -> tuple[Measured, Measured]:
    """A cold review (empty cache), then warm ones (same cache), each in a fresh process; the warm
    review of median wall time stands for them."""
    cold = review_in_child(repo, base, head, cache)
    warm = sorted((review_in_child(repo, base, head, cache) for _ in range(WARM_REPEATS)), key=lambda m: m.seconds)
    return cold, warm[len(warm) // 2]


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def _point(sweep: str, packages: int, files: int, cold: Measured, warm: Measured) -> Point:
    return Point(
        sweep,
        packages,
        files,
        cold.seconds,
        warm.seconds,
        cold.cpu_s,
        warm.cpu_s,
        cold.peak_rss_mb,
        warm.peak_rss_mb,
        warm.findings,
        _loadavg(),
    )


def run_sweeps(workdir: Path, tree_sizes: list[int], pr_sizes: list[int], pr_tree: int) -> list[Point]:
    """Both sweeps in one repository whose main line grows through the tree sizes."""
    repo, _ = init_base_repository(workdir)
    points: list[Point] = []
    generated = 0
    for size in sorted(set(tree_sizes) | {pr_tree}):
        git(repo, "checkout", "-q", "--detach", git(repo, "rev-parse", "main"))
        extend_tree(repo, generated, size)
        generated = size
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"{size} generated packages")
        base = git(repo, "rev-parse", "HEAD")
        git(repo, "branch", "-f", "main", base)
        if size in tree_sizes:
            points.append(_run_pair(workdir, repo, base, "tree", size, TREE_PR_FILES))
        if size == pr_tree:
            points += [_run_pair(workdir, repo, base, "pr", size, files) for files in pr_sizes]
    return points


def _run_pair(workdir: Path, repo: Path, base: str, sweep: str, packages: int, files: int) -> Point:
    head = pull_request(repo, base, packages, files)
    cache = workdir / f"cache-{sweep}-{packages}-{files}"
    cold, warm = measure(repo, base, head, cache)
    point = _point(sweep, packages, files, cold, warm)
    print(_row(point), flush=True)
    return point


HEADER = (
    f"{'sweep':5} {'packages':>8} {'files':>5} {'cold s':>7} {'warm s':>7} {'cold cpu':>8} {'warm cpu':>8} "
    f"{'cold MB':>7} {'warm MB':>7} {'findings':>8}  load"
)


def _row(point: Point) -> str:
    return (
        f"{point.sweep:5} {point.packages:8d} {point.changed_files:5d} {point.cold_s:7.2f} {point.warm_s:7.2f} "
        f"{point.cold_cpu_s:8.2f} {point.warm_cpu_s:8.2f} {point.cold_rss_mb:7.0f} {point.warm_rss_mb:7.0f} "
        f"{point.findings:8d}  {point.loadavg}"
    )


def write_csv(points: list[Point], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[field.name for field in fields(Point)])
        writer.writeheader()
        writer.writerows(asdict(point) for point in points)


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree-sizes", type=_sizes, default=[100, 400, 1600, 6400])
    parser.add_argument("--pr-sizes", type=_sizes, default=[1, 10, 100, 1000])
    parser.add_argument("--pr-tree", type=int, default=1600, help="packages in the tree of the PR-size sweep")
    parser.add_argument("--out", type=Path, default=Path("docs/bench"))
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--repo", type=Path, help="review one base..head of this repository instead")
    parser.add_argument("--base")
    parser.add_argument("--head")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pr-check-bench-") as directory:
        if arguments.repo:
            cold, warm = measure(arguments.repo, arguments.base, arguments.head, Path(directory) / "cache")
            print(
                f"cold {cold.seconds:.3f} s ({cold.peak_rss_mb:.0f} MB)   warm {warm.seconds:.3f} s "
                f"({warm.peak_rss_mb:.0f} MB)   load {_loadavg()}"
            )
            return 0
        print(HEADER, flush=True)
        points = run_sweeps(Path(directory), arguments.tree_sizes, arguments.pr_sizes, arguments.pr_tree)
    arguments.out.mkdir(parents=True, exist_ok=True)
    write_csv(points, arguments.out / "review.csv")
    if not arguments.no_plots:
        from bench.plots import plot_review

        for path in plot_review(points, arguments.out):
            print(f"wrote {path}")
    print(f"wrote {arguments.out / 'review.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
