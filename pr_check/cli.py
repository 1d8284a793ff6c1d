"""`pr-check`: review, scan, fix, hook, rules, explain, demo; and the entry points of smoke, serve, worker.

Exit codes: 0 clean, 1 findings at or above the fail level, 2 usage or input error, 3 internal
error; `fix`: 0 nothing to change, 1 files changed (or a diff printed). Arguments are validated
before any work starts. Errors print one line on stderr, never a traceback.

This module is the parser and the command table; each command family runs in its own module
(pr_check/commands/), imported only when one of its commands runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from bot.errors import PrCheckError, UsageError
from pr_check.output import FAIL_LEVELS, FORMATS, formats_help
from pr_check.version import VERSION

# Hostile Starlark that allocates in one operation can outrun the interpreter's own checks;
# an address-space cap turns that into an allocation failure instead of an exhausted machine.
MEMORY_CAP_BYTES = 12 << 30
DEFAULT_DEMO_CASE = "pr24817-cuda-outside-fbcode"
EXIT_CODES = """exit codes:
  0  no finding at or above the fail level (or --exit-zero)
  1  findings at or above the fail level
  2  usage or input error (not a repository, unknown revision, malformed diff, bad config)
  3  internal error"""
SHIM_HELP = "the shim submodule's files: a checkout or git repository of it (default: an initialized shim/)"
FAIL_LEVEL_HELP = "exit 1 on findings at or above this severity (default: the config's, else major)"
CACHE_HELP = "evaluation cache (default: inside the git directory)"


@dataclass(frozen=True, slots=True)
class Option:
    """One command-line option, defined once; a command may reword its help."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]

    def add(self, parser: Any, help_text: str | None = None) -> None:
        """Add it to a parser or an argument group (argparse names no public type for both)."""
        settings = dict(self.settings) if help_text is None else {**self.settings, "help": help_text}
        parser.add_argument(*self.flags, **settings)


