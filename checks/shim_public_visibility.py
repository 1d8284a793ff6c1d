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

Each fact is one configuration's, per platform the cell builds for: `visibility`, the sources
and flags that define the shims, the extension's closure and `link_whole`. A target PUBLIC only
in a `select()` branch no platform it builds on takes is not reported; shims compiled only
under `select(has_cuda)` count where CUDA is. A finding on only some of the platforms the
target builds on names them.

Example (bad): `executorch_pybindings(name = "cuda_lib", deps = [".../cuda:cuda_backend"], visibility = ["PUBLIC"])`.

Use instead: `visibility = ["//executorch/extension/pybindings/..."]` and a comment saying that
it defines LibTorch's `aoti_torch_*` symbols.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget, Platform, attribute_on
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import linkage, pairing, symbols, verdicts, xref
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line

SHIM_PREFIX = "aoti_torch_"


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    # A verdict over every public target of the tree: kept with the tree for later reviews.
    yield from verdicts.whole_tree(snap.head, "shim_public_visibility", lambda: tuple(_run(snap)))


def _run(snap: Snapshot) -> Iterator[Hit]:
    model = snap.head
    reported: set[str] = set()
    checked: dict[str, list] = {}  # label -> (kind, attributes, platform) already judged in an earlier cell
    for cell in CELLS:
        # PUBLIC in some configuration: every target PUBLIC on one of the cell's platforms is among them.
        public = [t for t in pairing.cell_primary_targets(model, cell) if "PUBLIC" in t.values("visibility")]
        symbols.prefetch_sources(model, public, headers=False)
        for target in public:
            if target.primary_label in reported or not _may_hold_shims(model, target):
                continue
            platforms = linkage.built_on(model, cell, target.label)
            holding = []
            for platform in platforms:
                shape = (target.kind, target.attrs, platform)
                if shape in checked.setdefault(target.label, []):
                    continue  # the same target on the same platform in an earlier cell: same verdict
                checked[target.label].append(shape)
                if "PUBLIC" not in target.values("visibility", platform):
                    continue
                found = _shims(snap, cell, target, platform)
                if found is not None:
                    holding.append((platform, found))
            if not holding:
                continue
            reported.add(target.primary_label)
            # Holding on every platform the target builds on, it is the finding of any configuration.
            named = () if len(holding) == len(platforms) else tuple(p.name for p, _found in holding if p is not None)
            shim, chain = holding[0][1]
            yield _hit(snap, cell, target, shim, chain, named)


def _may_hold_shims(model: BuildModel, target: BuckTarget) -> bool:
    """Whether the target can define or force-link a shim on some platform: a Python extension,
    or a library with a source (in any configuration) that names one. Cheap: most public
    targets are neither, and need not be asked platform by platform."""
    if "python_extension" in target.kind:
        return True
    if "library" not in target.kind or target.kind.startswith(("python", "prebuilt")):
        return False
    prefix = SHIM_PREFIX.encode()
    return any(prefix in (model.tree.read(path) or b"") for path in xref.source_paths(target))


def _shims(
    snap: Snapshot, cell: str, target: BuckTarget, platform: Platform | None
) -> tuple[symbols.Definition, tuple[str, ...]] | None:
    """The first shim the target defines (or force-links, for a Python extension) on `platform`,
    and the chain to it."""
    if "library" in target.kind and not target.kind.startswith(("python", "prebuilt")):
        own = _first_shim(snap, target, platform)
        return None if own is None else (own, (target.label,))
    if "python_extension" not in target.kind:
        return None
    own = _first_shim(snap, target, platform)
    if own is not None:
        return own, (target.label,)
    graph = snap.head.cell(cell)
    closure = linkage.dependency_closure(snap.head, cell, target.label, platform)
    for label in sorted(closure):
        member = graph.targets.get(label)
        if member is None or label == target.label or attribute_on(member, "link_whole", platform) is not True:
            continue
        shim = _first_shim(snap, member, platform)
        if shim is not None:
            return shim, linkage.path_to(closure, label)
    return None


def _first_shim(snap: Snapshot, target: BuckTarget, platform: Platform | None) -> symbols.Definition | None:
    found = symbols.target_definitions(snap.head, target, name_prefix=SHIM_PREFIX, platform=platform)
    return found[0] if found else None


def _hit(
    snap: Snapshot,
    cell: str,
    target: BuckTarget,
    shim: symbols.Definition,
    chain: tuple[str, ...],
    platforms: tuple[str, ...] = (),
) -> Hit:
    """The finding; `platforms` names where it holds when that is not every platform the target builds on."""
    text = snap.head.text(target.path) or ""
    line = attribute_line(text, target, "visibility") or target.line
    how = "defines" if len(chain) == 1 else f"force-links `{chain[-1]}` ({' -> '.join(chain)}), which defines"
    where = f" on {', '.join(f'`{platform}`' for platform in platforms)} (in `{cell}`)" if platforms else ""
    return Hit(
        path=target.path,
        line=line,
        message=(
            f"`{target.label}` {how} LibTorch's C shim `{shim.symbol}` ({shim.path}:{shim.line}) and is "
            f'`visibility = ["PUBLIC"]`{where}: any package can link it next to LibTorch, and the binary then gets two '
            f"definitions of the `{SHIM_PREFIX}*` functions with different tensor ABIs. Narrow the visibility to its "
            "known consumers and say at the target that it cannot share a binary with LibTorch."
        ),
        key=target.primary_label + (f"|{platforms[0]}" if platforms else ""),
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
        # The shims are compiled only with CUDA (a select() in `srcs`): PUBLIC where they are.
        Example(
            head={
                "backends/aoti/common.cpp": "int common_version(void) { return 1; }\n",
                "backends/aoti/cuda_shims.cpp": _SHIMS,
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims",\n'
                    '    srcs = ["common.cpp"] + select({"ovr_config//cuda:has_cuda": ["cuda_shims.cpp"], "DEFAULT": []}),\n'
                    '    visibility = ["PUBLIC"],  # expect: shim-public-visibility\n'
                    ")\n"
                ),
            }
        ),
    ),
    good=(
        # CUDA-only: the branch that makes it PUBLIC is taken on no platform where it builds.
        Example(
            head={
                "backends/aoti/common_shims.cpp": _SHIMS,
                "backends/aoti/BUCK": (
                    "cxx_library(\n"
                    '    name = "common_shims",\n'
                    '    srcs = ["common_shims.cpp"],\n'
                    '    target_compatible_with = ["ovr_config//cuda:has_cuda"],\n'
                    '    visibility = select({"ovr_config//cuda:has_cuda": ["//executorch/backends/..."], "DEFAULT": ["PUBLIC"]}),\n'
                    ")\n"
                ),
            }
        ),
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
