"""What a build option or a Buck cell gates: sources, definitions, headers that test the gate.

Derived facts for the `gate-*` checks. A CMake option M gates a source when the source is
added to a target only under `if(M)` (its `condition_text` names M in a model evaluated with
M on) and no target of the default configuration builds it. A Buck cell gates a source when
only targets of that cell list it. Everything here is computed on demand and memoized on the
BuildModel that owns it; the expensive parts (a CMake model per option, reading every source)
run only when a cheaper fact says they can matter.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.buck.targets import CellGraph, Platform
from bot.cpp.conditions import defines_from_flags
from bot.cpp.declarations import Declaration, SourceFacts
from bot.facts import cmake_models, revision, xref
from bot.store.memo import digest, fact, many

HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh")
CMAKE_LISTS = "CMakeLists.txt"
IMPLEMENTATION_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".cu")
FLAG_ATTRIBUTES = ("preprocessor_flags", "exported_preprocessor_flags", "compiler_flags")
# `#if`s that pick a symbol's export attribute: defining such a macro privately is the point.
EXPORT_PATTERN = re.compile(r"dllexport|dllimport|visibility\s*\(\s*\"default\"|__attribute__\s*\(\s*\(\s*visibility")


def mentions(condition: str, macro: str) -> bool:
    """Whether an `#if` or CMake `if()` condition names `macro` as a whole word."""
    return re.search(rf"(?<![\w$]){re.escape(macro)}(?![\w])", condition) is not None


@dataclass(frozen=True, slots=True)
class GatedSource:
    """A source added to a CMake target only under an option."""

    path: str  # repository path of the source
    target: str  # the CMake target
    condition: str  # the `if()` conditions it was added under
    cmake_path: str  # where it was added
    cmake_line: int


# -- Facts of a cell graph, shared by the revisions of a review whose graphs are equal ----------


def graph_fact(model, cell: str, name: str, compute):
    """`compute(graph)` for the cell's graph, computed once per distinct graph content."""
    return revision.graph_memo(model, cell, (name,), compute)


def default_profile(config) -> str | None:
    """The first configured CMake profile (bot/config.py checks that each one exists)."""
    return config.cmake_profiles[0] if config.cmake_profiles else None


# -- CMake models, shared between revisions whose CMake inputs are the same -------------------


def cmake_files(model) -> tuple[str, ...]:
    """The tree's CMake files (`CMakeLists.txt`, `*.cmake`)."""
    return revision.tree_memo(
        model,
        ("cmake-files",),
        lambda: tuple(
            p for p in model.tree.paths() if p.endswith((CMAKE_LISTS, ".cmake")) and not p.startswith("third-party/")
        ),
    )


def cmake_model(model, **variables: str):
    """The default profile's CMake model with `variables` set (None when it cannot be built).

    BuildModel keeps models by content, so base and head share them when the CMake files agree.
    """
    profile = default_profile(model.config)
    if profile is None:
        return None
    try:
        return cmake_models.cmake_model(model, profile, **variables)
    except (ValueError, RecursionError):  # a modelling gap is not a finding
        return None


def off_options(model) -> frozenset[str]:
    """CMake options that the default profile leaves off."""
    from bot.cmake.values import is_false_value

    default = cmake_model(model)
    if default is None:
        return frozenset()
    return frozenset(
        name for name, value in default.options.items() if is_false_value(value) and re.fullmatch(r"\w+", name)
    )


def option_model(model, option: str):
    """The default profile's CMake model with `option` turned on."""
    return cmake_model(model, **{option: "ON"})


def default_sources(model) -> frozenset[str]:
    """Repository paths of every source a target of the default configuration builds."""

    def compute() -> frozenset[str]:
        default = cmake_model(model)
        if default is None:
            return frozenset()
        return frozenset(s.path_repo_relative for t in default.targets.values() for s in t.sources)

    return revision.tree_memo(model, ("cmake-default-sources",), compute)


def gated_sources(model, option: str) -> Mapping[str, GatedSource]:
    """Sources that a target gets only with `option` on, by repository path."""

    def compute() -> dict[str, GatedSource]:
        with_option = option_model(model, option)
        if with_option is None:
            return {}
        built = default_sources(model)
        found: dict[str, GatedSource] = {}
        for target in with_option.targets.values():
            for source in target.sources:
                parts = [p for c in (target.condition_text, source.condition_text) if c for p in c.split(" AND ")]
                condition = " AND ".join(dict.fromkeys(parts))
                if source.path_repo_relative in built or not mentions(condition, option):
                    continue
                found.setdefault(
                    source.path_repo_relative,
                    GatedSource(source.path_repo_relative, target.name, condition, source.path, source.line),
                )
        return found

    return revision.tree_memo(model, ("cmake-gated-sources", option), compute)


