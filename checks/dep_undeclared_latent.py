"""A change edits a macro branch that no caller builds yet, and that branch, once built, has a
header dependency gap.

A macro such as `executorch_pybindings(..., use_cuda = False)` keeps a branch for a parameter
none of its callers passes yet (#24643 as posted: "No target in the repo passes
`use_cuda = True`, so the pybindings.bzl change is never built here"). A review of configured
targets sees nothing of that branch, yet the change edits it, and the first caller to pass the
parameter inherits whatever it gets wrong. When the change edits lines under `if <parameter>`
(a statement or a conditional expression) of a macro whose parameter defaults to `False`, and
no caller passes that parameter, the macro's existing call sites are evaluated once more with
the default set to `True`, and `dep-undeclared-header` is asked about the targets the macro
makes there: a gap that exists only with the branch taken is reported at the edited line.

Sound by construction: only branches the change edits, only parameters no caller passes (a
caller that passes it builds the branch, and the ordinary review sees it), only gaps that
`dep-undeclared-header` finds in that evaluation and not in the tree as it is. With the compiled
tier on, the compiler's preprocessor is asked about the target's own source in that evaluation: a
gap it confirms says so, one it refutes is not posted. Minor: nothing builds the branch yet, so
nothing breaks until a caller takes it.

Example (bad): `cuda_external_deps = [...] if use_cuda else []` added to `executorch_pybindings`,
whose `use_cuda` branch adds `-DEXECUTORCH_PYBINDINGS_CUDA` and `:caller_stream`, while
`pybindings.cpp` includes `cuda_allocator.h` under that define.

Use instead: add the owning target to the branch's deps (`cuda_deps` gets
`//executorch/extension/cuda:cuda_allocator`), and add a caller that passes the parameter, so
that a review of configured targets builds the branch.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.buck.targets import BuckTarget
from bot.check import BUCK_FILES, CPP_FILES, Check, Example, Share
from bot.diff import ChangeSet
from bot.model import Evidence, EvidenceRole, Hit, ReviewMode, Severity
from bot.snapshot import BuildModel, Snapshot
from checks import dep_undeclared_header
from checks.support.compiler_confirmation import confirmed


@dataclass(frozen=True, slots=True)
class _Branch:
    """A parameter-conditioned branch of a macro that the change edited."""

    path: str
    function: str
    parameter: str
    edited_line: int  # the first line of the branch the change added or changed
    default_at: tuple[int, int]  # (line, column) of the parameter's `False` default


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    if snap.mode is ReviewMode.BASELINE:
        return
    for branch in _edited_branches(snap):
        callers = _call_sites(snap.head, branch)
        if not callers or any(_passes(snap.head, site, branch.parameter) for site in callers):
            continue  # nothing to evaluate, or a caller decides the branch itself (reviewed as built)
        flipped = snap.head.with_files({branch.path: _flip(snap.head.text(branch.path) or "", branch.default_at)})
        yield from _latent_gaps(snap, flipped, branch, callers)


def _edited_branches(snap: Snapshot) -> Iterator[_Branch]:
    for change in snap.changes.files:
        if not change.path.endswith(".bzl") or not change.added:
            continue
        text = snap.head.text(change.path)
        if not text:
            continue
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue  # Starlark beyond Python's grammar: no branch is read, nothing is claimed
        for function in module.body:
            if not isinstance(function, ast.FunctionDef):
                continue
            for parameter, default in _false_parameters(function):
                lines = _branch_lines(function, parameter)
                edited = sorted(lines & change.added)
                if edited:
                    yield _Branch(
                        change.path, function.name, parameter, edited[0], (default.lineno, default.col_offset)
                    )


def _false_parameters(function: ast.FunctionDef) -> Iterator[tuple[str, ast.Constant]]:
    arguments = function.args
    positional = arguments.args[len(arguments.args) - len(arguments.defaults) :]
    pairs = [
        *zip(positional, arguments.defaults, strict=True),
        *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
    ]
    for argument, default in pairs:
        if isinstance(default, ast.Constant) and default.value is False:
            yield argument.arg, default


def _branch_lines(function: ast.FunctionDef, parameter: str) -> set[int]:
    """Lines evaluated only when `parameter` is true: bodies of `if <parameter>:` and the lines
    of a conditional expression `... if <parameter> else ...`."""
    found: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.If) and _names(node.test, parameter):
            for statement in node.body:
                found.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
        elif isinstance(node, ast.IfExp) and _names(node.test, parameter):
            found.update(range(node.body.lineno, (node.body.end_lineno or node.body.lineno) + 1))
    return found


def _names(test: ast.expr, parameter: str) -> bool:
    return isinstance(test, ast.Name) and test.id == parameter


def _call_sites(model: BuildModel, branch: _Branch) -> dict[tuple[str, int], list[str]]:
    """(caller path, call line) -> labels of the targets the macro made from that call."""
    found: dict[tuple[str, int], list[str]] = {}
    for cell in CELLS:
        for label, target in model.cell(cell).targets.items():
            site = _caller_frame(target, branch)
            if site is not None:
                found.setdefault(site, []).append(label)
    return found


def _caller_frame(target: BuckTarget, branch: _Branch) -> tuple[str, int] | None:
    for index, frame in enumerate(target.stack):
        if index and frame.path == branch.path and frame.function == branch.function:
            caller = target.stack[index - 1]
            return caller.path, caller.line
    return None


def _passes(model: BuildModel, site: tuple[str, int], parameter: str) -> bool:
    """Whether the call at `site` names the parameter (or forwards keyword arguments: unknown)."""
    lines = (model.text(site[0]) or "").splitlines()[site[1] - 1 :]
    depth, call = 0, []
    for line in lines:
        call.append(line)
        depth += line.count("(") - line.count(")")
        if depth <= 0 and "(" in "".join(call):
            break
    text = "\n".join(call)
    return f"{parameter} =" in text or f"{parameter}=" in text or "**" in text


def _flip(text: str, at: tuple[int, int]) -> str:
    """The macro file with that parameter's `False` default written `True`."""
    lines = text.split("\n")
    row, column = at[0] - 1, at[1]
    lines[row] = lines[row][:column] + "True" + lines[row][column + len("False") :]
    return "\n".join(lines)


