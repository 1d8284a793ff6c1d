"""The CMake model of a revision under a profile, kept by what its evaluation read.

A pull request that leaves the CMake files and the path listing alone evaluates each
configuration once for base and head together; a later tree whose answers to the evaluation's
reads are the same (only Buck files or unlisted sources changed) gets the stored model.
"""

from __future__ import annotations

import hashlib
import posixpath

from bot.facts.extracted_sources import configs, extracted_sources
from bot.facts.revision import tree_memo
from bot.snapshot import BuildModel
from bot.store import memo
from bot.tree import path_bytes

# Files read by the processes the CMake model computes instead of running (commands/processes.py):
# ExecuTorch's list file and extract_sources.py's config (whose lists also depend on the Buck graph,
# part of the CMake model's key through `extracted_source_lists`).
CMAKE_PROCESS_INPUTS = frozenset({"build_variables.bzl", "cmake_deps.toml"})


def cmake_model(model: BuildModel, profile_name: str, **variables: str):
    """The CMake model under a named profile (built in, or defined in the config), with `-D` overrides."""
    # A repository may define a profile of the same name differently at another revision:
    # the definition is part of the key, not only the name.
    defined = model.config.cmake_defined.get(profile_name)
    definition = (
        None
        if defined is None
        else (
            defined.compiler_id,
            defined.platform,
            defined.cuda,
            tuple(sorted(defined.variables.items())),
            defined.prelude,
        )
    )
    extracted = extracted_source_lists(model)
    lists_key = memo.digest(*extracted) if extracted else ""
    key = (profile_name, definition, tuple(sorted(variables.items())), cmake_inputs(model), lists_key)

    def evaluate():
        # imported on use: Buck-only reviews never pay for it
        from bot.cmake.interpreter import evaluate_cmake_reads
        from bot.cmake.profiles import profile_named

        profile = profile_named(profile_name, model.config.cmake_defined)
        by_config = {lists.config: lists for lists in extracted}
        return evaluate_cmake_reads(
            model.tree, profile.with_variables(**variables) if variables else profile, extracted=by_config
        )

    # Stored by what the evaluation read (the files, paths and globs it asked about), not by the
    # whole tree: a later tree whose answers are the same gets it without evaluating, though
    # files elsewhere (Buck files, sources no glob lists) changed. The review's memo keeps it by tree.
    reused_key = key[:3] + key[4:]  # everything but the tree's CMake inputs, which the reads cover
    return memo.fact(
        "cmake-model", key, lambda: memo.by_reads("cmake-model", reused_key, model.tree, evaluate), persist=False
    )


def extracted_source_lists(model: BuildModel) -> tuple:
    """The source lists extract_sources.py would write for CMake (trees before 2a692c2da9 that
    have one), as `ExtractedSources` values: an input of every CMake model of the revision,
    so they are part of its key (a Buck change that alters a list re-evaluates CMake)."""
    return tuple(extraction.sources for _config, extraction in sorted(extracted_sources(model).items()))


def cmake_reads_buck_graph(model: BuildModel) -> bool:
    """Whether this revision's CMake model depends on its Buck files (extract_sources.py's lists)."""
    return bool(tree_memo(model, ("extracted-sources:configs",), lambda: configs(model.tree.paths())))


def cmake_inputs(model: BuildModel) -> str:
    """A digest of what CMake evaluation reads: every CMake file, the files its modelled processes
    read (commands/processes.py) and the path listing."""

    def compute() -> str:
        digest = hashlib.sha256()
        for path in model.tree.paths():
            digest.update(path_bytes(path) + b"\0")
            if path.endswith(("CMakeLists.txt", ".cmake")) or posixpath.basename(path) in CMAKE_PROCESS_INPUTS:
                digest.update((model.tree.blob_id(path) or "").encode() + b"\0")
        return digest.hexdigest()

    return tree_memo(model, ("cmake-inputs",), compute)