# -- What the CMake text says, before any evaluation ------------------------------------------

_WORD = re.compile(r"[A-Za-z_]\w*")
_IF_COMMAND = re.compile(r"^\s*(if|elseif|else|endif)\s*\((.*)$", re.I)
_SOURCE_NAME = re.compile(r"[\w./${}-]+\.(?:cpp|cc|cxx|c|cu)\b")


def cmake_if_blocks(model) -> tuple[tuple[str, str, int, tuple[str, ...]], ...]:
    """(cmake file, line text, line number, enclosing if() conditions) for every line of every
    CMake file that sits inside at least one `if()`: a textual view, no evaluation."""

    def compute():
        files = cmake_files(model)
        model.tree.prefetch(files)
        found = []
        for path in files:
            stack: list[str] = []
            for number, line in enumerate((model.text(path) or "").splitlines(), start=1):
                match = _IF_COMMAND.match(line)
                if match:
                    word, rest = match.group(1).lower(), match.group(2).rsplit(")", 1)[0]
                    if word == "if":
                        stack.append(rest)
                    elif word == "endif":
                        if stack:
                            stack.pop()
                    elif stack:
                        stack[-1] = f"{stack[-1]} {rest}" if word == "elseif" else f"NOT ({stack[-1]})"
                    continue
                if stack:
                    found.append((path, line, number, tuple(stack)))
        return tuple(found)

    key = digest(tuple((p, model.tree.blob_id(p)) for p in cmake_files(model)))
    return fact("cmake-if-blocks", key, compute)


def _if_index(model) -> dict[str, frozenset[str]]:
    """word an enclosing `if()` tests -> base names of the sources written under it."""

    def compute() -> dict[str, frozenset[str]]:
        index: dict[str, set[str]] = {}
        for _path, line, _number, stack in cmake_if_blocks(model):
            names = source_names(line)
            for word in {w for condition in stack for w in _WORD.findall(condition)}:
                index.setdefault(word, set()).update(names)
        return {word: frozenset(names) for word, names in index.items()}

    return revision.tree_memo(model, ("cmake-if-index",), compute)


def cmake_condition_words(model) -> frozenset[str]:
    """Identifiers that CMake `if()` conditions test: the candidates for build options."""
    return frozenset(_if_index(model))


def source_names(line: str) -> tuple[str, ...]:
    """Base names of the source files a CMake line writes (comments dropped)."""
    return tuple(posixpath.basename(m) for m in _SOURCE_NAME.findall(line.split("#", 1)[0]))


def sources_named_under(model, option: str) -> frozenset[str]:
    """Base names of the source files written inside an `if()` that names `option` (textual)."""
    return _if_index(model).get(option, frozenset())


_PRIVATE_DEFINITIONS = re.compile(r"target_compile_definitions\s*\(([^)]*)\)", re.I | re.S)


@dataclass(frozen=True, slots=True)
class WrittenDefinition:
    """A macro a `target_compile_definitions(... PRIVATE ...)` names, as written (no evaluation)."""

    macro: str
    path: str
    line: int
    conditions: tuple[str, ...]  # the enclosing `if()`s


def private_definitions_written(model) -> tuple[WrittenDefinition, ...]:
    """Every PRIVATE compile definition the CMake text writes, with the `if()`s around it."""

    def compute() -> tuple[WrittenDefinition, ...]:
        stacks = {(path, number): stack for path, _line, number, stack in cmake_if_blocks(model)}
        found = []
        for path in cmake_files(model):
            text = model.text(path) or ""
            if "target_compile_definitions" not in text:
                continue
            for command in _PRIVATE_DEFINITIONS.finditer(text):
                line = text.count("\n", 0, command.start()) + 1
                scope = None
                for word in command.group(1).split()[1:]:
                    if word in ("PRIVATE", "PUBLIC", "INTERFACE"):
                        scope = word
                    elif scope == "PRIVATE":
                        name = word.removeprefix("-D").split("=", 1)[0].strip('"')
                        if re.fullmatch(r"[A-Za-z_]\w*", name):
                            found.append(WrittenDefinition(name, path, line, stacks.get((path, line), ())))
        return tuple(found)

    return revision.tree_memo(model, ("cmake-private-definitions",), compute)


_OPTION = re.compile(r"\b(?:option|define_overridable_option|cmake_dependent_option)\s*\(\s*([A-Za-z_]\w*)", re.I)


