"""Two versions of pr-check, the same inputs, their findings diffed: the proof that a refactor changed nothing.

    python bench/version_parity.py run --source DIR --out FILE.json [--sets examples,cases,seed,commits,corpus,history]
    python bench/version_parity.py compare A.json B.json

`run` imports bot/, checks/, pr_check/ (and the test helper that turns a rule example into a Snapshot)
from DIR, so an old version unpacked with `git archive REV | tar -x -C DIR` and the work tree are
reviewed by the same script. The sets:
- examples: every rule's bad and good examples, each run through the engine with its own rule
  (the way tests/test_check_examples.py does, with that version's helper);
- cases: every fixture case (fixtures/cases/) built as a real git repository and reviewed;
- seed: the seed pull requests rebuilt on the mirror (bench/seed_prs);
- commits: the findings-parity commits of tests/real_tree/layout_baseline.json, each against its parent;
- corpus: every regression of the corpus at its introducer and its fix, and every quiet commit;
- history: the real-history bench's commits (bench/real_history.py's window and count).
Every finding is written whole (its public JSON and its fix's repr). `compare` prints each input whose
findings differ and exits 1 if any does. `run` also appends each input to FILE.jsonl as it is done, so
a long run stopped early still compares (`compare A.jsonl B.jsonl`: the inputs both runs reached).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

SETS = ("examples", "cases", "seed", "commits", "corpus", "history")
DEFAULT_MIRROR = "/work/.mirror/pytorch+executorch/repo"


def _use_source(source: Path) -> None:
    """Import the product from `source`: an editable install's finder would otherwise answer first."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, str(source))


def _records(findings) -> list[dict]:
    records = []
    for finding in findings:
        record = finding.to_json()
        record["fix"] = None if finding.fix is None else repr(finding.fix)
        records.append(record)
    return sorted(records, key=lambda r: json.dumps(r, sort_keys=True))


def _example_findings() -> Iterator[tuple[str, list[dict]]]:
    from bot import engine
    from checks import ALL

    snapshot_of = importlib.import_module("tests.test_check_examples")._snapshot
    for check in ALL:
        for kind, examples in (("bad", check.bad), ("good", check.good)):
            for index, example in enumerate(examples):
                result = engine.run([check], snapshot_of(example))
                yield f"{check.id}/{kind}/{index}", _records(result.findings)


def _case_findings(workdir: Path) -> Iterator[tuple[str, list[dict]]]:
    from fixtures.cases import CASES, build_case_repository
    from pr_check.review import review_repository

    for case in sorted(CASES):
        path, base, head = build_case_repository(case, workdir / case)
        report = review_repository(path, base, head, cache_dir=workdir / "cache" / case)
        yield case, [*_records(report.findings), {"suppressed": _records(report.suppressed)}]


