"""`pr-check`: review, scan, rules, explain, demo; and the entry points of smoke, serve, worker.

Exit codes (design 5): 0 clean, 1 findings at or above the fail level, 2 usage or input error,
3 internal error. Errors print one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from rich.console import Console

import checks
from bot.buck.evaluation import EvaluationCache
from bot.diff import parse_diff
from bot.errors import PrCheckError, UsageError
from bot.model import Severity
from bot.repo import GitRepository
from pr_check.shim import shim_files

VERSION = "0.1.0"
# Hostile Starlark that allocates in one operation can outrun the interpreter's own checks;
# an address-space cap turns that into an allocation failure instead of an exhausted machine.
MEMORY_CAP_BYTES = 12 << 30


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 with usage, as design 5 wants
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pr-check", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pr-check {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    review = sub.add_parser("review", help="review the change base..head (or a diff against the work tree)")
    review.add_argument("--repo", default=".", help="git repository (bare or not)")
    review.add_argument("--base", default=None, help="base revision (default: HEAD with --diff, else origin/main)")
    review.add_argument("--head", default="HEAD", help="head revision")
    review.add_argument("--diff", type=Path, help="unified diff file; the work tree is the head")
    review.add_argument("--shim", type=Path, default=None, help="the shim submodule's files: a checkout or git repository (default: an initialized shim/)")
    _output_options(review)

    scan = sub.add_parser("scan", help="audit a whole tree, no diff")
    scan.add_argument("--repo", default=".")
    scan.add_argument("--rev", default="HEAD")
    scan.add_argument("--shim", type=Path, default=None, help="the shim submodule's files: a checkout or git repository (default: an initialized shim/)")
    _output_options(scan)

    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--markdown", action="store_true", help="print RULES.md")

    explain = sub.add_parser("explain", help="explain one rule")
    explain.add_argument("rule")

    demo = sub.add_parser("demo", help="dry-run review of the bundled example PR")
    demo.add_argument("--case", default="pr24817-cuda-outside-fbcode")
    demo.add_argument("--format", choices=("text", "json", "sarif"), default="text")

    for name, help_text in (
        ("smoke", "the GPU smoke runner (see `pr-check smoke --help`)"),
        ("serve", "run the GitHub App webhook service"),
        ("worker", "run a queue worker of the GitHub App"),
    ):
        passthrough = sub.add_parser(name, help=help_text, add_help=False)
        passthrough.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--fail-level", default=None, help="blocker|major|minor|info (default: config, major)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="evaluation cache (default: inside .git)")
    parser.add_argument("--output", type=Path, default=None, help="write the output to a file")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("smoke", "serve", "worker"):
        return _delegate(argv[0], argv[1:])
    try:
        arguments = build_parser().parse_args(argv)
        _cap_memory()
        return _dispatch(arguments)
    except PrCheckError as error:
        print(f"pr-check: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # the last line of defence: one line, exit 3
        print(f"pr-check: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        if os.environ.get("PR_CHECK_DEBUG"):
            raise
        return 3


def _delegate(command: str, rest: list[str]) -> int:
    if command == "smoke":
        from smoke.cli import main as smoke_main

        return smoke_main(rest)
    from webhooks import cli as service

    return service.serve(rest) if command == "serve" else service.worker(rest)


def _cap_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        cap = MEMORY_CAP_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_CAP_BYTES, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _dispatch(arguments: argparse.Namespace) -> int:
    if arguments.command == "rules":
        from pr_check.rules_page import render_rules_markdown, render_rules_table

        sys.stdout.write(render_rules_markdown() if arguments.markdown else render_rules_table() + "\n")
        return 0
    if arguments.command == "explain":
        return _explain(arguments.rule)
    if arguments.command == "demo":
        return _demo(arguments)
    if arguments.command == "review":
        return _review(arguments)
    if arguments.command == "scan":
        return _scan(arguments)
    raise UsageError(f"unknown command {arguments.command}")


def _explain(rule: str) -> int:
    from bot.engine import ENGINE_RULES

    check = checks.BY_ID.get(rule)
    if check is None:
        if rule in ENGINE_RULES:
            severity, title = ENGINE_RULES[rule]
            print(f"{rule} ({severity.label}): {title}\nReported by the engine itself, not by a check.")
            return 0
        known = ", ".join(sorted(checks.BY_ID))
        raise UsageError(f"unknown rule {rule!r}; known rules: {known}")
    print(f"{check.id} ({check.severity.label}): {check.title}\n")
    print(check.doc.strip())
    return 0


@contextmanager
def _progress() -> Iterator[object]:
    """A progress bar on stderr for long evaluations; nothing when stderr is not a terminal."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        tasks: dict[str, object] = {}

        def update(cell: str, done: int, total: int) -> None:
            if cell not in tasks:
                tasks[cell] = progress.add_task(f"evaluating {cell}", total=total)
            progress.update(tasks[cell], completed=done + 1, total=total)

        yield update


