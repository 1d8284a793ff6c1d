"""What the Buck model records: targets, select() values, frames, evaluation errors, cell graphs.

Frozen values shared by the evaluator, the cache and every check; attribute values are plain
Python data with `select()` kept as a `Select` (its branches), labels normalized to `//pkg:name`.
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

T = TypeVar("T")
_NOT_DERIVED = object()


@functools.cache
def _fields_of(cls: type) -> tuple:
    """The fields a value is built from (its constructor's): what pickling it keeps."""
    return tuple(f for f in dataclasses.fields(cls) if f.init)


@dataclass(frozen=True, slots=True)
class Select:
    """A `select()` kept as a value: (condition, value) branches in source order."""

    def __reduce__(self):  # plain tuples: unpickling a warm cache is the hot path
        return (type(self), tuple(getattr(self, f.name) for f in _fields_of(type(self))))

    branches: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Platform:
    """One target platform a cell builds for: a name and the constraint values it has.

    `constraints` are atomic constraint values (`ovr_config//os:android`,
    `ovr_config//cpu:arm64`, `ovr_config//cuda:has_cuda`), sorted so that the value's repr is
    a stable cache key. Compound config settings such as `ovr_config//os:android-arm64` are
    satisfied through their parts (`setting_constraints`).
    """

    name: str
    constraints: tuple[str, ...]

    def satisfies(self, key: str) -> bool:
        """Whether a select() key or a `compatible_with` entry matches this platform."""
        return setting_constraints(key) <= frozenset(self.constraints)


# `ovr_config//os:<os>-<cpu>` is the config setting "this OS on this CPU".
_COMPOUND_OS_SETTING = re.compile(r"^(?P<cell>[\w-]*//os):(?P<os>[a-z]+)-(?P<cpu>[a-z0-9_]+)$")


@functools.lru_cache(maxsize=4096)
def setting_constraints(key: str) -> frozenset[str]:
    """The atomic constraint values a select() key or compatibility entry stands for."""
    match = _COMPOUND_OS_SETTING.match(key)
    if match is None:
        return frozenset((key,))
    cell = match.group("cell")[: -len("//os")]
    return frozenset((f"{cell}//os:{match.group('os')}", f"{cell}//cpu:{match.group('cpu')}"))


_NO_BRANCH = object()


def chosen_branch(select: Select, platform: Platform) -> Any:
    """The branch buck2 configures `select` to on `platform`: the most specific matching key
    (the one whose constraints include the others'), else `DEFAULT`; None when neither exists
    (buck2 fails to configure such a target; it then holds nothing here)."""
    best: tuple[frozenset[str], Any] | None = None
    default: Any = _NO_BRANCH
    for condition, branch in select.branches:
        if condition == "DEFAULT":
            default = branch
        elif platform.satisfies(condition):
            constraints = setting_constraints(condition)
            if best is None or constraints > best[0]:
                best = (constraints, branch)
    if best is not None:
        return best[1]
    return None if default is _NO_BRANCH else default


def resolve(value: Any, platform: Platform) -> Any:
    """An attribute value as configured on `platform`: every select() replaced by its branch.

    A select() inside a list came from concatenation (`[...] + select(...)`): a list branch is
    spliced in; a select() holding the whole value is replaced by its branch.
    """
    if isinstance(value, Select):
        return resolve(chosen_branch(value, platform), platform)
    if isinstance(value, list):
        resolved: list[Any] = []
        for item in value:
            if isinstance(item, Select):
                branch = resolve(chosen_branch(item, platform), platform)
                if isinstance(branch, list):
                    resolved.extend(branch)
                elif branch is not None:
                    resolved.append(branch)
            else:
                resolved.append(resolve(item, platform))
        return resolved
    if isinstance(value, dict):
        return {key: resolve(item, platform) for key, item in value.items()}
    return value


def attribute_on(target: BuckTarget, name: str, platform: Platform | None) -> Any:
    """A scalar attribute's value on `platform` (`link_style`, `link_whole`); None: as written, a
    select() left as it is. A select() of other than strings is recorded as a one-item list
    holding it (bot/buck/host.py): the value is the branch taken."""
    value = target.attrs.get(name)
    if platform is None:
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], Select):
        return resolve(value[0], platform)
    return resolve(value, platform)


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a macro call stack."""

    def __reduce__(self):  # plain tuples: unpickling a warm cache is the hot path
        return (type(self), tuple(getattr(self, f.name) for f in _fields_of(type(self))))

    path: str
    line: int
    function: str


@dataclass(frozen=True, slots=True)
class BuckTarget:
    """One rule as a cell defines it."""

    def __reduce__(self):  # plain tuples: unpickling a warm cache is the hot path
        return (type(self), tuple(getattr(self, f.name) for f in _fields_of(type(self))))

    cell: str
    package: str
    name: str
    kind: str
    attrs: Mapping[str, Any]
    path: str  # file of the call site: the innermost frame in the repository's own files
    line: int
    end_line: int
    stack: tuple[Frame, ...] = ()
    # Views of the attributes (configured labels, source paths) as computed on first use: every
    # rule asks for the same few of each target, several times per review. Not part of the value:
    # neither compared nor pickled.
    _derived: dict | None = field(default=None, init=False, repr=False, compare=False)

    def derived(self, key: Any, compute: Callable[[], T]) -> T:
        """`compute()`, a pure function of this target's fields named by `key`, computed once."""
        derived = self._derived
        if derived is None:
            derived = {}
            object.__setattr__(self, "_derived", derived)  # frozen: the value itself never changes
        found = derived.get(key, _NOT_DERIVED)
        if found is _NOT_DERIVED:
            found = derived[key] = compute()
        return found

    @property
    def label(self) -> str:
        return f"//{self.package}:{self.name}"

    @property
    def primary_label(self) -> str:
        """The label of the call that defined it: `_static` twins made by the wrapper fold into it."""
        if self.name.endswith("_static") and self.attrs.get("preferred_linkage") == "static":
            return self.label[: -len("_static")]
        return self.label

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def values(self, name: str, platform: Platform | None = None) -> tuple[Any, ...]:
        """The items an attribute holds on `platform` (its select() branches resolved there).

        `platform=None` is the any-configuration view: every item of every branch. Use it only
        where a rule means "in some configuration" (is this target CUDA anywhere, does any
        branch name this file); a fact of one build takes the platform it is built for.
        """
        value = self.attrs.get(name)
        if value is None:
            return ()
        if type(value) is list and all(type(item) is str for item in value):
            return tuple(value)  # the common case, without flatten()'s generators
        if platform is not None:
            value = resolve(value, platform)
        return tuple(flatten(value))

    def labels(self, name: str, platform: Platform | None = None) -> tuple[str, ...]:
        """An attribute's dependency labels on `platform` (None: in any configuration), normalized."""
        if name not in self.attrs:
            return ()
        return self.derived(
            ("labels", name, platform),
            lambda: tuple(
                normalize_label(item, self.package)
                for item in self.values(name, platform)
                if isinstance(item, str) and (":" in item or item.startswith("//"))
            ),
        )


