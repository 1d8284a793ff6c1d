"""Compiled verification: what a translation unit gives in each configuration, at base and head.

API (rules, tests/real_tree and the pipeline read only this):
    review = compiled_review(snap)     # CompiledReview, computed once per review, kept in the store
    review.failures      # CompileFailure: fails at head, compiled clean at base (or new at head):
                         #   .source .owner .configurations .path .line .text (the compiler's words)
                         #   .command (paste in the checkout's parent) .new_source .hidden_header
    review.links         # LinkFailure (bot/facts/linked.py): a symbol undefined (that the base
                         #   closure defined) or defined twice, new at head: .owner .problem.text
    review.unverified    # Unverified(source, configurations, reason): never a finding
    review.left_out      # TUs over the cap, in the order they would have come
    review.state         # "on", or why the tier is off ("off: no C++ compiler found", "off (--no-compile)")
    review.compiles, review.ran   # distinct compiles asked; commands run when it was derived
    pipeline.review_repository(..., compiled=True)   # on; False (the pipeline's default) off;
                                                     # None: on where a compiler is found
    confirm_missing_header(...)   # bot/facts/confirmation.py: a rule's predicted missing header
Every compile, object and link is keyed by the digest of its inputs (the compiler's identity,
its flags, each file's private path and blob id) in the fact store, so a warm review runs no
compiler at all.
"""

from __future__ import annotations

import enum
import os
import posixpath
import re
import shlex
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bot.facts.compile_units import (
    CompileSetup,
    Configuration,
    buck_configurations,
    buck_owners,
    buck_setup,
    cmake_configurations,
    cmake_model_of,
    cmake_owners,
    cmake_setup,
    derived_configuration,
    setup_macros,
)
from bot.facts.linked import LinkFailure, link_review
from bot.facts.unit_choice import chosen_units, link_sources
from bot.store import memo as facts
from bot.toolchain.diagnostics import CompileError, first_error
from bot.toolchain.runner import LIMITS, Limits, Toolchain, run_confined, runs_so_far
from bot.toolchain.switch import tier_state

_STD_MEMBER = re.compile(r"is not a member of 'std(::\w+)*'")
MAX_OWNERS = 2  # per TU and configuration: the first targets by label
STANDARD = "-std=c++17"
SYNTAX = ("-fsyntax-only",)


class Status(enum.Enum):
    CLEAN = "clean"
    ERROR = "error"
    TIMEOUT = "timeout"
    REFUSED = "refused"  # an include names an absolute path or one outside the private tree


@dataclass(frozen=True, slots=True)
class CompileOutcome:
    """What the compiler said about one compile: stored under the compile's content key."""

    status: Status
    error: CompileError | None  # paths as the compiler named them (private paths)
    excerpt: str  # the first lines of its output
    seconds: float


@dataclass(frozen=True, slots=True)
class CompileFailure:
    """A TU that fails at head, in these configurations, and did not at base."""

    source: str
    owner: str
    configurations: tuple[Configuration, ...]
    path: str  # repository path of the error's file (or the compiler's name for a system header)
    line: int
    text: str  # the compiler's words
    command: str  # one command a maintainer can paste in the checkout's parent directory
    new_source: bool  # the TU (or its owner in this configuration) does not exist at base
    simulated: tuple[str, ...] = ()  # predefined macros simulated on the host that its files name
    hidden_header: str | None = None  # a missing include the tree holds: the configuration does not give it


@dataclass(frozen=True, slots=True)
class Unverified:
    source: str
    configuration: str
    reason: str


@dataclass(frozen=True, slots=True)
class CompiledReview:
    state: str
    failures: tuple[CompileFailure, ...] = ()
    links: tuple[LinkFailure, ...] = ()
    unverified: tuple[Unverified, ...] = ()
    left_out: tuple[str, ...] = ()
    compiles: int = 0  # distinct compiles the review asked for
    ran: int = 0  # compiler and linker commands run when it was derived (the rest came from the store)
    compiler: str = ""
    isolation: str = ""


