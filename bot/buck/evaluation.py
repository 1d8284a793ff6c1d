"""The Buck model: every package of a revision evaluated per cell with a real Starlark interpreter.

`starlark-pyo3` (starlark-rust, buck2's interpreter) runs the repository's BUCK and .bzl files.
The host (`buck_host.py`) provides buck2's builtins and the cell semantics of design 3.1;
rules are recorded with their evaluated attributes, call site and macro stack. Failures are
data (`EvalError`), bounded in time, call depth and memory.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import hashlib
import os
import pickle
import posixpath
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import starlark as sl

from bot.buck import host as buck_host
from bot.buck.buckconfig import BuckConfig, parse_buckconfig
from bot.tree import FileTree, missing_reads

from bot.buck.cells import CELLS, Cell, cell_named  # noqa: E402 - re-exported: the cell names


@functools.cache
def _fields_of(cls: type) -> tuple:
    return dataclasses.fields(cls)
HOST_VERSION = "buck-host-7"  # bump when evaluation semantics change: invalidates the cache

_DIALECT = sl.Dialect.extended()
_GLOBALS = sl.Globals.extended_by(
    [
        sl.LibraryExtension.CallStack,
        sl.LibraryExtension.StructType,
        sl.LibraryExtension.Partial,
        sl.LibraryExtension.Print,
        sl.LibraryExtension.Json,
        sl.LibraryExtension.Map,
        sl.LibraryExtension.Filter,
        sl.LibraryExtension.RecordType,
        sl.LibraryExtension.EnumType,
        sl.LibraryExtension.Typing,
    ]
)


@dataclass(frozen=True, slots=True)
class Select:
    """A `select()` kept as a value: (condition, value) branches in source order."""

    def __reduce__(self):  # plain tuples: unpickling a warm cache is the hot path
        return (type(self), tuple(getattr(self, f.name) for f in _fields_of(type(self))))

    branches: tuple[tuple[str, Any], ...]


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

    def values(self, name: str) -> tuple[Any, ...]:
        """Every item an attribute can hold, across all select() branches."""
        value = self.attrs.get(name)
        if type(value) is list and all(type(item) is str for item in value):
            return tuple(value)  # the common case, without flatten()'s generators
        return tuple(flatten(value))

    def labels(self, name: str) -> tuple[str, ...]:
        """An attribute's dependency labels, normalized to `//package:name`."""
        return tuple(
            normalize_label(item, self.package)
            for item in self.values(name)
            if isinstance(item, str) and (":" in item or item.startswith("//"))
        )


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
    frames: tuple[Frame, ...] = ()  # the traceback, outermost first, host frames removed

    @property
    def kind(self) -> str:
        """parse | limit | external-dep | load | other: what sort of failure this is."""
        text = self.message.lower()
        if "parse error" in text or "unexpected" in text and "expected" in text:
            return "parse"
        if "exceeded" in text or "allocated more than" in text or "recursed" in text or "stack overflow" in text or "too deep" in text:
            return "limit"
        if "was not found" in text and any("env_interface" in f.path or "external" in f.function for f in self.frames):
            return "external-dep"
        if text.startswith("cannot load"):
            return "load"
        return "other"


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
    def from_results(cls, cell: str, results: Iterable[PackageResult]) -> "CellGraph":
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


def _normalize_value(value: Any, string_selects: "list[dict] | tuple" = ()) -> Any:
    if isinstance(value, dict):
        if "__select__" in value and len(value) == 1 and isinstance(value["__select__"], dict):
            return Select(tuple((str(k), _normalize_value(v, string_selects)) for k, v in value["__select__"].items()))
        return {k: _normalize_value(v, string_selects) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize_value(v, string_selects) for v in value]
    if isinstance(value, str) and "\x00select:" in value:
        return _expand_string_select(value, string_selects)
    return value