class EvalErrorKind(StrEnum):
    """What sort of failure stopped a package's evaluation: set by the evaluator where it fails."""

    PARSE = "parse"  # a file does not parse
    LIMIT = "limit"  # a budget ran out (steps, memory, depth) or the evaluation was cancelled
    EXTERNAL_DEP = "external-dep"  # an external dep the open-source mapping does not know
    LOAD = "load"  # a load() of a file that does not load
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class EvalError:
    """A package that failed to evaluate in a cell, with where and why."""

    def __reduce__(self):  # plain tuples: unpickling a warm cache is the hot path
        return (type(self), tuple(getattr(self, f.name) for f in _fields_of(type(self))))

    cell: str
    package: str
    message: str
    path: str
    line: int
    kind: EvalErrorKind
    frames: tuple[Frame, ...] = ()  # the traceback, outermost first, host frames removed


@dataclass(frozen=True, slots=True)
class PackageResult:
    """What evaluating one package produced."""

    def __reduce__(self):  # plain tuples: unpickling a warm cache is the hot path
        return (type(self), tuple(getattr(self, f.name) for f in _fields_of(type(self))))

    package: str
    build_file: str
    targets: tuple[BuckTarget, ...]
    error: EvalError | None
    loaded: tuple[str, ...]  # repository files read, the build file included
    cached: bool = False


@dataclass(frozen=True)
class CellGraph:
    """All targets and evaluation errors of one cell at one revision."""

    cell: str
    packages: Mapping[str, PackageResult]
    targets: Mapping[str, BuckTarget] = field(default_factory=dict)
    digest: str = field(default="", compare=False)  # graph_digest(), set where it is cached

    @classmethod
    def from_results(cls, cell: str, results: Iterable[PackageResult]) -> CellGraph:
        packages = {r.package: r for r in results}
        targets = {t.label: t for r in packages.values() for t in r.targets}
        return cls(cell, packages, targets)

    @property
    def errors(self) -> tuple[EvalError, ...]:
        return tuple(r.error for r in self.packages.values() if r.error is not None)


# --------------------------------------------------------------------------------------------
# Attribute values


def flatten(value: Any) -> Iterator[Any]:
    """Items of a list attribute, descending into select() branches and dict values."""
    if value is None:
        return
    if isinstance(value, Select):
        for _condition, branch in value.branches:
            yield from flatten(branch)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, (Select, list, tuple)):
                yield from flatten(item)
            else:
                yield item
    elif isinstance(value, dict):
        yield from flatten(list(value.values()))
    else:
        yield value


_ET_PREFIXES = (
    "fbsource//xplat/executorch/",
    "//xplat/executorch/",
    "fbcode//executorch/",
    "//executorch/",
    "root//",
    "executorch//",
)


@functools.lru_cache(maxsize=65536)
def normalize_label(label: str, package: str) -> str:
    """`:x` -> `//pkg:x`; the internal `//executorch/` prefix and cell names are dropped."""
    if label.startswith(":"):
        return f"//{package}{label}"
    for prefix in _ET_PREFIXES:
        if label.startswith(prefix):
            rest = label[len(prefix) :]
            label = "//" + rest
            break
    if label.startswith("//") and ":" not in label:
        label = label + ":" + posixpath.basename(label)
    return label


_SELECT_TOKEN = re.compile("\x00select:(\\d+)\x00")


def _normalize_value(value: Any, string_selects: list[dict] | tuple = ()) -> Any:
    if isinstance(value, dict):
        if "__select__" in value and len(value) == 1 and isinstance(value["__select__"], dict):
            return Select(tuple((str(k), _normalize_value(v, string_selects)) for k, v in value["__select__"].items()))
        return {k: _normalize_value(v, string_selects) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_value(v, string_selects) for v in value]
    if isinstance(value, str) and "\x00select:" in value:
        return _expand_string_select(value, string_selects)
    return value


def _expand_string_select(text: str, string_selects: list[dict] | tuple) -> Any:
    """A string holding select() tokens as a Select of whole strings (the first token outermost)."""
    match = _SELECT_TOKEN.search(text)
    if match is None or int(match.group(1)) >= len(string_selects):
        return text
    prefix, suffix = text[: match.start()], text[match.end() :]
    branches = string_selects[int(match.group(1))]
    return Select(
        tuple((str(k), _normalize_value(prefix + str(v) + suffix, string_selects)) for k, v in branches.items())
    )
