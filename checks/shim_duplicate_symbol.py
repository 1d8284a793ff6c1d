"""One `extern "C"` symbol is defined by two sources that are force-linked into one binary.

`link_whole = True` puts every object of a library into each binary that links it, whether or
not anything calls into it; that is how `aoti_torch_*` shims reach the host an AOTInductor
library loads into. Two force-linked libraries that both define one C-linkage function
(ExecuTorch had `aoti_torch_get_device_type` in the ETensor `tensor_attribute.cpp` and in the
SlimTensor `common_shims_slim.cpp`) then fail every link that includes both, with
`multiple definition of ...`; within one force-linked library two sources defining it fail
the same way.

C linkage comes from an `extern "C"` block, from an `extern "C"` declaration in an included
header (the definition inherits it), or from a `.c` file. Static, inline and weak definitions,
definitions under an `#if` the target's flags turn off, and sources inside `select()` do not
count. Two libraries collide only when some target of the same cell links both (one depends on
the other, or a third depends on both); two variants of one library compiling the same file
(ATen and portable modes, an Android build of it) are alternatives and are not compared.

Example (bad): `common_shims_slim` becomes `link_whole = True` while the force-linked
`runtime_shims` still compiles `tensor_attribute.cpp`, and both define `aoti_torch_get_device_type`.

Use instead: keep one definition: drop the obsolete source (as CMake already does) or the
duplicate function.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, SMOKE_VERIFIED, Check, Example, Share
from bot.facts import linkage, pairing, revision, symbols
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line, item_line

Placed = tuple[BuckTarget, symbols.Definition]


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    # Not kept with the head tree alone: which side of a pair is new depends on the base.
    reported: set[tuple[str, frozenset[str]]] = set()
    for cell in CELLS:
        by_symbol: dict[str, list[Placed]] = {}
        force_linked = list(_force_linked(snap.head, cell))
        symbols.prefetch_sources(snap.head, force_linked)
        for target in force_linked:
            for definition in symbols.target_definitions(snap.head, target):
                by_symbol.setdefault(definition.symbol, []).append((target, definition))
        for symbol, placed in sorted(by_symbol.items()):
            if len(placed) < 2:
                continue
            for index, first in enumerate(placed):
                for second in placed[index + 1 :]:
                    labels = frozenset((first[0].primary_label, second[0].primary_label))
                    if (symbol, labels) in reported or first[1].path == second[1].path:
                        continue
                    hit = _collision(snap, cell, symbol, first, second)
                    if hit is not None:
                        reported.add((symbol, labels))
                        yield hit


def _force_linked(model: BuildModel, cell: str) -> Iterator[BuckTarget]:
    for target in pairing.cell_primary_targets(model, cell):
        if target.attr("link_whole") is True and "library" in target.kind and not target.kind.startswith("python"):
            yield target


def _collision(snap: Snapshot, cell: str, symbol: str, first: Placed, second: Placed) -> Hit | None:
    (a, a_definition), (b, b_definition) = first, second
    definitions = (
        Evidence(
            a_definition.path,
            a_definition.line,
            f"`{symbol}` defined here (C linkage from {a_definition.linkage}), built by `{a.label}`",
        ),
        Evidence(
            b_definition.path,
            b_definition.line,
            f"`{symbol}` defined here (C linkage from {b_definition.linkage}), built by `{b.label}`",
        ),
    )
    if a.label == b.label:
        text = snap.head.text(a.path) or ""
        relative = b_definition.path[len(a.package) + 1 :] if a.package else b_definition.path
        line = item_line(text, a, relative) or attribute_line(text, a, "srcs") or a.line
        return Hit(
            path=a.path,
            line=line,
            message=(
                f"`{a.label}` is force-linked (`link_whole = True`) and two of its sources define the C-linkage "
                f"function `{symbol}` ({a_definition.path}:{a_definition.line} and {b_definition.path}:{b_definition.line}); "
                f"every binary that links it fails with `multiple definition of {symbol}`. Keep one definition."
            ),
            key=f"{symbol}|{a.primary_label}",
            target=a.label,
            cell=cell,
            offending_text=symbol,
            evidence=definitions,
        )
    if (a.path, a.line) == (b.path, b.line):
        return None  # variants of one call (ATen modes): built as alternatives
    linked = _linked_together(snap.head, cell, a.label, b.label)
    if not linked:
        return None
    (witness, platform), platforms = linked[0], tuple(name for (_w, name) in linked)
    every = len(platforms) == len(snap.head.platforms(cell))
    at, other = _placement(snap, cell, symbol, a, b)
    text = snap.head.text(at.path) or ""
    line = attribute_line(text, at, "link_whole") or at.line
    graph = snap.head.cell(cell)
    witness_target = graph.targets.get(witness)
    evidence = list(definitions)
    closure = linkage.dependency_closure(snap.head, cell, witness, _platform_named(snap.head, cell, platform))
    chains = [" -> ".join(linkage.path_to(closure, t.label)) for t in (a, b) if t.label != witness]
    if witness_target is not None:
        evidence.append(
            Evidence(witness_target.path, witness_target.line, f"`{witness}` links both: {'; '.join(chains)}")
        )
    if witness in (a.label, b.label):
        below = b.label if witness == a.label else a.label
        links = f"`{witness}` depends on `{below}`, so every binary that links `{witness}`"
    else:
        links = f"`{witness}` links both, so it (and every binary that links it)"
    where = "" if every else " on " + ", ".join(f"`{name}`" for name in platforms)
    return Hit(
        path=at.path,
        line=line,
        message=(
            f"The C-linkage function `{symbol}` is defined by both `{at.label}` and `{other.label}`, which are force-linked "
            f"(`link_whole = True`) in `{cell}`; {links}{where} fails with `multiple definition of {symbol}`. "
            "Keep one definition (drop the obsolete source or the duplicate function)."
        ),
        key=f"{symbol}|{'|'.join(sorted((a.primary_label, b.primary_label)))}" + ("" if every else f"|{platforms[0]}"),
        target=at.label,
        cell=cell,
        offending_text=symbol,
        evidence=tuple(evidence),
    )


def _linked_together(model: BuildModel, cell: str, a: str, b: str) -> list[tuple[str, str]]:
    """(a target that links both, platform name) for each platform of the cell where one builds,
    `a` or `b` itself first. Per platform: two libraries a select() chooses between (the CUDA
    shims with CUDA, the CPU ones without) are alternatives, never linked together."""
    found = []
    for platform in model.platforms(cell):
        incompatible = revision.incompatible(model, cell, platform)
        users_a = linkage.dependents_closure(model, cell, a, platform)
        users_b = linkage.dependents_closure(model, cell, b, platform)
        common = [label for label in (a, b) if label in users_a and label in users_b]
        common = [label for label in common or sorted(set(users_a) & set(users_b)) if label not in incompatible]
        if common:
            found.append((common[0], platform.name))
    return found


def _platform_named(model: BuildModel, cell: str, name: str):
    return next(platform for platform in model.platforms(cell) if platform.name == name)


def _placement(snap: Snapshot, cell: str, symbol: str, a: BuckTarget, b: BuckTarget) -> tuple[BuckTarget, BuckTarget]:
    """Where to report: on the target that did not already force-link the symbol at base, if one."""
    new = [t for t in sorted((a, b), key=lambda t: t.label) if not _force_linked_at(snap.base, cell, t.label, symbol)]
    at = new[0] if new else min((a, b), key=lambda t: t.label)
    return at, (b if at is a else a)


def _force_linked_at(model: BuildModel, cell: str, label: str, symbol: str) -> bool:
    target = model.cell(cell).targets.get(label)
    if target is None or target.attr("link_whole") is not True:
        return False
    return any(d.symbol == symbol for d in symbols.target_definitions(model, target))


_SLIM = 'extern "C" int aoti_torch_get_device_type(void* tensor, int* out) { *out = 1; return 0; }\n'
_ATTRIBUTE_HEADER = '#pragma once\nextern "C" int aoti_torch_get_device_type(void* tensor, int* out);\n'
_ATTRIBUTE = (
    '#include "tensor_attribute.h"\nint aoti_torch_get_device_type(void* tensor, int* out) { *out = 1; return 0; }\n'
)


def _buck(slim_marker: str, runtime_sources: str) -> str:
    return (
        "cxx_library(\n"
        '    name = "common_shims_slim",\n'
        '    srcs = ["common_shims_slim.cpp"],\n'
        f"    link_whole = True,{slim_marker}\n"
        ")\n"
        "cxx_library(\n"
        '    name = "runtime_shims",\n'
        f"    srcs = [{runtime_sources}],\n"
        '    headers = ["tensor_attribute.h"],\n'
        "    link_whole = True,\n"
        '    deps = [":common_shims_slim"],\n'
        ")\n"
    )


CHECK = Check(
    id="shim-duplicate-symbol",
    tags=frozenset({SMOKE_VERIFIED}),
    share=Share.WORKER,
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.BLOCKER,
    title="C-linkage symbol defined twice in force-linked libraries",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base={
                "backends/BUCK": _buck("", '"memory.cpp", "tensor_attribute.cpp"').replace(
                    "    link_whole = True,\n", "", 1
                ),
                "backends/common_shims_slim.cpp": _SLIM,
                "backends/tensor_attribute.h": _ATTRIBUTE_HEADER,
                "backends/tensor_attribute.cpp": _ATTRIBUTE,
            },
            head={
                "backends/BUCK": _buck("  # expect: shim-duplicate-symbol", '"memory.cpp", "tensor_attribute.cpp"'),
                "backends/common_shims_slim.cpp": _SLIM,
                "backends/tensor_attribute.h": _ATTRIBUTE_HEADER,
                "backends/tensor_attribute.cpp": _ATTRIBUTE,
            },
        ),
    ),
    good=(
        Example(
            head={
                "backends/BUCK": _buck("", '"memory.cpp"'),
                "backends/common_shims_slim.cpp": _SLIM,
                "backends/tensor_attribute.h": _ATTRIBUTE_HEADER,
                "backends/tensor_attribute.cpp": _ATTRIBUTE,
            },
        ),
        # Alternatives: a select() links the CUDA shims with CUDA and the CPU ones without, never both.
        Example(
            head={
                "backends/BUCK": (
                    'cxx_library(name = "cuda_shims", srcs = ["cuda_shims.cpp"], link_whole = True)\n'
                    'cxx_library(name = "cpu_shims", srcs = ["cpu_shims.cpp"], link_whole = True)\n'
                    "cxx_library(\n"
                    '    name = "shims",\n'
                    '    deps = select({"ovr_config//cuda:has_cuda": [":cuda_shims"], "DEFAULT": [":cpu_shims"]}),\n'
                    ")\n"
                ),
                "backends/cuda_shims.cpp": _SLIM,
                "backends/cpu_shims.cpp": _SLIM,
            },
        ),
        Example(
            head={
                "backends/BUCK": _buck("", '"memory.cpp", "tensor_attribute.cpp"'),
                "backends/common_shims_slim.cpp": "#ifdef USE_ETENSOR_SHIMS\n" + _SLIM + "#endif\n",
                "backends/tensor_attribute.h": _ATTRIBUTE_HEADER,
                "backends/tensor_attribute.cpp": _ATTRIBUTE,
            },
        ),
    ),
)