def _expand_string_select(text: str, string_selects: "list[dict] | tuple") -> Any:
    """A string holding select() tokens as a Select of whole strings (the first token outermost)."""
    match = _SELECT_TOKEN.search(text)
    if match is None or int(match.group(1)) >= len(string_selects):
        return text
    prefix, suffix = text[: match.start()], text[match.end() :]
    branches = string_selects[int(match.group(1))]
    return Select(
        tuple((str(k), _normalize_value(prefix + str(v) + suffix, string_selects)) for k, v in branches.items())
    )


# --------------------------------------------------------------------------------------------
# Evaluation


class _Budget:
    """Cooperative limits checked by the interpreter: wall time and resident memory."""

    def __init__(self, seconds: float, memory_bytes: int) -> None:
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self.reason = ""
        self._deadline = 0.0
        self._rss_start = 0
        self._calls = 0

    def start(self) -> None:
        self.reason = ""
        self._deadline = time.monotonic() + self.seconds
        self._rss_start = _resident_bytes()

    def cancelled(self) -> bool:
        self._calls += 1
        if time.monotonic() > self._deadline:
            self.reason = f"evaluation exceeded {self.seconds:g} s"
            return True
        if _resident_bytes() - self._rss_start > self.memory_bytes:
            self.reason = f"evaluation allocated more than {self.memory_bytes // (1 << 20)} MiB"
            return True
        return False


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


@dataclass
class _Context:
    """The package being evaluated: what `glob`, `package_name` and the recorder see."""

    package: str = ""
    records: list = field(default_factory=list)


# Cell names that mean the buck2 prelude (`config` and `ovr_config` are aliases of it).
_PRELUDE_ALIASES = ("prelude", "config", "ovr_config")
_REPO_FILE = "@pr_check_file//"  # how host-made modules load a repository file by path
_FRAME = re.compile(r"^\s*\* (.+?):(\d+), in (.+)$", re.M)
_LOCATION = re.compile(r"--> (.+?):(\d+):\d+")


