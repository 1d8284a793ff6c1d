"""`pr-check`: review, scan, fix, hook, rules, explain, demo; and the entry points of smoke, serve, worker.

Exit codes: 0 clean, 1 findings at or above the fail level, 2 usage or input error, 3 internal
error; `fix`: 0 nothing to change, 1 files changed (or a diff printed). Arguments are validated
before any work starts. Errors print one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from bot.errors import ConfigError, PrCheckError, UsageError
from pr_check.version import VERSION

# Start-up: `pr-check --version` imports nothing of pr-check's but this module and the version;
# the configuration, git, the outputs and the shim are imported by the functions that use them.
if TYPE_CHECKING:
    from bot.config import Config
    from bot.repo import GitRepository
    from bot.review_stats import ConfigSource
    from pr_check.output import OutputOptions, OutputRequest

SHIM_HELP = "the shim submodule's files: a checkout or git repository of it (default: an initialized shim/)"
# Hostile Starlark that allocates in one operation can outrun the interpreter's own checks;
# an address-space cap turns that into an allocation failure instead of an exhausted machine.
MEMORY_CAP_BYTES = 12 << 30
DEFAULT_DEMO_CASE = "pr24817-cuda-outside-fbcode"
EXIT_CODES = """exit codes:
  0  no finding at or above the fail level (or --exit-zero)
  1  findings at or above the fail level
  2  usage or input error (not a repository, unknown revision, malformed diff, bad config)
  3  internal error"""
WORK_TREE = "work tree"  # the head's name when `review` reads the work tree (the text's first line shows it)
# Import names of the `app` extra's packages (pyproject.toml), which `pip install pr-check` leaves out.
APP_MODULES = frozenset(
    {"huey", "redis", "github", "jwt", "fastapi", "starlette", "uvicorn", "httpx", "prometheus_client"}
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors are usage errors: exit 2
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    from pr_check.output import FAIL_LEVELS, FORMATS

    parser = _Parser(prog="pr-check", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pr-check {VERSION}", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    review = sub.add_parser(
        "review",
        help="review the work tree, a commit (--head) or a diff against the base",
        description="Review what a change makes new: the work tree (default) or --head REV against --base, "
        "in every Buck cell, CMake profile and C++ configuration; only findings the change introduced are reported.",
        epilog=EXIT_CODES
        + """

