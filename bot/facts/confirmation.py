"""Confirm before posting: a rule that predicts a compile failure asks the compiler first.

`dep-private-for-exported-header`, `dep-undeclared-header`, `dep-undeclared-latent` and the gate
rules predict that some translation unit stops compiling for want of a header. This fact compiles
the translation units the prediction is about (the dependents of the target that include the
header, or the target's own sources) in the cell's configurations, each given exactly what that
configuration gives it (bot/facts/compile_units.py), and answers:
- confirmed: the compiler's preprocessor (`-M -MG`: a missing header is listed, not fatal, so a
  header the tree does not hold elsewhere cannot hide the answer) does not find the header;
- refuted: it finds the header for every dependent source that includes it, or no dependent
  compiles a source that includes it;
- unknown: no compile could say (the include is inactive for each, or the tier is off): the
  prediction stands as the rule made it.

API (for rules):
    verdict = confirm_missing_header(model, cell, label, header, include_name)          # dependents of label
    verdict = confirm_missing_header(model, cell, label, header, include_name, own=True)  # label's own sources
    verdict.state in ("confirmed", "refuted", "unknown"); verdict.evidence, verdict.reason
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.facts.compile_units import TU_SUFFIXES, CompileSetup, buck_configurations, buck_owners, buck_setup
from bot.facts.header_graph import header_graph
from bot.store import memo as facts
from bot.toolchain.switch import tier_state

MAX_DEPENDENTS = 6  # dependents compiled per prediction, by label
MAX_SOURCES = 2  # of each dependent: the first including the header


@dataclass(frozen=True, slots=True)
class Verdict:
    """The compiler's answer to one prediction."""

    state: str  # "confirmed", "refuted" or "unknown"
    reason: str  # a sentence: what was compiled and what the compiler said
    evidence: tuple[tuple[str, int, str], ...] = ()  # (path, line, the compiler's words) where confirmed


def confirm_missing_header(
    model, cell: str, label: str, header: str, include_name: str, *, own: bool = False
) -> Verdict:
    """Does a TU that includes `header` fail in `cell` because `include_name` is missing?"""
    state, toolchain = tier_state()
    if toolchain is None:
        return Verdict("unknown", f"the compiled tier is {state}")
    key = facts.digest(model.tree.digest(), cell, label, header, include_name, own, toolchain.identity)
    return facts.fact(
        "confirm-missing-header",
        key,
        lambda: _confirm(model, cell, label, header, include_name, own, toolchain),
        persist=True,
    )


def _confirm(model, cell, label, header, include_name, own, toolchain) -> Verdict:
    from bot.facts.unit_choice import includers_of

    graph = header_graph(model, cell)
    candidates = (label,) if own else tuple(sorted(graph.dependents.get(label, ())))[:MAX_DEPENDENTS]
    # A prediction on a TU itself (the target's own source names the include): that TU is asked.
    including = set(includers_of(model, [header])) | ({header} if header.endswith(TU_SUFFIXES) else set())
    setups: list[CompileSetup] = []
    uncompiled: set[str] = set()  # CUDA sources including the header: nvcc is not run here
    for configuration in (c for c in buck_configurations(model) if c.cell == cell):
        assert configuration.platform is not None
        owners = buck_owners(model, cell, configuration.platform)
        for dependent in candidates:
            sources = sorted(s for s, labels in owners.items() if dependent in labels and s in including)
            uncompiled.update(s for s in sources if not s.endswith(TU_SUFFIXES))
            setups += [
                buck_setup(model, configuration, dependent, s) for s in sources[:MAX_SOURCES] if s.endswith(TU_SUFFIXES)
            ]
    if not setups and uncompiled:
        return Verdict("unknown", f"only CUDA sources include `{header}` ({', '.join(sorted(uncompiled)[:3])})")
    if not setups:
        who = f"`{label}`" if own else f"no dependent of `{label}`"
        return Verdict("refuted", f"{who} compiles a source that includes `{header}` in `{cell}`")
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
        return Verdict(
            "confirmed",
            f"the compiler agrees: its preprocessor does not find `{include_name}` for `{first.source}` (of "
            f"`{first.owner}`) in {first.configuration.name} (`g++ -M -MG` lists it unresolved)",
            tuple((s.source, 1, f"{include_name}: not found for {s.configuration.name}") for s in confirmed[:3]),
        )
    if passed:
        names = sorted({f"`{s.owner}`" for s in passed})
        return Verdict(
            "refuted",
            f"the compiler's preprocessor finds `{include_name}` for {len(passed)} source(s) of {', '.join(names)} "
            f"in `{cell}`, each including `{header}`",
        )
    return Verdict("unknown", f"no source of a dependent in `{cell}` reaches the include ({len(unknown)} tried)")


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


def _names(missing: str, include_name: str) -> bool:
    return missing == include_name or include_name.endswith("/" + missing) or missing.endswith("/" + include_name)