class CellEvaluator:
    """Evaluates packages of one revision in one cell; loaded .bzl modules are shared."""

    def __init__(
        self,
        tree: FileTree,
        cell: str,
        config: BuckConfig | None = None,
        *,
        seconds_per_package: float = 10.0,
        memory_per_package: int = 512 << 20,
        max_call_depth: int = 250,
    ) -> None:
        self.rules: Cell = cell_named(cell)
        self.tree = tree
        self.cell = cell
        self.config = config if config is not None else load_buckconfig(tree)
        self._budget = _Budget(seconds_per_package, memory_per_package)
        self._options = sl.EvalOptions(check_cancelled=self._budget.cancelled, max_callstack_size=max_call_depth)
        self._context = _Context()
        self._modules: dict[str, Any] = {}  # module key -> FrozenModule or Exception
        self._module_files: dict[str, frozenset[str]] = {}  # module key -> repo files it read
        self._offsets: dict[str, int] = {}  # repo path -> lines prepended for the host load
        self._string_selects: list[dict] = []  # token number -> branches (modules outlive packages)
        self._host = self._build_host()

    # -- host ------------------------------------------------------------------------------
    def _build_host(self) -> Any:
        module = sl.Module()
        module.add_callable("__record", self._record)
        module.add_callable("__glob", self._glob)
        module.add_callable("__package_name", lambda: self._context.package)
        module.add_callable("__read_config", self._read_config)
        module.add_callable("__select_string", self._select_string)
        module.add_callable("__is_select_token", lambda text: _SELECT_TOKEN.fullmatch(text) is not None)
        ast = sl.parse(buck_host.HOST_MODULE, buck_host.host_source(self.rules), _DIALECT)
        sl.eval(module, ast, _GLOBALS)
        return module.freeze()

    def _record(self, kind: str, stack: str, kwargs: dict) -> None:
        self._context.records.append((kind, stack, kwargs))

    def _select_string(self, branches: dict) -> str:
        """A token standing for a select() of strings; it concatenates as buck2's select does."""
        self._string_selects.append(dict(branches))
        return f"\x00select:{len(self._string_selects) - 1}\x00"

    def _read_config(self, section: str, key: str, default: Any = None) -> Any:
        if not self.rules.reads_buckconfig:
            return default
        return self.config.get(section, key, default)

    def _glob(self, include: list, exclude: list) -> list:
        package = self._context.package
        prefix = f"{package}/" if package else ""
        self._loaded_files.add(prefix or "/")  # the listing is an input: see listing_digest
        candidates = [p[len(prefix) :] for p in self.tree.paths() if p.startswith(prefix)]
        matched = [c for c in candidates if any(_glob_match(c, pattern) for pattern in include)]
        return sorted(c for c in matched if not any(_glob_match(c, pattern) for pattern in exclude or ()))

    # -- loading -----------------------------------------------------------------------------
    def _source_with_host(self, path: str, text: str, names: tuple[str, ...]) -> tuple[str, int]:
        """Prefix a file with the host load; on line 1 when the language allows it."""
        imports = ", ".join(f"{n} = {buck_host.HOST_RENAMES.get(n, n)!r}" for n in names)
        load = f"load({buck_host.HOST_MODULE!r}, {imports})"
        first, _, rest = text.partition("\n")
        if re.match(r"\s*(def|if|for|while|@)\b", first) or first.rstrip().endswith("\\"):
            return f"{load}\n{text}", 1
        return f"{load}; {first}\n{rest}", 0

    def _parse_repo_file(self, path: str, names: tuple[str, ...]) -> tuple[Any, str]:
        text = self.tree.read_text(path)
        if text is None:
            raise FileNotFoundError(path)
        names = names + buck_host.extra_globals(text)
        source, offset = self._source_with_host(path, text, names)
        self._offsets[path] = offset
        return sl.parse(path, source, _DIALECT), text

    def _loader_for(self, importer: str, importer_text: str, ast: Any) -> sl.FileLoader:
        requested = {load.module_id: dict(load.symbols) for load in ast.loads()}

        def load(module_id: str) -> Any:
            if module_id == buck_host.HOST_MODULE:
                return self._host
            return self._load_module(importer, importer_text, module_id, requested.get(module_id, {}))

        return sl.FileLoader(load)

    def _load_module(self, importer: str, importer_text: str, module_id: str, symbols: dict[str, str]) -> Any:
        kind, location = self._resolve_load(importer, module_id)
        if kind == "file":
            key = f"file:{location}"
        elif kind == "stub":
            key = f"stub:{location}:{sorted(symbols.items())}:{hashlib.sha1(importer_text.encode()).hexdigest()}"
        else:
            key = f"{kind}:{location}:{sorted(symbols.items())}"
        if key not in self._modules:
            self._modules[key] = self._evaluate_module(kind, location, symbols, importer_text)
        result = self._modules[key]
        files = self._module_files.get(key, frozenset())
        self._loaded_files.update(files)
        if isinstance(result, Exception):
            raise result
        return result

    def _evaluate_module(self, kind: str, location: str, symbols: dict[str, str], importer_text: str) -> Any:
        key_files: set[str] = set()
        try:
            module = sl.Module()
            if kind == "file":
                outer = self._loaded_files
                self._loaded_files = key_files
                key_files.add(location)
                try:
                    ast, text = self._parse_repo_file(location, buck_host.COMMON_GLOBALS)
                    sl.eval_with(self._options, module, ast, _GLOBALS, self._loader_for(location, text, ast))
                finally:
                    self._loaded_files = outer
                    self._module_files[f"file:{location}"] = frozenset(key_files)
            else:
                if kind in ("builtin", "prelude"):
                    source = buck_host.reexport_source(symbols)
                elif kind == "runtime":
                    source = self._runtime_source(symbols, importer_text)
                else:
                    source = buck_host.stub_source(symbols, importer_text)
                name = f"@pr_check//:{kind}/{location}"
                ast = sl.parse(name, source, _DIALECT)
                sl.eval_with(self._options, module, ast, _GLOBALS, self._loader_for(name, importer_text, ast))
            return module.freeze()
        except FileNotFoundError as missing:
            return _LoadFailure(f"cannot load {location}: file {missing.args[0]} does not exist")
        except sl.StarlarkError as error:
            return _LoadFailure(str(error))

    def _runtime_source(self, symbols: dict[str, str], importer_text: str) -> str:
        """Internal cells: the recording `runtime`, other names from the open-source wrapper."""
        own = ("runtime", "is_xplat", "get_aten_mode_options")  # the cell's, not the OSS wrapper's
        lines = [f"load({buck_host.HOST_MODULE!r}, " + ", ".join(f"_{n} = {n!r}" for n in own) + ")"]
        others = sorted({remote for remote in symbols.values() if remote not in own})
        wrapper = "shim_et/" + buck_host.RUNTIME_WRAPPER
        if others and self.tree.exists(wrapper):
            listed = ", ".join(f"{name} = {name!r}" for name in others)
            lines.append(f"load('{_REPO_FILE}{wrapper}', {listed})")
        elif others:
            lines.append(buck_host.stub_source({n: n for n in others}, importer_text))
        lines += [f"{n} = _{n}" for n in own]
        return "\n".join(lines) + "\n"

    def _resolve_load(self, importer: str, module_id: str) -> tuple[str, str]:
        """Where a `load()` points: ("file", repo path) | ("builtin"|"runtime"|"stub", id)."""
        if module_id.startswith(_REPO_FILE):
            return "file", module_id[len(_REPO_FILE) :]
        importer_dir = posixpath.dirname(importer)
        importer_cell_root = self._cell_root_of(importer)
        if module_id.startswith("@"):
            cell_name, _, rest = module_id[1:].partition("//")
            cell_relative = (rest.replace(":", "/", 1) if ":" in rest else rest).lstrip("/")
            if self.rules.records_internal_macros:
                return self._resolve_internal(cell_name, cell_relative)
            base_root = self.config.cell_root(cell_name)
            if base_root is None:
                raise _load_error(f"cell {cell_name!r} is not declared in .buckconfig")
            path = posixpath.normpath(posixpath.join(base_root, cell_relative)).lstrip("./")
            return self._file_or_shim(path, cell_name, cell_relative)
        if module_id.startswith("//"):
            rest = module_id[2:]
            relative = (rest.replace(":", "/", 1) if ":" in rest else rest).lstrip("/")
            if self.rules.repository_under_executorch and relative.startswith("executorch/"):
                relative = relative[len("executorch/") :]
            path = posixpath.normpath(posixpath.join(importer_cell_root, relative)).lstrip("./")
            return self._file_or_shim(path, "", relative)
        relative = module_id[1:] if module_id.startswith(":") else module_id
        return self._file_or_shim(posixpath.normpath(posixpath.join(importer_dir, relative)), "", relative)

    def _resolve_internal(self, cell_name: str, cell_relative: str) -> tuple[str, str]:
        """Internal cells: Meta's macros are not in the repository; record them as given."""
        if cell_name in ("fbsource", "fbcode") and cell_relative == buck_host.RUNTIME_WRAPPER:
            return "runtime", cell_relative
        if cell_name in _PRELUDE_ALIASES:
            if cell_relative in buck_host.PRELUDE_BUILTINS:
                return "prelude", cell_relative
            return "stub", f"{cell_name}//{cell_relative}"
        if cell_relative in buck_host.SHIM_BUILTINS:
            return "builtin", cell_relative
        if cell_name == "fbsource" and cell_relative.startswith("xplat/executorch/"):
            # The open-source copies of ExecuTorch's own macros live under shim_et/; the rest
            # of fbsource//xplat/executorch is the repository itself.
            for candidate in ("shim_et/" + cell_relative, cell_relative[len("xplat/executorch/") :]):
                if self.tree.exists(candidate):
                    return "file", candidate
        if cell_name == "fbcode" and cell_relative.startswith("executorch/"):
            candidate = cell_relative[len("executorch/") :]
            if self.tree.exists(candidate):
                return "file", candidate
        return "stub", f"{cell_name}//{cell_relative}"

    def _file_or_shim(self, path: str, cell_name: str, cell_relative: str) -> tuple[str, str]:
        if self.tree.exists(path):
            return "file", path
        inside = self._inside_gitlink(path)
        if inside is not None:
            # A submodule (the pinned shim/, the buck2 prelude) is not part of a git tree
            # listing unless mounted: its library files have built-in equivalents.
            gitlink, relative = inside
            if self._cell_named_at(gitlink) in _PRELUDE_ALIASES:
                return ("prelude", relative) if relative in buck_host.PRELUDE_BUILTINS else ("stub", path)
            if relative in buck_host.SHIM_BUILTINS:
                return "builtin", relative
            if relative in buck_host.OSS_SHIM_BUILTINS and not self.rules.records_internal_macros:
                return "builtin", relative
            return "stub", path
        if self.rules.records_internal_macros:
            return "stub", f"{cell_name}//{cell_relative}"
        raise _load_error(f"cannot load {path}: no such file in the repository")

    def _cell_named_at(self, root: str) -> str:
        """The `.buckconfig` cell whose root is `root` ("" when none)."""
        return next((name for name, path in self.config.cells.items() if path.strip("/").removeprefix("./") == root), "")

    def _inside_gitlink(self, path: str) -> tuple[str, str] | None:
        """(submodule path, path inside it) when `path`, symlinks followed, is inside a submodule."""
        resolved = path
        parts = path.split("/")
        for i in range(len(parts), 0, -1):
            prefix = "/".join(parts[:i])
            target = self.tree.read_link(prefix)
            if target is not None:
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(prefix), target, *parts[i:]))
                break
        for gitlink in self.tree.gitlinks():
            if resolved.startswith(gitlink + "/"):
                return gitlink, resolved[len(gitlink) + 1 :]
        return None

    def _cell_root_of(self, path: str) -> str:
        best = ""
        for root in self.config.cells.values():
            root = "" if root in (".", "./") else root.strip("/")
            if root and (path == root or path.startswith(root + "/")) and len(root) > len(best):
                best = root
        return best

    # -- packages ----------------------------------------------------------------------------
    def evaluate_package(self, package: str, build_file: str) -> PackageResult:
        """Evaluate one build file; errors and limits come back as an EvalError."""
        self._context = _Context(package=package)
        self._loaded_files: set[str] = {build_file}
        self._budget.start()
        error = None
        try:
            ast, text = self._parse_repo_file(build_file, buck_host.COMMON_GLOBALS + buck_host.BUILD_FILE_GLOBALS + buck_host.NATIVE_RULES)
            sl.eval_with(self._options, sl.Module(), ast, _GLOBALS, self._loader_for(build_file, text, ast))
        except sl.StarlarkError as failure:
            error = self._eval_error(package, build_file, str(failure))
        except _LoadFailure as failure:
            error = self._eval_error(package, build_file, str(failure))
        except FileNotFoundError:
            error = EvalError(self.cell, package, f"{build_file}: blob missing from the object store", build_file, 1)
        except RecursionError:
            error = EvalError(self.cell, package, "evaluation recursed too deeply", build_file, 1)
        except BaseException as failure:  # starlark-rust reports some allocation failures as panics
            if type(failure).__name__ != "PanicException":
                raise
            error = EvalError(
                self.cell, package, f"evaluation exceeded the interpreter's allocation limit ({failure})", build_file, 1
            )
        targets = () if error else tuple(self._targets(package))
        return PackageResult(package, build_file, targets, error, tuple(sorted(self._loaded_files)))

    def _eval_error(self, package: str, build_file: str, text: str) -> EvalError:
        text = self._unshift(text)
        if self._budget.reason and "cancelled" in text.lower():
            text = f"{self._budget.reason}: {text}"
        locations = _LOCATION.findall(text)
        repo_locations = [(p, int(n)) for p, n in locations if not p.startswith("@pr_check")]
        path, line = repo_locations[-1] if repo_locations else (build_file, 1)
        first_line = next((l for l in text.splitlines() if l.strip().startswith("error:")), text.strip().splitlines()[0] if text.strip() else "evaluation failed")
        message = first_line.strip()
        while True:  # nested load failures repeat their wrappers: keep the innermost message
            stripped = re.sub(r"^(?:error:|_LoadFailure:|StarlarkError:)\s*", "", message)
            if stripped == message:
                break
            message = stripped
        if message.startswith("Traceback"):
            message = next((l.strip() for l in text.splitlines() if l.strip().startswith("error:") and "LoadFailure" not in l), message)
            message = message.removeprefix("error:").strip()
        if "cancelled" in message.lower() and self._budget.reason:
            message = self._budget.reason
        if "callstack" in message.lower() or "call stack" in message.lower():
            message = f"evaluation recursed too deeply ({message})"
        frames = tuple(
            Frame(p, int(n), function) for p, n, function in _FRAME.findall(text) if not p.startswith("@pr_check")
        )
        return EvalError(self.cell, package, message, path, line, frames)

    def _unshift(self, text: str) -> str:
        def fix(match: re.Match[str]) -> str:
            path, line = match.group(1), int(match.group(2))
            return match.group(0).replace(f"{path}:{line}", f"{path}:{max(1, line - self._offsets.get(path, 0))}", 1)

        return re.sub(r"(?:--> |\* )([^\s:]+):(\d+)", fix, text)

    def _targets(self, package: str) -> Iterator[BuckTarget]:
        for kind, stack_text, kwargs in self._context.records:
            name = kwargs.get("name")
            if not isinstance(name, str):
                continue
            frames = tuple(
                Frame(path, max(1, int(line) - self._offsets.get(path, 0)), function)
                for path, line, function in _FRAME.findall(stack_text)
                if not path.startswith("@pr_check")
            )
            site = _call_site(frames, self._macro_roots())
            path, line = (site.path, site.line) if site else ("", 1)
            yield BuckTarget(
                cell=self.cell,
                package=package,
                name=name,
                kind=kind.split(".")[-1],
                attrs={k: _normalize_value(v, self._string_selects) for k, v in kwargs.items()},
                path=path,
                line=line,
                end_line=_call_end_line(self.tree.read_text(path) or "", line) if path else line,
                stack=frames,
            )

    def _macro_roots(self) -> tuple[str, ...]:
        roots = [r for r in self.config.cells.values() if r not in (".", "./", "")]
        return tuple(r.strip("/").removeprefix("./") + "/" for r in roots)


