"""Findings of real commits, written so that two versions of the code can be compared line by line.

    python bench/parity.py --repo MIRROR --out FILE.json [--count 12] [--since ..] [--until ..]
    python bench/parity.py --compare A.json B.json

Each commit is reviewed against its first parent in one process with one shared cache directory
(as the App does); every finding is written whole (its public JSON: rule, severity, path, lines,
target, cell, title, message, fingerprint, evidence, fix) with the process's resident set after
the review. Run it as a file (not `-m bench`) so that PYTHONPATH can point at another version's
source: `--source /tmp/old` reviews with the code unpacked there (`git archive REV | tar -x -C /tmp/old`).
`--compare` prints every commit whose findings differ and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import tempfile
import time
from pathlib import Path


def resident_mb() -> float:
    """The process's resident set now (not its peak), in MB."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 1e6


def _finding(finding) -> dict:
    record = finding.to_json()
    record["fix"] = None if finding.fix is None else repr(finding.fix)
    return record


def review_all(repo: Path, commits: list[str], cache: Path) -> list[dict]:
    """One record per commit: its findings (sorted), suppressed findings, seconds, RSS after."""
    from pr_check.review import review_repository

    records = []
    for index, sha in enumerate(commits, 1):
        started = time.perf_counter()
        report = review_repository(repo, f"{sha}^", sha, cache_dir=cache)
        seconds = time.perf_counter() - started
        findings = sorted((_finding(f) for f in report.findings), key=lambda r: json.dumps(r, sort_keys=True))
        suppressed = sorted((_finding(f) for f in report.suppressed), key=lambda r: json.dumps(r, sort_keys=True))
        del report
        gc.collect()
        records.append(
            {
                "commit": sha,
                "findings": findings,
                "suppressed": suppressed,
                "seconds": round(seconds, 3),
                "rss_mb": round(resident_mb(), 1),
            }
        )
        print(
            f"[{index}/{len(commits)}] {sha[:10]} {seconds:6.2f}s findings {len(findings)} "
            f"rss {records[-1]['rss_mb']:.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    return records


def scan_all(repo: Path, commits: list[str], cache: Path) -> list[dict]:
    """Every finding of each whole tree (`pr-check scan`): many more findings than the new-at-head
    findings of a review, so two versions of the code are compared on far more of their output."""
    from bot.repo import GitRepository
    from bot.store.evaluations import EvaluationCache
    from pr_check.review import scan_tree

    records = []
    with GitRepository(repo) as repository:
        for sha in commits:
            started = time.perf_counter()
            report = scan_tree(repository.tree(sha), cache=EvaluationCache(cache))
            seconds = time.perf_counter() - started
            findings = sorted((_finding(f) for f in report.findings), key=lambda r: json.dumps(r, sort_keys=True))
            suppressed = sorted((_finding(f) for f in report.suppressed), key=lambda r: json.dumps(r, sort_keys=True))
            records.append(
                {
                    "commit": sha,
                    "findings": findings,
                    "suppressed": suppressed,
                    "seconds": round(seconds, 3),
                    "rss_mb": round(resident_mb(), 1),
                }
            )
            print(f"scan {sha[:10]} {seconds:6.2f}s findings {len(findings)}", file=sys.stderr, flush=True)
    return records


def compare(first: Path, second: Path) -> int:
    """Print the commits whose findings differ between two runs; 1 if any does."""
    left = {r["commit"][:10]: r for r in json.loads(first.read_text())["reviews"]}  # short and full ids alike
    right = {r["commit"][:10]: r for r in json.loads(second.read_text())["reviews"]}
    differing = 0
    for sha in sorted(left.keys() & right.keys()):
        for kind in ("findings", "suppressed"):
            a = {json.dumps(f, sort_keys=True) for f in left[sha][kind]}
            b = {json.dumps(f, sort_keys=True) for f in right[sha][kind]}
            if a != b:
                differing += 1
                print(
                    f"{sha[:10]} {kind}: only in {first.name}: {sorted(a - b)}\n  only in {second.name}: {sorted(b - a)}"
                )
    print(
        f"{len(left.keys() & right.keys())} commits compared "
        f"({sum(len(left[c]['findings']) for c in left.keys() & right.keys())} findings), {differing} differ"
    )
    return 1 if differing else 0


def _use_source(source: Path) -> None:
    """Import bot/, checks/, pr_check/ from `source`: an editable install's finder would
    otherwise answer first, whatever sys.path says."""
    sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in type(f).__name__ and "editable" not in repr(f)]
    sys.path.insert(0, str(source))


def main(argv: list[str] | None = None) -> int:
    if "--source" in (argv or sys.argv):
        arguments = argv or sys.argv
        _use_source(Path(arguments[arguments.index("--source") + 1]).resolve())
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.real_history import history_commits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--ref", default="refs/heads/main")
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--since", default="2025-11-01")
    parser.add_argument("--until", default="2026-09-01")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cache", type=Path, default=None, help="cache directory (default: a new temporary one)")
    parser.add_argument("--commits", help="comma-separated commits to review instead of --count of the history")
    parser.add_argument("--scan", action="store_true", help="scan each commit's whole tree instead of reviewing it")
    parser.add_argument("--source", type=Path, help="review with the code in this directory instead")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    arguments = parser.parse_args(argv)
    if arguments.compare:
        return compare(*arguments.compare)
    if arguments.commits:
        commits = arguments.commits.split(",")
    else:
        commits = history_commits(arguments.repo, arguments.since, arguments.until, arguments.count, arguments.ref)
    with tempfile.TemporaryDirectory(prefix="pr-check-parity-") as directory:
        run = scan_all if arguments.scan else review_all
        records = run(arguments.repo, commits, arguments.cache or Path(directory))
    import bot

    document = {
        "source": str(Path(bot.__file__).resolve().parents[1]),
        "reviews": records,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    arguments.out.write_text(json.dumps(document, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
