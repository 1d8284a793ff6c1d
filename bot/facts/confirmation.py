"""Confirm before posting: a rule that predicts a compile failure asks the compiler first.

`dep-private-for-exported-header`, `dep-undeclared-header` and `dep-undeclared-latent` predict
that some translation unit stops compiling for want of a header. This fact compiles the
translation units the prediction is about (the dependents of the target that include the
header, or the target's own sources, and where none of those includes it the dependents), in
the cell's configurations, each given exactly what that configuration gives it
(bot/facts/compile_units.py), and answers:
- confirmed: the compiler's preprocessor (`-M -MG`: a missing header is listed, not fatal, so a
  header the tree does not hold elsewhere cannot hide the answer) does not find the header; the
  compile that shows it is run once more (`-E`, the other missing names given as empty stand-ins)
  for the compiler's own error line, kept in `Verdict.words`;
- refuted: it finds the header for every source that includes it (`compiled`), or no source the
  cell compiles includes the header (`compiled` False: nothing fails to compile today);
- unknown: no compile could say (the include is inactive for each, only CUDA sources include it,
  a compile timed out, or the tier is off): the prediction stands as the rule made it.

Only the TUs a prediction names are compiled, each at most once per distinct flags and header
tree: the dependency listings and the error lines are kept by content in the fact store.

API (for rules):
    verdict = confirm_missing_header(model, cell, label, header, include_name)          # dependents of label
    verdict = confirm_missing_header(model, cell, label, header, include_name, own=True)  # label's own sources
    verdict.state in ("confirmed", "refuted", "unknown"); verdict.reason, verdict.compiled
    verdict.words: CompilerWords (error, configuration, command, source, owner) where confirmed
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.facts.compile_units import TU_SUFFIXES, CompileSetup, buck_configurations, buck_owners, buck_setup
from bot.facts.header_graph import header_graph
from bot.store import memo as facts
from bot.toolchain.switch import tier_state

MAX_DEPENDENTS = 6  # dependents compiled per prediction, by label
MAX_SOURCES = 2  # of each dependent: the first including the header
MAX_SETUPS = 8  # compiles per prediction: a (target, source) on each platform of the cell, in order
_MAX_WORDS = 3  # confirmed compiles tried for the compiler's error line, in order
_MAX_RETRIES = 4  # preprocessor runs per compile, each giving one more missing name a stand-in


@dataclass(frozen=True, slots=True)
class CompilerWords:
    """The compile that fails, as a maintainer reads it: the compiler's first error line (its own
    words, the file named by its repository path), the configuration, and how to see it again."""

    error: str  # "util/stack_util.h:2:10: fatal error: executorch/...: No such file or directory"
    configuration: str  # "xplat android-arm64"
    command: str  # the build of the failing target in that cell
    source: str  # the translation unit that fails
    owner: str  # the target compiling it
    path: str  # where the error is (repository path) and its line
    line: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """The compiler's answer to one prediction."""

    state: str  # "confirmed", "refuted" or "unknown"
    reason: str  # a sentence: what was compiled and what the compiler said
    evidence: tuple[tuple[str, int, str], ...] = ()  # (path, line, the compiler's words) where confirmed
    words: CompilerWords | None = None  # the first failing compile, where confirmed and its line was read
    compiled: bool = True  # False where refuted because no source of the cell includes the header


def confirm_missing_header(
    model, cell: str, label: str, header: str, include_name: str, *, own: bool = False, prefer: tuple[str, ...] = ()
) -> Verdict:
    """Does a TU that includes `header` fail in `cell` because `include_name` is missing? `prefer`:
    sources to compile first (the dependent's file the rule names)."""
    state, toolchain = tier_state()
    if toolchain is None:
        return Verdict("unknown", f"the compiled tier is {state}")
    key = facts.digest(model.tree.digest(), cell, label, header, include_name, own, prefer, toolchain.identity, 6)
    return facts.fact(
        "confirm-missing-header",
        key,
        lambda: _confirm(model, cell, label, header, include_name, own, prefer, toolchain),
        persist=True,
    )


