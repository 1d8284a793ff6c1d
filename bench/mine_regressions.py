"""Mine candidate build regressions from history: fix commits and the commits that introduced them.

    python -m bench.mine_regressions --repo /path/to/executorch.git \
        [--since 2025-06-01 --until 2026-09-01] [--ref refs/heads/main] [--out bench/out/candidates.tsv]

A *fix* is a first-parent commit touching a build file whose subject says fix, forward fix,
fwd fix, revert, unbreak or missing, or a small commit whose build-file change only adds lines
(a dep or a source added, nothing else). Its *introducers* are found from what it changed:
the commit a revert names; for each line the fix removed, the last commit that added that line
(`git log -S`); for each quoted name the fix added (a source file, a dep label), the last commit
before the fix whose diff mentioned that name (`git log -S` over the whole tree: the commit that
added the source to the other build, or removed the dep); and otherwise the last commit before
the fix that touched the same build file. The output is one row per (fix, introducer) with the
evidence that linked them, sorted by fix date: deterministic for a given mirror. It is a list to
read, not a verdict: the corpus (tests/real_tree/corpus/) is what a person wrote after reading each.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BUILD_FILE = re.compile(r"(^|/)(BUCK|TARGETS|CMakeLists\.txt)$|\.(bzl|cmake)$")
BUILD_PATHSPECS = (
    ":(glob)**/BUCK",
    ":(glob)**/TARGETS",
    ":(glob)**/*.bzl",
    ":(glob)**/CMakeLists.txt",
    ":(glob)**/*.cmake",
)
FIX_WORDS = re.compile(r"\b(fix(es|ed)?|forward[- ]?fix|fwd[- ]?fix|revert(s|ed)?|unbreak|missing)\b", re.IGNORECASE)
REVERTED = re.compile(r"This reverts commit ([0-9a-f]{10,40})")
QUOTED = re.compile(r"""["']([^"'\s]{3,200})["']""")
# The most lines a build-only commit may change to count as "small" when its subject says nothing.
SMALL_LINES = 6
# How far back an introducer is looked for: a regression found a year later is not one a review
# of the fix's neighbourhood can be checked against.
HORIZON = "2025-01-01"
# Names too common to lead anywhere when searched for with -S.
COMMON_TOKENS = frozenset({"PUBLIC", "PRIVATE", "INTERFACE", "ON", "OFF", "TRUE", "FALSE", "executorch"})


@dataclass(frozen=True)
class Commit:
    """One first-parent commit: sha, date, subject, build files changed, added and removed lines."""

    sha: str
    date: str
    subject: str
    body: str
    files: tuple[str, ...]
    added: tuple[tuple[str, str], ...]  # (path, line)
    removed: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Candidate:
    """A fix and one commit that may have introduced what it fixed, with the link between them."""

    fix: Commit
    introducer: str
    why: str


def git(repo: Path, *arguments: str) -> str:
    """stdout of a read-only git command on the mirror ('' when it fails: a mirror may lack old blobs)."""
    done = subprocess.run(
        ["git", "-C", str(repo), *arguments], capture_output=True, text=True, errors="replace", check=False
    )
    return done.stdout if done.returncode == 0 else ""


def load_commit(repo: Path, sha: str) -> Commit:
    """The commit's metadata and its build-file diff lines."""
    meta = git(repo, "show", "-s", "--format=%H%x00%cs%x00%s%x00%b", sha, "--").split("\0")
    diff = git(repo, "show", "--format=", "--first-parent", "-U0", "--no-renames", sha, "--", *BUILD_PATHSPECS)
    files: list[str] = []
    added: list[tuple[str, str]] = []
    removed: list[tuple[str, str]] = []
    path = ""
    for line in diff.splitlines():
        if line.startswith(("+++ ", "--- ")):
            name = line[4:]
            if name != "/dev/null":
                path = name[2:]
                if path not in files:
                    files.append(path)
        elif line.startswith("+") and line[1:].strip():
            added.append((path, line[1:].strip()))
        elif line.startswith("-") and line[1:].strip():
            removed.append((path, line[1:].strip()))
    return Commit(
        meta[0], meta[1], meta[2], meta[3] if len(meta) > 3 else "", tuple(files), tuple(added), tuple(removed)
    )