def declared_options(model) -> frozenset[str]:
    """Names CMake files declare as options (textual; values need an evaluation)."""

    def compute() -> frozenset[str]:
        found = set()
        for path in cmake_files(model):
            text = model.text(path) or ""
            if "option" in text:
                found.update(_OPTION.findall(text))
        return frozenset(found)

    return revision.tree_memo(model, ("cmake-declared-options",), compute)


_INSTALL = re.compile(r"\binstall\s*\(([^)]*)\)", re.I | re.S)


def install_mentions(model) -> frozenset[str]:
    """Path tokens `install()` commands write (variables stripped): a header can only be
    installed when its name or one of its directories is among them (textual)."""

    def compute() -> frozenset[str]:
        tokens = set()
        for path in cmake_files(model):
            text = model.text(path) or ""
            if "install" not in text:
                continue
            for command in _INSTALL.finditer(text):
                for token in re.findall(r"[\w./${}-]+", command.group(1)):
                    token = re.sub(r"\$\{[^}]*\}/?", "", token).strip("/")
                    if token:
                        tokens.add(token)
        return frozenset(tokens)

    return revision.tree_memo(model, ("cmake-install-mentions",), compute)


def may_be_installed(model, header: str) -> bool:
    """Whether some `install()` text names the header or a directory it is in."""
    tokens = install_mentions(model)
    name = posixpath.basename(header)
    if any(t == name or t.endswith("/" + name) for t in tokens):
        return True
    directory = posixpath.dirname(header)
    while directory:
        if any(directory.endswith(t) for t in tokens if "/" in t or t == posixpath.basename(directory)):
            return True
        directory = posixpath.dirname(directory)
    return False


# -- Headers and the macros they test ---------------------------------------------------------

_TEST_LINE = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b([^\n]*)", re.M)
_NOT_MACROS = frozenset(
    {
        "defined",
        "__has_include",
        "__has_include_next",
        "__has_attribute",
        "__has_builtin",
        "__has_cpp_attribute",
        "__has_feature",
        "true",
        "false",
    }
)


def _tested_in(text: str) -> frozenset[str]:
    found = set()
    for line in _TEST_LINE.finditer(text):
        found.update(re.findall(r"[A-Za-z_]\w*", line.group(1).split("//", 1)[0]))
    return frozenset(found - _NOT_MACROS)


def tested_macros(model) -> Mapping[str, frozenset[str]]:
    """header path -> every identifier its `#if`/`#ifdef`/`#elif` lines test (kept per blob)."""

    def compute() -> dict[str, frozenset[str]]:
        headers = [p for p in model.tree.paths() if p.endswith(HEADER_SUFFIXES)]
        blobs = {p: model.tree.blob_id(p) for p in headers}
        by_path = {b: p for p, b in blobs.items() if b is not None}

        def scan(missing: list[str]) -> dict[str, frozenset[str]]:
            model.tree.prefetch(by_path[b] for b in missing)
            return {b: _tested_in(model.tree.read_text_by_blob(b) or "") for b in missing}

        by_blob = many("tested-macros", by_path, scan, persist=True)
        found = {}
        for path, blob in blobs.items():
            tested = by_blob.get(blob) if blob is not None else _tested_in(model.text(path) or "")
            if tested:
                found[path] = tested
        return found

    return revision.tree_memo(model, ("tested-macros",), compute)


def headers_testing(model, macros: Iterable[str]) -> Mapping[str, frozenset[str]]:
    """header path -> those of `macros` it tests in an `#if`."""
    wanted = frozenset(macros)
    found = {}
    for path, tested in tested_macros(model).items():
        hit = tested & wanted
        if hit:
            found[path] = hit
    return found


