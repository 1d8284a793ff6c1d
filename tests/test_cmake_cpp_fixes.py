"""The CMake and C++ fixes, end to end: applied to every bad example they give the hand-written
`fixed` text, remove the finding, add none, and leave CMake evaluating and C++ parsing.

The property test at the end flips scopes in the real ExecuTorch CMake files (when a mirror is
present): the CMake model must change in that one target's scope of those items and nowhere else.
"""

from __future__ import annotations

import dataclasses

import pytest

from bot import engine
from bot.check import CMAKE_FILES, CPP_FILES, Example, touches
from bot.cmake import edits
from bot.cmake.interpreter import evaluate_cmake, evaluate_cmake_dirs
from bot.cmake.profiles import DEFAULT_PROFILE
from bot.cmake.syntax import parse_cmake
from bot.cpp.declarations import source_facts
from bot.diff import ChangeSet, FileChange
from bot.facts import cmake_models
from bot.fixes import apply_fixes, fix_between
from bot.snapshot import BuildModel, Snapshot
from bot.tree import FileTree, memory_tree, with_files
from checks import ALL
from checks.gate_declaration_outside import CHECK as GATE_DECLARATION_OUTSIDE
from checks.gate_macro_not_exported import CHECK as GATE_MACRO_NOT_EXPORTED
from checks.link_whole_archive_public import CHECK as LINK_WHOLE_ARCHIVE_PUBLIC

CHECKS = (GATE_DECLARATION_OUTSIDE, GATE_MACRO_NOT_EXPORTED, LINK_WHOLE_ARCHIVE_PUBLIC)
CASES = [(check, index, example) for check in CHECKS for index, example in enumerate(check.bad)]


def _snapshot(base: dict, head: dict) -> Snapshot:
    """Every head file as added or modified, as tests/test_check_examples.py builds it."""
    changes = []
    for path, text in head.items():
        if base.get(path) != text:
            lines = frozenset(range(1, text.count("\n") + 2))
            changes.append(
                FileChange(
                    path,
                    path if path in base else None,
                    "modified" if path in base else "added",
                    added=lines,
                    commentable=lines,
                    hunks=((1, len(lines)),),
                )
            )
    return Snapshot(BuildModel(memory_tree(base)), BuildModel(memory_tree(head)), ChangeSet(tuple(changes)))


def _fixed_head(example: Example, findings) -> tuple[dict[str, str], list]:
    """The head files with every fix of the findings applied, and the fixes left overlapping."""
    head = dict(example.head)
    overlapping = []
    for path in sorted({f.fix.path for f in findings if f.fix is not None}):
        applied = apply_fixes(head[path], [f.fix for f in findings if f.fix is not None and f.fix.path == path])
        head[path] = applied.text
        overlapping.extend(applied.overlapping)
    return head, overlapping


@pytest.mark.parametrize("check, index, example", CASES, ids=[f"{c.id}-bad{i}" for c, i, _e in CASES])
def test_fixes_give_the_hand_written_text(check, index, example):
    base = dict(example.base or {})
    found = engine.run([check], _snapshot(base, dict(example.head))).findings
    ours = [f for f in found if f.rule == check.id]
    assert ours, f"{check.id} bad example {index} is not flagged"
    if example.fixed is None:
        # Only a Buck-side fix may go without an expectation here (helper tests cover those).
        assert all(f.fix is None or not touches(f.fix.path, CMAKE_FILES + CPP_FILES) for f in ours)
        pytest.skip("no CMake or C++ fix expected in this example")
    assert all(f.fix is not None for f in ours), [f.message for f in ours if f.fix is None]
    head, overlapping = _fixed_head(example, ours)
    assert overlapping == []
    for path, text in example.head.items():
        assert head[path] == example.fixed.get(path, text), path


@pytest.mark.parametrize("check, index, example", CASES, ids=[f"{c.id}-bad{i}" for c, i, _e in CASES])
def test_fixed_head_is_clean_and_still_builds(check, index, example):
    if example.fixed is None:
        pytest.skip("no fixed text")
    base = dict(example.base or {})
    head = dict(example.head)
    fixed = {**head, **example.fixed}
    before = engine.run(ALL, _snapshot(base, head))
    after = engine.run(ALL, _snapshot(base, fixed))
    assert [f.message for f in after.findings if f.rule == check.id] == []
    known = {(f.rule, f.fingerprint) for f in before.findings}
    assert [f.message for f in after.findings if (f.rule, f.fingerprint) not in known] == []
    for path, text in example.fixed.items():
        if touches(path, CMAKE_FILES):
            assert parse_cmake(text, path).problems == ()
        if touches(path, CPP_FILES):
            facts = source_facts(path, text)
            assert (facts.problems, facts.unparsed_lines) == ((), ())
    if any(touches(path, CMAKE_FILES) for path in example.fixed):
        problems_before = set(cmake_models.cmake_model(BuildModel(memory_tree(head)), DEFAULT_PROFILE.name).problems)
        assert (
            set(cmake_models.cmake_model(BuildModel(memory_tree(fixed)), DEFAULT_PROFILE.name).problems)
            <= problems_before
        )