class _LoadFailure(Exception):
    """A module that failed to load; raised again for every importer."""


def _load_error(message: str) -> _LoadFailure:
    return _LoadFailure(message)


def _call_site(frames: tuple[Frame, ...], macro_roots: tuple[str, ...]) -> Frame | None:
    """The innermost frame in the repository's own files (not in a macro library cell)."""
    for frame in reversed(frames):
        if not frame.path.startswith(macro_roots):
            return frame
    return frames[-1] if frames else None


def _call_end_line(text: str, line: int) -> int:
    """The line where the call starting on `line` closes its parenthesis."""
    lines = text.splitlines()
    depth, started, quote = 0, False, ""
    for number in range(line - 1, len(lines)):
        row = lines[number]
        i = 0
        while i < len(row):
            char = row[i]
            if quote:
                if char == "\\":
                    i += 1
                elif row.startswith(quote, i):
                    i += len(quote) - 1
                    quote = ""
            elif char == "#":
                break
            elif row.startswith('"""', i) or row.startswith("'''", i):
                quote = row[i : i + 3]
                i += 2
            elif char in "\"'":
                quote = char
            elif char in "([{":
                depth += 1
                started = True
            elif char in ")]}":
                depth -= 1
                if started and depth == 0:
                    return number + 1
            i += 1
        if quote in ('"', "'"):
            quote = ""
    return line


