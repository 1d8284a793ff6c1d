"""Review real commits of a pytorch/executorch mirror that touch the CUDA backend.

    python -m bench.real_commits --repo /path/to/executorch.git [--count 12]

For each commit (against its first parent): cold and warm review time, findings by rule and
severity, packages evaluated and failed per cell. Read-only on the mirror except the cache dir.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import tempfile
import time
from pathlib import Path

from pr_check.review import review_repository

PATHS = ("backends/cuda", "backends/aoti", "extension/cuda")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--ref", default="refs/heads/main")
    parser.add_argument("--count", type=int, default=12)
    arguments = parser.parse_args()
    commits = subprocess.run(
        [
            "git",
            "-C",
            str(arguments.repo),
            "log",
            "--format=%H %s",
            f"-{arguments.count}",
            "--no-merges",
            arguments.ref,
            "--",
            *PATHS,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    with tempfile.TemporaryDirectory(prefix="pr-check-real-") as directory:
        cache = Path(directory)
        for line in commits:
            sha, subject = line.split(" ", 1)
            started = time.perf_counter()
            report = review_repository(arguments.repo, f"{sha}^", sha, cache_dir=cache)
            cold = time.perf_counter() - started
            started = time.perf_counter()
            review_repository(arguments.repo, f"{sha}^", sha, cache_dir=cache)
            warm = time.perf_counter() - started
            rules = collections.Counter(f"{f.rule}:{f.severity.label}" for f in report.findings)
            cells = {c: f"{v.packages}p/{v.failed}f" for c, v in report.stats.cells.items()}
            print(
                f"{sha[:10]} cold {cold:5.2f}s warm {warm:5.2f}s files {len(report.changes.files):3d} {cells} {dict(rules) or 'clean'} smoke={report.smoke.required} | {subject[:60]}"
            )


if __name__ == "__main__":
    main()
