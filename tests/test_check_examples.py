"""Every check's bad and good examples are its tests: exactly the marked lines, nothing on good."""

from __future__ import annotations

import pytest

from bot import engine
from bot.check import Example
from bot.diff import ChangeSet, FileChange
from bot.model import ReviewMode
from bot.snapshot import BuildModel, Snapshot
from bot.tree import memory_tree
from checks import ALL


def _snapshot(example: Example) -> Snapshot:
    base_files = example.base or {}
    head_files = example.head
    changes = []
    for path, text in head_files.items():
        if not isinstance(text, str):
            continue
        if base_files.get(path) != text:
            lines = frozenset(range(1, text.count("\n") + 2))
            changes.append(
                FileChange(
                    path,
                    path if path in base_files else None,
                    "modified" if path in base_files else "added",
                    added=lines,
                    commentable=lines,
                    hunks=((1, len(lines)),),
                )
            )
    mode = ReviewMode.REVIEW if base_files else ReviewMode.SCAN  # as the pipeline decides it
    return Snapshot(
        BuildModel(memory_tree(base_files)), BuildModel(memory_tree(head_files)), ChangeSet(tuple(changes)), mode=mode
    )


@pytest.mark.parametrize("check", ALL, ids=[c.id for c in ALL])
def test_bad_examples_flag_exactly_the_marked_lines(check):
    for example in check.bad:
        result = engine.run([check], _snapshot(example))
        flagged = {(f.path, f.line) for f in result.findings if f.rule == check.id}
        assert flagged == example.expected_lines(check.id), [f.message for f in result.findings]
        assert not [f for f in result.findings if f.rule == engine.INTERNAL_ERROR]


@pytest.mark.parametrize("check", ALL, ids=[c.id for c in ALL])
def test_good_examples_stay_silent(check):
    for example in check.good:
        result = engine.run([check], _snapshot(example))
        assert result.findings == (), [f.message for f in result.findings]


@pytest.mark.parametrize("check", ALL, ids=[c.id for c in ALL])
def test_every_check_documents_itself(check):
    assert check.doc and "Example (bad)" in check.doc and "Use instead" in check.doc
    assert check.title and check.title[0].isupper()
    assert any(example.expected_lines(check.id) for example in check.bad)
