"""The evaluation core: files and directories, the command loop, argument expansion.

An `Evaluation` is one run over a tree under a profile. It owns the state every command
family reads and writes (cache, targets, problems) and dispatches each command: block
commands to bot/cmake/control_flow.py, the rest through the handler map of
bot/cmake/commands/. Budgets (bot/cmake/budgets.py) bound what a file can make it do.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

from bot.cmake import control_flow
from bot.cmake.blocks import CLOSERS, Program, program_for
from bot.cmake.budgets import (
    MAX_BLOCK_DEPTH,
    MAX_DEPTH,
    MAX_EXPANDED_CHARS,
    MAX_EXPANDED_ITEMS,
    MAX_FILE_BYTES,
    MAX_LIST_ITEMS,
    MAX_VALUE_CHARS,
    BudgetExhausted,
    NestingTooDeep,
    joined_size,
)
from bot.cmake.commands import HANDLERS
from bot.cmake.commands.variables import define_option
from bot.cmake.model import BINARY_ROOT, SOURCE_ROOT, CMakeModel, ExtractedSources, InstalledFile
from bot.cmake.profiles import DEFAULT_PROFILE, CMakeProfile, platform_variables
from bot.cmake.reads import Reads, TreeReads
from bot.cmake.regexes import RegexGuard
from bot.cmake.state import Definition, Directory, Flow, Frame, Item, Origins, Scope, TargetBuilder
from bot.cmake.syntax import Arg, Command, ParseProblem
from bot.cmake.values import expand_references, split_list
from bot.tree import FileTree

if TYPE_CHECKING:  # the evaluated list files of process scripts (commands/processes.py)
    import starlark as sl

# ExecuTorch's main takes about 9,100 commands per profile; a runaway script that spends all of
# these ends within seconds (a few microseconds a command), and is reported (budgets.py).
_MAX_STEPS = 400_000

_BLOCKS = frozenset({"if", "foreach", "while", "block"})
_MACRO_REFERENCE = re.compile(r"\$\{([^${}]*)\}")
_REFERENCE = re.compile(r"\$\{([^${}]+)\}")
_NONE_EXTRACTED: Mapping[str, ExtractedSources] = MappingProxyType({})


class _Oversize(Exception):
    """An expansion grew past MAX_VALUE_CHARS; it is redone truncated."""


class Evaluation:
    """One run over a tree under a profile. Mutable while running; `_freeze` makes the model."""

    def __init__(
        self, tree: FileTree, profile: CMakeProfile, extracted: Mapping[str, ExtractedSources] = _NONE_EXTRACTED
    ) -> None:
        # Every question asked of the tree goes through this, which records the answers (reads.py).
        self.tree = TreeReads(tree)
        self.profile = profile
        # config path -> the lists extract_sources.py would write from it; model path -> what a
        # run of that script wrote there, for include() to read (commands/processes.py).
        self.extracted = extracted
        self.generated: dict[str, ExtractedSources] = {}
        self.cache: dict[str, str] = {}
        self.environment: dict[str, str] = {}
        for name, value in profile.variables.items():
            if name.startswith("ENV{") and name.endswith("}"):
                self.environment[name[4:-1]] = value
            else:
                self.cache[name] = value
        # A profile's variables are what a user passes with -D: report them with the options.
        self.option_names: dict[str, None] = {n: None for n in profile.variables if not n.startswith("ENV{")}
        self.callables: dict[str, Definition] = {}
        self.targets: dict[str, TargetBuilder] = {}
        self.global_properties: dict[str, str] = {}
        self.installed_files: list[InstalledFile] = []
        self.problems: list[ParseProblem] = []
        self.skipped: list[ParseProblem] = []
        self.limits: list[ParseProblem] = []
        self.processes_not_run: list[ParseProblem] = []
        # Files a process's script reads, evaluated once (commands/processes.py).
        self.evaluated_list_files: dict[str, sl.Module | str] = {}  # str: why it does not evaluate
        self.files_read: dict[str, None] = {}
        self.include_guarded: set[str] = set()
        self.steps = 0
        self.expanded_chars = 0
        self.expanded_items = 0
        self.exhausted = False
        self.depth = 0
        self.blocks = 0  # blocks open now, across files and calls (MAX_BLOCK_DEPTH)
        # The command running now: where a limit hit while expanding its arguments is reported.
        self.current: Command | None = None
        self.top_scope = Scope(None)
        self.handlers = HANDLERS
        self.regexes = RegexGuard()

    def guarded(self, action: Callable[[], object]) -> None:
        """Run `action`; a budget that ends the evaluation is reported (once) and stops it."""
        try:
            action()
        except BudgetExhausted as exhausted:
            # Once the budget is spent every later file stops at once; report it one time.
            if not self.exhausted:
                self.limit(*exhausted.args)
            self.exhausted = True

    # -- problems ----------------------------------------------------------------------
    def problem(self, command: Command, message: str) -> None:
        """An error in the evaluated files, at `command`."""
        self.problems.append(ParseProblem(command.path, command.line, message))

    def limit(self, path: str, line: int, message: str) -> None:
        """A budget ran out at path:line: a problem, and the model is incomplete."""
        problem = ParseProblem(path, line, message)
        self.problems.append(problem)
        self.limits.append(problem)

    # -- files and directories ---------------------------------------------------------
    def run_directory_file(self, directory: str, frame: Frame, at: Command | None) -> None:
        """Run `<directory>/CMakeLists.txt` in `frame`."""
        path = posixpath.join(directory, "CMakeLists.txt") if directory else "CMakeLists.txt"
        self.guarded(lambda: self.run_file(path, frame, at))

    def add_subdirectory(self, directory: str, frame: Frame, at: Command | None) -> None:
        """add_subdirectory(): a child scope and directory, then the directory's CMakeLists.txt."""
        path = posixpath.join(directory, "CMakeLists.txt") if directory else "CMakeLists.txt"
        if not self.tree.exists(path):
            where = (at.path, at.line) if at else (path, 0)
            self.skipped.append(ParseProblem(where[0], where[1], f"add_subdirectory: no {path} in the tree"))
            return
        scope = Scope(frame.scope)
        source_dir = posixpath.join(SOURCE_ROOT, directory) if directory else SOURCE_ROOT
        binary_dir = posixpath.join(BINARY_ROOT, directory) if directory else BINARY_ROOT
        scope.set("CMAKE_CURRENT_SOURCE_DIR", source_dir)
        scope.set("CMAKE_CURRENT_BINARY_DIR", binary_dir)
        child = Frame(scope, frame.directory.child(source_dir, binary_dir), frame.conditions)
        self.run_directory_file(directory, child, at)

    def run_file(self, path: str, frame: Frame, at: Command | None = None) -> Flow:
        """Run one file's commands in `frame` (include() and directory files alike)."""
        data = self.tree.read(path)
        if data is None:
            where = (at.path, at.line) if at else (path, 0)
            self.skipped.append(ParseProblem(where[0], where[1], f"cannot read {path}"))
            return Flow.NEXT
        if self.depth >= MAX_DEPTH:
            where = (at.path, at.line) if at else (path, 0)
            self.limit(where[0], where[1], f"nesting deeper than {MAX_DEPTH} at {path}")
            return Flow.NEXT
        if len(data) > MAX_FILE_BYTES:
            # Reported on the file itself, whoever includes it: that is where the fix goes.
            self.limit(path, 1, f"{path} not read: {len(data)} bytes, over the {MAX_FILE_BYTES} bytes evaluated")
            return Flow.NEXT
        program = program_for(self.tree.blob_id(path), data, path)
        self.files_read[path] = None
        self.problems.extend(program.file.problems)
        self.problems.extend(program.problems)
        scope = frame.scope
        saved = {name: scope.get(name) for name in ("CMAKE_CURRENT_LIST_DIR", "CMAKE_CURRENT_LIST_FILE")}
        scope.set("CMAKE_CURRENT_LIST_FILE", posixpath.join(SOURCE_ROOT, path))
        scope.set("CMAKE_CURRENT_LIST_DIR", posixpath.join(SOURCE_ROOT, posixpath.dirname(path)).rstrip("/"))
        self.depth += 1
        try:
            self.run(program, 0, len(program.file.commands), frame)
        finally:
            self.depth -= 1
            for name, entry in saved.items():
                if entry is None:
                    scope.unset(name)
                else:
                    scope.set(name, entry[0])
        return Flow.NEXT

    # -- the interpreter loop ----------------------------------------------------------
    def run(self, program: Program, start: int, end: int, frame: Frame) -> Flow:
        """Run commands [start, end) of `program`; returns how the run ended."""
        commands = program.file.commands
        index = start
        while index < end:
            command = commands[index]
            self.steps += 1
            self.current = command
            if self.steps > _MAX_STEPS:
                raise BudgetExhausted(command.path, command.line, f"evaluation stopped after {_MAX_STEPS} commands")
            name = command.name
            try:
                if name in _BLOCKS:
                    flow = self._block(program, index, frame)
                    index = program.ends[index] + 1
                elif name in ("function", "macro"):
                    control_flow.define(self, program, index, frame)
                    index = program.ends[index] + 1
                    continue
                else:
                    flow = self._statement(program, index, frame)
                    index += 1
            except NestingTooDeep as too_deep:
                self.limit(command.path, command.line, f"{too_deep.args[0]} in {name}(); not evaluated")
                index = program.ends.get(index, index) + 1
                continue
            if flow is not Flow.NEXT:
                return flow
        return Flow.NEXT

    def _block(self, program: Program, index: int, frame: Frame) -> Flow:
        """if, foreach, while or block(): the block run (or skipped, past MAX_BLOCK_DEPTH)."""
        command = program.file.commands[index]
        if self.blocks >= MAX_BLOCK_DEPTH:
            # Each open block holds Python frames; deeper ones are refused, not followed.
            self.limit(
                command.path,
                command.line,
                f"blocks nested deeper than {MAX_BLOCK_DEPTH} at {command.name}(); this block not evaluated",
            )
            return Flow.NEXT
        self.blocks += 1
        try:
            if command.name == "if":
                return control_flow.run_if(self, program, index, frame)
            if command.name == "block":
                return control_flow.run_block(self, program, index, frame)
            return control_flow.run_loop(self, program, index, frame)
        finally:
            self.blocks -= 1

    def _statement(self, program: Program, index: int, frame: Frame) -> Flow:
        """One command that is not a block opener nor a definition."""
        command = program.file.commands[index]
        name = command.name
        if name == "break":
            return Flow.BREAK
        if name == "continue":
            return Flow.CONTINUE
        if name == "return":
            control_flow.run_return(self, command, frame)
            return Flow.RETURN
        if name in CLOSERS or name in ("elseif", "else"):
            return Flow.NEXT
        return self._command(command, frame)

    def _command(self, command: Command, frame: Frame) -> Flow:
        definition = self.callables.get(command.name)
        if definition is not None:
            return control_flow.call(self, definition, command, frame)
        handler = self.handlers.get(command.name)
        if handler is not None:
            try:
                handler(self, command, frame)
            except (ValueError, IndexError, KeyError, TypeError) as error:
                # A command the model handles badly is a problem in the model, not a failed review.
                self.problem(command, f"could not evaluate {command.name}(): {error}")
        return Flow.NEXT

    # -- expansion -----------------------------------------------------------------------
    def lookup(self, frame: Frame, kind: str, name: str) -> str:
        """`${name}` (kind ""), `$ENV{name}` or `$CACHE{name}` as seen from `frame`."""
        if kind == "ENV":
            return self.environment.get(name, "")
        if kind == "CACHE":
            return self.cache.get(name, "")
        entry = frame.scope.get(name)
        if entry is not None:
            return entry[0]
        return self.cache.get(name, "")

    def defined(self, frame: Frame, name: str) -> bool:
        """Whether `name` is a normal or cache variable."""
        return frame.scope.get(name) is not None or name in self.cache

    def raw_text(self, arg: Arg, frame: Frame) -> str:
        """The argument as written, with a macro's parameters substituted."""
        if frame.macro_arguments is None or "${" not in arg.text:
            return arg.text
        substitutions = frame.macro_arguments
        return _MACRO_REFERENCE.sub(lambda m: substitutions.get(m.group(1), m.group(0)), arg.text)

    def expand_one(self, arg: Arg, frame: Frame) -> str:
        """One argument with references and escapes expanded (one string, not split)."""
        if arg.bracket:
            return arg.text
        text = self.raw_text(arg, frame)
        if "$" not in text and "\\" not in text:
            return text
        left = [MAX_VALUE_CHARS]

        def lookup(kind: str, name: str) -> str:
            value = self.lookup(frame, kind, name)
            left[0] -= len(value)
            if left[0] < 0:
                raise _Oversize
            return value

        try:
            value = expand_references(text, lookup)
        except _Oversize:
            value = self._expand_truncated(text, frame, arg.line)
        self.expanded_chars += len(value)
        if self.expanded_chars > MAX_EXPANDED_CHARS:
            raise BudgetExhausted(
                self._current_path(),
                arg.line,
                f"expansions produced more than {MAX_EXPANDED_CHARS} characters; evaluation stopped",
            )
        return value

    def _expand_truncated(self, text: str, frame: Frame, line: int) -> str:
        """The expansion of `text` with every reference cut to what is left of MAX_VALUE_CHARS."""
        left = [MAX_VALUE_CHARS]

        def lookup(kind: str, name: str) -> str:
            value = self.lookup(frame, kind, name)[: max(0, left[0])]
            left[0] -= len(value)
            return value

        self.oversized(line)
        return expand_references(text, lookup)[:MAX_VALUE_CHARS]

    def oversized(self, line: int) -> None:
        """Report a value cut to MAX_VALUE_CHARS at `line` of the command running now."""
        self.limit(self._current_path(), line, f"a value longer than {MAX_VALUE_CHARS} characters was truncated")

    def join(self, glue: str, items: Sequence[str], command: Command) -> str:
        """`glue.join(items)`, cut to MAX_VALUE_CHARS (and reported) when it would be longer."""
        if joined_size(glue, items) <= MAX_VALUE_CHARS:
            return glue.join(items)
        self.oversized(command.line)
        parts: list[str] = []
        size = 0
        for item in items:
            if size >= MAX_VALUE_CHARS:
                break
            parts.append(item)
            size += len(item) + len(glue)
        return glue.join(parts)[:MAX_VALUE_CHARS]

    def _current_path(self) -> str:
        return self.current.path if self.current is not None else ""

    def expand(self, args: Sequence[Arg], frame: Frame) -> list[str]:
        """Arguments as the command receives them: unquoted ones split into list elements."""
        values: list[str] = []
        for arg in args:
            value = self.expand_one(arg, frame)
            if arg.quoted:
                values.append(value)
            else:
                values.extend(self.elements(value, arg.line))
        return values

    def elements(self, value: str, line: int) -> list[str]:
        """`split_list(value)` under the list budgets."""
        elements = split_list(value)
        if len(elements) > MAX_LIST_ITEMS:
            self.limit(self._current_path(), line, f"a list longer than {MAX_LIST_ITEMS} elements was truncated")
            elements = elements[:MAX_LIST_ITEMS]
        self.expanded_items += len(elements)
        if self.expanded_items > MAX_EXPANDED_ITEMS:
            raise BudgetExhausted(
                self._current_path(),
                line,
                f"expansions produced more than {MAX_EXPANDED_ITEMS} list elements; evaluation stopped",
            )
        return elements

    def expand_items(self, args: Sequence[Arg], frame: Frame) -> list[Item]:
        """Like `expand`, keeping each element's line and the conditions it was added under."""
        items: list[Item] = []
        for arg in args:
            value = self.expand_one(arg, frame)
            if arg.quoted:
                items.append(Item(value, arg.line))
                continue
            elements = self.elements(value, arg.line)
            origins: Origins | None = None
            reference = _REFERENCE.fullmatch(self.raw_text(arg, frame))
            if reference:
                entry = frame.scope.get(reference.group(1))
                if entry is not None and entry[1] is not None and len(entry[1]) == len(elements):
                    origins = entry[1]
            for position, element in enumerate(elements):
                items.append(Item(element, arg.line, origins[position] if origins else ()))
        return items

    # -- shared by the command families --------------------------------------------------
    def resolve(self, path: str, frame: Frame) -> str:
        """A path as CMake resolves it against the current source directory."""
        if not path.startswith("/") and not re.match(r"^[A-Za-z]:/", path) and not path.startswith("$<"):
            path = posixpath.join(frame.directory.source_dir, path)
        return posixpath.normpath(path) if not path.startswith("$<") else path

    def target(self, name: str, command: Command) -> TargetBuilder | None:
        """The target a command names (through an ALIAS); a problem when it is not defined."""
        target = self.targets.get(name)
        if target is None:
            self.problem(command, f"{command.name}(): target {name!r} is not defined")
        elif target.alias_of is not None:
            return self.targets.get(target.alias_of)
        return target