def _pairs_findings(mirror: Path, pairs: list[tuple[str, str, str]], cache: Path) -> Iterator[tuple[str, list[dict]]]:
    from pr_check.review import review_repository

    for key, base, head in pairs:
        started = time.perf_counter()
        report = review_repository(mirror, base, head, cache_dir=cache)
        print(f"  {key} {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
        yield key, [*_records(report.findings), {"suppressed": _records(report.suppressed)}]


def _seed_findings(mirror: Path, workdir: Path) -> Iterator[tuple[str, list[dict]]]:
    from bench.seed_prs import SEED_PRS, build_commits

    repo, commits = build_commits(mirror, workdir)
    pairs = [(f"#{pr.number}", commits[pr.base], commits[pr.head]) for pr in SEED_PRS]
    yield from _pairs_findings(repo, pairs, workdir / "seed-cache")


def _layout_commits(root: Path) -> list[tuple[str, str, str]]:
    commits = json.loads((root / "tests" / "real_tree" / "layout_baseline.json").read_text())
    return [(sha[:12], f"{sha}^", sha) for sha in sorted(commits)]


def _corpus_pairs() -> list[tuple[str, str, str]]:
    from bench.corpus import load_corpus

    regressions, quiet = load_corpus()
    pairs = []
    for regression in regressions:
        pairs.append((f"{regression.id}@introducer", f"{regression.introducer}^", regression.introducer))
        pairs.append((f"{regression.id}@fix", f"{regression.fix}^", regression.fix))
    pairs.extend((f"quiet/{entry.commit[:12]}", f"{entry.commit}^", entry.commit) for entry in quiet)
    return pairs


def _history_pairs(mirror: Path) -> list[tuple[str, str, str]]:
    from bench.real_history import BENCH_COUNT, BENCH_SINCE, BENCH_UNTIL, history_commits

    commits = history_commits(mirror, BENCH_SINCE, BENCH_UNTIL, BENCH_COUNT, "refs/heads/main")
    return [(sha[:12], f"{sha}^", sha) for sha in commits]


def run(source: Path, sets: list[str], mirror: Path, out: Path) -> int:
    """Review every input of `sets` with the code in `source` and write the findings to `out`."""
    _use_source(source)
    document: dict[str, dict[str, list[dict]]] = {}
    with tempfile.TemporaryDirectory(prefix="pr-check-version-parity-") as directory:
        workdir = Path(directory)
        producers: dict[str, Callable[[], Iterator[tuple[str, list[dict]]]]] = {
            "examples": _example_findings,
            "cases": lambda: _case_findings(workdir / "cases"),
            "seed": lambda: _seed_findings(mirror, workdir / "seed"),
            "commits": lambda: _pairs_findings(mirror, _layout_commits(source), workdir / "commits-cache"),
            "corpus": lambda: _pairs_findings(mirror, _corpus_pairs(), workdir / "corpus-cache"),
            "history": lambda: _pairs_findings(mirror, _history_pairs(mirror), workdir / "history-cache"),
        }
        progress = out.with_suffix(".jsonl")
        progress.write_text("")
        for name in sets:
            (workdir / name).mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            document[name] = {}
            for key, records in producers[name]():
                document[name][key] = records
                with progress.open("a") as lines:
                    lines.write(json.dumps({"set": name, "key": key, "records": records}, sort_keys=True) + "\n")
            print(f"{name}: {len(document[name])} inputs, {time.perf_counter() - started:.0f}s", file=sys.stderr)
    out.write_text(json.dumps(document, indent=1, sort_keys=True))
    return 0


def compare(first: Path, second: Path) -> int:
    """Print every input whose findings differ between two runs; 1 if any does."""
    left, right = _load(first), _load(second)
    if first.suffix == ".jsonl" or second.suffix == ".jsonl":  # runs stopped early: what both reached
        for name in left.keys() & right.keys():
            both = left[name].keys() & right[name].keys()
            left[name] = {key: left[name][key] for key in both}
            right[name] = {key: right[name][key] for key in both}
    differing = 0
    for name in sorted(left.keys() & right.keys()):
        a, b = left[name], right[name]
        for key in sorted(a.keys() | b.keys()):
            if a.get(key) != b.get(key):
                differing += 1
                print(f"{name}/{key}:\n  {first.name}: {a.get(key)}\n  {second.name}: {b.get(key)}")
        count = sum(len(v) for v in a.values())
        print(f"{name}: {len(a.keys() | b.keys())} inputs ({count} records), differing so far: {differing}")
    only = sorted(left.keys() ^ right.keys())
    if only:
        print(f"sets in one run only (not compared): {only}")
    return 1 if differing else 0


def _load(path: Path) -> dict[str, dict[str, list[dict]]]:
    if path.suffix != ".jsonl":
        return json.loads(path.read_text())
    document: dict[str, dict[str, list[dict]]] = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        document.setdefault(entry["set"], {})[entry["key"]] = entry["records"]
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run", help="review every input with one version's code")
    running.add_argument("--source", type=Path, required=True, help="a directory holding bot/, checks/, pr_check/")
    running.add_argument("--out", type=Path, required=True)
    running.add_argument("--sets", default="examples,cases,seed,commits", help=f"comma-separated, of {','.join(SETS)}")
    running.add_argument("--mirror", type=Path, default=Path(DEFAULT_MIRROR))
    comparing = commands.add_parser("compare", help="diff two runs")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    arguments = parser.parse_args(argv)
    if arguments.command == "compare":
        return compare(arguments.first, arguments.second)
    sets = [name for name in arguments.sets.split(",") if name]
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        parser.error(f"unknown sets {unknown}; choose from {', '.join(SETS)}")
    return run(arguments.source.resolve(), sets, arguments.mirror, arguments.out)


if __name__ == "__main__":
    sys.exit(main())
