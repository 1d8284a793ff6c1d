"""What each check costs in a cold review of a new head, and which facts it shares with others.

    python -m bench.check_costs --repo CLONE [--first 5 --count 12] [--out FILE]

The commits are those of `bench.cold_pairs` (`history_commits(repo, "2025-11-01", "2026-09-01", 40,
"refs/heads/main")[first:first + count]`), reviewed in a row with one fresh store; the first 2 warm it
and are left out. For the others, serially in one process: the seconds to evaluate the head's Buck
cells, then per check the seconds of its head run and of its baseline run, and per fact (name and
inputs) the seconds spent deriving or reading it (nested facts excluded) and the checks that asked
for it. From these, `--partition` prices a split of the checks over two processes: each process pays
its checks' own time and every fact any of its checks asks for, once (what the engine's check worker
does, bot/parallel/check_split.py).

This is a measuring tool: it times the checks by wrapping their `run` and the fact cache's methods
in this process only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path


def _instrumented(state: dict) -> None:
    """Wrap FactCache.fact/many (this process only) to time facts into `state["record"]`, nested
    ones excluded."""
    from bot.store import memo as cache

    stack: list[list[float]] = []  # per open fact call: [time spent in nested fact calls]

    def timed(kind, original):
        def wrapper(self, name, inputs, compute, **kwargs):
            record = state["record"]
            if record is None:
                return original(self, name, inputs, compute, **kwargs)
            if kind == "many":
                inputs = list(inputs)
            memo_hit = kind == "fact" and (name, inputs) in self._memo  # noqa: SLF001 - measuring
            if memo_hit:
                record["asked"][state["check"]].add(_fact_id(name, inputs))
                return original(self, name, inputs, compute, **kwargs)
            stack.append([0.0])
            started = time.perf_counter()
            try:
                return original(self, name, inputs, compute, **kwargs)
            finally:
                spent = time.perf_counter() - started
                nested = stack.pop()[0]
                if stack:
                    stack[-1][0] += spent
                ident = _fact_id(name, inputs if kind == "fact" else tuple(sorted(map(repr, inputs))))
                record["asked"][state["check"]].add(ident)
                record["cost"][ident] = record["cost"].get(ident, 0.0) + spent - nested
                record["paid"][state["check"]] += spent - nested

        return wrapper

    cache.FactCache.fact = timed("fact", cache.FactCache.fact)
    cache.FactCache.many = timed("many", cache.FactCache.many)


def _fact_id(name, inputs) -> str:
    import hashlib

    label = name if isinstance(name, str) else ":".join(map(str, name))[:60]
    return f"{label}#{hashlib.blake2b(repr(inputs).encode(), digest_size=5).hexdigest()}"


def measure(repo: Path, commits: list[str], store: Path) -> list[dict]:
    import checks
    from bot.buck.cells import CELLS
    from pr_check.review import review_repository

    rows = []
    state: dict = {"check": "", "record": None}
    _instrumented(state)
    for index, sha in enumerate(commits):
        if index < 2:
            review_repository(repo, f"{sha}^", sha, cache_dir=store)
            continue
        record: dict = {"asked": defaultdict(set), "cost": {}, "paid": defaultdict(float), "own": {}, "cells": 0.0}
        state["record"] = record
        timings: dict[str, float] = defaultdict(float)

        def wrap(check, record=record, timings=timings):
            def run(snapshot, options):
                if not record["cells"]:
                    started = time.perf_counter()
                    state["check"] = "<head cells>"
                    for cell in CELLS:
                        snapshot.head.cell(cell)
                    record["cells"] = time.perf_counter() - started
                state["check"] = check.id
                started = time.perf_counter()
                hits = list(check.run(snapshot, options))
                timings[check.id] += time.perf_counter() - started
                return iter(hits)

            return replace(check, run=run)

        started = time.perf_counter()
        report = review_repository(
            repo,
            f"{sha}^",
            sha,
            cache_dir=store,
            checks=[wrap(c) for c in checks.ALL],
            stored_results=False,
            check_jobs=1,
        )
        state["record"] = None
        rows.append(
            {
                "commit": sha,
                "seconds": round(time.perf_counter() - started, 3),
                "head_cells_s": round(record["cells"], 3),
                "checks_s": {k: round(v, 3) for k, v in timings.items()},
                "facts_s": {k: round(v, 4) for k, v in record["cost"].items() if v >= 0.001},
                "asked": {k: sorted(v) for k, v in record["asked"].items()},
                "paid_s": {k: round(v, 4) for k, v in record["paid"].items()},
                "findings": len(report.findings),
            }
        )
        print(
            f"{sha[:10]} {rows[-1]['seconds']:6.2f} s, head cells {record['cells']:5.2f} s, "
            f"checks {sum(timings.values()):5.2f} s",
            file=sys.stderr,
            flush=True,
        )
    return rows


def price(rows: list[dict], worker: set[str]) -> list[tuple[float, float, float]]:
    """(serial, parent, worker) seconds per review under a split: each side pays its checks' own
    time (what they spent outside facts) and each fact its checks asked for, once; the parent
    also the head's cells, before the fork (and serial: the cells and every check)."""
    out = []
    for row in rows:
        own = {c: max(0.0, s - row["paid_s"].get(c, 0.0)) for c, s in row["checks_s"].items()}
        sides = []
        for side in (set(row["checks_s"]) - worker, set(row["checks_s"]) & worker):
            facts = set().union(*(row["asked"].get(c, ()) for c in side)) if side else set()
            sides.append(sum(own[c] for c in side) + sum(row["facts_s"].get(f, 0.0) for f in facts))
        cells = row["head_cells_s"]
        out.append((cells + sum(row["checks_s"].values()), cells + sides[0], sides[1]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="a bare clone sharing the mirror's objects (to measure)")
    parser.add_argument("--first", type=int, default=5)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--store", type=Path, default=Path("/tmp/check-costs"))
    parser.add_argument("--out", type=Path, default=Path("bench/out/check_costs.json"))
    parser.add_argument("--partition", action="store_true", help="price the engine's split from --out")
    arguments = parser.parse_args(argv)
    if arguments.partition:
        import checks
        from bot.check import Share

        rows = json.loads(arguments.out.read_text())
        priced = price(rows, {check.id for check in checks.ALL if check.share is Share.WORKER})
        for row, (serial, parent, worker) in zip(rows, priced, strict=True):
            print(f"{row['commit'][:10]} serial {serial:5.2f} parent {parent:5.2f} worker {worker:5.2f}")
        print(f"median serial {statistics.median(p[0] for p in priced):.2f}")
        print(f"median parent {statistics.median(p[1] for p in priced):.2f}")
        print(f"median worker {statistics.median(p[2] for p in priced):.2f}")
        print(f"median slower side {statistics.median(max(p[1:]) for p in priced):.2f}")
        return 0
    if arguments.repo is None:
        parser.error("--repo is needed to measure")
    import subprocess

    from bench.real_history import history_commits

    listed = history_commits(arguments.repo, "2025-11-01", "2026-09-01", 40, "refs/heads/main")
    subprocess.run(["rm", "-rf", str(arguments.store)], check=True)
    rows = measure(arguments.repo, listed[arguments.first : arguments.first + arguments.count], arguments.store)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
