"""The plots of bench/busy_day.py, with the previous code's run beside it.

    python -m bench.plots_busy_day RUN.json [--before A.json ...] [--tree CSV] [--out docs/bench/busy_day]

- memory_across_reviews.png: resident set after each review in one process (this run, and the
  runs of the previous code given with --before, written by bench/parity.py);
- busy_day_times.png: each review's CPU and wall seconds, the first 40 and the 10 again, with the
  previous re-review range and the 1 s target;
- warm_tree_size.png: warm review time at each generated tree size (bench/bench_review.py's CSV),
  with the previous round's CSV given with --previous-tree;
- warm_whole_process.png: each whole-process warm review (`pr-check review` in a new process), CPU
  and wall seconds, beside other runs given with --whole-process NAME=JSON.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display: the bench runs headless
import matplotlib.pyplot as plt

NOW, BEFORE = "#2471a3", "#c0392b"
PREVIOUS_AGAIN = (2.4, 6.3)  # issue 21: re-reviews after 120 reviews, 8 of 10 evicted
PREVIOUS_WARM_TREE = {100: 0.04, 6400: 1.36}  # issue 21: warm seconds at 100 and 6,400 packages


def plot_memory(run: dict, before: list[tuple[str, dict]], out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(7, 4))
    reviews = run["distinct"] + run["again"]
    axes.plot(
        range(1, len(reviews) + 1),
        [r["rss_mb"] for r in reviews],
        "o-",
        color=NOW,
        markersize=3,
        label="now: resident after each review",
    )
    for index, (name, document) in enumerate(before):
        axes.plot(
            range(1, len(document["reviews"]) + 1),
            [r["rss_mb"] for r in document["reviews"]],
            "s--",
            color=BEFORE,
            alpha=1 - 0.35 * index,
            markersize=3,
            label=f"before: {name}",
        )
    axes.set_xlabel("reviews in one process")
    axes.set_ylabel("resident set after the review (MB)")
    axes.set_title("Memory across reviews in one process (real commits, one shared cache)")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    path = out / "memory_across_reviews.png"
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_times(run: dict, out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(7, 4))
    first, again = run["distinct"], run["again"]
    xs = range(1, len(first) + 1)
    # Side by side: with the checks on two cores CPU seconds exceed wall seconds, and a bar drawn
    # behind the other would hide it.
    axes.bar([x - 0.2 for x in xs], [r["seconds"] for r in first], 0.4, color=NOW, label="cold: wall s")
    axes.bar(
        [x + 0.2 for x in xs],
        [r["cpu_s"] for r in first],
        0.4,
        color=NOW,
        alpha=0.35,
        label="cold: CPU s (workers included)",
    )
    axes.axhline(5.0, color=NOW, linestyle="--", linewidth=0.8, label="target cold median: 5 s")
    xs_again = range(len(first) + 2, len(first) + 2 + len(again))
    axes.bar(xs_again, [r["seconds"] for r in again], color="#27ae60", alpha=0.35, label="again: wall s")
    axes.bar(xs_again, [r["cpu_s"] for r in again], color="#27ae60", label="again: CPU s")
    axes.fill_between(
        [xs_again.start - 0.5, xs_again.stop - 0.5],
        *PREVIOUS_AGAIN,
        color=BEFORE,
        alpha=0.15,
        label="before: re-reviews 2.4-6.3 s (evicted)",
    )
    axes.axhline(1.0, color=BEFORE, linestyle=":", label="target for a re-review: 1 s")
    axes.set_yscale("log")
    axes.set_xlabel(f"the {len(first)} distinct commits in order, then {len(again)} of them again")
    axes.set_ylabel("seconds (log scale)")
    axes.set_title("A busy day: real commits reviewed in one repository, default cache")
    axes.legend(fontsize=7, loc="upper right")
    path = out / "busy_day_times.png"
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_whole_process(run: dict, others: list[tuple[str, dict]], out: Path) -> Path:
    figure, axes = plt.subplots(figsize=(7, 4))
    colors = (BEFORE, "#8e44ad", "#7f8c8d")
    series = [("now", run, NOW)] + [(name, doc, colors[i % len(colors)]) for i, (name, doc) in enumerate(others)]
    width = 0.8 / len(series)
    for offset, (name, document, color) in enumerate(series):
        reviews = document["whole_process"]["reviews"]
        xs = [i + offset * width for i in range(1, len(reviews) + 1)]
        axes.bar(xs, [r["seconds"] for r in reviews], width, color=color, alpha=0.3, label=f"{name}: wall s")
        axes.bar(xs, [r["cpu_s"] for r in reviews], width, color=color, label=f"{name}: CPU s")
    axes.axhline(0.3, color="#27ae60", linestyle=":", label="target median: 0.3 s")
    axes.set_yscale("log")
    axes.set_xlabel("real commit (the judged commits, in order)")
    axes.set_ylabel("seconds, whole process (log scale)")
    axes.set_title("Warm review of a real commit in a new process (`pr-check review`)")
    axes.legend(fontsize=7)
    path = out / "warm_whole_process.png"
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_tree(rows: list[dict], out: Path, previous_rows: list[dict] | None = None) -> Path:
    sizes = sorted(int(r["packages"]) for r in rows if r["sweep"] == "tree")
    by_size = {int(r["packages"]): r for r in rows if r["sweep"] == "tree"}
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(sizes, [float(by_size[s]["warm_cpu_s"]) for s in sizes], "o-", color=NOW, label="now: warm CPU s")
    axes.plot(sizes, [float(by_size[s]["warm_s"]) for s in sizes], "o:", color=NOW, alpha=0.5, label="now: warm wall s")
    if previous_rows:
        earlier = {int(r["packages"]): r for r in previous_rows if r["sweep"] == "tree"}
        shown = sorted(earlier)
        axes.plot(
            shown,
            [float(earlier[s]["warm_cpu_s"]) for s in shown],
            "^-",
            color="#8e44ad",
            label="previous round: warm CPU s",
        )
    previous = sorted(PREVIOUS_WARM_TREE)
    axes.plot(previous, [PREVIOUS_WARM_TREE[s] for s in previous], "s--", color=BEFORE, label="before: warm s")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("generated packages (log scale)")
    axes.set_ylabel("warm review seconds (log scale)")
    axes.set_title("Warm review against tree size (5-file pull request)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    path = out / "warm_tree_size.png"
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--before", type=Path, action="append", default=[])
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--previous-tree", type=Path, help="the previous round's tree-size CSV")
    parser.add_argument(
        "--whole-process",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="another run's whole-process warm reviews beside this one's (a busy_day.json)",
    )
    parser.add_argument("--out", type=Path, default=Path("docs/bench/busy_day"))
    arguments = parser.parse_args(argv)
    arguments.out.mkdir(parents=True, exist_ok=True)
    run = json.loads(arguments.run.read_text())
    before = [(path.stem, json.loads(path.read_text())) for path in arguments.before]
    others = [
        (item.split("=", 1)[0], json.loads(Path(item.split("=", 1)[1]).read_text())) for item in arguments.whole_process
    ]
    written = [
        plot_memory(run, before, arguments.out),
        plot_times(run, arguments.out),
        plot_whole_process(run, others, arguments.out),
    ]
    if arguments.tree is not None:
        with arguments.tree.open() as handle:
            rows = list(csv.DictReader(handle))
        previous_rows = None
        if arguments.previous_tree is not None:
            with arguments.previous_tree.open() as handle:
                previous_rows = list(csv.DictReader(handle))
        written.append(plot_tree(rows, arguments.out, previous_rows))
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
