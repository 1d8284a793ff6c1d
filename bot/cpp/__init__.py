"""The C, C++ and CUDA layer: the preprocessor scan and conditions (preprocessor.py) and the
declarations and assembled source facts (declarations.py), importable from here; span edits
for fixes (edits.py) are imported from their module."""

from bot.cpp.declarations import (
    CUDA_SUFFIXES,
    MAX_SOURCE_BYTES,
    SOURCE_SUFFIXES,
    ArchRequirement,
    Declaration,
    SourceFacts,
    is_source_path,
    source_facts,
    source_facts_cached,
    source_facts_in_tree,
)
from bot.cpp.preprocessor import (
    ConditionalBlock,
    Include,
    MacroDefinition,
    MacroUse,
    conditions_hold,
    defines_from_flags,
    evaluate_condition,
)

__all__ = [
    "CUDA_SUFFIXES",
    "MAX_SOURCE_BYTES",
    "SOURCE_SUFFIXES",
    "ArchRequirement",
    "ConditionalBlock",
    "Declaration",
    "Include",
    "MacroDefinition",
    "MacroUse",
    "SourceFacts",
    "conditions_hold",
    "defines_from_flags",
    "evaluate_condition",
    "is_source_path",
    "source_facts",
    "source_facts_cached",
    "source_facts_in_tree",
]
