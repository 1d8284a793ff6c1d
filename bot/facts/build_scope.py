"""What the open-source Buck build really evaluates and builds, read from the repository's CI.

Internal cells build everything their owners ask for, but open-source buck2 only ever runs the
commands in the repository's own CI scripts (ExecuTorch: `.ci/scripts/unittest-buck2.sh` queries
`//backends/xnnpack/...`, builds `//runtime/core/...`, ...). A package no such command reaches
is never evaluated by OSS buck2, so an OSS-only failure there breaks nobody, and the OSS model
must stay quiet about it. What a command reaches is Buck's own rule: `buck2 query` evaluates the
packages its patterns name; `buck2 build`/`test` evaluate and build the matched targets and,
transitively, every dependency (whose whole package is then evaluated too).

A repository without such scripts gets no scope: everything counts, as before.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.buck.targets import BuckTarget, CellGraph, Platform
from bot.facts import revision
from bot.facts.linkage import reachable
from bot.tree import FileTree

if TYPE_CHECKING:
    from bot.snapshot import BuildModel

# Where CI commands live; shell scripts and workflow files only.
CI_DIRECTORIES = (".ci/", ".github/workflows/", ".github/scripts/")
CI_SUFFIXES = (".sh", ".yml", ".yaml", ".bash")
# A verb given through a shell variable (`for op in build test; do buck2 $op ...`) counts as a
# build: assuming the larger scope can only keep a finding, never hide one.
_COMMAND = re.compile(r"\bbuck2\s+(build|test|run|query|uquery|cquery|targets|install|\$\{?\w+\}?)(?=\s)")
_PATTERN = re.compile(r"(?<![\w@])//[A-Za-z0-9_./\-]*(?::[A-Za-z0-9_.\-+=]*)?")
# Attributes whose labels are build dependencies (what `buck2 build` also builds).
DEPENDENCY_ATTRIBUTES = ("deps", "exported_deps", "runtime_deps", "srcs", "resources")
EVALUATING_VERBS = frozenset({"query", "uquery", "cquery", "targets"})


@dataclass(frozen=True, slots=True)
class TargetPattern:
    """A buck2 target pattern: `//a/...` (recursive), `//a:` (package), `//a:b` (one target)."""

    text: str
    source: str  # file:line of the CI command it came from
    builds: bool  # from build/test/run/install (True) or from a query (False)

    @property
    def package(self) -> str:
        return self.text[2:].split(":", 1)[0].removesuffix("/...").rstrip("/")

    @property
    def recursive(self) -> bool:
        return self.text.split(":", 1)[0].endswith("...")

    def names_package(self, package: str) -> bool:
        own = self.package
        if self.recursive:
            return own == "" or package == own or package.startswith(own + "/")
        return package == own

    def names_target(self, label: str) -> bool:
        package, _, name = label[2:].partition(":")
        if self.recursive or self.text.endswith(":"):
            return self.names_package(package)
        wanted = self.text.split(":", 1)[1] if ":" in self.text else posixpath.basename(self.package)
        return package == self.package and name == wanted


@dataclass(frozen=True, slots=True)
class BuildScope:
    """Packages a cell's real builds evaluate and targets they build; `None` sets mean all."""

    patterns: tuple[TargetPattern, ...]
    evaluated_packages: frozenset[str] | None
    built_targets: frozenset[str] | None

    def evaluates(self, package: str) -> bool:
        return self.evaluated_packages is None or package in self.evaluated_packages

    def builds(self, label: str) -> bool:
        return self.built_targets is None or label in self.built_targets

    def reaches(self, target_or_package: str) -> bool:
        """A `//pkg:name` label is reached when built; a bare `//pkg` when evaluated."""
        if ":" in target_or_package:
            return self.builds(target_or_package)
        return self.evaluates(target_or_package.removeprefix("//"))


EVERYTHING = BuildScope((), None, None)


def ci_target_patterns(tree: FileTree) -> tuple[TargetPattern, ...]:
    """Every target pattern given to buck2 by a CI script or workflow of the tree."""
    patterns: list[TargetPattern] = []
    for path in tree.paths():
        if not path.startswith(CI_DIRECTORIES) or not path.endswith(CI_SUFFIXES):
            continue
        text = tree.read_text(path) or ""
        patterns.extend(_patterns_in(path, text))
    return tuple(patterns)


def _patterns_in(path: str, text: str) -> Iterable[TargetPattern]:
    # One logical command per line after joining continuations (a query string may span lines).
    physical = text.split("\n")
    number = 0
    while number < len(physical):
        start = number
        logical = physical[number]
        while logical.rstrip().endswith("\\") and number + 1 < len(physical):
            number += 1
            logical = logical.rstrip()[:-1] + " " + physical[number]
        number += 1
        for command in _COMMAND.finditer(logical):
            # The command's arguments run to the end of the logical line or to a shell separator.
            arguments = re.split(r"[;|&]|\)\s*$|\bdone\b", logical[command.end() :], maxsplit=1)[0]
            builds = command.group(1) not in EVALUATING_VERBS
            for match in _PATTERN.finditer(arguments):
                yield TargetPattern(match.group(0), f"{path}:{start + 1}", builds)


def build_scope(tree: FileTree, graph: CellGraph, platform: Platform | None = None) -> BuildScope:
    """The scope of the CI's buck2 commands over one cell's graph; EVERYTHING without any.
    With a platform, a build follows deps as configured there (a dep under a select() branch the
    platform does not take is not built); without, every branch's."""
    patterns = ci_target_patterns(tree)
    if not patterns:
        return EVERYTHING
    evaluated = {p for p in graph.packages if any(pattern.names_package(p) for pattern in patterns)}
    building = [pattern for pattern in patterns if pattern.builds]
    # A target can only match a pattern that names its package: test those packages' targets.
    built_packages = {p for p in graph.packages if any(pattern.names_package(p) for pattern in building)}
    roots = [
        label
        for label, target in graph.targets.items()
        if target.package in built_packages and any(pattern.names_target(label) for pattern in building)
    ]
    built = reachable(graph, roots, lambda target: _dependencies(target, platform))
    evaluated.update(label[2:].split(":", 1)[0] for label in built)
    # Buck also loads the package of a dependency it could not resolve: that failure is seen.
    evaluated.update(_unresolved_packages(graph, built))
    return BuildScope(patterns, frozenset(evaluated), frozenset(built))


def _dependencies(target: BuckTarget, platform: Platform | None = None) -> tuple[str, ...]:
    return tuple(
        label for name in DEPENDENCY_ATTRIBUTES for label in target.labels(name, platform) if label.startswith("//")
    )


def _unresolved_packages(graph: CellGraph, built: set[str]) -> set[str]:
    return {label[2:].split(":", 1)[0] for label in built if label not in graph.targets}


def scope_of(model: BuildModel, cell: str, platform: Platform | None = None) -> BuildScope:
    """The build scope of one revision's cell (on `platform`, else in any configuration),
    computed once per review and kept."""
    key = ("build-scope", cell) if platform is None else ("build-scope", cell, platform)
    return revision.tree_memo(model, key, lambda: build_scope(model.tree, model.cell(cell), platform), persist=True)
