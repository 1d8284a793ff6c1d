"""`pr-check demo`: a dry-run review of a bundled example PR, on embedded defaults."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bot.errors import PrCheckError, UsageError
from fixtures.cases import CASES, build_case_repository
from pr_check.commands.request import output_request
from pr_check.commands.review import review
from pr_check.review_input import Commit


def run_demo(arguments: argparse.Namespace) -> int:
    """List the examples, or review one as `review --head` would and show what would be posted."""
    if not CASES:  # an install that dropped the package data; say so rather than crash
        raise PrCheckError("no bundled example PRs found: this installation lacks pr-check's fixtures/ data")
    if arguments.list:
        width = max(len(name) for name in CASES)
        for name, description in CASES.items():
            print(f"{name:<{width}}  {description}")
        return 0
    if arguments.case not in CASES:
        raise UsageError(f"unknown demo case {arguments.case!r} (`pr-check demo --list` shows them)")
    arguments.output, arguments.fail_level, arguments.exit_zero = None, "blocker", False
    request = output_request(arguments)
    with tempfile.TemporaryDirectory(prefix="pr-check-demo-") as directory:
        repo_path, base, head = build_case_repository(arguments.case, Path(directory))
        if request.verbosity >= 0:
            print(f"Reviewing the bundled example PR `{arguments.case}` ({base[:12]}..{head[:12]})\n", file=sys.stderr)
        # demo has no --shim, --cache-dir or --config: the bundled case needs none.
        arguments.repo, arguments.cache_dir, arguments.config, arguments.shim = str(repo_path), None, None, None
        status = review(arguments, Commit(head, base), request, None)
    # The demo shows what would be posted; finding defects in the example is its purpose.
    return 0 if status in (0, 1) else status