def _top_frame(evaluation: Evaluation) -> Frame:
    """The root directory's frame, with the variables project() would set."""
    for name, value in platform_variables(evaluation.profile, SOURCE_ROOT, BINARY_ROOT).items():
        evaluation.top_scope.set(name, value)
    evaluation.top_scope.set("CMAKE_CURRENT_SOURCE_DIR", SOURCE_ROOT)
    evaluation.top_scope.set("CMAKE_CURRENT_BINARY_DIR", BINARY_ROOT)
    return Frame(evaluation.top_scope, Directory(SOURCE_ROOT, BINARY_ROOT))


def _run_prelude(evaluation: Evaluation, frame: Frame) -> None:
    """The profile's prelude files, then the root CMakeLists.txt's literal option() defaults."""
    for path in evaluation.profile.prelude:
        if evaluation.tree.exists(path):
            evaluation.guarded(lambda p=path: evaluation.run_file(p, frame))
    _apply_root_options(evaluation, frame)


def _apply_root_options(evaluation: Evaluation, frame: Frame) -> None:
    """The root CMakeLists.txt's `option(NAME "doc" LITERAL)` calls, without running it."""
    data = evaluation.tree.read("CMakeLists.txt")
    if data is None:
        return
    program = program_for(evaluation.tree.blob_id("CMakeLists.txt"), data, "CMakeLists.txt")
    for command in program.file.commands:
        literal = all("$" not in arg.text for arg in command.args)
        if command.name == "option" and literal and command.args:
            evaluation.guarded(lambda c=command: define_option(evaluation, c, frame))