def compiled_review(snap) -> CompiledReview:
    """The tier's verdicts for one review: every chosen TU in every configuration."""
    state, toolchain = tier_state()
    if toolchain is None:
        return CompiledReview(state)
    # Kept in the store: a review of the same trees again (a re-run with the checks asked afresh)
    # reads its verdicts back instead of deriving every compile's inputs.
    key = facts.digest(
        snap.base.tree.digest(),
        snap.head.tree.digest(),
        tuple(sorted(snap.changes.paths)),
        repr(snap.config),
        toolchain.identity,
    )
    return facts.fact("compiled-review", key, lambda: _review(snap, toolchain), persist=True)


def _review(snap, toolchain: Toolchain) -> CompiledReview:
    runs_before = runs_so_far()
    chosen, left_out = chosen_units(snap)
    head, base = snap.head, snap.base
    configurations = buck_configurations(head) + cmake_configurations(head, tuple(snap.config.cmake_profiles))
    setups = _setups(head, configurations, chosen)
    cmake_configs = [c for c in configurations if c.profile is not None]
    uncovered = [source for source in chosen if not any(s.source == source for s in setups)]
    if uncovered and cmake_configs:
        for source in uncovered:
            derived = derived_configuration(head, cmake_configs[-1], source)
            if derived is not None:
                configurations += (derived,)
                setups += _setups(head, (derived,), (source,))
    unverified: list[Unverified] = [
        Unverified(source, "every configuration", "no target in any configuration compiles it")
        for source in chosen
        if not any(s.source == source for s in setups)
    ]
    outcomes = _compile_all(head, setups, toolchain)
    failing: list[CompileSetup] = []
    for setup in setups:
        outcome = outcomes[setup]
        reason = _unknown(head, setup, outcome, toolchain)
        if reason is not None:
            unverified.append(Unverified(setup.source, setup.configuration.name, reason))
        elif outcome.status is Status.ERROR:
            failing.append(setup)
    # The base compiles only where the head fails: a clean head costs nothing more.
    base_setups = {setup: _base_setup(base, setup) for setup in failing}
    base_outcomes = _compile_all(base, tuple(s for s in base_setups.values() if s is not None), toolchain)
    grouped: dict[tuple, list[CompileSetup]] = {}
    for setup in failing:
        before = base_setups[setup]
        if before is not None:
            outcome = base_outcomes[before]
            if outcome.status is not Status.CLEAN:
                continue  # failing at base too (or unknown there): not the pull request's
        error = outcomes[setup].error
        assert error is not None
        # One failure per error, whichever owners show it (a library and its `_static` twin).
        grouped.setdefault((setup.source, error.text, _mapped(setup, error.path), before is None), []).append(setup)
    failures = tuple(
        _failure(head, group, outcomes[group[0]].error, new, toolchain)
        for (_s, _t, _p, new), group in sorted(grouped.items())
    )
    distinct = len({_job_key(head, s, toolchain) for s in setups}) + len(base_outcomes)
    links, link_unverified = link_review(snap, toolchain, configurations, link_sources(snap, chosen))
    # A link stopped by a changed TU's own compile says nothing more than that compile's verdict.
    unverified += [
        Unverified(item.owner, item.configuration, f"link: {item.reason}")
        for item in link_unverified
        if item.blocking_source not in chosen
    ]
    return CompiledReview(
        "on",
        failures,
        links,
        _grouped(unverified),
        left_out,
        distinct,
        runs_so_far() - runs_before,
        toolchain.cxx,
        toolchain.isolation,
    )


def _grouped(unverified: list[Unverified]) -> tuple[Unverified, ...]:
    """One item per (source, reason), naming every configuration it holds in."""
    by_reason: dict[tuple[str, str], list[str]] = {}
    for item in unverified:
        names = by_reason.setdefault((item.source, item.reason), [])
        if item.configuration not in names:
            names.append(item.configuration)
    return tuple(Unverified(source, ", ".join(names), reason) for (source, reason), names in sorted(by_reason.items()))


