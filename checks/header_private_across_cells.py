"""A dependent includes a header that its owner lists only in `headers`, in xplat or OSS.

In fbcode, `headers` are visible to dependents in practice; in xplat and in OSS Buck they are
private to the target. A header that other targets include must be in `exported_headers`,
or the dependent fails to compile outside fbcode with "file not found".

Example (bad): `slim_tensor.h` in `headers` of `//backends/aoti/slim/core:slimtensor`, included
by a source of `//backends/cuda/runtime:runtime_shims` built in xplat.

Use instead: move the header to `exported_headers`.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.cells import cells_where
from bot.check import BUCK_FILES, CPP_FILES, Check, Example
from bot.facts import graph_indexes, revision, verdicts
from bot.model import Evidence, Hit, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import item_line

CELLS_WITH_PRIVATE_HEADERS = cells_where(headers_visible_to_dependents=False)


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for cell in CELLS_WITH_PRIVATE_HEADERS:
        yield from verdicts.whole_tree(
            snap.head, "header-private", lambda cell=cell: _private_includes(snap.head, cell), cell
        )


def _private_includes(model: BuildModel, cell: str) -> tuple[Hit, ...]:
    graph = model.cell(cell)
    owners = revision.header_owners(model, cell)
    hits = []
    files_of = graph_indexes.own_files(model, cell)
    includes = revision.includes(model, set().union(*files_of.values()) if files_of else ())
    for label, target in sorted(graph.targets.items()):
        for path in sorted(files_of[label]):
            for include, line in includes.get(path, ()):
                owning = owners.get(include, ())
                if not owning or any(owner.label == label for owner, _ in owning):
                    continue
                if any(attribute == "exported_headers" for _owner, attribute in owning):
                    continue
                owner = owning[0][0]
                owner_text = model.text(owner.path) or ""
                header_name = include.rsplit("/", 1)[-1]
                owner_line = item_line(owner_text, owner, header_name) or owner.line
                hits.append(
                    Hit(
                        path=path,
                        line=line,
                        message=(
                            f"`{include}` is included by `{label}`, but its owner `{owner.label}` lists it only in "
                            f"`headers`, which is private to the target in the `{cell}` cell: this include fails "
                            "outside fbcode. Move it to `exported_headers`."
                        ),
                        key=f"{target.primary_label}<-{include}",
                        target=label,
                        cell=cell,
                        offending_text=include,
                        evidence=(
                            Evidence(owner.path, owner_line, f"`{owner.label}` lists `{header_name}` in `headers`"),
                        ),
                    )
                )
    return tuple(hits)


_BUCKCONFIG = "[repositories]\n  root = .\n"


def _core(attribute: str) -> str:
    return (
        "cxx_library(\n"
        '    name = "slimtensor",\n'
        f'    {attribute} = ["slim_tensor.h"],\n'
        '    visibility = ["PUBLIC"],\n'
        ")\n"
    )


_SHIMS = (
    "cxx_library(\n"
    '    name = "shims",\n'
    '    srcs = ["memory.cpp"],\n'
    '    deps = ["//backends/aoti/slim/core:slimtensor"],\n'
    ")\n"
)

CHECK = Check(
    id="header-private-across-cells",
    inputs=BUCK_FILES + CPP_FILES,
    severity=Severity.MAJOR,
    title="Header included across targets but not exported",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "backends/aoti/slim/core/BUCK": _core("headers"),
                "backends/aoti/slim/core/slim_tensor.h": "#pragma once\n",
                "backends/cuda/runtime/BUCK": _SHIMS,
                "backends/cuda/runtime/memory.cpp": (
                    "#include <executorch/backends/aoti/slim/core/slim_tensor.h>  // expect: header-private-across-cells\n"
                ),
            }
        ),
    ),
    good=(
        Example(
            head={
                ".buckconfig": _BUCKCONFIG,
                "backends/aoti/slim/core/BUCK": _core("exported_headers"),
                "backends/aoti/slim/core/slim_tensor.h": "#pragma once\n",
                "backends/cuda/runtime/BUCK": _SHIMS,
                "backends/cuda/runtime/memory.cpp": "#include <executorch/backends/aoti/slim/core/slim_tensor.h>\n",
            }
        ),
    ),
)