examples:
  pr-check review                                   the work tree against the default branch's merge base
  pr-check review --head HEAD --base origin/main    the committed change
  pr-check review --format sarif --output pr-check.sarif
  git diff | pr-check review --diff -               a diff applied to HEAD in memory""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    review.add_argument("--repo", default=".", help="git repository, bare or not (default: .)")
    review.add_argument(
        "--base",
        default=None,
        help="base revision (default: the merge base of the remote's default branch and the head, HEAD for the "
        "work tree; with --diff: the commit HEAD points at)",
    )
    review.add_argument(
        "--head",
        default=None,
        metavar="REV",
        help="review this committed revision (default: the work tree: tracked edits, staged or not, and untracked "
        "files that are not ignored; in a bare repository HEAD); not used with --diff",
    )
    review.add_argument(
        "--diff",
        default=None,
        metavar="FILE",
        help="unified diff to apply to --base in memory ('-' reads stdin); the result is the head",
    )
    review.add_argument("--shim", type=Path, default=None, help=SHIM_HELP)
    _output_options(review)

    scan = sub.add_parser(
        "scan",
        help="audit a whole tree at one revision, no diff",
        description="Report every finding in a whole tree at one revision (nothing is compared with a base).",
        epilog=EXIT_CODES
        + """

examples:
  pr-check scan --statistics                        counts per rule, cell and directory
  pr-check scan --rev origin/main --path backends/cuda --select cuda-guard-missing
  pr-check scan --format json --output findings.json""",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument("--repo", default=".", help="git repository, bare or not (default: .)")
    scan.add_argument("--rev", default=None, help="revision to scan (default: the commit HEAD points at)")
    scan.add_argument(
        "--path",
        action="append",
        metavar="PREFIX",
        help="report only findings under this directory or glob (repeatable)",
    )
    scan.add_argument(
        "--statistics", action="store_true", help="print counts per rule, cell and directory instead of the findings"
    )
    scan.add_argument("--shim", type=Path, default=None, help=SHIM_HELP)
    _output_options(scan)

    fix = sub.add_parser(
        "fix",
        help="apply the fixes of the findings new in the work tree; exit 1 when files changed or findings remain",
        description="Review the work tree (tracked, untracked but not ignored, deleted files) against --base and "
        "apply the fixes of the new findings, again until they settle. Writes only the files the fixes name. "
        "Exit codes: 0 nothing changed and no finding left at the fail level, 1 files changed (with --diff: a diff "
        "printed) or findings at or above the fail level left, 2 usage or input error, 3 internal error.",
    )
    fix.add_argument("--repo", default=".", help="a git work tree (default: .)")
    fix.add_argument(
        "--base",
        default=None,
        help="base revision (default: as for `review`, the merge base of the remote's default branch and HEAD)",
    )
    fix.add_argument(
        "--diff", action="store_true", help="write nothing; print the changes as a unified diff (git apply takes it)"
    )
    fix.add_argument(
        "--fail-level",
        choices=FAIL_LEVELS,
        default=None,
        help="exit 1 when findings at or above this severity are left (default: the config's, else major)",
    )
    _fix_options(fix)

    hook = sub.add_parser(
        "hook",
        help="pre-commit: review the staged change against HEAD; --fix also applies fixes",
        description="Review what is staged (the index against HEAD) when it touches Buck, CMake or C++ files. "
        "Exit 1 on findings at or above the fail level; with --fix, also when files were changed. "
        "--fix writes a work-tree file only where it equals its staged version.",
    )
    hook.add_argument("--repo", default=".", help="a git work tree (default: .)")
    hook.add_argument("--fix", action="store_true", help="apply the fixes to work-tree files without unstaged changes")
    hook.add_argument(
        "--fail-level",
        choices=FAIL_LEVELS,
        default=None,
        help="exit 1 on findings at or above this severity (default: the config's, else major)",
    )
    _fix_options(hook)

    rules = sub.add_parser("rules", help="list the rules")
    rules.add_argument("--markdown", action="store_true", help="print RULES.md")

    explain = sub.add_parser("explain", help="explain one rule")
    explain.add_argument("rule", help="a rule id, as `pr-check rules` lists them")

    demo = sub.add_parser("demo", help="dry-run review of a bundled example PR")
    demo.add_argument(
        "--case", default=DEFAULT_DEMO_CASE, help=f"the example to review (default: {DEFAULT_DEMO_CASE}; see --list)"
    )
    demo.add_argument("--list", action="store_true", help="list the bundled examples and exit")
    demo.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    _verbosity_options(demo)

    cache = sub.add_parser("cache", help="the evaluation and fact cache of a repository: its size, or empty it")
    cache.add_argument(
        "action", choices=("info", "clean"), help="info: where, entries, bytes, bound; clean: remove every entry"
    )
    cache.add_argument("--repo", default=".", help="git repository whose cache it is (default: .)")
    cache.add_argument(
        "--cache-dir", type=Path, default=None, metavar="DIR", help="a cache directory instead of the repository's"
    )

    for name, help_text in (
        ("smoke", "the GPU smoke runner (see `pr-check smoke --help`)"),
        ("serve", "run the GitHub App webhook service"),
        ("worker", "run a queue worker of the GitHub App"),
        ("action", "the review step of the GitHub Action (action.yml; reads the GITHUB_* variables)"),
    ):
        passthrough = sub.add_parser(name, help=help_text, add_help=False)
        passthrough.add_argument("args", nargs=argparse.REMAINDER, help="passed on unchanged")
    return parser


def _verbosity_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help="text: one line per finding, nothing else")
    group.add_argument(
        "-v", "--verbose", action="store_true", help="text: everything, suppressed findings and all smoke reasons"
    )


