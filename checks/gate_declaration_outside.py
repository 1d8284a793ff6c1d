"""A header declares a function outside `#if M` while every definition is built only with M.

A gate in a header says "this part exists only in builds with M". A declaration left outside
it promises the function to every build, but if the only sources that define it are compiled
only with M (a CMake option: the source is added under `if(M)`; a Buck cell: only fbcode
builds it), a dependent in any other build compiles against the declaration and then fails to
link with `undefined reference`. The gate should cover the declaration too.

Evidence comes from both sides: the declaration and the `#if` in the header, the definition,
and the CMake line (or Buck attribute) that builds it only under the gate.

Example (bad): `cuda_kv_cache.h` declares `attach_offgraph_kv_cache(...)` just above
`#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)`, and `cuda_kv_cache.cpp`, which defines it, is
added to `aoti_cuda_backend` only under `if(EXECUTORCH_BUILD_EXTENSION_LLM)`.

Use instead: move the `#if` above the declaration, so builds without the option do not see it.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.cpp.declarations import Declaration, SourceFacts
from bot.cpp.edits import gate_declaration
from bot.cpp.preprocessor import ConditionalBlock
from bot.facts import gating, verdicts
from bot.facts.gated_declarations import MacroGate, fbcode_only_macros, outside_gate
from bot.fixes import fix_between
from bot.model import Evidence, Fix, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import item_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    yield from verdicts.whole_tree(snap.head, "gate-declaration-outside", lambda: _declarations_outside(snap.head))


def _declarations_outside(model: BuildModel) -> tuple[Hit, ...]:
    # Cheap, textual candidates first: words CMake `if()`s test; whether one is an option that
    # is off is asked of the evaluated model only for a header that needs it.
    gates = [MacroGate(m, "cmake") for m in gating.cmake_condition_words(model)]
    gates += [MacroGate(m, "buck") for m in fbcode_only_macros(model)]
    if not gates:
        return ()
    tested = gating.headers_testing(model, {g.macro for g in gates})
    hits: list[Hit] = []
    for header, macros in sorted(tested.items()):
        facts = model.source_facts(header)
        if facts is None:
            continue
        for gate in gates:
            if gate.macro in macros:
                hits.extend(_header_hits(model, header, facts, gate))
    unique = {(h.path, h.line, h.key): h for h in hits}
    return tuple(unique.values())


def _header_hits(model: BuildModel, header: str, facts: SourceFacts, gate: MacroGate) -> list[Hit]:
    found_outside = outside_gate(model, header, facts, gate)
    if found_outside is None:
        return []
    block, candidates = found_outside
    flagged = []
    all_definitions = gating.definitions(model, candidates)
    for declaration in candidates:
        found = all_definitions.get(declaration.qualified_name, ())
        if not found:
            continue
        evidence = _gate_evidence(model, gate, found)
        if evidence is None:
            continue
        flagged.append((declaration, found, evidence))
    text = model.text(header) or ""
    flagged_declarations = [d for d, _found, _evidence in flagged]
    return [
        _hit(
            model,
            header,
            facts,
            block,
            declaration,
            gate,
            found,
            evidence,
            _gate_fix(header, text, facts, block, declaration, flagged_declarations),
        )
        for declaration, found, evidence in flagged
    ]


def _gate_evidence(model: BuildModel, gate: MacroGate, found) -> list[Evidence] | None:
    """Evidence that every defining source is built only under the gate, or None if one is not."""
    evidence: list[Evidence] = []
    if gate.kind == "cmake":
        gated = gating.gated_sources(model, gate.macro)
        for path, _definition in found:
            source = gated.get(path)
            if source is None:
                return None
            evidence.append(
                Evidence(
                    source.cmake_path,
                    source.cmake_line,
                    f"`{path}` is added to `{source.target}` only under `if({source.condition})`",
                )
            )
        return evidence
    fbcode = gating.built_in_cell(model, "fbcode")
    xplat = gating.built_in_cell(model, "xplat")
    for path, _definition in found:
        if path in xplat or path not in fbcode:
            return None
        target = model.cell("fbcode").targets[fbcode[path][0]]
        relative = path[len(target.package) + 1 :] if target.package else path
        line = item_line(model.text(target.path) or "", target, relative) or target.line
        evidence.append(Evidence(target.path, line, f"`{path}` is built only in fbcode (`{target.primary_label}`)"))
    return evidence


def _hit(
    model,
    header,
    facts,
    block: ConditionalBlock,
    declaration: Declaration,
    gate: MacroGate,
    found,
    evidence,
    fix: Fix | None,
) -> Hit:
    text = model.text(header) or ""
    lines = text.splitlines()
    opening = lines[block.line - 1].strip() if block.line <= len(lines) else f"#if defined({gate.macro})"
    where = "the CMake option" if gate.kind == "cmake" else "the fbcode cell (only fbcode defines it)"
    definition_path, definition = found[0]
    return Hit(
        path=header,
        line=declaration.line,
        end_line=declaration.end_line,
        message=(
            f"`{declaration.qualified_name}` is declared outside `{opening}`, but every definition of it is built "
            f"only with `{gate.macro}` ({where}): a build without it compiles against this declaration and fails to "
            f"link. Move the declaration inside the `#if`."
        ),
        key=f"{declaration.qualified_name}@{gate.macro}",
        target=None,
        cell="xplat" if gate.kind == "buck" else None,
        offending_text=declaration.qualified_name,
        evidence=(
            Evidence(header, block.line, f"the gate `{opening}`"),
            Evidence(definition_path, definition.line, f"`{declaration.name}` is defined here"),
            *evidence,
        ),
        fix=fix,
    )


def _gate_fix(
    header: str,
    text: str,
    facts: SourceFacts,
    block: ConditionalBlock,
    declaration: Declaration,
    flagged: list[Declaration],
) -> Fix | None:
    """The `#if` moved above the declaration: above the first of the flagged declarations that
    run down to it, so every declaration it then covers is one that belongs inside. One fix for
    all of them, applied once."""
    if declaration.end_line >= block.line:
        return None
    for top in sorted(flagged, key=lambda d: d.line):
        if top.line > declaration.line:
            break
        covered = [d for d in facts.declarations if top.line <= d.line < block.line]
        if all(d in flagged for d in covered):
            fixed = gate_declaration(header, text, top.line, block.line)
            if fixed is None:
                return None
            opening = text.split("\n")[block.line - 1].strip()
            return fix_between(header, text, fixed, f"move `{opening}` above the declaration")
    return None


_CMAKE_ROOT = (
    "cmake_minimum_required(VERSION 3.24)\n"
    "project(executorch)\n"
    'option(EXECUTORCH_BUILD_EXTENSION_LLM "Build the LLM extension" OFF)\n'
    "add_subdirectory(backends/cuda)\n"
)
_CMAKE_CUDA = (
    "add_library(aoti_cuda_backend STATIC runtime/cuda_backend.cpp)\n"
    "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
    "  target_sources(aoti_cuda_backend PRIVATE runtime/cuda_kv_cache.cpp)\n"
    "  target_compile_definitions(aoti_cuda_backend PUBLIC EXECUTORCH_BUILD_EXTENSION_LLM)\n"
    "endif()\n"
)
_CACHE_CPP = (
    "#include <executorch/backends/cuda/runtime/cuda_kv_cache.h>\n"
    "namespace executorch::backends::cuda {\n"
    "int attach_offgraph_kv_cache(int slot) { return slot; }\n"
    "int KvCache::size() const { return 0; }\n"
    "} // namespace executorch::backends::cuda\n"
)


def _cache_header(above: str, inside: str) -> str:
    return (
        "#pragma once\n"
        "namespace executorch::backends::cuda {\n"
        f"{above}"
        "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
        f"{inside}"
        "class KvCache {\n"
        " public:\n"
        "  int size() const;\n"
        "};\n"
        "#endif\n"
        "} // namespace executorch::backends::cuda\n"
    )


def _files(header: str) -> dict[str, str]:
    return {
        "CMakeLists.txt": _CMAKE_ROOT,
        "backends/cuda/CMakeLists.txt": _CMAKE_CUDA,
        "backends/cuda/runtime/cuda_backend.cpp": "int main() { return 0; }\n",
        "backends/cuda/runtime/cuda_kv_cache.cpp": _CACHE_CPP,
        "backends/cuda/runtime/cuda_kv_cache.h": header,
    }


CHECK = Check(
    id="gate-declaration-outside",
    fixable=True,
    inputs=BUCK_FILES + CPP_FILES + CMAKE_FILES,
    severity=Severity.MAJOR,
    title="Declaration outside the #if that gates its only definition",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head=_files(
                _cache_header("int attach_offgraph_kv_cache(int slot);  // expect: gate-declaration-outside\n", "")
            ),
            fixed={
                "backends/cuda/runtime/cuda_kv_cache.h": (
                    "#pragma once\n"
                    "namespace executorch::backends::cuda {\n"
                    "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                    "int attach_offgraph_kv_cache(int slot);  // expect: gate-declaration-outside\n"
                    "class KvCache {\n"
                    " public:\n"
                    "  int size() const;\n"
                    "};\n"
                    "#endif\n"
                    "} // namespace executorch::backends::cuda\n"
                )
            },
        ),
        # Two declarations with their doc comment, a blank line before the gate: the `#if`
        # goes above the comment, and one fix gates both.
        Example(
            head={
                **_files(""),
                "backends/cuda/runtime/cuda_kv_cache.cpp": _CACHE_CPP.replace(
                    "int KvCache::size", "int detach_offgraph_kv_cache(int slot) { return slot; }\nint KvCache::size"
                ),
                "backends/cuda/runtime/cuda_kv_cache.h": (
                    "#pragma once\n"
                    "namespace executorch::backends::cuda {\n"
                    "\n"
                    "// Attach and detach the off-graph KV cache of a slot.\n"
                    "int attach_offgraph_kv_cache(int slot);  // expect: gate-declaration-outside\n"
                    "int detach_offgraph_kv_cache(int slot);  // expect: gate-declaration-outside\n"
                    "\n"
                    "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                    "class KvCache {\n"
                    " public:\n"
                    "  int size() const;\n"
                    "};\n"
                    "#endif\n"
                    "} // namespace executorch::backends::cuda\n"
                ),
            },
            fixed={
                "backends/cuda/runtime/cuda_kv_cache.h": (
                    "#pragma once\n"
                    "namespace executorch::backends::cuda {\n"
                    "\n"
                    "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
                    "// Attach and detach the off-graph KV cache of a slot.\n"
                    "int attach_offgraph_kv_cache(int slot);  // expect: gate-declaration-outside\n"
                    "int detach_offgraph_kv_cache(int slot);  // expect: gate-declaration-outside\n"
                    "\n"
                    "class KvCache {\n"
                    " public:\n"
                    "  int size() const;\n"
                    "};\n"
                    "#endif\n"
                    "} // namespace executorch::backends::cuda\n"
                ),
            },
        ),
    ),
    good=(
        Example(head=_files(_cache_header("", "int attach_offgraph_kv_cache(int slot);\n"))),
        # Declared outside, but also defined in a source every build compiles.
        Example(
            head={
                **_files(_cache_header("int attach_offgraph_kv_cache(int slot);\n", "")),
                "backends/cuda/runtime/cuda_backend.cpp": (
                    "namespace executorch::backends::cuda {\n"
                    "int attach_offgraph_kv_cache(int slot) { return -slot; }\n"
                    "}\n"
                ),
            }
        ),
    ),
)
