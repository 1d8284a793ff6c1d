"""A pull request removes an `#else` branch that returned an error or validated input.

`#if M ... #else return Error::NotSupported; #endif` makes builds without M refuse what they
cannot do. Dropping the `#else` while keeping the `#if` turns that refusal into silence: the
request is accepted and ignored, malformed input is no longer rejected, and the builds that
lost the branch are usually the ones nobody tests.

Reported when, in a file the pull request modifies, a base `#else` line is among the removed
lines, its branch returned an error, checked a condition or threw, and the head still has an
`#if` group with the same condition whose `#else`/`#elif` branches no longer do.

Example (bad): removing `#else` / `return Error::NotSupported;` after
`#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)` in `cuda_backend.cpp`.

Use instead: keep an `#else` that rejects what the build cannot honour (or say in the pull
request why the refusal is no longer wanted).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.check import CPP_FILES, Check, Example
from bot.cpp.declarations import is_source_path
from bot.cpp.preprocessor import ConditionalBlock
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot

# What "returned an error or validated input" looks like in ExecuTorch's C++.
_REFUSAL = re.compile(
    r"\breturn\b[^;]*\b(?:Error|NotSupported|NotImplemented|Unsupported|Invalid\w*)\b"
    r"|\bET_CHECK\w*\s*\("
    r"|\bET_(?:UNWRAP|KERNEL_CHECK)\w*\s*\("
    r"|\bthrow\b"
    r"|^\s*#\s*error\b"
    r"|\bstatic_assert\s*\(",
    re.M,
)


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    for change in snap.changes.files:
        if change.status not in ("modified", "renamed") or not is_source_path(change.path):
            continue
        base_path = change.old_path or change.path
        before = snap.base.source_facts(base_path)
        after = snap.head.source_facts(change.path)
        if before is None or after is None:
            continue
        for block in before.conditional_blocks:
            refusal = _refusing_else(block)
            if refusal is None or block.else_line is None:  # a refusing #else has its line
                continue
            if change.removed and not {block.else_line, _statement_line(block, refusal)} & change.removed:
                continue  # the diff did not touch the branch (a diff without line data is trusted)
            head_blocks = [b for b in after.conditional_blocks if _same_gate(b, block)]
            if not head_blocks or any(_refusing_alternative(b) for b in head_blocks):
                continue  # the gate is gone (its code is unconditional now) or still refuses
            survivor = _nearest(head_blocks, block)
            statement = refusal.strip()
            yield Hit(
                path=change.path,
                line=survivor.end_line,
                message=(
                    f"This change removes the `#else` of `#if {block.condition}` that refused with "
                    f"`{statement}`; builds without that condition now go on silently. Keep an `#else` that "
                    "rejects what they cannot do, or explain why the refusal goes."
                ),
                key=f"{block.condition}#else",
                offending_text=statement,
                evidence=(
                    Evidence(base_path, block.else_line, f"base: the `#else` of `#if {block.condition}`"),
                    Evidence(base_path, _statement_line(block, refusal), f"base: `{statement}`"),
                    Evidence(change.path, survivor.line, f"head: `#if {survivor.condition}` without that branch"),
                ),
            )


def _else_text(block: ConditionalBlock) -> str | None:
    for condition, text in zip(block.branch_conditions, block.branch_texts, strict=True):
        if condition == "#else":
            return text
    return None


def _refusing_else(block: ConditionalBlock) -> str | None:
    """The first refusing line of the block's `#else` branch."""
    text = _else_text(block)
    if text is None:
        return None
    for line in text.splitlines():
        if _REFUSAL.search(line):
            return line
    return None


def _refusing_alternative(block: ConditionalBlock) -> bool:
    """Whether any branch after the first (`#elif`, `#else`) still refuses."""
    return any(_REFUSAL.search(text) for text in block.branch_texts[1:])


def _same_gate(head: ConditionalBlock, base: ConditionalBlock) -> bool:
    return re.sub(r"\s+", "", head.condition) == re.sub(r"\s+", "", base.condition)


def _nearest(blocks: list[ConditionalBlock], base: ConditionalBlock) -> ConditionalBlock:
    return min(blocks, key=lambda b: abs(b.line - base.line))


def _statement_line(block: ConditionalBlock, refusal: str) -> int:
    position = block.branch_conditions.index("#else")
    start = block.branch_lines[position]
    for offset, line in enumerate(block.branch_texts[position].splitlines(), start=1):
        if line == refusal:
            return start + offset
    return start


def _backend(alternative: str) -> str:
    return (
        "#include <executorch/runtime/core/error.h>\n"
        "using executorch::runtime::Error;\n"
        "Error init(bool has_cache) {\n"
        "#if defined(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
        "  if (has_cache) {\n"
        "    return Error::Ok;\n"
        "  }\n"
        f"{alternative}"
        "#endif\n"
        "  return Error::Ok;\n"
        "}\n"
    )


_REFUSING = "#else\n  if (has_cache) {\n    return Error::NotSupported;\n  }\n"

CHECK = Check(
    id="gate-else-removed",
    inputs=CPP_FILES,
    severity=Severity.MINOR,
    title="Error-returning #else branch removed",
    doc=__doc__,
    run=run,
    bad=(
        Example(
            base={"backends/cuda/runtime/cuda_backend.cpp": _backend(_REFUSING)},
            head={
                "backends/cuda/runtime/cuda_backend.cpp": _backend("").replace(
                    "#endif\n", "#endif  // expect: gate-else-removed\n"
                )
            },
        ),
    ),
    good=(
        Example(
            base={"backends/cuda/runtime/cuda_backend.cpp": _backend(_REFUSING)},
            head={
                "backends/cuda/runtime/cuda_backend.cpp": _backend(_REFUSING).replace(
                    "return Error::Ok;\n  }\n#else", "return Error::InvalidState;\n  }\n#else"
                )
            },
        ),
    ),
)
