"""Functions a header declares outside the `#if` of a macro that gates where they are defined.

A macro gates a build when a CMake option that is off tests it (`if(M)` around the sources) or
when only the fbcode cell defines it. A header that tests the macro around some declarations but
declares other out-of-line functions outside that block, whose definitions only the gated build
compiles, declares functions the other build cannot link.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.cpp.declarations import Declaration, SourceFacts
from bot.facts import gating
from bot.snapshot import BuildModel


@dataclass(frozen=True, slots=True)
class MacroGate:
    """Why a macro gates a build: a CMake option or the Buck fbcode cell."""

    macro: str
    kind: str  # "cmake" | "buck"


def fbcode_only_macros(model: BuildModel) -> frozenset[str]:
    """Macros that some fbcode target defines and no xplat target does (Buck's cell gate)."""
    fbcode = gating.cell_defines(model, "fbcode")
    xplat = gating.cell_defines(model, "xplat")
    return frozenset(m for m in fbcode if m not in xplat and not m.startswith("_"))


def outside_gate(model: BuildModel, header: str, facts: SourceFacts, gate: MacroGate):
    """(the header's first `#if` testing the macro, the out-of-line functions declared outside it
    whose definitions the gate builds), or None when there are none."""
    block = gating.first_block_testing(facts, gate.macro)
    if block is None:
        return None
    outside = [
        d for d in gating.out_of_line_functions(facts) if not any(gating.mentions(c, gate.macro) for c in d.conditions)
    ]
    if not outside:
        return None
    if gate.kind == "cmake":
        # Only worth evaluating CMake when a source written under `if(M)` defines one of them.
        written = _written_under(model, gate.macro)
        if not any(_defined_in(model, d, written) for d in outside):
            return None
        if gate.macro not in gating.off_options(model):
            return None
        gated = gating.gated_sources(model, gate.macro)
        candidates = [d for d in outside if _defined_in(model, d, gated)]
    else:
        if header not in gating.exported_in_cell(model, "xplat"):
            return None
        candidates = outside
    if not candidates:
        return None
    return block, candidates


def _written_under(model: BuildModel, macro: str) -> tuple[str, ...]:
    """Implementation files whose names a CMake `if()` naming the macro writes (textual)."""
    names = gating.sources_named_under(model, macro)
    if not names:
        return ()
    return tuple(
        p for p in model.tree.paths() if p.endswith(gating.IMPLEMENTATION_SUFFIXES) and p.rsplit("/", 1)[-1] in names
    )


def _defined_in(model: BuildModel, declaration: Declaration, gated) -> bool:
    for path in gated:
        facts = model.source_facts(path)
        if facts is not None and any(
            d.kind == "function"
            and d.is_definition
            and gating.same_function(declaration.qualified_name, d.qualified_name)
            for d in facts.declarations
        ):
            return True
    return False