def _output_options(parser: argparse.ArgumentParser) -> None:
    from pr_check.output import FAIL_LEVELS, FORMATS

    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text, json (the public report), sarif (code scanning), github (workflow annotations), "
        "rdjson (reviewdog); default: text",
    )
    parser.add_argument(
        "--output", type=Path, default=None, metavar="FILE", help="write the output to FILE instead of stdout"
    )
    parser.add_argument(
        "--fail-level",
        choices=FAIL_LEVELS,
        default=None,
        help="exit 1 on findings at or above this severity (default: the config's, else major)",
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings reach the fail level")
    parser.add_argument(
        "--select", action="append", metavar="RULES", help="only these rule ids (comma-separated, repeatable)"
    )
    parser.add_argument(
        "--ignore", action="append", metavar="RULES", help="leave out these rule ids (comma-separated, repeatable)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="try a local config file instead of the base revision's .github/pr-check.toml",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output (default: auto: when stdout is a terminal or FORCE_COLOR / CLICOLOR_FORCE is set, and NO_COLOR is not)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="evaluation cache (default: inside the git directory)",
    )
    _verbosity_options(parser)


def _fix_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--select", action="append", metavar="RULES", help="only these rule ids (comma-separated, repeatable)"
    )
    parser.add_argument(
        "--ignore", action="append", metavar="RULES", help="leave out these rule ids (comma-separated, repeatable)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="try a local config file instead of the base revision's .github/pr-check.toml",
    )
    parser.add_argument("--shim", type=Path, default=None, help=SHIM_HELP)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="evaluation cache (default: inside the git directory)",
    )
    parser.set_defaults(format="text")
    _verbosity_options(parser)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # what argparse's version action prints, without building every subparser
        print(f"pr-check {VERSION}")
        return 0
    if argv and argv[0] in ("smoke", "serve", "worker", "action"):
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
    except BrokenPipeError:  # `pr-check ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as error:  # the last line of defence: one line, exit 3
        print(f"pr-check: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        if os.environ.get("PR_CHECK_DEBUG"):
            raise
        return 3


def _delegate(command: str, rest: list[str]) -> int:
    if command == "action":
        from pr_check.action import main as action_main

        return action_main(rest)
    if command == "smoke":
        from smoke.cli import main as smoke_main

        return smoke_main(rest)
    from webhooks import cli as service

    try:
        return service.serve(rest) if command == "serve" else service.worker(rest)
    except ModuleNotFoundError as error:
        # `pip install pr-check` is the CLI alone; the App's packages come with the `app` extra.
        if (error.name or "").split(".")[0] not in APP_MODULES:
            raise
        print(
            f"pr-check {command}: the GitHub App needs its own packages (missing: {error.name}); "
            "install them with: pip install 'pr-check[app]'",
            file=sys.stderr,
        )
        return 2


def _cap_memory() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        cap = MEMORY_CAP_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_CAP_BYTES, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _dispatch(arguments: argparse.Namespace) -> int:
    from pr_check.output import OutputRequest

    if arguments.command == "rules":
        from pr_check.rules_page import render_rules_markdown, render_rules_table

        sys.stdout.write(render_rules_markdown() if arguments.markdown else render_rules_table() + "\n")
        return 0
    if arguments.command == "explain":
        return _explain(arguments.rule)
    if arguments.command == "demo":
        return _demo(arguments)
    if arguments.command == "cache":
        return _cache(arguments)
    if arguments.command in ("review", "scan", "fix", "hook"):
        request = OutputRequest.from_options(output_options(arguments))
        config = _local_config(arguments.config)
        if arguments.command in ("fix", "hook"):
            from pr_check.fix_command import FixRequest, run_fix, run_hook

            where = {"repo": arguments.repo, "shim": arguments.shim, "cache_dir": arguments.cache_dir}
            if arguments.command == "fix":
                return run_fix(FixRequest(**where, base=arguments.base, diff=arguments.diff), request, config)
            return run_hook(FixRequest(**where, apply=arguments.fix), request, config)
        if arguments.command == "review":
            diff_text = _read_diff(arguments.diff) if arguments.diff is not None else None
            return _review(arguments, request, config, diff_text)
        return _scan(arguments, request, config)
    raise UsageError(f"unknown command {arguments.command}")


def _cache(arguments: argparse.Namespace) -> int:
    from bot.repo import GitRepository
    from bot.store.disk import DiskStore
    from pr_check.review import default_cache_dir

    if arguments.cache_dir is not None:
        directory = arguments.cache_dir
    else:
        with GitRepository(arguments.repo) as repo:
            directory = default_cache_dir(repo)
    store = DiskStore.at(directory)
    if arguments.action == "clean":
        store.clean()
    info = store.info()
    print(
        f"cache: {info.directory}\nentries: {info.entries}\nsize: {info.bytes / 1e6:.1f} MB of {info.bound / 1e6:.0f} MB "
        "(least recently used entries go first)"
    )
    return 0


def _explain(rule: str) -> int:
    from bot.engine import ENGINE_RULES
    from pr_check.review import BY_ID

    check = BY_ID.get(rule)
    if check is None:
        if rule in ENGINE_RULES:
            severity, title = ENGINE_RULES[rule]
            print(f"{rule} ({severity.label}): {title}\nReported by the engine itself, not by a check.")
            return 0
        known = ", ".join(sorted(BY_ID))
        raise UsageError(f"unknown rule {rule!r}; known rules: {known}")
    print(f"{check.id} ({check.severity.label}): {check.title}\n")
    print(check.rationale.strip())
    return 0


def _local_config(path: Path | None) -> Config | None:
    """`--config FILE`, parsed and validated now; None means the reviewed revision's own config."""
    from bot.config import CONFIG_PATH, parse_config
    from pr_check.output import known_rules

    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"--config {path}: {error.strerror}") from None
    try:
        return parse_config(text, known_rules())
    except ConfigError as error:
        raise ConfigError(str(error).replace(CONFIG_PATH, str(path), 1)) from None


