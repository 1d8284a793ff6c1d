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


def review_in_child(repo: Path, base: str, head: str, cache: Path, profile: Path | None = None) -> Measured:
    """Review base..head in a new interpreter against `cache`; raises if the child fails."""
    command = [sys.executable, "-m", "bench.child", str(repo), base, head, str(cache)]
    if profile is not None:
        command += ["--profile", str(profile)]
    root = Path(__file__).resolve().parents[1]
    finished = subprocess.run(command, capture_output=True, text=True, cwd=root)
    if finished.returncode != 0:
        raise RuntimeError(f"review child failed ({finished.returncode}): {finished.stderr[-2000:]}")
    return Measured(**json.loads(finished.stdout.strip().splitlines()[-1]))


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
    arguments = parser.parse_args(argv)
    from pr_check.review import review_repository  # imported before the clock starts, as the App preloads it

    profiler = None
    if arguments.profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu_started = _cpu_seconds()
    started = time.perf_counter()
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
