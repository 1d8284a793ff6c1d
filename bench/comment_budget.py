"""What the App posts on pull requests as posted, for two versions of the code: comments, loud findings, minors.

    python bench/comment_budget.py --repo MIRROR --sample FILE --out OUT.json [--source /tmp/old] [--first N]
    python bench/comment_budget.py --compare BEFORE.json AFTER.json
    python bench/comment_budget.py --minors AFTER.json

The sample file has one pull request a line, `number<TAB>head<TAB>merge-base<TAB>date` (`#` lines
are comments; the pull-request sampler of the history bench draws it). Each pull request is reviewed head against merge-base,
in one process with one shared cache directory (as the App does), and planned as the App plans its
first review (`plan_review` with nothing posted yet): the inline comments it would post, the
length of the review body, and every finding (blocker and major whole; minor and info with their
message, for judging by hand). Run it as a file so that `--source` (a `git archive REV | tar -x`
of another version) decides which code reviews. `--compare` prints the comment count per pull
request (median, max) of both, and every loud finding that one has and the other lacks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def read_sample(path: Path) -> list[tuple[int, str, str]]:
    """(number, head, merge-base) of each pull request in a sample file."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            number, head, base, *_ = line.split("\t")
            rows.append((int(number), head, base))
    return rows


def review_sample(repo: Path, rows: list[tuple[int, str, str]], cache: Path) -> list[dict]:
    """One record per pull request: what the App would post on it."""
    from bot.render.github_review import plan_review
    from pr_check.review import review_repository

    records = []
    for index, (number, head, base) in enumerate(rows, 1):
        started = time.perf_counter()
        try:
            report = review_repository(repo, base, head, cache_dir=cache)
        except Exception as error:  # noqa: BLE001 - a pull request the code cannot review is a record, not a stop
            records.append({"pr": number, "head": head, "error": f"{type(error).__name__}: {error}"})
            print(f"[{index}/{len(rows)}] #{number} error {error}", file=sys.stderr, flush=True)
            continue
        plan = plan_review(report.findings, report.changes, (), (), head)
        findings = [finding.to_json() for finding in report.findings]
        records.append(
            {
                "pr": number,
                "head": head,
                "base": base,
                "seconds": round(time.perf_counter() - started, 2),
                "inline_comments": len(plan.comments),
                "body_chars": len(plan.body),
                "body_entries": body_entries(plan.body),
                "findings": findings,
                "unevaluated": [item.to_json() for item in report.stats.unevaluated],
            }
        )
        print(
            f"[{index}/{len(rows)}] #{number} {records[-1]['seconds']}s findings {len(findings)} "
            f"comments {len(plan.comments)}",
            file=sys.stderr,
            flush=True,
        )
    return records


def body_entries(body: str) -> int:
    """The findings the review body lists, one bullet each ("- ... and N more" counts as one)."""
    return sum(1 for line in body.splitlines() if line.startswith("- "))


def _body_entries(record: dict) -> int:
    """A record's body entries; a record made before they were kept (the code before issue 34, whose
    body lists every finding without an inline comment, the first 20 and a line "and N more")."""
    if "body_entries" in record:
        return record["body_entries"]
    listed = len(record["findings"]) - record["inline_comments"]
    return min(listed, 20) + (1 if listed > 20 else 0)


def _loud(record: dict) -> set[tuple]:
    return {
        (f["rule"], f["severity"], f["path"], f["target"], f["cell"])
        for f in record.get("findings", ())
        if f["severity"] in ("blocker", "major")
    }