def _glob_match(path: str, pattern: str) -> bool:
    """buck glob semantics: `*` stays within a directory, `**` spans directories."""
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            regex += ".*"
            i += 2
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    return re.fullmatch(regex, path) is not None


# --------------------------------------------------------------------------------------------
# Whole cells, with the content cache


def load_buckconfig(tree: FileTree) -> BuckConfig:
    text = tree.read_text(".buckconfig")
    return parse_buckconfig(text) if text else BuckConfig(cells={"root": "."})


def build_file_names(config: BuckConfig, cell: str) -> tuple[str, ...]:
    """The build file names a cell reads, in order of preference (its own, or `.buckconfig`'s)."""
    return cell_named(cell).build_file_names or config.build_file_names


def find_packages(tree: FileTree, config: BuckConfig, cell: str = "oss") -> dict[str, str]:
    """package -> build file, for the root cell (other cells' directories excluded)."""
    order = build_file_names(config, cell)
    names = set(order)
    other_roots = tuple(
        r.strip("/") + "/" for r in config.cells.values() if r not in (".", "./", "") and not r.startswith("..")
    )
    skip_roots = other_roots + tuple(g + "/" for g in (*tree.gitlinks(), *tree.mounts))
    packages: dict[str, str] = {}
    for path in tree.paths():
        base = posixpath.basename(path)
        if base not in names or path.startswith(skip_roots):
            continue
        entry = tree.entry(path)
        if entry is None or entry.is_gitlink:
            continue
        package = posixpath.dirname(path)
        # buildfile names are tried in order: the first present wins.
        current = packages.get(package)
        if current is None or order.index(base) < order.index(posixpath.basename(current)):
            packages[package] = path
    return dict(sorted(packages.items()))


