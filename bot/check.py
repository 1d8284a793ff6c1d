"""What a check is: metadata, examples that are also its tests, and a pure `run` function."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.buck.cells import BUILD_FILE_NAMES
from bot.model import Hit, Severity

if TYPE_CHECKING:  # the snapshot imports the build models, which import nothing of checks
    from bot.snapshot import Snapshot
    from bot.tree import Gitlink


@dataclass(frozen=True, slots=True)
class Example:
    """A small repository before and after a change. `# expect: <id>` marks flagged lines."""

    head: Mapping[str, str | Gitlink]  # a Gitlink: a submodule at that path
    base: Mapping[str, str | Gitlink] | None = None  # None: the same tree without the head's changed files
    fixed: Mapping[str, str] | None = None  # the head files after applying every fix, written by hand

    @property
    def runs_as(self) -> str:
        """ "review" when a base is given (findings new at head only), else "scan" (every file new)."""
        return "review" if self.base is not None else "scan"

    def expected_lines(self, rule: str) -> frozenset[tuple[str, int]]:
        """(path, line) pairs carrying `expect: <rule>` in the head files."""
        marker = re.compile(r"(?:#|//)\s*expect:\s*([a-z0-9,\- ]+)")
        found = set()
        for path, text in self.head.items():
            if not isinstance(text, str):
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                match = marker.search(line)
                if match and rule in {r.strip() for r in match.group(1).split(",")}:
                    found.add((path, number))
        return frozenset(found)


# What a check reads, by file name: a change that touches none of a check's inputs cannot
# change its verdict, so the engine skips it (base and head would agree).
BUCK_FILES = (*BUILD_FILE_NAMES, ".bzl", ".buckconfig")  # build file names: the cell table's
CPP_FILES = (".h", ".hh", ".hpp", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inc")
CMAKE_FILES = ("CMakeLists.txt", ".cmake")


# Tags a check may carry (Check.tags); code that treats a group of rules alike reads the tag.
SMOKE_VERIFIED = "smoke-verified"  # the GPU smoke job proves or disproves its findings on a real GPU
TAGS = frozenset({SMOKE_VERIFIED})


class Share(enum.Enum):
    """Which process runs a check when a review shares its checks with a forked worker
    (bot/parallel/check_split.py); the result is the same wherever it runs, only the time differs.

    Chosen from the per-check costs of cold reviews of new heads with a warm store
    (`bench/check_costs.py` on the commits of bench/cold_pairs.py, quiet machine; medians, CPU
    seconds in a serial run). The worker's share:
    - the header and dependency rules share the header graph, the dependency tables per platform
      and the include scans: dep-private-for-exported-header 2.1 (its verdict over the tree, one
      table per platform), dep-undeclared-header 0.8, dep-exported-used-privately 0.3, dep-unused
      0.1, dep-undeclared-latent (dep-undeclared-header's pass at base);
    - cuda-guard-missing 0.15 and test-missing share the CUDA reasons per cell;
      shim-duplicate-symbol 0.1 and test-configuration-missing the incompatible targets per
      platform, with dep-private-for-exported-header;
    - buck-select-unresolvable 0.35 (select failures per platform) and header-unowned 0.3 share
      nothing costly with the review's share.
    The review keeps the rules on the CMake models (source-parity 0.5 and the gate-*/link-* rules:
    each model is derived once, by whichever asks first), python-import-undeclared 0.9,
    gate-macro-misspelt 0.5 (its macro table), the rules on evaluation failures (they read the
    base's cells too) and the other cheap ones, after the head's cells (0.5-2 s) before the fork.
    Facts asked for by both shares cost about 0.07 s a review. With gate-macro-misspelt in the
    worker too, the worker finished 0.8-1.7 s after the review on every commit (its 4.4-4.9 CPU s
    against the review's 3.0-4.3 s after the fork); kept in the review, the two finish within
    0.75 s of each other. Facts the worker derives reach the review only through the store, which
    is why checks that share a costly fact go together.
    """

    REVIEW = "review"  # the review's own process, which evaluated the head's Buck cells before the fork
    WORKER = "worker"  # the forked worker


def touches(path: str, inputs: tuple[str, ...]) -> bool:
    """Does a changed path belong to one of these input kinds (a suffix or a base name)?"""
    name = path.rsplit("/", 1)[-1]
    return any(name == kind or (kind.startswith(".") and name.endswith(kind)) for kind in inputs)


@dataclass(frozen=True)
class Check:
    """One invariant. `run` is a pure function of a Snapshot; it never reads files or clocks."""

    id: str
    severity: Severity
    title: str
    doc: str | None  # the module's `__doc__` (None only when it has none, which __post_init__ refuses)
    run: Callable[[Snapshot, Any], Iterator[Hit]]
    bad: tuple[Example, ...]
    good: tuple[Example, ...]
    options: Any = None
    tags: frozenset[str] = field(default_factory=frozenset)  # from TAGS
    inputs: tuple[str, ...] | None = None  # None: always run
    fixable: bool = False  # its findings carry fixes (held to it by tests/test_check_fixes.py)
    share: Share = Share.REVIEW  # which process runs it when the review forks a worker (see Share)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", self.id):
            raise ValueError(f"check id {self.id!r} is not kebab-case")
        if not self.bad or not self.good:
            raise ValueError(f"check {self.id} needs bad and good examples")
        if not self.tags <= TAGS:
            raise ValueError(f"check {self.id}: unknown tags {sorted(self.tags - TAGS)}")
        if not self.doc:
            raise ValueError(f"check {self.id} needs its rationale as the module's docstring")

    @property
    def rationale(self) -> str:
        """The module's docstring: why the invariant holds, with its examples."""
        return self.doc or ""

    @property
    def summary(self) -> str:
        """The first paragraph of the rationale."""
        return self.rationale.strip().split("\n\n")[0].replace("\n", " ")
