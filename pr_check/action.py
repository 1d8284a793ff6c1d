"""`pr-check action`: the review step of the GitHub Action (action.yml), for teams without the App.

It reads what the runner provides (GITHUB_EVENT_PATH, GITHUB_WORKSPACE, GITHUB_STEP_SUMMARY,
GITHUB_OUTPUT, GITHUB_SERVER_URL, GITHUB_REPOSITORY), reviews the pull request's merge base..head,
writes the SARIF file for code scanning and the job summary, and reports the exit status the
fail level gives as the step output `status`, so that the SARIF upload runs before the job fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.errors import PrCheckError, UsageError
from bot.render.job_summary import render_job_summary
from bot.render.printable import printable
from bot.render.sarif import render_sarif
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache
from pr_check.output import FAIL_LEVELS, OutputOptions, OutputRequest, exit_status, render, write
from pr_check.product_checks import known_rules
from pr_check.review import CHECKS, default_cache_dir, review_trees
from pr_check.review_input import PullRequestEvent, resolve
from pr_check.version import VERSION

SARIF_CATEGORY = "pr-check"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pr-check action", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repo", default=None, help="the checkout (default: $GITHUB_WORKSPACE, else .)")
    parser.add_argument("--sarif", type=Path, required=True, metavar="FILE", help="where to write the SARIF file")
    parser.add_argument("--fail-level", default="", help="blocker|major|minor|info; empty: the base config's")
    parser.add_argument(
        "--category", default=SARIF_CATEGORY, help="code scanning category (SARIF automationDetails.id)"
    )
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    arguments = build_parser().parse_args(argv)
    try:
        return _run(arguments, environ)
    except PrCheckError as error:
        print(f"pr-check: error: {error}", file=sys.stderr)
        return error.exit_code


def _run(arguments: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if arguments.fail_level and arguments.fail_level not in FAIL_LEVELS:
        raise UsageError(f"--fail-level {arguments.fail_level!r}: one of {', '.join(FAIL_LEVELS)}")
    event_path = environ.get("GITHUB_EVENT_PATH")
    if not event_path:
        raise UsageError("GITHUB_EVENT_PATH is not set: this runs inside a GitHub Actions job")
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot read the event file {event_path}: {error}") from None
    pull_request = PullRequestEvent.of(event)
    request = OutputRequest.from_options(
        OutputOptions(fail_level=arguments.fail_level or None, color="never"), known_rules
    )
    repository_uri = None
    if environ.get("GITHUB_SERVER_URL") and environ.get("GITHUB_REPOSITORY"):
        repository_uri = f"{environ['GITHUB_SERVER_URL'].rstrip('/')}/{environ['GITHUB_REPOSITORY']}"

    with GitRepository(arguments.repo or environ.get("GITHUB_WORKSPACE") or ".") as repo:
        given = resolve(repo, pull_request)
        report = review_trees(
            given.base, given.head, given.changes, cache=EvaluationCache(default_cache_dir(repo)), compiled=None
        )
    sarif = render_sarif(report, CHECKS, VERSION, repository_uri=repository_uri, category=arguments.category)
    write(json.dumps(printable(sarif), indent=2) + "\n", arguments.sarif)
    summary_path = environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as summary:
            summary.write(printable(render_job_summary(report, "The SARIF file has every finding.")))
    write(render(report, request, CHECKS, notes=given.notes), None)
    status = exit_status(report, request)
    level = request.fail_level or report.fail_level
    outputs = {
        "status": str(status),
        "sarif": str(arguments.sarif),
        "findings": str(len(report.findings)),
        "fail-level": level.label,
    }
    output_path = environ.get("GITHUB_OUTPUT")
    if output_path:
        with open(output_path, "a", encoding="utf-8") as stream:
            stream.writelines(f"{key}={value}\n" for key, value in outputs.items())
    if status:
        at_or_above = sum(1 for f in report.findings if f.severity >= level)
        print(
            f"pr-check: {at_or_above} finding(s) at or above {level.label}: the job fails after the SARIF upload",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
