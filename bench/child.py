"""One review in a fresh Python process, timed and weighed: the unit every review benchmark uses.

The App reviews each pull request in a child process forked from a server that has the engine
imported (webhooks/isolation.py), with the fact store on disk. So a benchmark review runs the same
way: a new interpreter imports the engine (not timed), reviews once (timed), and reports its own
peak resident set. "Cold" is such a review with an empty cache directory, "warm" a second one of
the same base..head with the same directory: nothing survives between them but the disk store.

    python -m bench.child REPO BASE HEAD CACHE_DIR [--profile FILE]   # prints one JSON line
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Measured:
    """One review: wall seconds of the review itself, its CPU seconds (user + system, less sensitive
    to other load on the machine than wall time), the child's peak RSS, what it found."""

    seconds: float
    cpu_s: float
    peak_rss_mb: float
    findings: int
    packages: int


def review_in_child(
    repo: Path,
    base: str,
    head: str,
    cache: Path,
    profile: Path | None = None,
    source: Path | None = None,
    run_checks: bool = False,
) -> Measured:
    """Review base..head in a new interpreter against `cache`; raises if the child fails.
    `source`: review with the code in that directory (`git archive REV | tar -x`) instead of this one.
    `run_checks`: run the checks even when the review's whole result is stored (what a review of
    new revisions pays, composed from the stored facts)."""
    command = [sys.executable, "-m", "bench.child", str(repo), base, head, str(cache)]
    if profile is not None:
        command += ["--profile", str(profile)]
    if run_checks:
        command += ["--run-checks"]
    root = Path(__file__).resolve().parents[1]
    finished = subprocess.run(command, capture_output=True, text=True, cwd=source or root, env=_env(source or root))
    if finished.returncode != 0:
        raise RuntimeError(f"review child failed ({finished.returncode}): {finished.stderr[-2000:]}")
    return Measured(**json.loads(finished.stdout.strip().splitlines()[-1]))


def _env(root: Path) -> dict[str, str]:
    """The child imports bot/, checks/, pr_check/ from `root` (ahead of an editable install), and
    writes bytecode as an installed package has it (a review's imports are otherwise compiled afresh)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH", "")])])
    return env


def whole_process_review(repo: Path, base: str, head: str, cache: Path, source: Path | None = None) -> Measured:
    """`pr-check review` in a new interpreter, start-up and output included: wall and CPU seconds
    (the child and the git processes it waited for) as a user sees them; RSS and counts are not read."""
    root = source or Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "pr_check.cli", "review", "--repo", str(repo), "--base", base, "--head", head]
    command += ["--cache-dir", str(cache), "--format", "json", "--exit-zero"]
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    finished = subprocess.run(command, capture_output=True, text=True, cwd=root, env=_env(root))
    seconds, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    if finished.returncode != 0:
        raise RuntimeError(f"pr-check review failed ({finished.returncode}): {finished.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    findings = len(json.loads(finished.stdout).get("findings", []))
    return Measured(seconds=round(seconds, 4), cpu_s=round(cpu, 4), peak_rss_mb=0.0, findings=findings, packages=0)


def _cpu_seconds() -> float:
    """User + system CPU of this process and of the git processes it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("cache", type=Path)
    parser.add_argument("--profile", type=Path, help="write cProfile stats of the review here")
    parser.add_argument(
        "--run-checks",
        action="store_true",
        default=bool(os.environ.get("PR_CHECK_BENCH_RUN_CHECKS")),
        help="run the checks even when the whole result is stored (default from PR_CHECK_BENCH_RUN_CHECKS)",
    )
    arguments = parser.parse_args(argv)
    from pr_check.review import review_repository  # imported before the clock starts, as the App preloads it

    profiler = None
    if arguments.profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu_started = _cpu_seconds()
    started = time.perf_counter()
    if arguments.run_checks:
        report = review_repository(
            arguments.repo, arguments.base, arguments.head, cache_dir=arguments.cache, stored_results=False
        )
    else:  # a version without stored results takes no such argument (--source)
        report = review_repository(arguments.repo, arguments.base, arguments.head, cache_dir=arguments.cache)
    seconds = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_started
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(arguments.profile))
    measured = Measured(
        seconds=round(seconds, 4),
        cpu_s=round(cpu, 4),
        # ru_maxrss is in KiB on Linux.
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        findings=len(report.findings),
        packages=max((cell.packages for cell in report.stats.cells.values()), default=0),
    )
    print(json.dumps(asdict(measured)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