def _setups(model, configurations, sources) -> tuple[CompileSetup, ...]:
    found: list[CompileSetup] = []
    for configuration in configurations:
        if configuration.cell is not None and configuration.platform is not None:
            owners = buck_owners(model, configuration.cell, configuration.platform)
            for source in sources:
                for label in owners.get(source, ())[:MAX_OWNERS]:
                    found.append(buck_setup(model, configuration, label, source))
        elif configuration.profile is not None:
            cmake_model = cmake_model_of(model, configuration)
            owners = cmake_owners(cmake_model)
            for source in sources:
                for name in owners.get(source, ())[:MAX_OWNERS]:
                    found.append(cmake_setup(model, cmake_model, configuration, name, source))
    return tuple(found)


def _base_setup(base, setup: CompileSetup) -> CompileSetup | None:
    """The same TU, owner and configuration at base; None where base has no such compile."""
    if not base.tree.exists(setup.source):
        return None
    configuration = setup.configuration
    if configuration.cell is not None and configuration.platform is not None:
        if configuration.cell not in [c.cell for c in buck_configurations(base)]:
            return None
        if setup.owner not in buck_owners(base, configuration.cell, configuration.platform).get(setup.source, ()):
            return None
        return buck_setup(base, configuration, setup.owner, setup.source)
    assert configuration.profile is not None
    cmake_model = cmake_model_of(base, configuration)
    if setup.owner not in cmake_owners(cmake_model).get(setup.source, ()):
        return None
    return cmake_setup(base, cmake_model, configuration, setup.owner, setup.source)


def _texts(model, setup: CompileSetup) -> dict[str, str]:
    return {private: model.tree.read_text(path) or "" for private, path in setup.layout}


def compile_flags(model, setup: CompileSetup, toolchain: Toolchain, mode: tuple[str, ...] = SYNTAX) -> tuple[str, ...]:
    """The compile's flags: the configuration's, with only the predefined macros its files name."""
    texts = _texts(model, setup)
    flags = [STANDARD, "-w", "-fmax-errors=5", "-fdiagnostics-color=never", "-Iinclude"]
    if setup.configuration.cuda and toolchain.cuda_include and any("cuda" in t.lower() for t in texts.values()):
        flags.append(f"-isystem{toolchain.cuda_include}")
    flags += [f"-D{name}={value}" for name, value in setup_macros(setup, texts)]
    flags += [f"-D{name}={value}" if value is not None else f"-U{name}" for name, value in setup.defines]
    return (*flags, *mode)  # the mode last: a link names each object's output there


def _job_key(model, setup: CompileSetup, toolchain: Toolchain) -> str:
    blobs = tuple((private, model.tree.blob_id(path) or "") for private, path in setup.layout)
    return facts.digest(toolchain.identity, compile_flags(model, setup, toolchain), blobs)


def _compile_all(model, setups, toolchain: Toolchain) -> dict[CompileSetup, CompileOutcome]:
    """One compile per distinct key, the missing ones on a small pool; each kept by content."""
    keys = {setup: _job_key(model, setup, toolchain) for setup in setups}
    by_key = {key: setup for setup, key in keys.items()}

    def run(missing: list[str]) -> dict[str, CompileOutcome]:
        jobs = {
            key: (materialized_files(model, by_key[key]), compile_flags(model, by_key[key], toolchain))
            for key in missing
        }
        workers = max(1, min(len(jobs), os.cpu_count() or 1, 4))
        with ThreadPoolExecutor(workers) as pool:
            done = pool.map(lambda key: (key, compile_files(toolchain, *jobs[key], by_key[key].unit_path)), jobs)
            return dict(done)

    outcomes = facts.many("compile", sorted(by_key), run, persist=True) if by_key else {}
    return {setup: outcomes[key] for setup, key in keys.items()}


def materialized_files(model, setup: CompileSetup) -> tuple[tuple[str, bytes], ...]:
    """The header tree's files with their contents. A path the tree names but does not hold (a
    header inside a submodule that is not checked out, as a third-party target's exported headers
    are) is left out, never written empty: an empty stand-in compiles on to errors about the types
    it lacks, which say nothing of the change, where a missing file makes the unit not verified."""
    files = ((private, model.tree.read(path)) for private, path in setup.layout)
    return tuple((private, data) for private, data in files if data is not None)