def _review(arguments: argparse.Namespace) -> int:
    from pr_check.review import default_cache_dir, review_trees

    with GitRepository(arguments.repo) as repo:
        cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
        if arguments.diff is not None:
            try:
                text = arguments.diff.read_text(encoding="utf-8", errors="replace")
            except OSError as error:
                raise UsageError(f"cannot read diff {arguments.diff}: {error.strerror}") from None
            changes = parse_diff(text)
            base_tree = repo.tree(arguments.base or "HEAD")
            head_tree = repo.working_tree(base_tree, [c.path for c in changes.files] + [c.old_path for c in changes.files if c.old_path])
        else:
            base = arguments.base or "origin/main"
            base_sha, head_sha = repo.resolve(base), repo.resolve(arguments.head)
            changes = parse_diff(repo.diff(base_sha, head_sha))
            base_tree, head_tree = repo.tree(base_sha), repo.tree(head_sha)
        with_shim = shim_files(repo, getattr(arguments, "shim", None))
        base_tree, head_tree = with_shim(base_tree), with_shim(head_tree)
        with _progress() as progress:
            report = review_trees(base_tree, head_tree, changes, cache=cache, progress=progress)
        return _emit(report, arguments)


def _scan(arguments: argparse.Namespace) -> int:
    from pr_check.review import default_cache_dir, scan_tree

    with GitRepository(arguments.repo) as repo:
        cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
        with _progress() as progress:
            report = scan_tree(shim_files(repo, getattr(arguments, "shim", None))(repo.tree(arguments.rev)), cache=cache, progress=progress)
        return _emit(report, arguments)


def _emit(report, arguments: argparse.Namespace) -> int:
    from bot.render.json import render_json
    from bot.render.sarif import render_sarif
    from bot.render.text import render_text
    from pr_check.review import load_config

    if arguments.format == "json":
        text = json.dumps(render_json(report), indent=2) + "\n"
    elif arguments.format == "sarif":
        text = json.dumps(render_sarif(report, checks.ALL, VERSION), indent=2) + "\n"
    else:
        text = None
    output = getattr(arguments, "output", None)
    if text is not None:
        if output:
            output.write_text(text)
        else:
            sys.stdout.write(text)
    else:
        console = Console(file=open(output, "w") if output else sys.stdout, highlight=False)
        render_text(report, console)
    fail_level = getattr(arguments, "fail_level", None)
    try:
        level = Severity.parse(fail_level) if fail_level else report.fail_level
    except ValueError as error:
        raise UsageError(str(error)) from None
    return 1 if any(f.severity >= level for f in report.findings) else 0


def _demo(arguments: argparse.Namespace) -> int:
    from fixtures.cases import build_case_repository

    with tempfile.TemporaryDirectory(prefix="pr-check-demo-") as directory:
        repo_path, base, head = build_case_repository(arguments.case, Path(directory))
        print(f"Reviewing the bundled example PR `{arguments.case}` ({base[:10]}..{head[:10]})\n", file=sys.stderr)
        arguments.repo, arguments.base, arguments.head, arguments.diff = str(repo_path), base, head, None
        arguments.fail_level, arguments.cache_dir, arguments.output = "blocker", None, None
        status = _review(arguments)
    # The demo shows what would be posted; finding defects in the example is its purpose.
    return 0 if status in (0, 1) else status


if __name__ == "__main__":
    sys.exit(main())