# -- the real tree ---------------------------------------------------------------------------

REVISION = "refs/heads/main"
FILES = ("backends/cuda/CMakeLists.txt", "backends/aoti/CMakeLists.txt", "CMakeLists.txt")
FIELDS = {"target_link_libraries": "link_libraries", "target_compile_definitions": "compile_definitions"}
OTHER_SCOPE = {"PRIVATE": "PUBLIC", "PUBLIC": "PRIVATE", "INTERFACE": "PUBLIC"}


def _with_file(tree: FileTree, path: str, text: str) -> FileTree:
    return with_files(tree, {path: text})


@dataclasses.dataclass(frozen=True)
class _Flip:
    """One scope change: a whole keyword group of a call, or its last item alone (a split)."""

    path: str
    command: str
    line: int  # the call's first line
    group: int  # which of the call's scope groups
    split: bool
    target: str
    old: str
    new: str
    lines: frozenset[int]  # where the moved items are written

    @property
    def field(self) -> str:
        return FIELDS[self.command]


def _flips(tree: FileTree) -> list[_Flip]:
    found = []
    for path in FILES:
        for invocation in edits.invocations(tree.read_text(path)):
            if invocation.name not in FIELDS:
                continue
            for index, group in enumerate(edits.scope_groups(invocation)):
                if group.keyword is None or not group.items:
                    continue
                for split in (False, True) if len(group.items) > 1 else (False,):
                    moved = group.items[-1:] if split else group.items
                    found.append(
                        _Flip(
                            path,
                            invocation.name,
                            invocation.line,
                            index,
                            split,
                            invocation.arguments[0].value,
                            group.scope,
                            OTHER_SCOPE[group.scope],
                            frozenset(item.line for item in moved),
                        )
                    )
    return found


def _apply(text: str, flips) -> str:
    """`text` with the flips made through the edits, the lowest call first (whole-group flips
    keep every line where it is, so the later ones still find their calls)."""
    for flip in sorted(flips, key=lambda f: f.line, reverse=True):
        invocation = edits.invocation_at(text, flip.line, (flip.command,))
        group = edits.scope_groups(invocation)[flip.group]
        changed = edits.set_scope(text, invocation, group.items[-1:] if flip.split else group.items, flip.new)
        assert changed is not None and changed != text, flip
        text = changed
    return text


def _batches(flips):
    """Whole-group flips of one file in batches with one flip per target (so each change has
    one cause), and every split alone (it moves lines)."""
    batches: list[list[_Flip]] = []
    for flip in flips:
        if flip.split:
            batches.append([flip])
            continue
        batch = next(
            (
                b
                for b in batches
                if not b[0].split and b[0].path == flip.path and all(f.target != flip.target for f in b)
            ),
            None,
        )
        if batch is None:
            batches.append([flip])
        else:
            batch.append(flip)
    return batches


class _Lines:
    """Maps a line of the edited file, old or new, to one comparable value: lines above the
    edit stay, lines below it are shifted back, lines inside it become one placeholder."""

    def __init__(self, path: str, before: str, after: str):
        fix = fix_between(path, before, after, "")
        self.path, self.first, self.last = path, fix.line, fix.end_line
        self.new_last = fix.line + fix.replacement.count("\n")

    def old(self, line: int):
        return line if line < self.first else "edit" if line <= self.last else line - self.last

    def new(self, line: int):
        return line if line < self.first else "edit" if line <= self.new_last else line - self.new_last


def _normal(value, path: str, to_line):
    """`value` with every (path, line) of the edited file mapped through `to_line`, scopes kept."""
    if dataclasses.is_dataclass(value):
        changes = {f.name: _normal(getattr(value, f.name), path, to_line) for f in dataclasses.fields(value)}
        if getattr(value, "path", None) == path and isinstance(getattr(value, "line", None), int):
            changes["line"] = to_line(value.line)
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == path and isinstance(value[1], int):
            return (path, to_line(value[1]))
        return tuple(_normal(v, path, to_line) for v in value)
    return value


def _evaluate_backends(tree: FileTree):
    return evaluate_cmake_dirs(tree, DEFAULT_PROFILE, ("extension/cuda", "backends/aoti", "backends/cuda"))


def _evaluate_all(tree: FileTree):
    return evaluate_cmake(tree, DEFAULT_PROFILE)


def _without_scope(items):
    return [dataclasses.replace(item, scope="") for item in items]


