"""Draw the held-out precision sample of the compiled tier: pull requests as posted that touch C++ or build files.

    python -m bench.pr_sample --repo /work/.mirror/pytorch+executorch/repo \
        [--count 120] [--out tests/real_tree/pr_sample_compiled.txt] [--seed pr-sample-compiled-v1]

    # the comment-budget sample of issue 34 (disjoint from both compiled-tier samples):
    python -m bench.pr_sample --repo MIRROR --seed pr-sample-posts-v1 --count 110 \
        --out tests/real_tree/pr_sample_posts.txt

Eligible: a `refs/pull/N/head` whose head commit's committer date is before 2025-09-01 (UTC) and
whose diff from its merge-base with `refs/heads/main` changes at least one C++ or build file
(*.c, *.cc, *.cpp, *.h, *.hpp, *.cu, *.cuh, BUCK, TARGETS, *.bzl, CMakeLists.txt, *.cmake). A head
already on main has itself as merge-base and an empty diff, so it is never drawn.

Excluded: every pull request the repository's real-tree material already uses. The files under
tests/ (the real-tree corpora and samples, the test modules) and bench/seed_prs are read for PR
numbers (`#N`, `pull/N`, `pr = N`) and for hex names of 8 to 40 digits; each name the mirror
resolves to a commit excludes the pull request whose head it is and any pull request its message
names (`(#N)`, `.../pull/N`). Pull requests named by tests/real_tree/compiled_corpus.toml (the
mined compile regressions) are excluded the same way. The earlier samples are files under tests/
too, so a new draw (another `--seed`) is disjoint from them; only the `--out` file itself is not read.

The draw: each eligible pull request is ranked by sha256("<seed>:<N>") and the
first `--count` in rank order that pass the filters are kept. A rank per pull request (not a
shuffle of the whole list) keeps the draw stable when a pull request outside it becomes excluded.
Output: one line per pull request, `N<TAB>head sha<TAB>merge-base sha<TAB>head date`, in rank
order, after `#` comment lines saying how it was drawn.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SEED = "pr-sample-compiled-v1"
CUTOFF = datetime(2025, 9, 1, tzinfo=UTC)
MAIN = "refs/heads/main"
TOUCHED = re.compile(r"\.(c|cc|cpp|h|hpp|cu|cuh|bzl|cmake)$|(^|/)(BUCK|TARGETS|CMakeLists\.txt)$")
PR_NUMBER = re.compile(r"(?:#|pull/|\bpr\s*=\s*|\bPR\s+)(\d{3,6})\b", re.IGNORECASE)
HEX_NAME = re.compile(r"\b[0-9a-f]{8,40}\b")
MESSAGE_PR = re.compile(r"\(#(\d+)\)|/pull/(\d+)")
SCANNED = ("tests", "bench/seed_prs")


@dataclass(frozen=True)
class PullHead:
    """One pull request as posted: its number, head commit and the head's committer time."""

    number: int
    head: str
    when: datetime


@dataclass(frozen=True)
class Drawn:
    """A sampled pull request with the merge-base its diff is taken from."""

    pull: PullHead
    merge_base: str