def output_options(arguments: argparse.Namespace) -> OutputOptions:
    """The output options among a subcommand's parsed arguments; the options it does not define
    keep OutputOptions' defaults (the one place that knows parsers differ)."""
    from dataclasses import fields

    from pr_check.output import OutputOptions

    given = vars(arguments)
    values = {}
    for option in fields(OutputOptions):
        value = given.get(option.name)
        if value is not None:
            values[option.name] = tuple(value) if isinstance(value, list) else value
    return OutputOptions(**values)


def _config_note(path: Path | None) -> tuple[tuple[str, ...], ConfigSource | None]:
    from bot.config import CONFIG_PATH

    if path is None:
        return (), None
    from bot.review_stats import ConfigSource

    note = f"config: LOCAL FILE {path} (not the base revision's {CONFIG_PATH})"
    return (note,), ConfigSource("local", str(path))


def _read_diff(source: str) -> str:
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read diff {source}: {error.strerror}") from None
    # surrogateescape: bytes that are not UTF-8 survive the round trip into the patched files.
    return data.decode("utf-8", errors="surrogateescape")


@contextmanager
def _progress(request: OutputRequest) -> Iterator[Callable[[str, int, int], None] | None]:
    """Progress of long evaluations on stderr: a bar on a terminal, one line per cell elsewhere (a CI
    log would otherwise show nothing for the seconds a cold review takes); nothing with -q."""
    if request.verbosity < 0:
        yield None
        return
    if not sys.stderr.isatty():
        announced: set[str] = set()

        def announce(cell: str, done: int, total: int) -> None:
            if cell not in announced:  # called for packages the cache lacks: a warm review prints nothing
                announced.add(cell)
                print(
                    f"pr-check: evaluating {total} Buck package{'s' if total != 1 else ''} in the {cell} cell "
                    "(kept in the cache for the next review)",
                    file=sys.stderr,
                    flush=True,
                )

        yield announce
        return
    from rich.console import Console
    from rich.progress import Progress, TaskID

    with Progress(console=Console(stderr=True), transient=True) as progress:
        tasks: dict[str, TaskID] = {}

        def update(cell: str, done: int, total: int) -> None:
            if cell not in tasks:
                tasks[cell] = progress.add_task(f"evaluating {cell}", total=total)
            progress.update(tasks[cell], completed=done + 1, total=total)

        yield update


def _review(arguments: argparse.Namespace, request: OutputRequest, config: Config | None, diff_text: str | None) -> int:
    from bot.diff import parse_diff
    from bot.patch import apply_diff
    from bot.repo import GitRepository
    from pr_check import revisions
    from pr_check.review import ProductChecks, default_cache_dir, review_trees
    from pr_check.shim import shim_files

    with GitRepository(arguments.repo) as repo:
        notes: tuple[str, ...] = ()
        if diff_text is not None:
            base_sha = repo.resolve(arguments.base or revisions.head_reference(repo))
            base_tree = repo.tree(base_sha)
            patched = apply_diff(base_tree, diff_text)
            head_tree, changes = patched.tree, patched.changes
            notes = (f"head: the diff applied to {base_sha[:12]}",)
        elif arguments.head is None and not revisions.is_bare(repo):
            base_tree, head_tree, changes, notes = _work_tree_change(repo, arguments.base)
        else:
            head_sha = repo.resolve(arguments.head or "HEAD")
            notes = (
                f"head: {arguments.head or 'HEAD'} ({head_sha[:12]}, committed"
                f"{'; a bare repository has no work tree' if arguments.head is None else ''})",
            )
            if arguments.base is None:
                base = revisions.default_base(repo, head_sha)
                base_sha, notes = base.sha, (*notes, base.description)
            else:
                base_sha = repo.resolve(arguments.base)
            changes = parse_diff(repo.diff(base_sha, head_sha))
            base_tree, head_tree = repo.tree(base_sha), repo.tree(head_sha)
        with_shim = shim_files(repo, arguments.shim)
        base_tree, head_tree = with_shim(base_tree), with_shim(head_tree)
        from bot.store.evaluations import EvaluationCache  # the evaluator: imported by the commands that evaluate

        cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
        config_notes, config_source = _config_note(arguments.config)
        with _progress(request) as progress:
            report = review_trees(
                base_tree,
                head_tree,
                changes,
                # The checks are imported only when the result is not stored (pr_check/review.py).
                checks=ProductChecks(request.selected, request.ignored),
                cache=cache,
                progress=progress,
                config=config,
            )
        return _finish(report, request, notes + config_notes, config_source, revisions.repository_uri(repo))


