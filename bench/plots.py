"""The two review plots of `make bench`: time against tree size and against pull-request size.

python -m bench.plots [docs/bench/review.csv]     # redraw from a CSV without measuring again
"""

from __future__ import annotations

import csv
import sys
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only, no display: the bench runs headless
import matplotlib.pyplot as plt

if TYPE_CHECKING:
    from bench.bench_review import Point

COLD, WARM = "#c0392b", "#2471a3"


def plot_review(points: list[Point], out: Path) -> list[Path]:
    """Write review_tree_size.png and review_pr_size.png under `out`; return their paths."""
    written = []
    tree = sorted((p for p in points if p.sweep == "tree"), key=lambda p: p.packages)
    if tree:
        written.append(
            _plot(
                tree,
                [p.packages for p in tree],
                "generated packages in the tree (log scale)",
                f"Review time against tree size ({tree[0].changed_files}-file pull request)",
                out / "review_tree_size.png",
            )
        )
    pr = sorted((p for p in points if p.sweep == "pr"), key=lambda p: p.changed_files)
    if pr:
        written.append(
            _plot(
                pr,
                [p.changed_files for p in pr],
                "changed files in the pull request (log scale)",
                f"Review time against pull-request size ({pr[0].packages}-package tree)",
                out / "review_pr_size.png",
            )
        )
    return written


def _plot(points: list[Point], xs: list[int], xlabel: str, title: str, path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(7, 5), dpi=110)
    for label, color, values, cpu, rss in (
        (
            "cold (empty cache)",
            COLD,
            [p.cold_s for p in points],
            [p.cold_cpu_s for p in points],
            [p.cold_rss_mb for p in points],
        ),
        (
            "warm (same base..head, cache on disk)",
            WARM,
            [p.warm_s for p in points],
            [p.warm_cpu_s for p in points],
            [p.warm_rss_mb for p in points],
        ),
    ):
        axis.plot(xs, values, marker="o", color=color, label=f"{label}, wall")
        axis.plot(xs, cpu, marker=".", linestyle="--", linewidth=1, color=color, alpha=0.6, label=f"{label}, CPU")
        for x, seconds, megabytes in zip(xs, values, rss, strict=True):
            axis.annotate(
                f"{seconds:.2f} s\n{megabytes:.0f} MB",
                (x, seconds),
                textcoords="offset points",
                xytext=(0, 7),
                ha="center",
                fontsize=7,
                color=color,
            )
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xticks(xs, [str(x) for x in xs])
    axis.minorticks_off()
    low = min(min(p.warm_s for p in points), min(p.warm_cpu_s for p in points))
    high = max(max(p.warm_s for p in points), max(p.cold_s for p in points))
    axis.set_ylim(low / 2, high * 3)  # room for the labels above the highest point
    ticks = [
        t for t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500) if low / 2 <= t <= high * 3
    ]
    axis.set_yticks(ticks, [f"{t:g}" for t in ticks])
    axis.set_xlim(xs[0] / 1.6, xs[-1] * 1.6)
    axis.set_xlabel(xlabel)
    axis.set_ylabel("seconds per review (log scale)")
    axis.set_title(title, fontsize=10)
    axis.grid(True, which="major", alpha=0.3)
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8, frameon=False)
    loads = sorted({p.loadavg.split()[0] for p in points if p.loadavg})
    figure.text(
        0.99,
        0.01,
        f"one review per process; peak RSS under each time; 1-min load {loads[0]}..{loads[-1]}"
        if loads
        else "one review per process; peak RSS under each time",
        ha="right",
        va="bottom",
        fontsize=6.5,
        color="#555555",
    )
    figure.tight_layout(rect=(0, 0.02, 1, 1))
    figure.savefig(path)
    plt.close(figure)
    return path


def read_points(path: Path) -> list[Point]:
    """The points of a review.csv written by bench/bench_review.py."""
    from bench.bench_review import Point

    kinds = {field.name: field.type for field in fields(Point)}
    convert = {"int": int, "float": float, "str": str}
    with path.open(newline="") as handle:
        return [
            Point(**{name: convert[kinds[name]](value) for name, value in row.items()})
            for row in csv.DictReader(handle)
        ]


if __name__ == "__main__":
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/bench/review.csv")
    for written in plot_review(read_points(source), source.parent):
        print(f"wrote {written}")