def _confirm(model, cell, label, header, include_name, own, prefer, toolchain) -> Verdict:
    from bot.facts.unit_choice import CUDA_UNITS, includers_of

    graph = header_graph(model, cell)
    dependents = tuple(sorted(graph.dependents.get(label, ())))[:MAX_DEPENDENTS]
    # A prediction on a TU itself (the target's own source names the include): that TU is asked.
    including = set(includers_of(model, [header])) | ({header} if header.endswith(TU_SUFFIXES + CUDA_UNITS) else set())
    setups, uncompiled = _setups(model, cell, (label,) if own else dependents, including, prefer)
    if own and not setups and not uncompiled:
        # The target's own sources do not include it (a header-only target, an exported header
        # only dependents include): it is compiled in its dependents, with their deps.
        setups, uncompiled = _setups(model, cell, dependents, including, prefer)
    if not setups and uncompiled:
        return Verdict("unknown", f"only CUDA sources include `{header}` ({', '.join(sorted(uncompiled)[:3])})")
    unplaced = sorted(_unplaced(model, cell, including)) if not setups else []
    if unplaced:
        # A source includes it that no target of the cell is seen to compile (a source named in a
        # way the compile model does not read): it may be a dependent's, so nothing is refuted.
        return Verdict(
            "unknown", f"no target of `{cell}` is seen to compile `{unplaced[0]}`, which includes `{header}`"
        )
    if not setups:
        who = f"no source of `{label}` or of its dependents" if own else f"no dependent of `{label}`"
        return Verdict("refuted", f"{who} compiles a source that includes `{header}` in `{cell}`", compiled=False)
    found = dependency_lists(model, tuple(setups), toolchain)
    confirmed, passed, unknown = [], [], []
    for setup in setups:
        listed = found[setup]
        if listed is None:
            unknown.append(setup)
        elif any(_names(name, include_name) for name in listed.unresolved):
            confirmed.append(setup)
        elif any(name.endswith("/" + include_name) for name in listed.resolved):
            passed.append(setup)
        else:
            unknown.append(setup)  # the include is not active for it: says nothing either way
    if confirmed:
        first = confirmed[0]
        words = None
        for setup in confirmed[:_MAX_WORDS]:
            words = compiler_words(model, setup, include_name, found[setup].unresolved, toolchain)  # type: ignore[union-attr]
            if words is not None:
                break
        said = (
            f"`{words.error}` ({words.configuration})"
            if words
            else (
                f"its preprocessor does not find `{include_name}` for `{first.source}` (of `{first.owner}`) in "
                f"{first.configuration.name} (`g++ -M -MG` lists it unresolved)"
            )
        )
        return Verdict(
            "confirmed",
            f"the compiler agrees: {said}",
            tuple((s.source, 1, f"{include_name}: not found for {s.configuration.name}") for s in confirmed[:3]),
            words,
        )
    if passed:
        names = sorted({f"`{s.owner}`" for s in passed})
        return Verdict(
            "refuted",
            f"the compiler's preprocessor finds `{include_name}` for {len(passed)} source(s) of {', '.join(names)} "
            f"in `{cell}`, each including `{header}`",
        )
    return Verdict(
        "unknown",
        f"no compiled source in `{cell}` reaches the include ({len(unknown)} tried: it is inactive there, or behind a "
        "header the compile does not find)",
    )


