"""Link, guard or gate attributes of a CUDA target change and no test changes with them.

The failures these attributes cause (a shim dropped by the linker, a target built for the
wrong platforms, a declaration gated out) show only when a binary links and loads a model,
which no existing test of the touched packages does. A change to them without a test, or at
least a test target, leaves the next regression as invisible as this one.

Example (bad): `link_whole = True` added to a CUDA library, no test file or target changed.

Use instead: add or update a test (for link changes, one that looks the symbols up by name
in a statically linked binary), or state in the PR how the change was verified.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.cells import CELLS
from bot.check import BUCK_FILES, Check, Example, Share
from bot.facts import revision
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot

WATCHED_ATTRIBUTES = (
    "link_whole",
    "supports_python_dlopen",
    "linker_flags",
    "exported_linker_flags",
    "compatible_with",
    "platforms",
    "preprocessor_flags",
    "exported_preprocessor_flags",
)


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    if any(_is_test_path(path) for path in snap.changes.paths):
        return
    seen: set[str] = set()
    for cell in CELLS:
        base_targets = snap.base.cell(cell).targets
        reasons = revision.cuda_reasons(snap.head, cell)
        for label, target in sorted(snap.head.cell(cell).targets.items()):
            if label not in reasons or label in seen or "test" in target.kind:
                continue
            before = base_targets.get(label)
            if before is None:
                continue
            changed = [a for a in WATCHED_ATTRIBUTES if before.attr(a) != target.attr(a)]
            if not changed:
                continue
            seen.add(label)
            yield Hit(
                path=target.path,
                line=target.line,
                end_line=target.end_line,
                message=(
                    f"`{label}` is a CUDA target whose {', '.join(f'`{a}`' for a in changed)} changed, "
                    "and no test file or test target changed with it; these attributes fail only at link or "
                    "load time, which no current test of this package exercises."
                ),
                key=f"{target.primary_label}:{','.join(changed)}",
                target=label,
                cell=cell,
                offending_text=",".join(changed),
                evidence=(Evidence(before.path, before.line, "the target at base"),),
            )


def _is_test_path(path: str) -> bool:
    lowered = path.lower()
    return "/test" in lowered or lowered.startswith("test") or "_test." in lowered or "test_" in lowered


_BASE_TARGET = 'cxx_library(\n    name = "runtime_shims",\n    srcs = ["int4mm.cu"],\n)\n'
_HEAD_TARGET = (
    "cxx_library(  # expect: test-missing\n"
    '    name = "runtime_shims",\n'
    '    srcs = ["int4mm.cu"],\n'
    "    link_whole = True,\n"
    "    supports_python_dlopen = True,\n"
    ")\n"
)

CHECK = Check(
    id="test-missing",
    share=Share.WORKER,
    inputs=BUCK_FILES,
    severity=Severity.INFO,
    title="CUDA link or guard change without a test",
    doc=__doc__,
    run=run,
    bad=(
        Example(base={"backends/cuda/runtime/BUCK": _BASE_TARGET}, head={"backends/cuda/runtime/BUCK": _HEAD_TARGET}),
    ),
    good=(
        Example(
            base={"backends/cuda/runtime/BUCK": _BASE_TARGET},
            head={
                "backends/cuda/runtime/BUCK": _HEAD_TARGET.replace("  # expect: test-missing", ""),
                "backends/cuda/runtime/test/test_link.cpp": "int main() { return 0; }\n",
            },
        ),
    ),
)
