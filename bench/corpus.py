"""Recall on the regression corpus: each real regression caught at its introducer, silent at its fix.

    python -m bench.corpus --repo /path/to/executorch.git [--only ID ...] [--cache DIR]

Reads every *.toml in tests/real_tree/corpus/ (format: /work/shared COMMON brief, "Regression corpus
format"). For a `[[regression]]` the introducer is reviewed against its first parent and must
carry a finding of `rule` on `path` (or with `path` among its evidence) whose target, title or
message contains `subject`; the fix, reviewed against its first parent, must carry no such
finding. A `[[quiet]]` commit, reviewed against its first parent, must carry no blocker or
major finding. Prints the table (entry, commit, class, rule, result) and the figures; exits 1
when recall is under 90 % or a quiet commit is loud.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent.parent / "tests" / "real_tree" / "corpus"
LOUD = ("blocker", "major")


@dataclass(frozen=True)
class Regression:
    """A commit that broke a build, the commit that repaired it, and what a review must say."""

    id: str
    introducer: str
    fix: str
    klass: str
    rule: str
    path: str
    subject: str
    reason: str


@dataclass(frozen=True)
class Quiet:
    """A real commit that is fine: no blocker or major finding may be raised on it."""

    commit: str
    reason: str


@dataclass(frozen=True)
class Outcome:
    """One corpus entry's result."""

    id: str
    commit: str
    klass: str
    rule: str
    caught: bool  # regression: found at the introducer; quiet: no loud finding
    silent_at_fix: bool  # regression: no such finding at the fix; quiet: always True
    detail: str


def load_corpus(directory: Path = CORPUS_DIR) -> tuple[tuple[Regression, ...], tuple[Quiet, ...]]:
    """Every regression and quiet entry of every *.toml in `directory`, ids unique."""
    regressions: list[Regression] = []
    quiet: list[Quiet] = []
    for path in sorted(directory.glob("*.toml")):
        document = tomllib.loads(path.read_text())
        for entry in document.get("regression", ()):
            regressions.append(Regression(**{name: str(entry[name]) for name in Regression.__dataclass_fields__}))
        for entry in document.get("quiet", ()):
            quiet.append(Quiet(commit=str(entry["commit"]), reason=str(entry["reason"])))
    ids = [r.id for r in regressions]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ValueError(f"corpus ids used twice: {duplicated}")
    return tuple(regressions), tuple(quiet)


def matches(finding, regression: Regression) -> bool:
    """The finding is the one the regression's expectation describes."""
    if finding.rule != regression.rule:
        return False
    paths = {finding.path, *(e.path for e in finding.evidence)}
    if regression.path not in paths:
        return False
    text = " ".join(part for part in (finding.target or "", finding.title, finding.message) if part)
    return regression.subject in text


def subject_seen(finding, regression: Regression) -> bool:
    """At the fix only the subject matters: the fix may move the file the finding sits on."""
    text = " ".join(part for part in (finding.target or "", finding.title, finding.message) if part)
    return finding.rule == regression.rule and regression.subject in text


def evaluate(
    repo: Path,
    regressions: Iterable[Regression],
    quiet: Iterable[Quiet],
    review: Callable,
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
) -> list[Outcome]:
    """Review every entry (`review(base, head)` returns a report) and say what happened."""
    reports: dict[str, object] = {}

    def report_of(commit: str):
        if commit not in reports:
            reports[commit] = review(f"{commit}^", commit)
        return reports[commit]

    outcomes: list[Outcome] = []
    for regression in regressions:
        broke = report_of(regression.introducer)
        found = [f for f in broke.findings if matches(f, regression)]
        repaired = report_of(regression.fix)
        lingering = [f for f in repaired.findings if subject_seen(f, regression)]
        near = sorted({f"{f.rule}:{f.path}" for f in broke.findings if f.rule == regression.rule})
        detail = "" if found else ("same rule elsewhere: " + ", ".join(near[:3]) if near else "")
        outcome = Outcome(
            regression.id, regression.introducer, regression.klass, regression.rule, bool(found), not lingering, detail
        )
        on_outcome(outcome)
        outcomes.append(outcome)
    for entry in quiet:
        loud = [f for f in report_of(entry.commit).findings if f.severity.label in LOUD]
        detail = "; ".join(f"{f.rule} {f.path}:{f.line}" for f in loud[:3])
        outcome = Outcome(f"quiet-{entry.commit}", entry.commit, "quiet", "-", not loud, True, detail)
        on_outcome(outcome)
        outcomes.append(outcome)
    return outcomes


def format_row(outcome: Outcome) -> str:
    """One line of the table."""
    if outcome.klass == "quiet":
        result = "quiet" if outcome.caught else "LOUD"
    else:
        result = ("found" if outcome.caught else "MISSED") + ("" if outcome.silent_at_fix else " (still at fix)")
    return (
        f"{outcome.commit[:10]:10}  {outcome.klass[:22]:22}  {outcome.rule[:26]:26}  {result:22}  "
        f"{outcome.id}{'  [' + outcome.detail + ']' if outcome.detail else ''}"
    )


def summary(outcomes: list[Outcome]) -> tuple[str, float, int]:
    """Figures: text, recall (caught and silent at fix), loud quiet commits."""
    regressions = [o for o in outcomes if o.klass != "quiet"]
    quiet = [o for o in outcomes if o.klass == "quiet"]
    caught = [o for o in regressions if o.caught]
    clean = [o for o in caught if o.silent_at_fix]
    loud = [o for o in quiet if not o.caught]
    recall = len(clean) / len(regressions) if regressions else 1.0
    text = (
        f"regressions: {len(caught)}/{len(regressions)} caught at the introducer, {len(clean)} of them "
        f"silent at the fix: recall {100 * recall:.0f} %\nquiet commits: {len(quiet) - len(loud)}/{len(quiet)} "
        f"with no blocker/major finding"
    )
    return text, recall, len(loud)


def main(argv: list[str] | None = None) -> int:
    from pr_check.review import review_repository

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a pytorch/executorch clone or bare mirror")
    parser.add_argument("--corpus", type=Path, default=CORPUS_DIR)
    parser.add_argument("--only", nargs="*", default=(), help="entry ids or commits to run (default: all)")
    parser.add_argument("--cache", type=Path, help="an evaluation cache to reuse (default: a temporary one)")
    arguments = parser.parse_args(argv)
    regressions, quiet = load_corpus(arguments.corpus)
    if arguments.only:
        wanted = set(arguments.only)
        regressions = tuple(r for r in regressions if r.id in wanted or r.introducer in wanted)
        quiet = tuple(q for q in quiet if q.commit in wanted)
    with tempfile.TemporaryDirectory(prefix="pr-check-corpus-") as scratch:
        cache = arguments.cache or Path(scratch)

        def review(base: str, head: str):
            return review_repository(arguments.repo, base, head, cache_dir=cache)

        print(f"{'commit':10}  {'class':22}  {'rule':26}  {'result':22}  entry", flush=True)
        outcomes = evaluate(
            arguments.repo, regressions, quiet, review, lambda outcome: print(format_row(outcome), flush=True)
        )
    text, recall, loud = summary(outcomes)
    print(text)
    return 0 if recall >= 0.9 and loud == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
