"""Precision on a held-out window: every blocker/major finding on sampled commits, written to judge.

    nice -n 10 python -m bench.precision --repo /path/to/executorch.git \
        [--since 2024-06-01 --until 2025-06-01] [--count 150] [--out bench/out/precision] [--cache DIR]
        [--verdicts tests/real_tree/precision_2024.toml] [--part K/N] [--only SHA ...]

The sample is `--count` first-parent commits of refs/heads/main touching Buck or CMake files in
the window, evenly spaced (bench/real_history.py's selection), leaving out every commit the
regression corpus names. Each is reviewed against its first parent; OUT/loud.tsv lists every
blocker/major finding (commit, rule, cell, path, line, target, title) for a person to judge in
the verdicts file (one per window: precision_2024.toml for Jun 2024 - May 2025, precision_2023.toml
for Jul 2023 - May 2024), and OUT/summary.txt the commits reviewed and the counts.
With the judged file present, the figures (precision, commits blocked by false findings alone)
are printed as well, and findings not judged yet are listed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.corpus import CORPUS_DIR, load_corpus
from bench.real_history import BENCH_COUNT, BENCH_SINCE, BENCH_UNTIL, history_commits

VERDICTS = Path(__file__).resolve().parent.parent / "tests" / "real_tree" / "precision_2024.toml"
LOUD = ("blocker", "major")


def corpus_commits() -> set[str]:
    """Short shas (10 hex) of every commit the corpus names."""
    regressions, quiet = load_corpus(CORPUS_DIR)
    named = {r.introducer for r in regressions} | {r.fix for r in regressions} | {q.commit for q in quiet}
    return {sha[:10] for sha in named}


REAL_TREE = VERDICTS.parent
# The earlier precision samples, as they were drawn (since, until, count); the fourth is listed in
# precision_2026_sample.txt and left the bench's 150 out.
EARLIER_SAMPLES = (
    ("2023-07-01", "2024-06-01", 150),
    ("2024-06-01", "2025-06-01", 150),
    ("2025-06-01", "2025-11-01", 150),
)


def judged_commits() -> set[str]:
    """Short shas of every commit a judged file of tests/real_tree names: the verdicts of the bench
    and of every precision sample, their first-run tables, and the listed samples."""
    named: set[str] = set()
    for path in REAL_TREE.glob("*.toml"):
        for entry in tomllib.loads(path.read_text()).get("finding", ()):
            if "commit" in entry:  # scan_rule_families.toml judges a tree, not commits
                named.add(entry["commit"][:10])
    for path in REAL_TREE.glob("precision_*.tsv"):
        named.update(line.split("\t", 1)[0][:10] for line in path.read_text().splitlines() if line.strip())
    for path in REAL_TREE.glob("precision_*_sample.txt"):
        named.update(sha[:10] for sha in path.read_text().split())
    return named


def overlaps_with_judged(sample: set[str], own: tuple[Path, ...]) -> dict[str, set[str]]:
    """File name -> the picks of `sample` (short shas) it names, for the corpus and every judged file
    and sample list of tests/real_tree but the sample's `own` files: empty for a sample of unseen commits."""
    found: dict[str, set[str]] = {"corpus": sample & corpus_commits()}
    for path in REAL_TREE.glob("*.toml"):
        if path not in own:
            entries = tomllib.loads(path.read_text()).get("finding", ())
            found[path.name] = sample & {e["commit"][:10] for e in entries if "commit" in e}
    for path in REAL_TREE.glob("precision_*_sample.txt"):
        if path not in own:
            found[path.name] = sample & {sha[:10] for sha in path.read_text().split()}
    return {name: shas for name, shas in found.items() if shas}


def earlier_picks(repo: Path, ref: str) -> set[str]:
    """The earlier samples' picks as this code draws them today, each with the commit after it
    (a pick the mirror could not review was replaced by the next). The corpus has grown since,
    which shifts a pool by a few places, so this is close to the picks of the day, not exact:
    `judged_commits` covers every one of them that had a loud finding."""
    picked: set[str] = set()
    excluded = corpus_commits()
    for since, until, count in EARLIER_SAMPLES:
        listed = history_commits(repo, since, until, 10 * count, ref)
        pool = [sha for sha in listed if sha[:10] not in excluded]
        step = max(1.0, len(pool) / count)
        for index in range(min(count, len(pool))):
            pick = int(index * step)
            picked.update(sha[:10] for sha in pool[pick : pick + 2])
    return picked