def is_fix(commit: Commit) -> str:
    """Why the commit counts as a fix ('' when it does not)."""
    if FIX_WORDS.search(commit.subject):
        return "subject"
    if commit.removed or not commit.added or len(commit.added) > SMALL_LINES:
        return ""
    if all(BUILD_FILE.search(path) for path, _ in commit.added) and any(QUOTED.search(t) for _, t in commit.added):
        return "small-add"
    return ""


def last_commit_with(repo: Path, before: str, text: str, pathspecs: tuple[str, ...] = ()) -> str:
    """The last commit before `before` (first-parent, within HORIZON) whose diff changes the count of `text`."""
    out = git(
        repo,
        "log",
        "--first-parent",
        "-n1",
        "--format=%H",
        f"--since={HORIZON}",
        f"-S{text}",
        f"{before}^",
        "--",
        *pathspecs,
    )
    return out.strip()


def introducers(repo: Path, fix: Commit) -> list[Candidate]:
    """Commits that may have introduced what `fix` repaired, each with its link, deduplicated."""
    found: dict[str, str] = {}
    for match in REVERTED.finditer(fix.body):
        found.setdefault(git(repo, "rev-parse", match.group(1)).strip(), "reverted")
    for path, line in fix.removed[:8]:
        sha = last_commit_with(repo, fix.sha, line, (path,))
        if sha:
            found.setdefault(sha, f"added removed line of {path}: {line[:60]}")
    for path, line in fix.added[:8]:
        for token in QUOTED.findall(line):
            if token in COMMON_TOKENS or token.startswith("$"):
                continue
            name = token.rsplit("/", 1)[-1].lstrip(":")
            sha = last_commit_with(repo, fix.sha, name)
            if sha:
                found.setdefault(sha, f"last mention of {name} (added to {path})")
    if not found:
        for path in fix.files[:4]:
            out = git(repo, "log", "--first-parent", "-n1", "--format=%H", f"{fix.sha}^", "--", path).strip()
            if out:
                found.setdefault(out, f"last change of {path}")
    return [Candidate(fix, sha, why) for sha, why in found.items()]


def mine(repo: Path, since: str, until: str, ref: str) -> list[Candidate]:
    """Every (fix, introducer) candidate in the window, oldest fix first."""
    shas = git(
        repo,
        "log",
        "--first-parent",
        "--reverse",
        "--format=%H",
        f"--since={since}",
        f"--until={until}",
        ref,
        "--",
        *BUILD_PATHSPECS,
    ).split()
    candidates: list[Candidate] = []
    for sha in shas:
        commit = load_commit(repo, sha)
        kind = is_fix(commit)
        if kind:
            candidates.extend(introducers(repo, commit))
    return candidates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--ref", default="refs/heads/main")
    parser.add_argument("--since", default="2025-06-01")
    parser.add_argument("--until", default="2026-09-01")
    parser.add_argument("--out", type=Path, default=Path("bench/out/regression_candidates.tsv"))
    arguments = parser.parse_args(argv)
    candidates = mine(arguments.repo, arguments.since, arguments.until, arguments.ref)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    rows = ["fix\tdate\tintroducer\tlink\tfiles\tsubject"]
    for candidate in candidates:
        fix = candidate.fix
        rows.append(
            "\t".join(
                (
                    fix.sha[:10],
                    fix.date,
                    candidate.introducer[:10],
                    candidate.why.replace("\t", " "),
                    ",".join(fix.files[:4]),
                    fix.subject.replace("\t", " "),
                )
            )
        )
    arguments.out.write_text("\n".join(rows) + "\n")
    print(
        f"{len({c.fix.sha for c in candidates})} fixes, {len(candidates)} candidates -> {arguments.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
