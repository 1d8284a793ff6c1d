"""`/pr-check` comments: parsing, who may run what, and the replies. Pure.

/pr-check              review the pull request again at its head
/pr-check smoke [SHA]  run the GPU smoke job on the head of the comment's time, or on SHA (write permission)
/pr-check fix          push one commit with the review's fixes to the pull request's branch (write permission)
/pr-check explain ID   what a rule checks and why
/pr-check help         this text
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

COMMAND_PREFIX = "/pr-check"

# Associations that can hold write access; anyone else is refused without asking the API.
ASSOCIATIONS_WORTH_ASKING = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
# `maintain` reads as `write` in the permission API, but custom setups report it too.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed `/pr-check` request."""

    action: str  # review | smoke | fix | explain | help
    rule: str | None = None  # for explain
    sha: str | None = None  # for smoke: the commit approved, when named


@dataclass(frozen=True, slots=True)
class CommandError:
    """A `/pr-check` line that did not parse; `usage` is the reply."""

    message: str
    usage: str


class _ParseFailure(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and exiting: the reply is a comment, not stderr."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        raise _ParseFailure(message)

    def exit(self, status: int = 0, message: str | None = None):
        raise _ParseFailure(message or "")


def _parser() -> _Parser:
    parser = _Parser(
        prog=COMMAND_PREFIX,
        add_help=False,
        exit_on_error=False,
        usage=f"{COMMAND_PREFIX} [smoke [SHA] | fix | explain RULE | help]",
    )
    actions = parser.add_subparsers(dest="action", parser_class=_Parser, metavar="{smoke,fix,explain,help}")
    smoke = actions.add_parser("smoke", add_help=False, help="run the GPU smoke job (needs write permission)")
    smoke.add_argument("sha", nargs="?", type=_sha, help="the head commit approved (default: the head when commenting)")
    actions.add_parser("fix", add_help=False, help="push the review's fixes to the branch (needs write permission)")
    explain = actions.add_parser("explain", add_help=False, help="explain a rule")
    explain.add_argument("rule", help="rule id, e.g. link-whole-without-python-dlopen")
    actions.add_parser("help", add_help=False, help="show this help")
    return parser


def _sha(text: str) -> str:
    if not re.fullmatch(r"[0-9a-fA-F]{7,40}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a commit sha (7 to 40 hex digits)")
    return text.lower()


def usage_text() -> str:
    """The usage lines, as argparse writes them."""
    return _parser().format_usage().strip()


def help_text() -> str:
    """The reply to `/pr-check help`."""
    return "\n".join(
        [
            "**pr-check commands**",
            "",
            "- `/pr-check`: review this pull request again at its head (the author, or anyone with write access)",
            "- `/pr-check smoke [sha]`: run the GPU smoke job on the head commit as of your comment, or on the "
            "commit named (write access); a later push needs a new approval",
            "- `/pr-check fix`: push one commit with the fixes of the review to this pull request's branch "
            "(write access; when the App is set up for it)",
            "- `/pr-check explain <rule-id>`: what a rule checks and why",
            "- `/pr-check help`: this text",
        ]
    )


def find_command_line(body: str) -> str | None:
    """The first line of a comment that is a `/pr-check` command, or None."""
    for line in (body or "").splitlines():
        stripped = line.strip()
        if stripped == COMMAND_PREFIX or stripped.startswith(COMMAND_PREFIX + " "):
            return stripped
    return None


def parse_command(line: str) -> Command | CommandError:
    """Parse one `/pr-check ...` line."""
    try:
        words = shlex.split(line)
    except ValueError as error:
        return CommandError(str(error), usage_text())
    if not words or words[0] != COMMAND_PREFIX:
        return CommandError("not a /pr-check command", usage_text())
    try:
        namespace = _parser().parse_args(words[1:])
    except (_ParseFailure, argparse.ArgumentError) as error:
        return CommandError(str(error) or "bad arguments", usage_text())
    if namespace.action is None:
        return Command("review")
    return Command(namespace.action, getattr(namespace, "rule", None), getattr(namespace, "sha", None))


def needs_permission_lookup(command: Command, *, commenter: str, pr_author: str, association: str) -> bool:
    """Whether deciding needs the collaborator-permission API (a network call worth skipping)."""
    if command.action in ("help", "explain"):
        return False
    if command.action == "review" and commenter.lower() == pr_author.lower():
        return False
    return association.upper() in ASSOCIATIONS_WORTH_ASKING


def may_run(command: Command, *, commenter: str, pr_author: str, permission: str) -> bool:
    """Design 6: the PR author and anyone with write may re-review; `smoke` needs write."""
    if command.action in ("help", "explain"):
        return True
    has_write = permission.lower() in WRITE_PERMISSIONS
    if command.action in ("smoke", "fix"):
        return has_write
    return has_write or commenter.lower() == pr_author.lower()


def refusal_text(command: Command, commenter: str, pr_author: str = "") -> str:
    """A polite no."""
    if command.action == "smoke":
        need = "The GPU smoke job runs this pull request's code on our GPU machines, so it needs write access to the repository."
    elif command.action == "fix" and commenter.lower() == pr_author.lower():
        return (
            f"Thanks, @{commenter}. `/pr-check fix` pushes to this branch as the App, so it needs write access "
            "to the repository. You can apply the same fixes yourself: accept the suggestions in the review, "
            "or run `pr-check fix` in your checkout and push the result."
        )
    elif command.action == "fix":
        need = (
            "`/pr-check fix` pushes a commit to this pull request's branch, so it needs write access to the repository."
        )
    else:
        need = "A re-review can be asked for by the pull request's author or by anyone with write access."
    return f"Thanks, @{commenter}. {need} A maintainer can run it for you."


def usage_reply(error: CommandError) -> str:
    """The reply to a `/pr-check` line with bad arguments."""
    return f"Sorry, I could not read that command: {error.message}\n\n```\n{error.usage}\n```\n\n{help_text()}"


def explain_text(rule_id: str, checks: Iterable[object]) -> str:
    """The reply to `/pr-check explain <id>`: the check's documentation, or a clear 'unknown rule'."""
    known = {getattr(check, "id", None): check for check in checks}
    check = known.get(rule_id)
    if check is None:
        listed = ", ".join(f"`{name}`" for name in sorted(n for n in known if n))
        tail = f" Known rules: {listed}." if listed else ""
        return f"Unknown rule `{rule_id}`.{tail}"
    severity = getattr(check, "severity", None)
    label = getattr(severity, "label", str(severity)) if severity is not None else "?"
    title = getattr(check, "title", "")
    doc = (getattr(check, "doc", None) or "").strip() or "(no documentation)"
    return f"**{rule_id}** ({label}): {title}\n\n{doc}"