def compare(before: Path, after: Path) -> int:
    """Comment counts of both runs and the loud findings that differ; 0 when no loud finding is lost."""
    left = {r["pr"]: r for r in json.loads(before.read_text())}
    right = {r["pr"]: r for r in json.loads(after.read_text())}
    both = sorted(
        number for number in left.keys() & right.keys() if "error" not in left[number] and "error" not in right[number]
    )
    lost = 0
    for name, run in (("before", left), ("after", right)):
        counts = [run[number]["inline_comments"] for number in both]
        entries = [_body_entries(run[number]) for number in both]
        findings = [len(run[number]["findings"]) for number in both]
        print(
            f"{name}: {len(both)} pull requests, inline comments per PR median {statistics.median(counts)} "
            f"max {max(counts)} total {sum(counts)}; body entries per PR median {statistics.median(entries)} "
            f"max {max(entries)} total {sum(entries)}; findings per PR median {statistics.median(findings)} "
            f"max {max(findings)} total {sum(findings)}; PRs with any inline comment {sum(1 for c in counts if c)}"
        )
    print("per PR (inline/body entries/findings), before -> after, where any is not 0:")
    for number in both:
        a, b = left[number], right[number]
        row = [(r["inline_comments"], _body_entries(r), len(r["findings"])) for r in (a, b)]
        if any(any(x) for x in row):
            print(f"  #{number}: {row[0][0]}/{row[0][1]}/{row[0][2]} -> {row[1][0]}/{row[1][1]}/{row[1][2]}")
    for number in both:
        gone, new = _loud(left[number]) - _loud(right[number]), _loud(right[number]) - _loud(left[number])
        if gone or new:
            lost += len(gone)
            print(f"#{number}: loud only before: {sorted(gone)}; only after: {sorted(new)}")
    return 1 if lost else 0


def list_minors(run: Path) -> int:
    """Every minor finding of a run, one entry per group as the App posts it, for judging by hand."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bot.model import Evidence, Finding, Severity
    from bot.render.finding_groups import group_findings

    for record in json.loads(run.read_text()):
        findings = [
            Finding(
                f["rule"],
                Severity.parse(f["severity"]),
                f["title"],
                f["path"],
                f["line"],
                f["end_line"],
                f["message"],
                f["fingerprint"],
                f["target"],
                f["cell"],
                tuple(Evidence(e["path"], e["line"], e["note"]) for e in f["evidence"]),
            )
            for f in record.get("findings", ())
            if f["severity"] == "minor"
        ]
        for group in group_findings(findings):
            lead = group.lead
            print(
                f"#{record['pr']} {lead.rule} {lead.cell} {lead.path}:{lead.line} {lead.target} (+{len(group.others)})"
            )
            print(f"    {lead.message}")
            for item in group.evidence[:4]:
                print(f"    - {item.path}:{item.line}: {item.note}")
    return 0


def _use_source(source: Path) -> None:
    """Import bot/, checks/, pr_check/ from `source`: an editable install's finder would
    otherwise answer first, whatever sys.path says."""
    sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in type(f).__name__ and "editable" not in repr(f)]
    sys.path.insert(0, str(source))


def main(argv: list[str] | None = None) -> int:
    arguments = argv if argv is not None else sys.argv[1:]
    if "--source" in arguments:
        _use_source(Path(arguments[arguments.index("--source") + 1]).resolve())
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--sample", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--source", type=Path, help="review with the code unpacked here")
    parser.add_argument("--first", type=int, help="only the first N pull requests of the sample")
    parser.add_argument("--cache", type=Path, help="evaluation cache directory (default: a fresh one)")
    parser.add_argument("--compare", nargs=2, type=Path)
    parser.add_argument("--minors", type=Path, help="print the minor findings of a run, grouped, for judging")
    args = parser.parse_args(arguments)
    if args.compare:
        return compare(*args.compare)
    if args.minors:
        return list_minors(args.minors)
    if not (args.repo and args.sample and args.out):
        parser.error("--repo, --sample and --out are needed to review")
    rows = read_sample(args.sample)[: args.first]
    with tempfile.TemporaryDirectory(prefix="comment-budget-") as scratch:
        records = review_sample(args.repo, rows, args.cache or Path(scratch))
    args.out.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