def _latent_gaps(
    snap: Snapshot, flipped: BuildModel, branch: _Branch, callers: dict[tuple[str, int], list[str]]
) -> Iterator[Hit]:
    made = {label for labels in callers.values() for label in labels}
    config = snap.config
    as_is = {
        (h.cell, h.target, h.key)
        for h in dep_undeclared_header.CHECK.run(
            Snapshot(snap.head, snap.head, ChangeSet(()), config, mode=ReviewMode.BASELINE), None
        )
    }
    grouped: dict[tuple[str, int, str], list[Hit]] = {}
    for hit in dep_undeclared_header.CHECK.run(
        Snapshot(flipped, flipped, ChangeSet(()), config, mode=ReviewMode.BASELINE), None
    ):
        target = hit.target or ""
        if target not in made and target.removesuffix("_static") not in made:
            continue
        if (hit.cell, hit.target, hit.key) in as_is:
            continue
        grouped.setdefault((hit.path, hit.line, hit.offending_text), []).append(hit)
    for (path, line, _text), hits in sorted(grouped.items()):
        # The branch's own sources, compiled as the flipped evaluation gives them: a gap the
        # compiler refutes is not posted; one it confirms says so.
        kept = list(confirmed(flipped, hits[:1], own=True))
        if not kept:
            continue
        first = kept[0]
        targets = sorted({f"`{h.target}` ({h.cell})" for h in hits})
        sites = sorted(callers)
        yield Hit(
            path=branch.path,
            line=branch.edited_line,
            message=(
                f"This change edits the `{branch.parameter}` branch of `{branch.function}`, which no caller builds "
                f"yet: none of its {len(sites)} call site(s) passes `{branch.parameter} = True`. Evaluated for "
                f"those call sites with it set ({', '.join(targets[:6])}{' and more' if len(targets) > 6 else ''}), "
                f"the branch has a header dependency gap, which the first caller to take it inherits: {first.message}"
            ),
            key=f"{branch.function}({branch.parameter})|{first.key}",
            target=first.target,
            cell=first.cell,
            offending_text=first.offending_text,
            evidence=(
                *(e for e in first.evidence if e.role is EvidenceRole.COMPILER),  # the compiler's words first
                Evidence(path, line, "the include, active once the branch is taken"),
                *(e for e in first.evidence if e.role is not EvidenceRole.COMPILER),
                *(Evidence(p, n, f"calls `{branch.function}` without `{branch.parameter}`") for p, n in sites[:4]),
            ),
        )