def _freeze(evaluation: Evaluation) -> CMakeModel:
    """The frozen result."""
    options = {}
    for name in evaluation.option_names:
        entry = evaluation.top_scope.get(name)
        options[name] = entry[0] if entry is not None else evaluation.cache.get(name, "")
    return CMakeModel(
        profile=evaluation.profile,
        targets=MappingProxyType({name: b.freeze() for name, b in evaluation.targets.items()}),
        options=MappingProxyType(options),
        installed_files=tuple(evaluation.installed_files),
        problems=tuple(dict.fromkeys(evaluation.problems)),
        files_read=tuple(evaluation.files_read),
        skipped=tuple(dict.fromkeys(evaluation.skipped)),
        limits=tuple(dict.fromkeys(evaluation.limits)),
        processes_not_run=tuple(dict.fromkeys(evaluation.processes_not_run)),
        generated=tuple(evaluation.generated),
    )


def evaluate_cmake(
    tree: FileTree,
    profile: CMakeProfile = DEFAULT_PROFILE,
    root_dirs: tuple[str, ...] = ("",),
    extracted: Mapping[str, ExtractedSources] = _NONE_EXTRACTED,
) -> CMakeModel:
    """Evaluate `<dir>/CMakeLists.txt` of each root dir (the repository root by default),
    following add_subdirectory and include. `extracted`: the source lists extract_sources.py
    would write, by config path (bot/facts/extracted_sources.py), for trees that run it."""
    return evaluate_cmake_reads(tree, profile, root_dirs, extracted)[0]


