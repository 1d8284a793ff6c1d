"""What the compiled tier adds to a review, on pull requests as posted (before 2025-09-01).

`python -m bench.compiled_tier --repo MIRROR --count 30 [--json out.json]` takes every pull
request head dated before 2025-09-01 whose change touches a C/C++ source or header (as posted:
`refs/pull/N/head` against its merge base with main), spreads `--count` of them evenly over that
list (deterministic: by PR number), and for each one:
- builds what the rules build anyway (the three Buck cells and the configured CMake profiles of
  base and head, and the header graphs), with a shared evaluation cache,
- times the tier alone cold (a fact store of its own, nothing stored) and warm (the same store),
- prints the loud findings (blocker and major) with the compiler's words, for judging by hand.
The seconds are of this machine, as it is loaded; the table gives the median, p90 and max.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bot.errors import MissingObjects

CUTOFF = "2025-09-01"
CPP = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def candidates(repo: Path) -> list[tuple[int, str]]:
    """(PR number, head commit) of every PR head dated before the cutoff, by number."""
    listed = _git(repo, "for-each-ref", "refs/pull/*/head", "--format=%(refname) %(objectname) %(committerdate:short)")
    found = []
    for line in listed.splitlines():
        ref, commit, date = line.split()
        if date < CUTOFF:
            found.append((int(ref.split("/")[2]), commit))
    return sorted(found)


def sample(repo: Path, count: int) -> list[tuple[int, str, str]]:
    """`count` PRs touching C/C++, evenly spread: (number, base, head)."""
    pool = candidates(repo)
    step = max(1, len(pool) // (count * 4))
    chosen: list[tuple[int, str, str]] = []
    for number, head in pool[::step]:
        try:
            base = _git(repo, "merge-base", "refs/heads/main", head).strip()
            names = _git(repo, "diff", "--name-only", base, head).split()
        except subprocess.CalledProcessError:
            continue
        if base and 0 < len(names) <= 60 and any(name.endswith(CPP) for name in names):
            chosen.append((number, base, head))
    spread = max(1, len(chosen) // count)
    return chosen[::spread][:count]


def held_out(path: Path, first: int, count: int) -> list[tuple[int, str, str]]:
    """(number, merge base, head) of the held-out sample file (bench/pr_sample.py), rows first..first+count."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            number, head, base, _date = line.split("\t")
            rows.append((int(number), base, head))
    return rows[first : first + count]


def measure(repo: Path, number: int, base: str, head: str, graphs: Path) -> dict:
    """The tier's cold and warm seconds on one PR, its counts and its loud findings."""
    import checks
    from bot.diff import parse_diff
    from bot.facts.cmake_models import cmake_model
    from bot.facts.compiled import compiled_review
    from bot.facts.header_graph import header_graph
    from bot.pipeline import load_config
    from bot.repo import GitRepository
    from bot.snapshot import BuildModel, Snapshot
    from bot.store.disk import DiskStore
    from bot.store.evaluations import EvaluationCache
    from bot.store.memo import FactCache, reviewing

    with GitRepository(repo) as git, tempfile.TemporaryDirectory() as scratch:
        base_tree, head_tree = git.tree(base), git.tree(head)
        config = load_config(base_tree, checks.ALL)
        evaluation = EvaluationCache(graphs)
        store = DiskStore(Path(scratch) / "facts")
        seconds = []
        review = None
        for _attempt in ("cold", "warm"):
            models = (BuildModel(base_tree, config, evaluation), BuildModel(head_tree, config, evaluation))
            snap = Snapshot(*models, parse_diff(git.diff(base, head)), config)
            with reviewing(FactCache(store)):
                for model in models:  # what the rules build anyway
                    for cell in ("fbcode", "xplat", "oss"):
                        header_graph(model, cell)
                    for profile in config.cmake_profiles:
                        cmake_model(model, profile)
                started = time.perf_counter()
                review = compiled_review(snap)
                seconds.append(round(time.perf_counter() - started, 2))
    assert review is not None
    loud = [
        {
            "rule": "compile-error-new",
            "source": f.source,
            "where": f"{f.path}:{f.line}",
            "words": f.text,
            "configurations": [c.name for c in f.configurations],
            "new": f.new_source,
        }
        for f in review.failures
    ] + [
        {
            "rule": f"link-{f.problem.kind}",
            "owner": f.owner,
            "words": f.problem.text,
            "configurations": [c.name for c in f.configurations],
        }
        for f in review.links
    ]
    return {
        "pr": number,
        "base": base,
        "head": head,
        "cold": seconds[0],
        "warm": seconds[1],
        "compiles": review.compiles,
        "ran": review.ran,
        "unverified": len(review.unverified),
        "left_out": len(review.left_out),
        "loud": loud,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compiled_tier", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--sample", type=Path, help="a held-out sample file (bench/pr_sample.py) instead of the spread")
    parser.add_argument("--first", type=int, default=0, help="with --sample: the first row to take")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as graphs:
        chosen = held_out(args.sample, args.first, args.count) if args.sample else sample(args.repo, args.count)
        for number, base, head in chosen:
            try:
                row = measure(args.repo, number, base, head, Path(graphs))
            except MissingObjects as error:  # the mirror lacks some large blobs: say so, go on
                print(json.dumps({"pr": number, "skipped": str(error).splitlines()[0]}), flush=True)
                continue
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1))
    cold = sorted(r["cold"] for r in rows)
    if cold:
        p90 = cold[min(len(cold) - 1, round(0.9 * (len(cold) - 1)))]
        print(
            f"{len(rows)} PRs: cold median {statistics.median(cold)} s, p90 {p90} s, max {cold[-1]} s; "
            f"warm max {max(r['warm'] for r in rows)} s; loud {sum(len(r['loud']) for r in rows)}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