def compile_files(
    toolchain: Toolchain,
    files: tuple[tuple[str, bytes], ...],
    flags: tuple[str, ...],
    unit: str,
    limits: Limits = LIMITS,
) -> CompileOutcome:
    """Materialize `files` in a private directory and compile `unit` there, confined."""
    refused = refused_include(files)
    if refused is not None:
        return CompileOutcome(Status.REFUSED, None, refused, 0.0)
    with tempfile.TemporaryDirectory(prefix="pr-check-compile-") as directory:
        result = _run_in(toolchain, Path(directory), files, flags, unit, limits)
    excerpt = "\n".join(result.output.splitlines()[:20])
    if result.timed_out:
        return CompileOutcome(Status.TIMEOUT, None, excerpt, round(result.seconds, 3))
    error = first_error(result.output) if result.returncode != 0 else None
    status = Status.CLEAN if result.returncode == 0 else Status.ERROR
    return CompileOutcome(status, error, excerpt, round(result.seconds, 3))


def compile_object(
    toolchain: Toolchain,
    files: tuple[tuple[str, bytes], ...],
    flags: tuple[str, ...],
    unit: str,
    limits: Limits = LIMITS,
) -> tuple[bytes | None, str]:
    """Compile `unit` to an object (`flags` end with `-o unit.o`): (its bytes, "") or (None, why not)."""
    refused = refused_include(files)
    if refused is not None:
        return None, refused
    with tempfile.TemporaryDirectory(prefix="pr-check-object-") as directory:
        root = Path(directory)
        result = _run_in(toolchain, root, files, flags, unit, limits)
        if result.timed_out:
            return None, "the compile ran out of its time or memory"
        if result.returncode != 0:
            error = first_error(result.output)
            return None, f"{error.path}:{error.line}: {error.text}" if error else (
                result.output.splitlines() or ["failed"]
            )[0]
        return (root / flags[-1]).read_bytes(), ""


def _run_in(toolchain: Toolchain, root: Path, files, flags: tuple[str, ...], unit: str, limits: Limits):
    for private, data in files:
        target = root / private
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return run_confined(toolchain, (toolchain.cxx, *flags, unit), root, limits)


def refused_include(files: tuple[tuple[str, bytes], ...]) -> str | None:
    """An include naming an absolute path, or a relative one that leaves the private tree: from
    the including file's directory, or (a `..` name the private tree does not answer) from the
    include roots and the system's directories, where it would reach files outside both."""
    from bot.facts.xref import includes_of

    present = {private for private, _data in files}
    for private, _data in files:  # a header name (`header_namespace`, a dict key) writes nothing outside
        written = posixpath.normpath(private)
        if written.startswith(("/", "../")) or written == "..":
            return f"header path {private!r} refused (absolute, or outside the tree)"
    for private, data in files:
        for name, line in includes_of(data.decode("utf-8", "replace")):
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(private), name))
            climbing = posixpath.normpath(name).startswith("..") and joined not in present
            if name.startswith("/") or joined.startswith("../") or joined == ".." or climbing:
                return f"{private}:{line}: include of {name!r} refused (absolute, or outside the tree)"
    return None


