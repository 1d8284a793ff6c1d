"""The two seed pull requests (#24643, #24817) rebuilt on the Aug 2026 tree and reviewed.

    python -m bench.seed_prs --repo /path/to/executorch.git [--json OUT.json]

`patches/` is a patch series written by hand from the two LLM reviews (../shared/seeds/) and
the PR descriptions, applied in order on the mirror's `refs/heads/main`: 0001 brings the older
tree to what the PRs' base has where they edit it (not part of either PR), 0002 is #24643 as first
posted, 0003 the follow-up that #24817's diff carried as its stacked base, 0004 #24817's own
commit. Each patch's message says what was adapted. The commits are built with git plumbing in a
temporary repository that borrows the mirror's objects (`objects/info/alternates`), so nothing
is checked out and the mirror is only read; author and date come from the patches, so the commit
ids are the same on every run. Each PR is then reviewed twice against its base: cold (a fresh
evaluation cache) and warm (the same cache again), with the compiled tier on where a compiler is
found, as the CLI runs by default.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PATCHES = Path(__file__).parent / "patches"
MAIN_REF = "refs/heads/main"


@dataclass(frozen=True)
class SeedPR:
    """A seed pull request as a range of the series: reviewed `head` against `base`."""

    number: int
    base: int  # index into the built commits (0: the mirror's main)
    head: int
    llm_seconds: int  # how long the LLM review took (from the review's own footer)


# #24643 as first posted sits on the adaptation; #24817's diff held the stacked #24643 follow-up.
SEED_PRS = (SeedPR(24643, base=1, head=2, llm_seconds=972), SeedPR(24817, base=1, head=4, llm_seconds=2662))


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True, env={**os.environ, **(env or {})}
    )
    return done.stdout.decode().strip()


def build_commits(mirror: Path, workdir: Path) -> tuple[Path, list[str]]:
    """A repository borrowing the mirror's objects, holding the series as commits on main.

    Returns the repository and the commit ids: [main, after 0001, after 0002, ...].
    """
    repo = workdir / "seed.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    objects = Path(_git(mirror, "rev-parse", "--path-format=absolute", "--git-path", "objects"))
    (repo / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    commits = [_git(mirror, "rev-parse", MAIN_REF)]
    index = {"GIT_INDEX_FILE": str(workdir / "seed.index")}
    for patch in sorted(PATCHES.glob("*.patch")):
        _git(repo, "read-tree", commits[-1], env=index)
        _git(repo, "apply", "--cached", str(patch), env=index)
        tree = _git(repo, "write-tree", "--missing-ok", env=index)
        info, message = _mail_info(repo, patch)
        identity = {
            "GIT_AUTHOR_NAME": info["Author"],
            "GIT_AUTHOR_EMAIL": info["Email"],
            "GIT_AUTHOR_DATE": info["Date"],
            "GIT_COMMITTER_NAME": info["Author"],
            "GIT_COMMITTER_EMAIL": info["Email"],
            "GIT_COMMITTER_DATE": info["Date"],
        }
        commits.append(_git(repo, "commit-tree", tree, "-p", commits[-1], env=identity, stdin=message.encode()))
    _git(repo, "update-ref", "refs/heads/seed", commits[-1])
    return repo, commits


def _mail_info(repo: Path, patch: Path) -> tuple[dict[str, str], str]:
    """(author fields, commit message) of a format-patch file, as `git am` would read them."""
    with tempfile.TemporaryDirectory() as scratch:
        message, body = Path(scratch) / "msg", Path(scratch) / "patch"
        header = _git(repo, "mailinfo", str(message), str(body), stdin=patch.read_bytes())
        fields = dict(line.split(": ", 1) for line in header.splitlines() if ": " in line)
        return fields, f"{fields['Subject']}\n\n{message.read_text()}"


def review_seed(repo: Path, commits: list[str], pr: SeedPR, cache_dir: Path, *, compiled: bool | None = None):
    """The review of one seed PR (its head against its base) with the given evaluation cache; the
    compiled tier as the CLI has it by default (on where a compiler is found), so that the rules'
    predictions of compile failures are asked of the compiler."""
    from pr_check.review import review_repository  # imported on use: `--help` stays instant

    return review_repository(repo, commits[pr.base], commits[pr.head], cache_dir=cache_dir, compiled=compiled)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.seed_prs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a pytorch/executorch mirror (bare is fine)")
    parser.add_argument("--json", type=Path, help="write findings and timings here")
    parser.add_argument("--only", type=int, help=argparse.SUPPRESS)  # one PR, in this process (the child)
    args = parser.parse_args(argv)
    if args.only is not None:
        print(json.dumps(_review_cold_then_warm(args.repo, next(pr for pr in SEED_PRS if pr.number == args.only))))
        return 0
    rows = []
    for pr in SEED_PRS:
        # One fresh process per PR: "cold" shares nothing with the review of the other PR.
        child = subprocess.run(
            [sys.executable, "-m", "bench.seed_prs", "--repo", str(args.repo), "--only", str(pr.number)],
            capture_output=True,
            check=True,
            text=True,
        )
        row = json.loads(child.stdout.splitlines()[-1])
        print(
            f"#{pr.number}  {row['base'][:10]}..{row['head'][:10]}  cold {row['cold_seconds']} s  "
            f"warm {row['warm_seconds']} s  (LLM {pr.llm_seconds} s)"
        )
        for f in row["findings"]:
            print(
                f"  {f['severity']:7} {f['rule']:32} {f['cell'] or '-':6} {f['path']}:{f['line']} {f['target'] or ''}"
            )
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def _review_cold_then_warm(mirror: Path, pr: SeedPR) -> dict:
    """Build the series, then review `pr` with a fresh cache (cold) and again (warm)."""
    with tempfile.TemporaryDirectory() as scratch:
        repo, commits = build_commits(mirror, Path(scratch))
        cache = Path(scratch) / "cache"
        timings = []
        for _run in ("cold", "warm"):
            started = time.perf_counter()
            report = review_seed(repo, commits, pr, cache)
            timings.append(time.perf_counter() - started)
    order = sorted(report.findings, key=lambda f: (-f.severity, f.rule, f.path, f.line))
    return {
        "pr": pr.number,
        "base": commits[pr.base],
        "head": commits[pr.head],
        "cold_seconds": round(timings[0], 1),
        "warm_seconds": round(timings[1], 1),
        "llm_seconds": pr.llm_seconds,
        "findings": [f.to_json() for f in order],
    }


if __name__ == "__main__":
    sys.exit(main())