_BUCKCONFIG = "[repositories]\n  root = .\n"
_CUDA_BUCK = (
    'cxx_library(name = "cuda_allocator", exported_headers = ["cuda_allocator.h"], visibility = ["PUBLIC"])\n'
    'cxx_library(name = "caller_stream", exported_headers = ["caller_stream.h"], visibility = ["PUBLIC"])\n'
)


def _files(branch_deps: str, edited: str, caller: str = "", marker: str = "") -> dict[str, str]:
    """A pybindings macro whose `use_cuda` branch adds a define and deps, one caller, one source."""
    return {
        ".buckconfig": _BUCKCONFIG,
        "extension/cuda/BUCK": _CUDA_BUCK,
        "extension/cuda/cuda_allocator.h": "#pragma once\n",
        "extension/cuda/caller_stream.h": "#pragma once\n",
        "extension/pybindings/pybindings.bzl": (
            "def executorch_pybindings(name, srcs = [], use_cuda = False):\n"
            f'    cuda_flags = ["-DEXECUTORCH_PYBINDINGS_CUDA"] if use_cuda else []{marker}\n'
            f"    cuda_deps = [{branch_deps}] if use_cuda else []\n"
            f"{edited}"
            "    native.cxx_python_extension(\n"
            "        name = name,\n"
            "        srcs = srcs,\n"
            "        deps = cuda_deps,\n"
            '        external_deps = ["pybind11"] + cuda_external_deps,\n'
            "        preprocessor_flags = cuda_flags,\n"
            "    )\n"
        ),
        "extension/pybindings/BUCK": (
            'load(":pybindings.bzl", "executorch_pybindings")\n'
            f'executorch_pybindings(name = "portable_lib", srcs = ["pybindings.cpp"]{caller})\n'
        ),
        "extension/pybindings/pybindings.cpp": (
            "#ifdef EXECUTORCH_PYBINDINGS_CUDA\n"
            "#include <executorch/extension/cuda/caller_stream.h>\n"
            "#include <executorch/extension/cuda/cuda_allocator.h>\n"
            "#endif\n"
        ),
    }


_BEFORE = "    cuda_external_deps = []\n"
# The examples' harness counts every line of a changed file as edited: the finding is at the
# branch's first line (tests/test_dep_undeclared_latent.py edits one line only).
_EDITED = '    cuda_external_deps = [("cuda", None, "cuda-lazy")] if use_cuda else []\n'
_MARKER = "  # expect: dep-undeclared-latent"
_CALLER_STREAM = '"//extension/cuda:caller_stream"'
_BOTH = '"//extension/cuda:caller_stream", "//extension/cuda:cuda_allocator"'

CHECK = Check(
    id="dep-undeclared-latent",
    share=Share.WORKER,
    inputs=(*BUCK_FILES, *CPP_FILES),
    severity=Severity.MINOR,
    title="An edited macro branch no caller builds yet misses a header's owner",
    doc=__doc__,
    run=run,
    bad=(Example(base=_files(_CALLER_STREAM, _BEFORE), head=_files(_CALLER_STREAM, _EDITED, marker=_MARKER)),),
    good=(
        # The branch declares the owner.
        Example(
            base=_files(_BOTH, _BEFORE),
            head=_files(_BOTH, _EDITED),
        ),
        # A caller builds the branch: dep-undeclared-header reviews it as configured.
        Example(
            base=_files(_CALLER_STREAM, _BEFORE, ", use_cuda = True"),
            head=_files(_CALLER_STREAM, _EDITED, ", use_cuda = True"),
        ),
    ),
)