def listing_digest(tree: FileTree, directory: str) -> str:
    """A digest of the paths under `directory` (`"/"` for the root): what glob() results depend on."""
    prefix = "" if directory == "/" else directory
    digest = hashlib.sha1()
    for path in tree.paths():
        if path.startswith(prefix):
            digest.update(path.encode() + b"\0")
    return digest.hexdigest()


def dependency_version(tree: FileTree, path: str) -> str | None:
    """The version of one input of an evaluation: a file's blob id, or a directory listing's digest."""
    return listing_digest(tree, path) if path.endswith("/") else tree.blob_id(path)


def _as_cached(graph: "CellGraph") -> "CellGraph":
    """The same graph, its packages marked as coming from the cache."""
    packages = {
        k: r if r.cached else PackageResult(r.package, r.build_file, r.targets, r.error, r.loaded, cached=True)
        for k, r in graph.packages.items()
    }
    return CellGraph(graph.cell, packages, graph.targets, graph.digest)


def graph_digest(graph: "CellGraph") -> str:
    """A digest of what a cell defines (targets and errors per package): equal graphs of two
    revisions share every fact derived from them."""
    if graph.digest:
        return graph.digest
    content = [(p, r.build_file, r.targets, r.error) for p, r in graph.packages.items()]
    return hashlib.sha256(pickle.dumps((graph.cell, content), protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


class EvaluationCache:
    """Evaluations in the fact store (bot/facts/cache.py): per package, keyed by cell and the
    blob ids of every file read, and per whole cell, keyed by every build input. It also
    carries the review's fact cache, so one object stands for "the caches of this review"."""

    def __init__(self, directory: Path | None, bound: int | None = None) -> None:
        from bot.facts.cache import DEFAULT_BOUND, DiskStore, FactCache, current

        self.directory = directory
        self.store = DiskStore.at(directory, bound or DEFAULT_BOUND) if directory is not None else None
        # The review's memo over the store; without a directory, the memo of the review under way.
        self.facts = FactCache(self.store) if self.store is not None else current()

    def _package_key(self, cell: str, package: str, build_blob: str, config_blob: str) -> str:
        return f"buck-package\0{HOST_VERSION}\0{cell}\0{package}\0{build_blob}\0{config_blob}"

    def get(self, tree: FileTree, cell: str, package: str, build_file: str, config_blob: str) -> PackageResult | None:
        if self.store is None:
            return None
        entries = self.store.get(self._package_key(cell, package, tree.blob_id(build_file) or "", config_blob))
        if not isinstance(entries, list):
            return None
        for dependencies, result in entries:
            if all(dependency_version(tree, path) == blob for path, blob in dependencies):
                return PackageResult(result.package, result.build_file, result.targets, result.error, result.loaded, cached=True)
        return None

    def put(self, tree: FileTree, cell: str, result: PackageResult, config_blob: str) -> None:
        if self.store is None:
            return
        key = self._package_key(cell, result.package, tree.blob_id(result.build_file) or "", config_blob)
        dependencies = tuple((path, dependency_version(tree, path)) for path in result.loaded)
        entries = self.store.get(key)
        entries = entries if isinstance(entries, list) else []
        entries = [e for e in entries if e[0] != dependencies][-7:] + [(dependencies, result)]
        self.store.put(key, entries)

    def build_inputs(self, tree: FileTree) -> str:
        """A digest of what evaluating any cell reads: every build file, .bzl and the listing."""

        def compute() -> str:
            digest = hashlib.sha256()
            for path in tree.paths():
                digest.update(path.encode() + b"\0")  # glob() results depend on the listing
                if path.endswith((".bzl", "BUCK", "TARGETS", ".buckconfig")) or tree.entry(path) is None:
                    digest.update((tree.blob_id(path) or "").encode())
            for path in tree.symlinks():
                digest.update(f"{path}->{tree.read_link(path)}".encode())
            return digest.hexdigest()

        return self.facts.fact("buck-build-inputs", tree.digest(), compute)

    def cell(self, tree: FileTree, cell: str, evaluate: Callable[[], "CellGraph"]) -> "CellGraph":
        """The whole cell: from this review, else the store, else `evaluate()` (then stored)."""

        fresh: list[CellGraph] = []

        def compute() -> CellGraph:
            graph = evaluate()
            fresh.append(CellGraph(graph.cell, graph.packages, graph.targets, graph_digest(graph)))
            return _as_cached(fresh[0])  # what every later use sees: the review that evaluated it reports it

        graph = self.facts.fact("buck-cell", (HOST_VERSION, cell, self.build_inputs(tree)), compute, persist=True)
        return fresh[0] if fresh else graph


def evaluate_cell(
    tree: FileTree,
    cell: str,
    *,
    cache: EvaluationCache | None = None,
    packages: Mapping[str, str] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    **limits: Any,
) -> CellGraph:
    """Evaluate every package (or the given ones) of `tree` in `cell`."""
    cache = cache or EvaluationCache(None)
    if packages is None and not limits:
        return cache.cell(tree, cell, lambda: _evaluate_packages(tree, cell, cache, None, progress, limits))
    return _evaluate_packages(tree, cell, cache, packages, progress, limits)


def _evaluate_packages(tree, cell, cache, packages, progress, limits) -> CellGraph:
    config = load_buckconfig(tree)
    config_blob = tree.blob_id(".buckconfig") or ""
    wanted = packages if packages is not None else find_packages(tree, config, cell)
    evaluator: CellEvaluator | None = None
    results = []
    uncached = []
    for package, build_file in wanted.items():
        hit = cache.get(tree, cell, package, build_file, config_blob)
        if hit is not None:
            results.append(hit)
        else:
            uncached.append((package, build_file))
    if uncached:
        tree.prefetch(p for p in tree.paths() if p.endswith((".bzl", "BUCK", "TARGETS")))
    for index, (package, build_file) in enumerate(uncached):
        if evaluator is None:
            evaluator = CellEvaluator(tree, cell, config, **limits)
        if progress is not None:
            progress(cell, index, len(uncached))
        missing_before = missing_reads()
        result = evaluator.evaluate_package(package, build_file)
        if missing_reads() == missing_before:  # a failure to read a missing blob is not the package's
            cache.put(tree, cell, result, config_blob)
        results.append(result)
    return CellGraph.from_results(cell, results)