def verdicts(path: Path = VERDICTS) -> dict[tuple[str, str, str, str], bool]:
    """(commit, rule, cell, path) -> judged true, from the verdicts file."""
    if not path.exists():
        return {}
    document = tomllib.loads(path.read_text())
    # `every = true`: the verdict covers every finding of the rule and cell at that commit (one
    # cause behind many files), keyed with the path "*".
    return {
        (e["commit"][:10], e["rule"], e.get("cell", ""), "*" if e.get("every") else e["path"]): bool(e["verdict"])
        for e in document.get("finding", ())
    }


@dataclass(frozen=True)
class Figures:
    """A window's figures from its loud findings (loud.tsv rows) and its verdicts."""

    commits: int
    findings: int
    commits_with_findings: int
    true: int
    false: int
    blocked_falsely: tuple[str, ...]  # commits whose loud findings are all judged false
    unjudged: tuple[tuple[str, str, str, str], ...]

    @property
    def precision(self) -> float | None:
        judged = self.true + self.false
        return self.true / judged if judged else None


def figures(rows: list[list[str]], commits: int, judged: dict[tuple[str, str, str, str], bool]) -> Figures:
    """Counted per finding (a loud.tsv row: commit, rule, cell, path, ...); a verdict covers its key."""
    true_count = false_count = 0
    unjudged: list[tuple[str, str, str, str]] = []
    by_commit: dict[str, list[bool]] = {}
    for row in rows:
        key = (row[0], row[1], row[2], row[3])
        if key not in judged and (row[0], row[1], row[2], "*") in judged:
            key = (row[0], row[1], row[2], "*")
        if key not in judged:
            unjudged.append(key)
            continue
        by_commit.setdefault(row[0], []).append(judged[key])
        true_count += judged[key]
        false_count += not judged[key]
    blocked = tuple(sha for sha, found in by_commit.items() if not any(found))
    return Figures(
        commits, len(rows), len({r[0] for r in rows}), true_count, false_count, blocked, tuple(dict.fromkeys(unjudged))
    )


def loud_rows(path: Path) -> list[list[str]]:
    """The rows of a loud.tsv (commit, rule, cell, path, line, target, title), header left out."""
    return [line.split("\t") for line in path.read_text().splitlines()[1:] if line.strip()]


def merged(outs: list[Path]) -> tuple[list[list[str]], int]:
    """The loud rows and the number of commits of the parts written under `outs`."""
    rows = [row for out in outs for row in loud_rows(out / "loud.tsv")]
    commits = sum(len((out / "commits.txt").read_text().split()) for out in outs)
    return rows, commits