def definitions(model, declarations: Iterable[Declaration]) -> Mapping[str, tuple[tuple[str, Declaration], ...]]:
    """qualified name -> (source path, definition) for every implementation file of the tree
    that defines a function of that name: the whole tree is searched, so "only here" holds."""
    wanted = {d.qualified_name: d.name for d in declarations}
    if not wanted:
        return {}
    names = sorted(set(wanted.values()))
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\s*\(")
    sources = _implementation_files(model)
    found: dict[str, list[tuple[str, Declaration]]] = {q: [] for q in wanted}
    for path in sources:
        text = model.text(path) or ""
        if not pattern.search(text):
            continue
        facts = model.source_facts(path)
        if facts is None:
            continue
        for declaration in facts.declarations:
            if declaration.kind != "function" or not declaration.is_definition:
                continue
            for qualified in wanted:
                if same_function(qualified, declaration.qualified_name):
                    found[qualified].append((path, declaration))
    return {q: tuple(v) for q, v in found.items()}


def _implementation_files(model) -> tuple[str, ...]:
    def compute() -> tuple[str, ...]:
        paths = tuple(
            p for p in model.tree.paths() if p.endswith(IMPLEMENTATION_SUFFIXES) and not p.startswith("third-party/")
        )
        model.tree.prefetch(paths)
        return paths

    return revision.tree_memo(model, ("implementation-files",), compute)


def same_function(declared: str, defined: str) -> bool:
    """A definition's qualified name matches a declaration's (a definition may spell more scope)."""
    return declared == defined or defined.endswith("::" + declared) or declared.endswith("::" + defined)


def out_of_line_functions(facts: SourceFacts) -> tuple[Declaration, ...]:
    """Functions a header declares without defining."""
    return tuple(d for d in facts.declarations if d.kind == "function" and not d.is_definition)


def implementation_of(tree, header: str) -> tuple[str, ...]:
    """Sources next to a header with its stem (`foo.h` -> `foo.cpp`, `foo.cu`, ...)."""
    stem = posixpath.splitext(header)[0]
    return tuple(stem + suffix for suffix in IMPLEMENTATION_SUFFIXES if tree.exists(stem + suffix))


def built_in_cell(model, cell: str) -> Mapping[str, tuple[str, ...]]:
    """repository source path -> labels of the cell's targets that list it in `srcs`."""

    def compute(graph: CellGraph) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {}
        for label, target in graph.targets.items():
            for path in xref.source_paths(target):
                found.setdefault(path, []).append(label)
        return {p: tuple(v) for p, v in found.items()}

    return graph_fact(model, cell, "built-sources", compute)


def files_exported_as_targets(model, cell: str) -> frozenset[str]:
    """Repository files the cell wraps in `export_file`/`filegroup` targets: other targets may
    compile them through a label (`":jni_helper.cpp"`), which `srcs` paths do not show."""

    def compute(graph: CellGraph) -> frozenset[str]:
        found = set()
        for target in graph.targets.values():
            if target.kind not in ("export_file", "filegroup"):
                continue
            names = [target.name, *(v for a in ("src", "srcs") for v in target.values(a))]
            for name in names:
                if isinstance(name, str) and not name.startswith((":", "//")):
                    found.add(posixpath.normpath(posixpath.join(target.package, name)))
        return frozenset(found)

    return graph_fact(model, cell, "exported-files", compute)


def exported_in_cell(model, cell: str) -> Mapping[str, tuple[str, ...]]:
    """repository header path -> labels of the cell's targets that list it in `exported_headers`."""

    def compute(graph: CellGraph) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {}
        for label, target in graph.targets.items():
            for _name, path in xref.header_entries(target, "exported_headers"):
                found.setdefault(path, []).append(label)
        return {p: tuple(v) for p, v in found.items()}

    return graph_fact(model, cell, "exported-headers", compute)


def cell_defines(
    model, cell: str, attributes: tuple[str, ...] = FLAG_ATTRIBUTES, platform: Platform | None = None
) -> Mapping[str, tuple[str, ...]]:
    """macro -> labels of the cell's targets whose flags (`attributes`) define it on `platform`
    (None: in any configuration, every select() branch taken)."""
    name = "defines:" + ",".join(attributes)
    key = (name,) if platform is None else (name, platform)
    return revision.graph_memo(model, cell, key, lambda graph: buck_defines(graph, attributes, platform))


def buck_defines(
    graph: CellGraph, attributes: Iterable[str] = FLAG_ATTRIBUTES, platform: Platform | None = None
) -> Mapping[str, tuple[str, ...]]:
    """macro -> labels of the cell's targets whose flags (`attributes`) define it on `platform`
    (None: in any configuration)."""
    found: dict[str, list[str]] = {}
    for label, target in graph.targets.items():
        flags = [f for attribute in attributes for f in target.values(attribute, platform) if isinstance(f, str)]
        if not flags:
            continue
        for name, value in defines_from_flags(flags).items():
            if value is not None:
                found.setdefault(name, []).append(label)
    return {m: tuple(v) for m, v in found.items()}


def first_block_testing(facts: SourceFacts, macro: str):
    """The first `#if` group whose opening (or any branch) condition names the macro."""
    for block in facts.conditional_blocks:
        if any(mentions(c, macro) for c in block.branch_conditions if c != "#else"):
            return block
    return None


def export_macro_blocks(facts: SourceFacts, macro: str) -> bool:
    """Whether the macro selects export/import attributes (then a private definition is intended)."""
    for block in facts.conditional_blocks:
        if any(mentions(c, macro) for c in block.branch_conditions if c != "#else") and any(
            EXPORT_PATTERN.search(text) for text in block.branch_texts
        ):
            return True
    return False