OPTIONS: dict[str, Option] = {
    "repo": Option(("--repo",), {"default": ".", "help": "git repository, bare or not (default: .)"}),
    "base": Option(
        ("--base",),
        {
            "default": None,
            "help": "base revision (default: the merge base of the remote's default branch and the head, HEAD for "
            "the work tree; with --diff: the commit HEAD points at)",
        },
    ),
    "head": Option(
        ("--head",),
        {
            "default": None,
            "metavar": "REV",
            "help": "review this committed revision (default: the work tree: tracked edits, staged or not, and "
            "untracked files that are not ignored; in a bare repository HEAD); not used with --diff",
        },
    ),
    "diff-file": Option(
        ("--diff",),
        {
            "default": None,
            "metavar": "FILE",
            "help": "unified diff to apply to --base in memory ('-' reads stdin); the result is the head",
        },
    ),
    "diff-print": Option(
        ("--diff",),
        {
            "action": "store_true",
            "help": "write nothing; print the changes as a unified diff (git apply takes it)",
        },
    ),
    "fix": Option(
        ("--fix",),
        {"action": "store_true", "help": "apply the fixes to work-tree files without unstaged changes"},
    ),
    "rev": Option(("--rev",), {"default": None, "help": "revision to scan (default: the commit HEAD points at)"}),
    "path": Option(
        ("--path",),
        {
            "action": "append",
            "metavar": "PREFIX",
            "help": "report only findings under this directory or glob (repeatable)",
        },
    ),
    "statistics": Option(
        ("--statistics",),
        {"action": "store_true", "help": "print counts per rule, cell and directory instead of the findings"},
    ),
    "compile": Option(
        ("--compile",),
        {
            "action": argparse.BooleanOptionalAction,
            "default": None,
            "help": "compile the changed translation units at base and head in each configuration "
            "(default: on where a C++ compiler is found)",
        },
    ),
    "shim": Option(("--shim",), {"type": Path, "default": None, "help": SHIM_HELP}),
    "format": Option(("--format",), {"choices": tuple(FORMATS), "default": "text", "help": formats_help()}),
    "output": Option(
        ("--output",),
        {"type": Path, "default": None, "metavar": "FILE", "help": "write the output to FILE instead of stdout"},
    ),
    "fail-level": Option(("--fail-level",), {"choices": FAIL_LEVELS, "default": None, "help": FAIL_LEVEL_HELP}),
    "exit-zero": Option(
        ("--exit-zero",), {"action": "store_true", "help": "exit 0 even when findings reach the fail level"}
    ),
    "select": Option(
        ("--select",),
        {"action": "append", "metavar": "RULES", "help": "only these rule ids (comma-separated, repeatable)"},
    ),
    "ignore": Option(
        ("--ignore",),
        {"action": "append", "metavar": "RULES", "help": "leave out these rule ids (comma-separated, repeatable)"},
    ),
    "config": Option(
        ("--config",),
        {
            "type": Path,
            "default": None,
            "metavar": "FILE",
            "help": "try a local config file instead of the base revision's .github/pr-check.toml",
        },
    ),
    "color": Option(
        ("--color",),
        {
            "choices": ("auto", "always", "never"),
            "default": "auto",
            "help": "colour the text output (default: auto: when stdout is a terminal or FORCE_COLOR / "
            "CLICOLOR_FORCE is set, and NO_COLOR is not)",
        },
    ),
    "cache-dir": Option(("--cache-dir",), {"type": Path, "default": None, "metavar": "DIR", "help": CACHE_HELP}),
    "quiet": Option(("-q", "--quiet"), {"action": "store_true", "help": "text: one line per finding, nothing else"}),
    "verbose": Option(
        ("-v", "--verbose"),
        {"action": "store_true", "help": "text: everything, suppressed findings and all smoke reasons"},
    ),
    "markdown": Option(("--markdown",), {"action": "store_true", "help": "print RULES.md"}),
    "rule": Option(("rule",), {"help": "a rule id, as `pr-check rules` lists them"}),
    "case": Option(
        ("--case",),
        {
            "default": DEFAULT_DEMO_CASE,
            "help": f"the example to review (default: {DEFAULT_DEMO_CASE}; see --list)",
        },
    ),
    "list": Option(("--list",), {"action": "store_true", "help": "list the bundled examples and exit"}),
    "cache-action": Option(
        ("action",),
        {
            "choices": ("info", "clean"),
            "help": "info: where, entries, bytes, bound; clean: remove every entry",
        },
    ),
}
# -q and -v exclude each other wherever they appear.
VERBOSITY = "verbosity"
REVIEW_OUTPUT = (
    "format",
    "output",
    "fail-level",
    "exit-zero",
    "select",
    "ignore",
    "config",
    "color",
    "cache-dir",
    VERBOSITY,
)
FIX_SETTINGS = ("select", "ignore", "config", "shim", "cache-dir", VERBOSITY)
FIX_BASE_HELP = "base revision (default: as for `review`, the merge base of the remote's default branch and HEAD)"


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: its help, its options (a name, or a name and the help it has here), and
    `run`, the "module:function" that runs it, imported only when it runs: a command's module
    imports what it needs (the checks, the evaluators, the App), and `--version` and `--help`
    must not (tests/test_cli_startup.py). A pass-through command hands its arguments on unparsed."""

    name: str
    help: str
    run: str
    options: tuple[str | tuple[str, str], ...] = ()
    description: str | None = None
    epilog: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    passthrough: bool = False


COMMANDS: tuple[Command, ...] = (
    Command(
        "review",
        "review the work tree, a commit (--head) or a diff against the base",
        "pr_check.commands.review:run_review",
        ("repo", "base", "head", "diff-file", "shim", "compile", *REVIEW_OUTPUT),
        description="Review what a change makes new: the work tree (default) or --head REV against --base, "
        "in every Buck cell, CMake profile and C++ configuration; only findings the change introduced are reported.",
        epilog=EXIT_CODES
        + """

examples:
  pr-check review                                   the work tree against the default branch's merge base
  pr-check review --head HEAD --base origin/main    the committed change
  pr-check review --format sarif --output pr-check.sarif
  git diff | pr-check review --diff -               a diff applied to HEAD in memory""",
    ),
    Command(
        "scan",
        "audit a whole tree at one revision, no diff",
        "pr_check.commands.review:run_scan",
        ("repo", "rev", "path", "statistics", "shim", "compile", *REVIEW_OUTPUT),
        description="Report every finding in a whole tree at one revision (nothing is compared with a base).",
        epilog=EXIT_CODES
        + """