def main(argv: list[str] | None = None) -> int:
    from bot.errors import GitError, UnknownRevision
    from pr_check.review import review_repository

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="a pytorch/executorch clone or bare mirror (to review)")
    parser.add_argument("--ref", default="refs/heads/main")
    parser.add_argument("--since", default="2024-06-01")
    parser.add_argument("--until", default="2025-06-01")
    parser.add_argument("--count", type=int, default=150)
    parser.add_argument("--out", type=Path, default=Path("bench/out/precision"))
    parser.add_argument("--cache", type=Path, help="an evaluation cache to keep between runs")
    parser.add_argument("--part", default="0/1", help="K/N: review only every N-th pick from the K-th (parallel runs)")
    parser.add_argument("--verdicts", type=Path, default=VERDICTS, help="the judged findings of this window")
    parser.add_argument(
        "--only", nargs="*", default=(), help="review only these picks (short shas): re-checking after a rule change"
    )
    parser.add_argument(
        "--exclude-bench",
        action="store_true",
        help="leave out the 150 commits bench.real_history reviews (a sample of its months disjoint from it)",
    )
    parser.add_argument(
        "--exclude-earlier",
        action="store_true",
        help="also leave out every commit an earlier sample picked or a judged file names (a fresh sample "
        "of months used before)",
    )
    parser.add_argument(
        "--merge",
        nargs="*",
        type=Path,
        help="print the figures of parts already written (their --out), reviewing nothing",
    )
    arguments = parser.parse_args(argv)
    if arguments.merge:
        rows, commits = merged(arguments.merge)
        found = figures(rows, commits, verdicts(arguments.verdicts))
        precision = f": precision {100 * found.precision:.1f} %" if found.precision is not None else ""
        print(
            f"{found.commits} commits; blocker/major findings: {found.findings} on {found.commits_with_findings} commits"
        )
        print(f"judged: {found.true + found.false}, true {found.true}, false {found.false}{precision}")
        print(
            f"commits blocked by false findings alone: {len(found.blocked_falsely)} {' '.join(found.blocked_falsely)}"
        )
        print(f"not judged yet: {len(found.unjudged)}", *("\t".join(key) for key in found.unjudged), sep="\n")
        return 0
    if arguments.repo is None:
        parser.error("--repo is needed to review (only --merge reviews nothing)")
    part, parts = (int(x) for x in arguments.part.split("/"))
    excluded = corpus_commits()
    if arguments.exclude_bench:
        bench_picks = history_commits(arguments.repo, BENCH_SINCE, BENCH_UNTIL, BENCH_COUNT, arguments.ref)
        excluded |= {sha[:10] for sha in bench_picks}
    if arguments.exclude_earlier:
        bench_picks = history_commits(arguments.repo, BENCH_SINCE, BENCH_UNTIL, BENCH_COUNT, arguments.ref)
        excluded |= {sha[:10] for sha in bench_picks} | judged_commits() | earlier_picks(arguments.repo, arguments.ref)
    listed = history_commits(arguments.repo, arguments.since, arguments.until, 10 * arguments.count, arguments.ref)
    pool = [sha for sha in listed if sha[:10] not in excluded]
    step = max(1.0, len(pool) / arguments.count)
    picks = [int(index * step) for index in range(min(arguments.count, len(pool)))]
    arguments.out.mkdir(parents=True, exist_ok=True)
    judged = verdicts(arguments.verdicts)
    rows: list[str] = []
    true_count = false_count = 0
    blocked_falsely: list[str] = []
    unjudged: list[str] = []
    commits: list[str] = []
    unreadable: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pr-check-precision-") as scratch:
        cache = arguments.cache or Path(scratch)
        for index, pick in enumerate(picks, 1):
            if (index - 1) % parts != part:
                continue
            if arguments.only and not any(pool[pick].startswith(sha) for sha in arguments.only):
                continue
            report = None
            # The mirror lacks a few old blobs, and its history starts at a grafted root (Jul 2023)
            # whose parent it does not hold: such a commit is replaced by the next one of the pool.
            for sha in pool[pick : picks[index] if index < len(picks) else len(pool)]:
                try:
                    report = review_repository(arguments.repo, f"{sha}^", sha, cache_dir=cache)
                    break
                except (GitError, UnknownRevision):
                    unreadable.append(sha[:10])
            if report is None:
                continue
            commits.append(sha)
            loud = [f for f in report.findings if f.severity.label in LOUD]
            verdict_of_commit: list[bool] = []
            for finding in loud:
                key = (sha[:10], finding.rule, finding.cell or "", finding.path)
                if key not in judged:
                    key = (*key[:3], "*") if (*key[:3], "*") in judged else key
                rows.append(
                    "\t".join(
                        (
                            sha[:10],
                            finding.rule,
                            finding.cell or "",
                            finding.path,
                            str(finding.line),
                            finding.target or "",
                            finding.title.replace("\t", " "),
                        )
                    )
                )
                if key not in judged:
                    unjudged.append("\t".join(key))
                    continue
                verdict_of_commit.append(judged[key])
                true_count += judged[key]
                false_count += not judged[key]
            if verdict_of_commit and not any(verdict_of_commit):
                blocked_falsely.append(sha[:10])
            print(f"[{index}/{len(picks)}] {sha[:10]} loud {len(loud)}", file=sys.stderr, flush=True)
    (arguments.out / "loud.tsv").write_text("commit\trule\tcell\tpath\tline\ttarget\ttitle\n" + "\n".join(rows) + "\n")
    (arguments.out / "commits.txt").write_text("\n".join(commits) + "\n")
    judged_total = true_count + false_count
    lines = [
        (
            f"{len(commits)} commits of {arguments.ref}, {arguments.since}..{arguments.until} "
            f"(touching Buck/CMake files, corpus commits left out"
            + (", the 150-commit bench's commits left out)" if arguments.exclude_bench else ")")
        ),
        f"blocker/major findings: {len(rows)} on {len({r.split(chr(9))[0] for r in rows})} commits",
        f"judged: {judged_total}, true {true_count}, false {false_count}"
        + (f": precision {100 * true_count / judged_total:.1f} %" if judged_total else ""),
        f"commits blocked by false findings alone: {len(blocked_falsely)} {' '.join(blocked_falsely)}",
        f"left out, objects missing from the mirror: {len(unreadable)} {' '.join(unreadable)}",
        f"not judged yet: {len(unjudged)}",
        *unjudged,
    ]
    (arguments.out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
