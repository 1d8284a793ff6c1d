"""Every fix of every check, applied to its bad examples: the finding goes, nothing else changes.

A bad example whose findings carry fixes says, in `fixed`, what the files must read after
every fix is applied: written by hand as a maintainer would commit it. The fixed tree is then
reviewed again by every check: the rule is silent, no other rule finds anything the unfixed
head did not, and every Buck file still parses and evaluates
(as well as it did: an example may fail to load in a cell it was not written for).
"""

from __future__ import annotations

import pytest

from bot import engine
from bot.buck.cells import CELLS
from bot.buck.syntax import parse_starlark
from bot.check import BUCK_FILES, Example, touches
from bot.fixes import apply_fixes
from bot.model import Fix
from checks import ALL
from tests.test_check_examples import _snapshot

_ROUNDS = 4  # fixes that overlap an applied one are recomputed on the new text: a second round


def _bad_examples():
    for check in ALL:
        for number, example in enumerate(check.bad):
            yield pytest.param(check, example, id=f"{check.id}-{number}")


def _fixes(check, head: dict[str, str], base) -> list[Fix]:
    result = engine.run([check], _snapshot(Example(head=head, base=base)))
    return [f.fix for f in result.findings if f.rule == check.id and f.fix is not None]


def _fixed_head(check, example: Example) -> tuple[dict[str, str], bool]:
    """The head files with every fix applied, round after round; and whether any fix came."""
    head = dict(example.head)
    any_fix = False
    for _round in range(_ROUNDS):
        fixes = _fixes(check, head, example.base)
        if not fixes:
            break
        any_fix = True
        for path in sorted({fix.path for fix in fixes}):
            applied = apply_fixes(head[path], [fix for fix in fixes if fix.path == path])
            head[path] = applied.text
    return head, any_fix


@pytest.mark.parametrize("check,example", list(_bad_examples()))
def test_fixes_give_the_hand_written_files_and_remove_only_their_finding(check, example):
    fixed_head, any_fix = _fixed_head(check, example)
    if not any_fix:
        assert example.fixed is None, f"{check.id}: `fixed` is given but no finding carries a fix"
        return
    assert example.fixed is not None, f"{check.id}: the findings carry fixes, so the example needs `fixed`"
    changed = {path: text for path, text in fixed_head.items() if text != example.head.get(path)}
    assert changed == dict(example.fixed)

    unfixed = engine.run(ALL, _snapshot(example))
    fixed = engine.run(ALL, _snapshot(Example(head=fixed_head, base=example.base)))
    assert [f.message for f in fixed.findings if f.rule == check.id] == []
    before = {(f.rule, f.fingerprint) for f in unfixed.findings}
    assert [f.message for f in fixed.findings if (f.rule, f.fingerprint) not in before] == []

    for path, text in fixed_head.items():
        if isinstance(text, str) and touches(path, BUCK_FILES) and not path.endswith(".buckconfig"):
            assert parse_starlark(text).errors == (), path
    # The example may not evaluate in every cell to begin with (an fbcode-only load in OSS):
    # the fix must add no failure.
    unfixed_head = _snapshot(example).head
    fixed_snapshot_head = _snapshot(Example(head=fixed_head, base=example.base)).head
    for cell in CELLS:
        failing = {(e.package, e.message) for e in unfixed_head.cell(cell).errors}
        assert [e for e in fixed_snapshot_head.cell(cell).errors if (e.package, e.message) not in failing] == [], cell


@pytest.mark.parametrize("check", ALL, ids=[c.id for c in ALL])
def test_fixable_is_declared_exactly_when_a_bad_example_gets_a_fix(check):
    # RULES.md and the rules' metadata say which rules fix what they find; the examples prove it.
    fixed = [example for example in check.bad if _fixes(check, dict(example.head), example.base)]
    assert bool(fixed) == check.fixable, f"{check.id}: fixable={check.fixable}, bad examples fixed: {len(fixed)}"