examples:
  pr-check scan --statistics                        counts per rule, cell and directory
  pr-check scan --rev origin/main --path backends/cuda --select cuda-guard-missing
  pr-check scan --format json --output findings.json""",
    ),
    Command(
        "fix",
        "apply the fixes of the findings new in the work tree; exit 1 when files changed or findings remain",
        "pr_check.commands.fix:run_fix",
        (
            ("repo", "a git work tree (default: .)"),
            ("base", FIX_BASE_HELP),
            "diff-print",
            (
                "fail-level",
                "exit 1 when findings at or above this severity are left (default: the config's, else major)",
            ),
            *FIX_SETTINGS,
        ),
        description="Review the work tree (tracked, untracked but not ignored, deleted files) against --base and "
        "apply the fixes of the new findings, again until they settle. Writes only the files the fixes name. "
        "Exit codes: 0 nothing changed and no finding left at the fail level, 1 files changed (with --diff: a diff "
        "printed) or findings at or above the fail level left, 2 usage or input error, 3 internal error.",
        defaults={"format": "text"},
    ),
    Command(
        "hook",
        "pre-commit: review the staged change against HEAD; --fix also applies fixes",
        "pr_check.commands.fix:run_hook",
        (("repo", "a git work tree (default: .)"), "fix", "fail-level", *FIX_SETTINGS),
        description="Review what is staged (the index against HEAD) when it touches Buck, CMake or C++ files. "
        "Exit 1 on findings at or above the fail level; with --fix, also when files were changed. "
        "--fix writes a work-tree file only where it equals its staged version.",
        defaults={"format": "text"},
    ),
    Command("rules", "list the rules", "pr_check.commands.rules:run_rules", ("markdown",)),
    Command("explain", "explain one rule", "pr_check.commands.rules:run_explain", ("rule",)),
    Command(
        "demo",
        "dry-run review of a bundled example PR",
        "pr_check.commands.demo:run_demo",
        ("case", "list", ("format", "output format (default: text)"), VERBOSITY),
        defaults={"compile": False},  # the bundled example shows the rules' findings, fast
    ),
    Command(
        "cache",
        "the evaluation and fact cache of a repository: its size, or empty it",
        "pr_check.commands.cache:run_cache",
        (
            "cache-action",
            ("repo", "git repository whose cache it is (default: .)"),
            ("cache-dir", "a cache directory instead of the repository's"),
        ),
    ),
    Command(
        "smoke",
        "the GPU smoke runner (see `pr-check smoke --help`)",
        "pr_check.commands.smoke:run_smoke",
        passthrough=True,
    ),
    Command("serve", "run the GitHub App webhook service", "pr_check.commands.app:run_serve", passthrough=True),
    Command("worker", "run a queue worker of the GitHub App", "pr_check.commands.app:run_worker", passthrough=True),
    Command(
        "action",
        "the review step of the GitHub Action (action.yml; reads the GITHUB_* variables)",
        "pr_check.action:main",
        passthrough=True,
    ),
)
BY_NAME = {command.name: command for command in COMMANDS}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors are usage errors: exit 2
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, from the command table and the options."""
    parser = _Parser(prog="pr-check", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pr-check {VERSION}", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for command in COMMANDS:
        if command.passthrough:
            passthrough = sub.add_parser(command.name, help=command.help, add_help=False)
            passthrough.add_argument("args", nargs=argparse.REMAINDER, help="passed on unchanged")
            continue
        extra: dict[str, Any] = {}
        if command.epilog is not None:
            extra = {"epilog": command.epilog, "formatter_class": argparse.RawDescriptionHelpFormatter}
        child = sub.add_parser(command.name, help=command.help, description=command.description, **extra)
        for entry in command.options:
            name, help_text = (entry, None) if isinstance(entry, str) else entry
            if name == VERBOSITY:
                group = child.add_mutually_exclusive_group()
                OPTIONS["quiet"].add(group)
                OPTIONS["verbose"].add(group)
            else:
                OPTIONS[name].add(child, help_text)
        if command.defaults:
            child.set_defaults(**command.defaults)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # what argparse's version action prints, without building every subparser
        print(f"pr-check {VERSION}")
        return 0
    if argv and argv[0] in BY_NAME and BY_NAME[argv[0]].passthrough:
        return _runner(BY_NAME[argv[0]])(argv[1:])
    try:
        arguments = build_parser().parse_args(argv)
        _cap_memory()
        return _runner(BY_NAME[arguments.command])(arguments)
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


def _runner(command: Command) -> Callable[..., int]:
    """The function that runs `command`, its module imported now (see `Command`)."""
    module, _, function = command.run.partition(":")
    return getattr(importlib.import_module(module), function)


def _cap_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        cap = MEMORY_CAP_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_CAP_BYTES, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


if __name__ == "__main__":
    sys.exit(main())