def _unknown(model, setup: CompileSetup, outcome: CompileOutcome, toolchain: Toolchain) -> str | None:
    """Why this compile's verdict says nothing about the change, or None when it does."""
    if outcome.status is Status.TIMEOUT:
        return "the compile ran out of its time or memory (bounded and reported, not a finding)"
    if outcome.status is Status.REFUSED:
        return outcome.excerpt
    if outcome.status is Status.ERROR and outcome.error is None:
        return (
            "the compiler failed without an error line: " + outcome.excerpt.splitlines()[0] if outcome.excerpt else ""
        )
    missing = outcome.error.missing_include if outcome.error is not None else None
    if (
        outcome.error is not None
        and (_STD_MEMBER.search(outcome.error.text) or "did you forget to '#include <" in outcome.excerpt)
        and not _host_library(model, setup.configuration)
    ):
        # Which standard headers a standard header pulls in is the standard library's choice: where
        # the host's libstdc++ is not the configuration's (a Buck clang cell, Apple, Android), a
        # missing standard include says nothing of its build. A GNU profile on Linux builds with it.
        return f"the host's standard library differs from the configuration's: `{outcome.error.text}`"
    if missing is None:
        if setup.outside:
            # Not a missing header: the error may come from a macro or a declaration that a dep
            # outside the tree exports (USE_VULKAN_API from ATen's Vulkan target gates all of
            # ExecuTorch's Vulkan graph, #2366): the tree cannot say.
            return f"it reaches deps outside the tree ({', '.join(setup.outside[:3])}), whose exports are unknown"
        return None
    if toolchain.cuda_include and Path(toolchain.cuda_include, missing).is_file():
        return None if not setup.configuration.cuda else f"{missing} missing though CUDA is given"
    if _tree_holds(model, missing):
        return None  # the tree has it and this configuration does not give it: the compiler's verdict
    return f"`{missing}` is not in the tree (an external dependency, a generated header or a system SDK)"


def _host_library(model, configuration: Configuration) -> bool:
    """Whether the configuration builds with the host's compiler family and standard library: a
    CMake profile of GCC on Linux (libstdc++, as the host compiler here uses on Linux)."""
    if configuration.profile is None:
        return False
    from bot.cmake.profiles import profile_named

    profile = profile_named(configuration.profile, model.config.cmake_defined)
    return profile.compiler_id == "GNU" and profile.platform == "Linux"


def _tree_holds(model, include: str) -> bool:
    name = include[len("executorch/") :] if include.startswith("executorch/") else include
    if model.tree.exists(name):
        return True
    suffix = "/" + include
    return any(path.endswith(suffix) for path in model.tree.paths())


def _mapped(setup: CompileSetup, private: str) -> str:
    return dict(setup.layout).get(private, private)


def _failure(
    model, group: list[CompileSetup], error: CompileError | None, new: bool, toolchain: Toolchain
) -> CompileFailure:
    first = group[0]
    configurations = tuple(dict.fromkeys(s.configuration for s in group))
    assert error is not None
    macros = tuple(sorted({name for s in group for name, _v in setup_macros(s, _texts(model, s))}))
    return CompileFailure(
        first.source,
        first.owner,
        configurations,
        _mapped(first, error.path),
        error.line,
        error.text,
        reproduce_command(first, toolchain, macros),
        new,
        macros,
        error.missing_include if error.missing_include and _tree_holds(model, error.missing_include) else None,
    )


def reproduce_command(setup: CompileSetup, toolchain: Toolchain, macros: tuple[str, ...] = ()) -> str:
    """A command to paste in the directory holding the `executorch` checkout: the same macros,
    the configuration's CUDA headers, the checkout as the include root (CMake's view)."""
    configuration = setup.configuration
    parts = [posixpath.basename(toolchain.cxx), STANDARD, "-fsyntax-only", "-I."]
    if configuration.cuda and toolchain.cuda_include:
        parts.append(f"-isystem {toolchain.cuda_include}")
    parts += [f"-D{name}={value}" for name, value in configuration.predefined if name in macros]
    parts += [f"-D{name}={value}" if value is not None else f"-U{name}" for name, value in setup.defines]
    parts.append(f"executorch/{setup.source}")
    return " ".join(_quoted(part) for part in parts)


def _quoted(part: str) -> str:
    return part if part.startswith("-isystem ") else shlex.quote(part)


def buck_built(configuration: Configuration) -> bool:
    """Whether a cell or a profile builds this configuration (blocker), or it is derived (major)."""
    return configuration.built


def owner_location(model, configuration: Configuration, owner: str) -> tuple[str, int]:
    """Where the owner is defined: the Buck rule's call site or the CMake `add_library` line."""
    if configuration.cell is not None:
        target = model.cell(configuration.cell).targets.get(owner)
        if target is not None:
            return target.path, target.line
    elif configuration.profile is not None:
        cmake_target = cmake_model_of(model, configuration).targets.get(owner)
        if cmake_target is not None:
            return cmake_target.path, cmake_target.line
    return "", 0
