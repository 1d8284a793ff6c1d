"""A Buck Python target imports a repository module that its deps do not bring.

A `python_library`, `python_test` or `python_binary` (and the internal `python_pytest` and
`python_unittest`) is packaged with its own `srcs` and, through
`deps` (and `exported_deps` and `preload_deps`, which buck2 packages alike) transitively, its
dependencies' `srcs`: nothing else. An `import executorch.x.y` (or a
relative import) in one of its sources of a module that lives in this repository therefore
works only when `x/y.py` is listed by the target itself or by a target in its dependency
closure. Otherwise the module is absent from the package and the import fails when the test or
binary runs (ExecuTorch's forward fixes say it: "forward fix for copy_remove pass dependency",
9e37d87071; "add missing buck deps for transform passes in arm_pass_manager", c4ec988d16). Two
cases:

- the module is listed by some target, which is not in the closure: add that target to `deps`;
- the module is listed by no Python target of any cell (a new file never added to `srcs`, as
  `matmul_to_bmm_pass.py`, 2d0446b2f8): list it in the `srcs` of the target that ships it.

A gap is this change's when it wrote the import, or when a target that shipped the file had the
module in its closure before the change (a dep dropped, a module moved elsewhere); a module that
no target lists is reported whatever the change. A gap the change only brings into view (an old
file first shipped by a new target, a package whose `__init__.py` a target now lists) is left
to `pr-check scan`.

Only imports that run when the module is imported count: an import inside a function (a lazy
import, Python's way to use a module its target cannot depend on without a cycle: the Arm
quantizer's in 160d55cc3d), inside a `try:` (an optional dependency with a fallback) or under
`if TYPE_CHECKING:` is not reported; a package's `__init__.py` counts
only where some target lists it (else the package is a namespace). Nor are modules that are not
files of the tree (C++ extensions, generated code, other
repositories), targets that set `base_module` and targets whose closure runs through a label of
this repository that the cell does not define, or through a Meta-internal `fb/` package the open
tree lacks that extends a directory holding the importer (`backends/arm/_passes/fb` for the Arm
passes: the importer's own internal variant may bring the module; `exir/program/fb`, which nearly
every Python target reaches through `//exir:lib`, serves exir and leaves the open closure to
decide) (a package that fails to evaluate is
`buck-eval-error`'s to report), except for a module that no target lists and no failed package
could: no closure brings it, whatever the unknown label is.

Example (bad): `arm_pass_manager.py` (in `//backends/arm/_passes:passes`) imports
`executorch.backends.transforms.remove_permutes_around_elementwise_ops`, owned by
`//backends/transforms:remove_permutes_around_elementwise_ops`, which is not among its deps.

Use instead: add the owning target to the importing target's `deps`.
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, Check, Example
from bot.facts.python_imports import ImportGap, import_gaps, made_by_change
from bot.model import Evidence, Hit, ReviewMode, Severity
from bot.snapshot import BuildModel, Snapshot
from checks.support.callsite import attribute_line


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    gaps = import_gaps(snap.head)
    closures: dict[str, dict[str, frozenset[str] | None]] = {}
    for gap in gaps:
        if not gap.owners or snap.mode is ReviewMode.BASELINE or made_by_change(snap, gap, closures):
            yield _hit(snap.head, gap)


def _hit(model: BuildModel, gap: ImportGap) -> Hit:
    targets, path, found, module_path, owners = gap.targets, gap.path, gap.found, gap.module_path, gap.owners
    first = targets[0]
    shipping = ", ".join(f"`{t.label}`" for t in targets[:3]) + (
        f" and {len(targets) - 3} more" if len(targets) > 3 else ""
    )
    if owners:
        named = ", ".join(f"`{label}`" for label in owners[:3])
        what = f"listed by {named}, which is not among the deps of {shipping}, directly or through them"
        advice = f"Add {'it' if len(owners) == 1 else 'one of them'} to `deps`."
    else:
        what = f"listed in the `srcs` of no Python target, so {shipping} cannot ship it"
        advice = "List it in the `srcs` of the target that ships it (or of the importer)."
    dotted = module_path[: -len(".py")].removesuffix("/__init__").replace("/", ".")
    module = f"executorch.{dotted}"
    return Hit(
        path=path,
        line=found.line,
        message=(
            f"`{path}` imports `{module}`, whose file `{module_path}` is {what}: buck2 packages the "
            f"target without it and the import fails when it runs. {advice}"
        ),
        key=f"{path}|{module_path}",
        target=first.label,
        cell=first.cell,
        offending_text=found.module,
        evidence=(
            Evidence(path, found.line, f"imports `{module}`"),
            *(_deps_evidence(model, target) for target in targets[:3]),
        ),
    )


def _deps_evidence(model: BuildModel, target: BuckTarget) -> Evidence:
    line = attribute_line(model.text(target.path) or "", target, "deps") or target.line
    return Evidence(target.path, line, f"`{target.label}` deps")


_PASSES_BUCK = 'python_library(\n    name = "passes",\n    srcs = ["arm_pass_manager.py"],\n    deps = [{deps}],\n)\n'
_TRANSFORMS_BUCK = (
    'python_library(\n    name = "remove_permutes",\n    srcs = ["remove_permutes.py"],\n)\n'
    'python_library(\n    name = "optional",\n    srcs = ["optional.py"],\n)\n'
)
_MANAGER = (
    "from typing import TYPE_CHECKING\n"
    "from executorch.backends.transforms.remove_permutes import RemovePermutes{marker}\n"
    "try:\n"
    "    from executorch.backends.transforms.optional import Optional\n"
    "except ImportError:\n"
    "    Optional = None\n"
    "if TYPE_CHECKING:\n"
    "    from executorch.backends.transforms import optional\n"
    "from .helpers import helper{helper_marker}\n"
    "from executorch.exir import to_edge{package_marker}\n"
    "from executorch.backends import transforms\n"
    "def later():\n"
    "    from executorch.backends.transforms.optional import Optional  # lazy: not reported\n"
)
_DROPPED = "from executorch.backends.transforms.remove_permutes import RemovePermutes{marker}\n"
_FILES = {
    "backends/transforms/BUCK": _TRANSFORMS_BUCK,
    "backends/transforms/remove_permutes.py": "class RemovePermutes: pass\n",
    "backends/transforms/optional.py": "class Optional: pass\n",
    "backends/arm/_passes/helpers.py": "def helper(): pass\n",
    # A package whose __init__.py a target lists, and one (backends/) that none does: a namespace.
    "exir/BUCK": 'python_library(\n    name = "lib",\n    srcs = ["__init__.py"],\n)\n',
    "exir/__init__.py": "def to_edge(): pass\n",
    "backends/transforms/__init__.py": "",
}

CHECK = Check(
    id="python-import-undeclared",
    inputs=(*BUCK_FILES, ".py"),
    # Minor until it finds the binary or test that breaks: Python deps are resolved when a binary is
    # packaged, so a library's gap is harmless while every binary using it brings the module (three
    # such gaps on the Jul 2023 - May 2024 precision window were never fixed and never broke:
    # tests/real_tree/precision_2023.toml). The corpus's 18 regressions of this class are still found.
    severity=Severity.MINOR,
    title="Python module imported from a target that does not depend on it",
    doc=__doc__,
    run=run,
    bad=(
        # The owners exist but are not deps; the sibling helpers.py is listed by no target.
        Example(
            base={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps=""),
                "backends/arm/_passes/arm_pass_manager.py": "x = 1\n",
            },
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps=""),
                "backends/arm/_passes/arm_pass_manager.py": _MANAGER.format(
                    marker="  # expect: python-import-undeclared",
                    helper_marker="  # expect: python-import-undeclared",
                    package_marker="  # expect: python-import-undeclared",
                ),
            },
        ),
        # A dep dropped: the import did not change, the closure did.
        Example(
            base={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps='"//backends/transforms:remove_permutes"'),
                "backends/arm/_passes/arm_pass_manager.py": _DROPPED.format(marker=""),
            },
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps=""),
                "backends/arm/_passes/arm_pass_manager.py": _DROPPED.format(
                    marker="  # expect: python-import-undeclared"
                ),
            },
        ),
        # A dep names a label no package defines, so the closure is unknown; but helpers.py is
        # listed by no target at all, and no closure could bring it (c1dba0fb6b).
        Example(
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps='"//backends/transforms:gone"'),
                "backends/arm/_passes/arm_pass_manager.py": (
                    "from executorch.backends.transforms.remove_permutes import RemovePermutes\n"
                    "from .helpers import helper  # expect: python-import-undeclared\n"
                ),
            }
        ),
        # A shared library's own internal dep (`//exir/program/fb:logger`, reached through
        # `//exir:lib` by nearly every Python target) extends exir, not the Arm passes: the open
        # closure decides (the corpus's arm_pass_manager, 1bb039ff33).
        Example(
            head={
                **_FILES,
                "exir/BUCK": (
                    'python_library(\n    name = "lib",\n    srcs = ["__init__.py"],\n'
                    '    deps = ["//exir/program/fb:logger"],\n)\n'
                ),
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps='"//exir:lib"'),
                "backends/arm/_passes/arm_pass_manager.py": _DROPPED.format(
                    marker="  # expect: python-import-undeclared"
                ),
            }
        ),
    ),
    good=(
        # An old file that a new target now ships brings an old gap into view: not this change's.
        Example(
            base={
                **_FILES,
                "backends/arm/_passes/arm_pass_manager.py": _DROPPED.format(marker=""),
            },
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps=""),
                "backends/arm/_passes/arm_pass_manager.py": _DROPPED.format(marker=""),
            },
        ),
        # The owner arrives through `preload_deps`, which buck2 packages like any dep.
        Example(
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": (
                    "python_library(\n"
                    '    name = "passes",\n'
                    '    srcs = ["arm_pass_manager.py", "helpers.py"],\n'
                    '    deps = ["//exir:lib"],\n'
                    '    preload_deps = ["//backends/transforms:remove_permutes"],\n'
                    ")\n"
                ),
                "backends/arm/_passes/arm_pass_manager.py": _MANAGER.format(
                    marker="", helper_marker="", package_marker=""
                ),
            }
        ),
        # A dep in a Meta-internal `fb/` package the open tree lacks: what it brings is unknown.
        Example(
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": (
                    "python_library(\n"
                    '    name = "passes",\n'
                    '    srcs = ["arm_pass_manager.py", "helpers.py"],\n'
                    '    deps = ["//backends/arm/fb:internal_passes", "//exir:lib"],\n'
                    ")\n"
                ),
                "backends/arm/_passes/arm_pass_manager.py": _MANAGER.format(
                    marker="", helper_marker="", package_marker=""
                ),
            }
        ),
        # The owner arrives through a dep's deps; helpers.py is listed with the importer.
        Example(
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": (
                    "python_library(\n"
                    '    name = "passes",\n'
                    '    srcs = ["arm_pass_manager.py", "helpers.py"],\n'
                    '    deps = [":transforms"],\n'
                    ")\n"
                    'python_library(\n    name = "transforms",\n    deps = ["//backends/transforms:remove_permutes", "//exir:lib"],\n)\n'
                ),
                "backends/arm/_passes/arm_pass_manager.py": _MANAGER.format(
                    marker="", helper_marker="", package_marker=""
                ),
            }
        ),
        # A dep's package has no build file here (Meta's tree has it, 8806e896ad): the module in
        # that package, listed by no target we see, may be listed by the dep itself.
        Example(
            head={
                **_FILES,
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps='"//examples/models:model_base"'),
                "examples/models/model_base.py": "class EagerModelBase: pass\n",
                "backends/arm/_passes/arm_pass_manager.py": "from executorch.examples.models.model_base import EagerModelBase\n",
            }
        ),
        # What a dep brings is unknown when it lies in a package that fails to evaluate.
        Example(
            head={
                **_FILES,
                "backends/transforms/BUCK": _TRANSFORMS_BUCK + "python_library(\n",
                "backends/arm/_passes/BUCK": _PASSES_BUCK.format(deps='"//backends/transforms:remove_permutes"'),
                "backends/arm/_passes/arm_pass_manager.py": "from executorch.backends.transforms.remove_permutes import R\n",
            }
        ),
    ),
)
