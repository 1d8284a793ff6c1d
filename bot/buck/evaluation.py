"""The Buck model: every package of a revision evaluated per cell with a real Starlark interpreter.

`starlark-pyo3` (starlark-rust, buck2's interpreter) runs the repository's BUCK and .bzl files.
The host (`buck_host.py`) provides buck2's builtins and the cell semantics of design 3.1;
rules are recorded with their evaluated attributes, call site and macro stack. Failures are
data (`EvalError`), bounded in time, call depth and memory.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import starlark as sl

from bot.buck import host as buck_host
from bot.buck.buckconfig import BuckConfig
from bot.buck.budget import Budget
from bot.buck.cells import Cell, cell_named
from bot.buck.packages import load_buckconfig
from bot.buck.syntax import MAX_BRACKET_DEPTH, bracket_depth, call_end_line
from bot.buck.targets import (
    _SELECT_TOKEN,
    BuckTarget,
    EvalError,
    EvalErrorKind,
    Frame,
    PackageResult,
    _normalize_value,
)
from bot.tree import FileTree, shown_path

# 13: a result stopped by load (waiting, memory) is no longer stored; earlier stores may hold one.
HOST_VERSION = "buck-host-13"
# Where a tree keeps the open-source copies of ExecuTorch's own macros (fbsource//xplat/executorch/...):
# shim_et/ since 9c51e584cc (Feb 2025), the in-tree shim/ directory before (later a submodule of
# buck2-shims-meta, which holds no xplat/executorch). Internal cells read them from the first present.
_OWN_MACRO_ROOTS = ("shim_et/", "shim/")  # bump when evaluation semantics change: invalidates the cache

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


# --------------------------------------------------------------------------------------------
# Evaluation


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


def _weakly(method: Any) -> Any:
    """A bound method called through a weak reference to its object (see `_build_host`)."""
    owner, function = weakref.ref(method.__self__), method.__func__
    return lambda *args: function(owner(), *args)


def _failure_kind(message: str, frames: tuple[Frame, ...]) -> EvalErrorKind:
    """The kind of an interpreter's failure: starlark-pyo3 raises one StarlarkError for all of
    them, so its message (and the macro frames) is all there is to tell them apart by."""
    text = message.lower()
    if "parse error" in text or ("unexpected" in text and "expected" in text):
        return EvalErrorKind.PARSE
    if (
        "exceeded" in text
        or "allocated more than" in text
        or "recursed" in text
        or "stack overflow" in text
        or "too deep" in text
    ):
        return EvalErrorKind.LIMIT
    if "was not found" in text and any("env_interface" in f.path or "external" in f.function for f in frames):
        return EvalErrorKind.EXTERNAL_DEP
    if text.startswith("cannot load"):
        return EvalErrorKind.LOAD
    return EvalErrorKind.OTHER


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
        self._budget = Budget(seconds_per_package, memory_per_package)
        self._options = sl.EvalOptions(check_cancelled=self._budget.cancelled, max_callstack_size=max_call_depth)
        self._context = _Context()
        self._modules: dict[str, Any] = {}  # module key -> FrozenModule or Exception
        self._module_files: dict[str, frozenset[str]] = {}  # module key -> repo files it read
        self._offsets: dict[str, int] = {}  # file name in Starlark -> lines prepended for the host load
        # Starlark strings are Unicode: a path that is not UTF-8 goes in by its shown name
        # (bot/tree.py), and its frames come back to the path through this map.
        self._repo_paths: dict[str, str] = {}
        self._globbed: dict[str, str] = {}  # the same for file names glob() hands out
        self._string_selects: list[dict] = []  # token number -> branches (modules outlive packages)
        self._host = self._build_host()

    # -- host ------------------------------------------------------------------------------
    def _build_host(self) -> Any:
        # Every module this evaluator loads holds the frozen host module, and the host holds
        # these callables: were they bound to the evaluator, the cycle would run through the
        # interpreter's heap, which Python's collector cannot see, and each evaluator (with its
        # tree and modules) would live as long as the process. They reach it weakly instead.
        module = sl.Module()
        module.add_callable("__record", _weakly(self._record))
        module.add_callable("__glob", _weakly(self._glob))
        module.add_callable("__package_name", _weakly(self._package_name))
        module.add_callable("__read_config", _weakly(self._read_config))
        module.add_callable("__select_string", _weakly(self._select_string))
        module.add_callable("__is_select_token", lambda text: _SELECT_TOKEN.fullmatch(text) is not None)
        ast = sl.parse(buck_host.HOST_MODULE, buck_host.host_source(self.rules), _DIALECT)
        sl.eval(module, ast, _GLOBALS)
        return module.freeze()

    def _package_name(self) -> str:
        return shown_path(self._context.package)

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
        candidates = [p[len(prefix) :] for p in self.tree.paths_under(prefix)]
        matched = [c for c in candidates if any(_glob_match(c, pattern) for pattern in include)]
        kept = sorted(c for c in matched if not any(_glob_match(c, pattern) for pattern in exclude or ()))
        shown = [shown_path(c) for c in kept]
        self._globbed.update((s, c) for s, c in zip(shown, kept, strict=True) if s != c)
        return shown

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
        depth, line = bracket_depth(text)
        if depth > MAX_BRACKET_DEPTH:
            # starlark-rust's parser recurses per bracket: thousands overflow the native stack and
            # kill the process (a hostile BUCK must not), so such a file is refused, not parsed.
            raise _LoadFailure(
                f"error: brackets nested {depth} deep in {path} (more than {MAX_BRACKET_DEPTH}); not evaluated\n --> {path}:{line}:1"
            )
        names = names + buck_host.extra_globals(text)
        source, offset = self._source_with_host(path, text, names)
        name = shown_path(path)
        if name != path:
            self._repo_paths[name] = path
        self._offsets[name] = offset
        return sl.parse(name, source, _DIALECT), text

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
            self._modules[key] = self._evaluate_module(key, kind, location, symbols, importer_text)
        result = self._modules[key]
        files = self._module_files.get(key, frozenset())
        self._loaded_files.update(files)
        if isinstance(result, Exception):
            raise result
        return result

    def _evaluate_module(self, key: str, kind: str, location: str, symbols: dict[str, str], importer_text: str) -> Any:
        # What the module read or looked for (every kind: the runtime module reads the wrapper),
        # kept with it so that each package loading it later depends on the same files.
        key_files: set[str] = set()
        outer = self._loaded_files
        self._loaded_files = key_files
        try:
            module = sl.Module()
            if kind == "file":
                key_files.add(location)
                ast, text = self._parse_repo_file(location, buck_host.COMMON_GLOBALS)
                sl.eval_with(self._options, module, ast, _GLOBALS, self._loader_for(location, text, ast))
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
        except _LoadFailure as refused:
            return refused
        except sl.StarlarkError as error:
            return _LoadFailure(str(error))
        finally:
            self._loaded_files = outer
            self._module_files[key] = frozenset(key_files)

    def _present(self, path: str) -> bool:
        """Whether `path` is in the tree; a path looked for and not found is an input of the
        evaluation too (its result holds only while the file stays absent), so it is recorded
        with the files read: the store then never serves a failed load to a tree that has the file."""
        if self.tree.exists(path):
            return True
        self._loaded_files.add(path)
        return False

    def _runtime_source(self, symbols: dict[str, str], importer_text: str) -> str:
        """Internal cells: the recording `runtime`, other names from the open-source wrapper."""
        own = ("runtime", "is_xplat", "get_aten_mode_options")  # the cell's, not the OSS wrapper's
        lines = [f"load({buck_host.HOST_MODULE!r}, " + ", ".join(f"_{n} = {n!r}" for n in own) + ")"]
        others = sorted({remote for remote in symbols.values() if remote not in own})
        wrapper = next(
            (w for w in (root + buck_host.RUNTIME_WRAPPER for root in _OWN_MACRO_ROOTS) if self._present(w)), None
        )
        if others and wrapper is not None:
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
            # The open-source copies of ExecuTorch's own macros live under shim_et/ (under shim/
            # before Feb 2025); the rest of fbsource//xplat/executorch is the repository itself.
            own = tuple(root + cell_relative for root in _OWN_MACRO_ROOTS)
            for candidate in (*own, cell_relative[len("xplat/executorch/") :]):
                if self._present(candidate):
                    return "file", candidate
        if cell_name == "fbcode" and cell_relative.startswith("executorch/"):
            candidate = cell_relative[len("executorch/") :]
            if self._present(candidate):
                return "file", candidate
        return "stub", f"{cell_name}//{cell_relative}"

    def _file_or_shim(self, path: str, cell_name: str, cell_relative: str) -> tuple[str, str]:
        if self._present(path):
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
        return next(
            (name for name, path in self.config.cells.items() if path.strip("/").removeprefix("./") == root), ""
        )

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
    @property
    def stopped_by_load(self) -> bool:
        """Whether the last package was stopped by a limit that depends on the machine's load (a
        starved thread, the process's memory): its result says so but is not to be stored."""
        return self._budget.transient

    def evaluate_package(self, package: str, build_file: str) -> PackageResult:
        """Evaluate one build file; errors and limits come back as an EvalError."""
        self._context = _Context(package=package)
        self._loaded_files: set[str] = {build_file}
        self._budget.start()
        error = None
        try:
            ast, text = self._parse_repo_file(
                build_file, buck_host.COMMON_GLOBALS + buck_host.BUILD_FILE_GLOBALS + buck_host.NATIVE_RULES
            )
            sl.eval_with(self._options, sl.Module(), ast, _GLOBALS, self._loader_for(build_file, text, ast))
        except sl.StarlarkError as failure:
            error = self._eval_error(package, build_file, str(failure))
        except _LoadFailure as failure:
            error = self._eval_error(package, build_file, str(failure))
        except FileNotFoundError:
            error = EvalError(
                self.cell,
                package,
                f"{build_file}: blob missing from the object store",
                build_file,
                1,
                EvalErrorKind.OTHER,
            )
        except RecursionError:
            error = EvalError(self.cell, package, "evaluation recursed too deeply", build_file, 1, EvalErrorKind.LIMIT)
        except BaseException as failure:  # starlark-rust reports some allocation failures as panics
            if type(failure).__name__ != "PanicException":
                raise
            error = EvalError(
                self.cell,
                package,
                f"evaluation exceeded the interpreter's allocation limit ({failure})",
                build_file,
                1,
                EvalErrorKind.LIMIT,
            )
        targets = () if error else tuple(self._targets(package))
        if error is None:
            error = self._duplicate_name(package, targets)
            targets = () if error else targets
        return PackageResult(package, build_file, targets, error, tuple(sorted(self._loaded_files)))

    def _duplicate_name(self, package: str, targets: tuple[BuckTarget, ...]) -> EvalError | None:
        """buck2 refuses a package that defines one target name twice: the whole package fails."""
        first: dict[str, BuckTarget] = {}
        for target in targets:
            earlier = first.setdefault(target.name, target)
            if earlier is not target:
                return EvalError(
                    self.cell,
                    package,
                    f"target `{target.name}` is defined twice in `//{package}` "
                    f"(first at {earlier.path}:{earlier.line}, again at {target.path}:{target.line})",
                    target.path or earlier.path,
                    target.line,
                    EvalErrorKind.OTHER,
                    target.stack,
                )
        return None

    def _repo_path(self, path: str) -> str:
        """The repository path of a file the interpreter names (its own name for a shifted copy)."""
        return self._repo_paths.get(path, path)

    def _eval_error(self, package: str, build_file: str, text: str) -> EvalError:
        text = self._unshift(text)
        if self._budget.reason and "cancelled" in text.lower():
            text = f"{self._budget.reason}: {text}"
        locations = _LOCATION.findall(text)
        repo_locations = [(self._repo_path(p), int(n)) for p, n in locations if not p.startswith("@pr_check")]
        path, line = repo_locations[-1] if repo_locations else (build_file, 1)
        first_line = next(
            (row for row in text.splitlines() if row.strip().startswith("error:")),
            text.strip().splitlines()[0] if text.strip() else "evaluation failed",
        )
        message = first_line.strip()
        while True:  # nested load failures repeat their wrappers: keep the innermost message
            stripped = re.sub(r"^(?:error:|_LoadFailure:|StarlarkError:)\s*", "", message)
            if stripped == message:
                break
            message = stripped
        if message.startswith("Traceback"):
            message = next(
                (
                    row.strip()
                    for row in text.splitlines()
                    if row.strip().startswith("error:") and "LoadFailure" not in row
                ),
                message,
            )
            message = message.removeprefix("error:").strip()
        if "cancelled" in message.lower() and self._budget.reason:
            message = self._budget.reason
        if "callstack" in message.lower() or "call stack" in message.lower():
            message = f"evaluation recursed too deeply ({message})"
        frames = tuple(
            Frame(self._repo_path(p), int(n), function)
            for p, n, function in _FRAME.findall(text)
            if not p.startswith("@pr_check")
        )
        return EvalError(self.cell, package, message, path, line, _failure_kind(message, frames), frames)

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
                Frame(self._repo_path(path), max(1, int(line) - self._offsets.get(path, 0)), function)
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
                attrs={k: _normalize_value(self._named_back(v), self._string_selects) for k, v in kwargs.items()},
                path=path,
                line=line,
                end_line=call_end_line(self.tree.read_text(path) or "", line) if path else line,
                stack=frames,
            )

    def _named_back(self, value: Any) -> Any:
        """`value` with the file names glob() showed escaped named by their paths again."""
        if not self._globbed:
            return value
        if isinstance(value, str):
            return self._globbed.get(value, value)
        if isinstance(value, list):
            return [self._named_back(v) for v in value]
        if isinstance(value, dict):
            return {k: self._named_back(v) for k, v in value.items()}
        return value

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


def _glob_match(path: str, pattern: str) -> bool:
    """buck glob semantics: `*` stays within a directory, `**` spans directories."""
    return _glob_regex(pattern).fullmatch(path) is not None


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob pattern as a compiled regex (a package's globs test every file under it)."""
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
    return re.compile(regex)