def evaluate_cmake_reads(
    tree: FileTree,
    profile: CMakeProfile = DEFAULT_PROFILE,
    root_dirs: tuple[str, ...] = ("",),
    extracted: Mapping[str, ExtractedSources] = _NONE_EXTRACTED,
) -> tuple[CMakeModel, Reads]:
    """`evaluate_cmake`, and every answer the tree gave it: any tree that gives the same answers
    has the same model (reads.py)."""
    evaluation = Evaluation(tree, profile, extracted)
    top = _top_frame(evaluation)
    for directory in root_dirs:
        if directory.strip("/") == "":
            evaluation.run_directory_file("", top, None)
        else:
            evaluation.add_subdirectory(directory.strip("/"), top, None)
    return _freeze(evaluation), evaluation.tree.reads()


def evaluate_cmake_dirs(
    tree: FileTree,
    profile: CMakeProfile = DEFAULT_PROFILE,
    dirs: Iterable[str] = (),
    extracted: Mapping[str, ExtractedSources] = _NONE_EXTRACTED,
) -> CMakeModel:
    """Evaluate subdirectories standalone, after the profile's prelude (option presets and
    helper modules) and the root CMakeLists.txt's literal `option()` defaults."""
    evaluation = Evaluation(tree, profile, extracted)
    top = _top_frame(evaluation)
    _run_prelude(evaluation, top)
    for directory in dirs:
        evaluation.add_subdirectory(directory.strip("/"), top, None)
    return _freeze(evaluation)