def _setups(
    model, cell: str, candidates, including: set[str], prefer: tuple[str, ...]
) -> tuple[list[CompileSetup], set[str]]:
    """The compiles of `candidates`' sources that include the header, on each platform of `cell`,
    the sources the rule named first (`prefer`), at most MAX_SETUPS; and the CUDA sources among
    them (nvcc is not run here). Each (target, source) is asked on every platform before the next:
    a gap a `select()` makes on one platform only shows there."""
    configurations = [c for c in buck_configurations(model) if c.cell == cell]
    owned: dict[tuple[str, str], list] = {}
    for configuration in configurations:
        assert configuration.platform is not None
        owners = buck_owners(model, cell, configuration.platform)
        for candidate in candidates:
            for source in sorted(_sources_of(model, cell, configuration.platform, owners, candidate) & including):
                owned.setdefault((candidate, source), []).append(configuration)
    uncompiled = {source for _candidate, source in owned if not source.endswith(TU_SUFFIXES)}
    pairs = sorted(
        ((c, s) for c, s in owned if s.endswith(TU_SUFFIXES)),
        key=lambda pair: (pair[1] not in prefer, candidates.index(pair[0]), pair[1]),
    )
    per_candidate: dict[str, int] = {}
    setups: list[CompileSetup] = []
    for candidate, source in pairs:
        if per_candidate.get(candidate, 0) >= MAX_SOURCES and source not in prefer:
            continue
        per_candidate[candidate] = per_candidate.get(candidate, 0) + 1
        for configuration in owned[(candidate, source)]:
            if len(setups) < MAX_SETUPS:
                setups.append(buck_setup(model, configuration, candidate, source))
    return setups, uncompiled


def _unplaced(model, cell: str, including: set[str]) -> set[str]:
    """The sources in `including` that no C++ target of the cell compiles on any of its platforms."""
    placed: set[str] = set()
    for configuration in buck_configurations(model):
        if configuration.cell == cell and configuration.platform is not None:
            placed.update(buck_owners(model, cell, configuration.platform))
    return {source for source in including if source not in placed}


def _sources_of(model, cell: str, platform, owners, label: str) -> set[str]:
    """The sources `label` compiles on `platform`: those it lists, and those it names by the label
    of an `export_file` (`//executorch/extension/pybindings:pybindings.cpp`, as `_C` does)."""
    from bot.facts import revision, xref
    from bot.facts.header_deps import CXX_KINDS
    from bot.facts.unit_choice import CUDA_UNITS

    listed = {source for source, labels in owners.items() if label in labels}
    graph = model.cell(cell)
    target = graph.targets.get(label)
    if target is None or not CXX_KINDS.search(target.kind) or label in revision.incompatible(model, cell, platform):
        return listed
    named = xref.label_source_paths(target, graph)
    return listed | {path for path in named if path.endswith(TU_SUFFIXES + CUDA_UNITS)}


@dataclass(frozen=True, slots=True)
class DependencyList:
    """What the preprocessor found for one TU (`-M -MG`): headers resolved, and names it could not find."""

    resolved: tuple[str, ...]
    unresolved: tuple[str, ...]


def dependency_lists(model, setups: tuple[CompileSetup, ...], toolchain) -> dict[CompileSetup, DependencyList | None]:
    """`g++ -M -MG` of each setup: a missing header is listed, not fatal, so an external header the
    tree lacks does not hide whether the one in question is found. Kept by content."""
    import os
    import tempfile
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from bot.facts.compiled import _run_in, compile_flags, materialized_files, refused_include
    from bot.toolchain.runner import LIMITS

    mode = ("-M", "-MG")
    keys = {
        setup: facts.digest(
            toolchain.identity,
            compile_flags(model, setup, toolchain, mode),
            tuple((p, model.tree.blob_id(r) or "") for p, r in setup.layout),
        )
        for setup in setups
    }
    by_key = {key: setup for setup, key in keys.items()}

    def one(key: str) -> tuple[str, DependencyList | None]:
        setup = by_key[key]
        files = materialized_files(model, setup)
        if refused_include(files) is not None:
            return key, None
        with tempfile.TemporaryDirectory(prefix="pr-check-deps-") as directory:
            result = _run_in(
                toolchain, Path(directory), files, compile_flags(model, setup, toolchain, mode), setup.unit_path, LIMITS
            )
        if result.returncode != 0 or result.timed_out:
            return key, None
        names = result.output.replace("\\\n", " ").split(":", 1)[-1].split()
        resolved = tuple(n for n in names if n.startswith(("include/", "src/")))
        unresolved = tuple(n for n in names if not n.startswith(("include/", "src/", "/")))
        return key, DependencyList(resolved, unresolved)

    def run(missing: list[str]) -> dict[str, DependencyList | None]:
        with ThreadPoolExecutor(max(1, min(len(missing), os.cpu_count() or 1, 4))) as pool:
            return dict(pool.map(one, missing))

    listed = facts.many("header-dependencies", sorted(by_key), run, persist=True)
    return {setup: listed[key] for setup, key in keys.items()}