def _work_tree_change(repo: GitRepository, base: str | None):
    """The work tree as `git add -A` would stage it (in a copy of the index), against --base or the
    default base of HEAD: (base tree, head tree, changes, notes). Nothing on disk or in the index changes."""
    from bot.diff import parse_diff
    from pr_check import revisions

    head_commit = repo.head_commit()
    if base is None:
        if head_commit is None:
            raise UsageError(f"{repo.path}: no commit yet to find a base from; pass --base")
        chosen = revisions.default_base(repo, head_commit)
        base_sha, base_note = chosen.sha, chosen.description
    else:
        base_sha, base_note = repo.resolve(base), None
    tree_id = repo.work_tree_id()
    notes = (
        f"head: {WORK_TREE} (tracked edits, staged or not, and untracked files not ignored; --head REV "
        "reviews a commit)",
    ) + ((base_note,) if base_note else ())
    changes = parse_diff(repo.diff_trees(base_sha, tree_id))
    return repo.tree(base_sha), repo.tree_object(tree_id, WORK_TREE), changes, notes


def _scan(arguments: argparse.Namespace, request: OutputRequest, config: Config | None) -> int:
    from bot.diff import ChangeSet
    from bot.repo import GitRepository
    from bot.tree import memory_tree
    from pr_check import revisions
    from pr_check.review import CHECKS, default_cache_dir, load_config, review_trees
    from pr_check.shim import shim_files

    with GitRepository(arguments.repo) as repo:
        revision = arguments.rev or revisions.head_reference(repo)
        tree = shim_files(repo, arguments.shim)(repo.tree(revision))
        from bot.store.evaluations import EvaluationCache  # the evaluator: imported by the commands that evaluate

        cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
        config_notes, config_source = _config_note(arguments.config)
        notes = (f"revision: {revision}",) if revision != tree.revision else ()
        if request.paths:
            notes += (f"paths: {', '.join(request.paths)}",)
        with _progress(request) as progress:
            report = review_trees(
                memory_tree({}, revision=""),
                tree,
                ChangeSet(()),
                checks=request.checks(CHECKS),
                cache=cache,
                progress=progress,
                config=config if config is not None else load_config(tree),
            )
        return _finish(report, request, notes + config_notes, config_source, revisions.repository_uri(repo))


def _finish(
    report,
    request: OutputRequest,
    notes: tuple[str, ...],
    config_source: ConfigSource | None,
    repository_uri: str | None,
) -> int:
    from dataclasses import replace

    from pr_check.output import exit_status, render, write

    report = request.filter(report)
    if config_source is not None:
        report = replace(report, stats=replace(report.stats, config=config_source))
    write(render(report, request, notes=notes, repository_uri=repository_uri), request.output)
    return exit_status(report, request)


def _demo(arguments: argparse.Namespace) -> int:
    import tempfile

    from fixtures.cases import CASES, build_case_repository
    from pr_check.output import OutputOptions, OutputRequest  # noqa: F401

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
    request = OutputRequest.from_options(output_options(arguments))
    with tempfile.TemporaryDirectory(prefix="pr-check-demo-") as directory:
        repo_path, base, head = build_case_repository(arguments.case, Path(directory))
        if request.verbosity >= 0:
            print(f"Reviewing the bundled example PR `{arguments.case}` ({base[:12]}..{head[:12]})\n", file=sys.stderr)
        arguments.repo, arguments.base, arguments.head, arguments.cache_dir, arguments.config = (
            str(repo_path),
            base,
            head,
            None,
            None,
        )
        arguments.shim = None  # demo has no --shim: the bundled case needs none
        status = _review(arguments, request, None, None)
    # The demo shows what would be posted; finding defects in the example is its purpose.
    return 0 if status in (0, 1) else status


if __name__ == "__main__":
    sys.exit(main())