def test_flipping_a_scope_in_the_real_tree_changes_only_that_scope(executorch_mirror):
    from bot.repo import GitRepository

    tree = GitRepository(executorch_mirror).tree(REVISION)
    models = {evaluate: evaluate(tree) for evaluate in (_evaluate_backends, _evaluate_all)}
    flips = _flips(tree)
    assert {f.path for f in flips} == set(FILES) and any(f.split for f in flips)
    changed_by = set()
    for batch in _batches(flips):
        path = batch[0].path
        before_text = tree.read_text(path)
        text = _apply(before_text, batch)
        where = f"{path}: " + ", ".join(f"{f.line}#{f.group}{'s' if f.split else ''} {f.old}->{f.new}" for f in batch)
        mapping = _Lines(path, before_text, text)
        # The backends' directories alone evaluate in a fraction of the whole tree's time.
        evaluate = _evaluate_backends if path.startswith("backends/") else _evaluate_all
        model = models[evaluate]
        flipped = evaluate(_with_file(tree, path, text))
        assert _normal(flipped.problems, path, mapping.new) == _normal(model.problems, path, mapping.old), where
        assert flipped.targets.keys() == model.targets.keys(), where
        for name, target in model.targets.items():
            if flipped.targets[name] == target:
                continue
            before = _normal(target, path, mapping.old)
            after = _normal(flipped.targets[name], path, mapping.new)
            if after == before:
                continue
            assert name in {f.target for f in batch}, (where, name)
            assert dataclasses.replace(after, link_libraries=(), compile_definitions=(), whole_archive=()) == (
                dataclasses.replace(before, link_libraries=(), compile_definitions=(), whole_archive=())
            ), where
            for field in ("link_libraries", "compile_definitions"):
                items_before, items_after = getattr(before, field), getattr(after, field)
                assert _without_scope(items_after) == _without_scope(items_before), where  # same items, same order
                written = getattr(target, field)  # with the lines as written before the edit
                for item, item_before, item_after in zip(written, items_before, items_after, strict=True):
                    if item_before.scope == item_after.scope:
                        continue
                    cause = [
                        f
                        for f in batch
                        if f.target == name
                        and f.field == field
                        and item.path == path
                        and item.line in f.lines
                        and (f.old, f.new) == (item_before.scope, item_after.scope)
                    ]
                    assert len(cause) == 1, (where, name, item)
                    changed_by.add(cause[0])
            if all(f.field != "link_libraries" for f in batch if f.target == name):
                assert after.whole_archive == before.whole_archive, where
    # Most calls are evaluated under the default profile (the rest sit under other platforms).
    assert len(changed_by) >= 20 and any(f.split for f in changed_by) and {f.path for f in changed_by} == set(FILES)


def test_the_real_public_whole_archive_gets_the_fix_a_maintainer_would_write(executorch_mirror):
    # eac0673bd5 linked aoti_common_shims_slim whole in PUBLIC scope of the shared aoti_cuda_shims
    # (3a00cc1897 later made it PRIVATE); the flags are wrapped in a generator expression.
    from bot.repo import GitRepository

    tree = GitRepository(executorch_mirror).tree("eac0673bd5")
    path = "backends/cuda/CMakeLists.txt"
    snapshot = Snapshot(BuildModel(tree), BuildModel(tree), ChangeSet(()))
    (hit,) = [
        h for h in LINK_WHOLE_ARCHIVE_PUBLIC.run(snapshot, None) if h.key == "aoti_cuda_shims:aoti_common_shims_slim"
    ]
    text = tree.read_text(path)
    fixed = apply_fixes(text, [hit.fix]).text
    before = (
        "target_link_libraries(\n"
        "  aoti_cuda_shims\n"
        "  PRIVATE cuda_platform\n"
        "  PUBLIC $<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-Wl,--whole-archive>\n"
        "         aoti_common_shims_slim\n"
        "         $<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-Wl,--no-whole-archive>\n"
        "         cuda_tensor_maker\n"
        "         CUDA::cudart\n"
        "         ${CMAKE_DL_LIBS}\n"
        ")\n"
    )
    after = (
        "target_link_libraries(\n"
        "  aoti_cuda_shims\n"
        "  PRIVATE cuda_platform\n"
        "          $<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-Wl,--whole-archive>\n"
        "          aoti_common_shims_slim\n"
        "          $<$<NOT:$<CXX_COMPILER_ID:MSVC>>:-Wl,--no-whole-archive>\n"
        "  PUBLIC cuda_tensor_maker\n"
        "         CUDA::cudart\n"
        "         ${CMAKE_DL_LIBS}\n"
        ")\n"
    )
    assert before in text and fixed == text.replace(before, after)
    model = evaluate_cmake(_with_file(tree, path, fixed), DEFAULT_PROFILE)
    pairs = [(w.library, w.scope) for w in model.targets["aoti_cuda_shims"].whole_archive]
    assert ("aoti_common_shims_slim", "PRIVATE") in pairs and ("aoti_common_shims_slim", "PUBLIC") not in pairs
    fixed_snapshot = Snapshot(BuildModel(tree), BuildModel(_with_file(tree, path, fixed)), ChangeSet(()))
    assert [h.key for h in LINK_WHOLE_ARCHIVE_PUBLIC.run(fixed_snapshot, None) if h.path == path] == []