_PREPROCESS = ("-E", "-o", "preprocessed.i")


def compiler_words(
    model, setup: CompileSetup, include_name: str, unresolved: tuple[str, ...], toolchain
) -> CompilerWords | None:
    """The compiler's own error for the missing header: the TU preprocessed (`-E`) with every other
    name `-M -MG` left unresolved given as an empty stand-in (a header the tree lacks, never the one
    in question), so the first error is this one. None where it says something else. Kept by content."""
    from bot.facts.compiled import compile_flags

    stand_ins = tuple(sorted(n for n in unresolved if not _names(n, include_name) and _plain(n)))
    flags = compile_flags(model, setup, toolchain, _PREPROCESS)
    key = facts.digest(
        toolchain.identity,
        flags,
        tuple((p, model.tree.blob_id(r) or "") for p, r in setup.layout),
        stand_ins,
        include_name,
        _MAX_RETRIES,
    )
    found = facts.fact(
        "missing-header-error",
        key,
        lambda: _first_error(model, setup, flags, stand_ins, include_name, toolchain),
        persist=True,
    )
    if found is None:
        return None
    private, line, text, missing = found
    if missing is None or not _names(missing, include_name):
        return None
    path = dict(setup.layout).get(private, private)
    configuration = setup.configuration
    return CompilerWords(
        f"{path}:{line}: fatal error: {text}",
        configuration.name,
        build_command(configuration.cell or "", setup.owner),
        setup.source,
        setup.owner,
        path,
        line,
    )


def _first_error(
    model, setup: CompileSetup, flags, stand_ins, include_name: str, toolchain
) -> tuple[str, int, str, str | None] | None:
    """The first error of the preprocessed TU: another missing name first (one `-M -MG` listed as
    found: `include/vk_mem_alloc.h` reads as a path of the private tree) gets a stand-in too, a few
    times over, so the error is the one in question where it can be."""
    import tempfile
    from pathlib import Path

    from bot.facts.compiled import _run_in, materialized_files, refused_include
    from bot.toolchain.diagnostics import first_error
    from bot.toolchain.runner import LIMITS

    files = materialized_files(model, setup)
    if refused_include(files) is not None:
        return None
    present = {private for private, _data in files}
    names = list(stand_ins)
    for _attempt in range(_MAX_RETRIES):
        given = files + tuple((f"include/{name}", b"") for name in names if f"include/{name}" not in present)
        with tempfile.TemporaryDirectory(prefix="pr-check-missing-") as directory:
            result = _run_in(toolchain, Path(directory), given, flags, setup.unit_path, LIMITS)
        if result.timed_out or result.returncode == 0:
            return None
        error = first_error(result.output)
        if error is None:
            return None
        missing = error.missing_include
        if missing is None or _names(missing, include_name) or not _plain(missing) or missing in names:
            return error.path, error.line, error.text, missing
        names.append(missing)
    return None


def build_command(cell: str, label: str) -> str:
    """The build a maintainer runs to see the failure: the target in the cell that fails. The
    header tree is the cell's, so a compile over the whole checkout would find the header."""
    path = label.removeprefix("//")
    if cell == "fbcode":
        return f"buck2 build fbcode//executorch/{path}"
    if cell == "xplat":
        return f"buck2 build fbsource//xplat/executorch/{path}"
    return f"buck2 build {label}"


def _plain(name: str) -> bool:
    """A name a stand-in may be written under: relative, inside the private tree."""
    import posixpath

    normal = posixpath.normpath(name)
    return not (name.startswith("/") or normal.startswith("..") or normal == ".")


def _names(missing: str, include_name: str) -> bool:
    return missing == include_name or include_name.endswith("/" + missing) or missing.endswith("/" + include_name)
