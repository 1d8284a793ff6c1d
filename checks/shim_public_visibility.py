"""A target that defines `aoti_torch_*` shims is visible to every package.

LibTorch defines the same `aoti_torch_*` C functions, for its own tensor type and with a
different tensor handle ABI. A binary that links both LibTorch and ExecuTorch's shims gets
duplicate definitions (a failed link) or, worse, one silently interposing the other (a crash
when the wrong ABI is called). Nothing stops that when the shim target is
`visibility = ["PUBLIC"]`: any package can add it next to `//caffe2:torch`. Narrow the
visibility to the known consumers and say at the target why it cannot share a binary with
LibTorch.

Reported for libraries whose own sources define C-linkage `aoti_torch_*` functions, and for
Python extensions that force-link such a library (`link_whole` somewhere in their closure):
the seed case is `//extension/pybindings:cuda_lib`, a Python extension that a Python binary
using torch can import.

Example (bad): `executorch_pybindings(name = "cuda_lib", deps = [".../cuda:cuda_backend"], visibility = ["PUBLIC"])`.

Use instead: `visibility = ["//executorch/extension/pybindings/..."]` and a comment saying that
it defines LibTorch's `aoti_torch_*` symbols.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.evaluation import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import linkage, pairing, symbols
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot
from checks.support.callsite import attribute_line

SHIM_PREFIX = "aoti_torch_"


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    # A verdict over every public target of the tree: kept with the tree for later reviews.
    yield from snap.head.memo(("shim_public_visibility",), lambda: tuple(_run(snap)), persist=True)


def _run(snap: Snapshot) -> Iterator[Hit]:
    reported: set[str] = set()
    checked: dict[str, list] = {}  # label -> attributes already looked at in an earlier cell
    for cell in CELLS:
        public = [t for t in pairing.cell_primary_targets(snap.head, cell) if "PUBLIC" in t.values("visibility")]
        symbols.prefetch_sources(snap.head, public, headers=False)
        for target in public:
            if target.primary_label in reported:
                continue
            shape = (target.kind, target.attrs)
            if shape in checked.setdefault(target.label, []):
                continue  # the same target as in an earlier cell: same verdict
            checked[target.label].append(shape)
            found = _shims(snap, cell, target)
            if found is None:
                continue
            reported.add(target.primary_label)
            yield _hit(snap, cell, target, *found)


def _shims(snap: Snapshot, cell: str, target: BuckTarget) -> tuple[symbols.Definition, tuple[str, ...]] | None:
    """The first shim the target defines (or force-links, for a Python extension) and the chain to it."""
    if "library" in target.kind and not target.kind.startswith(("python", "prebuilt")):
        own = _first_shim(snap, target)
        return None if own is None else (own, (target.label,))
    if "python_extension" not in target.kind:
        return None
    own = _first_shim(snap, target)
    if own is not None:
        return own, (target.label,)
    graph = snap.head.cell(cell)
    closure = linkage.dependency_closure(snap.head, cell, target.label)
    for label in sorted(closure):
        member = graph.targets.get(label)
        if member is None or label == target.label or member.attr("link_whole") is not True:
            continue
        shim = _first_shim(snap, member)
        if shim is not None:
            return shim, linkage.path_to(closure, label)
    return None


def _first_shim(snap: Snapshot, target: BuckTarget) -> symbols.Definition | None:
    found = symbols.target_definitions(snap.head, target, name_prefix=SHIM_PREFIX)
    return found[0] if found else None


def _hit(snap: Snapshot, cell: str, target: BuckTarget, shim: symbols.Definition, chain: tuple[str, ...]) -> Hit:
    text = snap.head.text(target.path) or ""
    line = attribute_line(text, target, "visibility") or target.line
    how = "defines" if len(chain) == 1 else f"force-links `{chain[-1]}` ({' -> '.join(chain)}), which defines"
    return Hit(
        path=target.path,
        line=line,
        message=(
            f"`{target.label}` {how} LibTorch's C shim `{shim.symbol}` ({shim.path}:{shim.line}) and is "
            '`visibility = ["PUBLIC"]`: any package can link it next to LibTorch, and the binary then gets two '
            f"definitions of the `{SHIM_PREFIX}*` functions with different tensor ABIs. Narrow the visibility to its "
            "known consumers and say at the target that it cannot share a binary with LibTorch."
        ),
        key=target.primary_label,
        target=target.label,
        cell=cell,
        offending_text="PUBLIC",
        evidence=(
            Evidence(shim.path, shim.line, f"`{shim.symbol}` has C linkage ({shim.linkage}); LibTorch defines it too"),
            Evidence(target.path, target.line, f"`{target.label}` is defined here"),
        ),
    )


_SHIMS = 'extern "C" int aoti_torch_dtype_float32(void) { return 6; }\n'

CHECK = Check(
    id="shim-public-visibility",
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MINOR,
    title="Target defining LibTorch's aoti_torch_* shims is PUBLIC",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                "backends/aoti/common_shims.cpp": _SHIMS,
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims",\n'
                    '    srcs = ["common_shims.cpp"],\n'
                    "    link_whole = True,\n"
                    '    visibility = ["PUBLIC"],  # expect: shim-public-visibility\n'
                    ")\n"
                ),
                "extension/pybindings/BUCK": (
                    "cxx_python_extension(\n"
                    '    name = "cuda_lib",\n'
                    '    srcs = ["pybindings.cpp"],\n'
                    '    deps = ["//backends/aoti:common_shims"],\n'
                    '    visibility = ["PUBLIC"],  # expect: shim-public-visibility\n'
                    ")\n"
                ),
            }
        ),
    ),
    good=(
        Example(
            head={
                "backends/aoti/common_shims.cpp": _SHIMS,
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims",\n'
                    '    srcs = ["common_shims.cpp"],\n'
                    "    link_whole = True,\n"
                    '    visibility = ["//executorch/backends/...", "//executorch/extension/pybindings/..."],\n'
                    ")\n"
                ),
                "extension/pybindings/BUCK": (
                    "# Defines LibTorch's aoti_torch_* symbols: cannot share a binary with LibTorch.\n"
                    "cxx_python_extension(\n"
                    '    name = "cuda_lib",\n'
                    '    srcs = ["pybindings.cpp"],\n'
                    '    deps = ["//backends/aoti:common_shims"],\n'
                    '    visibility = ["//executorch/extension/pybindings/..."],\n'
                    ")\n"
                    "cxx_python_extension(\n"
                    '    name = "portable_lib",\n'
                    '    srcs = ["pybindings.cpp"],\n'
                    '    visibility = ["PUBLIC"],\n'
                    ")\n"
                ),
            }
        ),
    ),
)
