"""`pr-check rules` and `pr-check explain`: the rule list and one rule's rationale."""

from __future__ import annotations

import argparse
import sys

from bot.engine import ENGINE_RULES
from bot.errors import UsageError
from pr_check.review import BY_ID
from pr_check.rules_page import render_rules_markdown, render_rules_table


def run_rules(arguments: argparse.Namespace) -> int:
    """Every rule as a table, or RULES.md with --markdown."""
    sys.stdout.write(render_rules_markdown() if arguments.markdown else render_rules_table() + "\n")
    return 0


def run_explain(arguments: argparse.Namespace) -> int:
    """One rule's severity, title and rationale (or what the engine reports it for)."""
    rule = arguments.rule
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