def git(repo: Path, *arguments: str, stdin: str | None = None) -> str:
    """stdout of a read-only git command on the mirror ('' when it fails)."""
    done = subprocess.run(
        ["git", "-C", str(repo), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    return done.stdout if done.returncode == 0 else ""


def pull_heads(repo: Path) -> list[PullHead]:
    """Every refs/pull/N/head of the mirror with its head's committer time."""
    out = git(repo, "for-each-ref", "--format=%(refname)%09%(objectname)%09%(committerdate:unix)", "refs/pull/*/head")
    heads: list[PullHead] = []
    for line in out.splitlines():
        ref, sha, stamp = line.split("\t")
        if not stamp:
            continue  # a ref to a non-commit object
        heads.append(PullHead(int(ref.split("/")[2]), sha, datetime.fromtimestamp(int(stamp), UTC)))
    return heads


def excluded_pulls(repo: Path, root: Path, heads: list[PullHead], output: Path | None = None) -> frozenset[int]:
    """Pull requests the repository's tests, seed PRs, compile corpus and earlier samples already use
    (`output`, the sample being drawn, is not read)."""
    numbers: set[int] = set()
    names: set[str] = set()
    files = [p for folder in SCANNED for p in sorted((root / folder).rglob("*")) if p.is_file()]
    for path in files:
        if (output is not None and path.resolve() == output.resolve()) or "__pycache__" in path.parts:
            continue  # the sample itself is the output, not material in use
        text = path.read_text(errors="replace")
        numbers.update(int(m.group(1)) for m in PR_NUMBER.finditer(text))
        names.update(HEX_NAME.findall(text))
    resolved: set[str] = set()
    ordered = sorted(names)
    batch = git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin="\n".join(ordered) + "\n")
    for line in batch.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "commit":
            resolved.add(parts[0])
    by_head: dict[str, list[int]] = {}
    for pull in heads:
        by_head.setdefault(pull.head, []).append(pull.number)
    for sha in sorted(resolved):
        numbers.update(by_head.get(sha, ()))
    if resolved:
        log = git(repo, "log", "--no-walk=unsorted", "--format=%B%x00", *sorted(resolved))
        for match in MESSAGE_PR.finditer(log):
            numbers.add(int(match.group(1) or match.group(2)))
    return frozenset(numbers)


def rank(number: int, seed: str = SEED) -> str:
    """The pull request's place in the draw: a hash of the seed and its number."""
    return hashlib.sha256(f"{seed}:{number}".encode()).hexdigest()


def touches_cpp_or_build(repo: Path, merge_base: str, head: str) -> bool:
    """Whether the pull request's diff from its merge-base changes a C++ or build file."""
    names = git(repo, "diff", "--name-only", "--no-renames", merge_base, head)
    return any(TOUCHED.search(name) for name in names.splitlines())


def draw(repo: Path, root: Path, count: int, seed: str = SEED, output: Path | None = None) -> list[Drawn]:
    """The first `count` eligible pull requests in rank order."""
    heads = [pull for pull in pull_heads(repo) if pull.when < CUTOFF]
    excluded = excluded_pulls(repo, root, heads, output)
    drawn: list[Drawn] = []
    for pull in sorted(heads, key=lambda p: rank(p.number, seed)):
        if pull.number in excluded:
            continue
        base = git(repo, "merge-base", pull.head, MAIN).strip()
        if not base or base == pull.head:
            continue
        if touches_cpp_or_build(repo, base, pull.head):
            drawn.append(Drawn(pull, base))
            if len(drawn) == count:
                break
    return drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--root", type=Path, default=Path(), help="this repository (for the exclusions)")
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--out", type=Path, default=Path("tests/real_tree/pr_sample_compiled.txt"))
    parser.add_argument("--seed", default=SEED, help="names the draw; a new seed draws a new sample")
    arguments = parser.parse_args(argv)
    drawn = draw(arguments.repo, arguments.root, arguments.count, arguments.seed, arguments.out)
    lines = [
        "# Sample of pull requests as posted (head before 2025-09-01, touching C++ or build files vs",
        "# merge-base with main), disjoint from every pull request under tests/ and bench/seed_prs.",
        f"# Drawn by bench/pr_sample.py: `python -m bench.pr_sample --repo MIRROR --seed {arguments.seed}",
        f"# --count {arguments.count} --out {arguments.out}`.",
        "# Not for tuning: no finding on these was read while the code that reviews them was built.",
        "# pr\thead\tmerge_base\thead_date",
    ]
    for item in drawn:
        pull = item.pull
        lines.append(f"{pull.number}\t{pull.head}\t{item.merge_base}\t{pull.when.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    arguments.out.write_text("\n".join(lines) + "\n")
    print(f"{len(drawn)} pull requests -> {arguments.out}", file=sys.stderr)
    return 0 if len(drawn) == arguments.count else 1


if __name__ == "__main__":
    sys.exit(main())
