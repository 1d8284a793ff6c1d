"""The Starlark side of the Buck host: builtins every evaluated file sees, per cell.

Design 3.1 says which constructs define what in each cell; this module states it as Starlark
source that the evaluator loads into every file. The Python side (`bot/buck/evaluation.py`) supplies
the callables `__record` (a rule call with its call stack), `__glob`, `__package_name`,
`__read_config` and `__select_string`/`__is_select_token` (selects of strings). Nothing here is taken from Buck or ExecuTorch; it is a model of their behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.buck.cells import Cell
from bot.buck.stand_ins import HOST_NAME_OF, OSS_SHIM_BUILTINS, PRELUDE_BUILTINS, SHIM_BUILTINS, STAND_IN_SOURCE

__all__ = ["OSS_SHIM_BUILTINS", "PRELUDE_BUILTINS", "SHIM_BUILTINS"]  # re-exported: the loader resolves through them

HOST_MODULE = "@pr_check//:host.bzl"

# Rules a BUCK file or a macro may call, directly or through `native.`. Unknown kinds still
# work through `native` only if listed: buck2 itself fails on an unknown native rule.
NATIVE_RULES = (
    "alias",
    "android_library",
    "apple_library",
    "command_alias",
    "config_setting",
    "configured_alias",
    "constraint_setting",
    "constraint_value",
    "cxx_binary",
    "cxx_genrule",
    "cxx_library",
    "cxx_precompiled_header",
    "cxx_python_extension",
    "cxx_test",
    "export_file",
    "filegroup",
    "genrule",
    "http_archive",
    "http_file",
    "java_binary",
    "ocaml_binary",
    "platform",
    "prebuilt_cxx_library",
    "prebuilt_python_library",
    "python_binary",
    "python_library",
    "python_test",
    "remote_file",
    "rust_binary",
    "rust_library",
    "rust_test",
    "sh_binary",
    "sh_test",
    "test_suite",
    "zip_file",
)

# Names a BUCK file sees without loading them (buck2's build-file globals).
BUILD_FILE_GLOBALS = ("glob", "select", "package_name", "read_config", "oncall", "host_info", "select_map")
# Names every file sees: `type` is replaced so that `type(select(...)) == "select"` as in buck2.
COMMON_GLOBALS = (
    "type",
    "native",
    "select",
    "select_map",
    "read_config",
    "host_info",
    "package_name",
    "glob",
    "warning",
)
# Names a file gets only when it uses them and does not define them itself:
# - starlark-pyo3 has no `set` type (buck2 has): a file calling `set()` gets the host's
#   stand-in, and `list`/`sorted` that accept it; not with a `list[str]` annotation, which
#   needs the real `list`;
# - buck2's rule-definition globals and types (`provider`, `rule`, `attrs`, `DefaultInfo`, `Select`), which the shim's
#   `shims.bzl` uses at load time: a rule defined so records its calls as `custom_rule`.
_SET_CALL = re.compile(r"(?<![\w.])set\s*\(")
_RULE_GLOBALS = ("provider", "rule", "attrs", "DefaultInfo", "RunInfo", "Select")


def extra_globals(text: str) -> tuple[str, ...]:
    """The host names beyond COMMON_GLOBALS that a .bzl file's text needs (see above)."""
    names: list[str] = []
    if _SET_CALL.search(text) and "list[" not in text:
        names += ["set", "list", "sorted"]
    for name in _RULE_GLOBALS:
        used = re.search(rf"(?<![\w.]){name}\b", text)
        defined = re.search(rf"^(?:def\s+{name}\b|{name}\s*=)", text, re.M)
        if used and not defined:
            names.append(name)
    return tuple(names)


# Names a file imports under another host name.
HOST_RENAMES = {"type": "starlark_type", "list": "set_aware_list", "sorted": "set_aware_sorted"}


def host_source(cell: Cell) -> str:
    """The host module's Starlark text for one cell; its semantics come from the cell table."""
    rule_defs = "\n".join(
        f"def _rule_{kind}(*args, **kwargs):\n    __record({kind!r}, call_stack(), kwargs)\n" for kind in NATIVE_RULES
    )
    native_fields = ",\n    ".join(f"{kind} = _rule_{kind}" for kind in NATIVE_RULES)
    top_level_rules = "\n".join(f"{kind} = _rule_{kind}" for kind in NATIVE_RULES)
    return (
        STUB_CALL_SOURCE
        + STAND_IN_SOURCE
        + _HOST_TEMPLATE.format(
            cell=cell.name,
            rule_defs=rule_defs,
            native_fields=native_fields,
            top_level_rules=top_level_rules,
            is_fbcode=repr(cell.is_fbcode),
            is_xplat=repr(not cell.is_fbcode),
            defines_fbcode_target=repr(cell.defines_fbcode_target),
            defines_non_fbcode_target=repr(cell.defines_non_fbcode_target),
            is_oss=repr(cell.is_oss),
            aten_modes="(" + "".join(f"{mode!r}, " for mode in cell.aten_modes) + ")",
        )
    )


_HOST_TEMPLATE = """
_CELL = "{cell}"
_real_type = type

def _is_select_marker(value):
    return _real_type(value) == "dict" and "__select__" in value

# buck2's select() is its own type that concatenates with lists and strings. A one-element list
# holding a marker dict concatenates with lists the same way and survives conversion to Python;
# a select of strings is a token string (`__select_string`) that the recorder expands again.
def select(branches):
    if branches and all([_real_type(value) == "string" for value in branches.values()]):
        return __select_string(branches)
    return [{{"__select__": branches}}]

def starlark_type(value):
    if _real_type(value) == "string" and __is_select_token(value):
        return "select"
    if _real_type(value) == "list":
        for item in value:
            if _is_select_marker(item):
                return "select"
    return _real_type(value)

def select_map(value, function):
    markers = [item for item in value if _is_select_marker(item)]
    plain = [item for item in value if not _is_select_marker(item)]
    mapped = [{{"__select__": {{key: function(branch) for key, branch in marker["__select__"].items()}}}} for marker in markers]
    if not plain:
        return mapped
    return function(plain) + mapped

def glob(include, exclude = [], **kwargs):
    return __glob(include, exclude)

def package_name():
    return __package_name()

def read_config(section, key, default = None):
    return __read_config(section, key, default)

def oncall(name):
    pass

def warning(message):
    pass  # buck2's global: prints the message and goes on (codegen.bzl warns this way)

def host_info():
    return struct(
        os = struct(is_linux = True, is_macos = False, is_windows = False, is_freebsd = False),
        arch = struct(is_x86_64 = True, is_aarch64 = False, is_arm = False, is_i386 = False),
    )

def _get_cell_name():
    return "root"

def provider(fields = [], doc = ""):
    def construct(**values):
        return struct(**values)
    return construct

def rule(impl = None, attrs = {{}}, **kwargs):
    def define(**values):
        __record("custom_rule", call_stack(), values)
    return define

# buck2's `Select` type, as older shims annotate (`-> Select`): any value passes the annotation.
Select = typing.Any

DefaultInfo = provider(fields = ["default_output", "default_outputs", "sub_targets", "other_outputs"])
RunInfo = provider(fields = ["args"])

def _attribute(*args, **kwargs):
    return None

attrs = struct(**{{kind: _attribute for kind in (
    "any", "arg", "bool", "configuration_label", "configured_dep", "default_only", "dep", "dict",
    "enum", "exec_dep", "int", "label", "list", "named_set", "one_of", "option", "plugin_dep",
    "query", "regex", "set", "source", "split_transition_dep", "string", "toolchain_dep",
    "transition_dep", "tuple", "versioned",
)}})

{rule_defs}
native = struct(
    {native_fields},
    glob = glob,
    select = select,
    select_map = select_map,
    package_name = package_name,
    read_config = read_config,
    host_info = host_info,
    partial = partial,
    json = json,
    get_cell_name = _get_cell_name,
)

{top_level_rules}

# --- cell semantics (design 3.1) ---
def is_fbcode():
    return {is_fbcode}

def is_xplat():
    return {is_xplat}

def fbcode_target(_kind, **kwargs):
    if {defines_fbcode_target}:
        return _kind(**kwargs)
    return None

def non_fbcode_target(_kind, **kwargs):
    if {defines_non_fbcode_target}:
        return _kind(**kwargs)
    return None

def _runtime_rule(kind):
    def record(*args, **kwargs):
        __record(kind, call_stack(), kwargs)
    return record

def _external_dep_location(name):
    return "$(location external:" + name + ")"

# ExecuTorch's wrapper (shared by every cell) also defines `<name>_static` for each library.
def _runtime_cxx_library(*args, **kwargs):
    define_static_target = kwargs.pop("define_static_target", True)
    __record("cxx_library", call_stack(), kwargs)
    if define_static_target:
        static = dict(kwargs)
        static["name"] = kwargs["name"] + "_static"
        static["preferred_linkage"] = "static"
        __record("cxx_library", call_stack(), static)

# ExecuTorch's wrapper (shared by every cell) gives every C++ test the test utilities before
# anything else (`_cxx_test`: "Inject test utils library"), so a test may include their headers
# without declaring them. Concatenated, not appended: a frozen list stays the caller's.
def _runtime_cxx_test(*args, **kwargs):
    kwargs["deps"] = (kwargs.get("deps") or []) + ["//executorch/test/utils:utils"]
    __record("cxx_test", call_stack(), kwargs)

def get_aten_mode_options():
    return {aten_modes}

runtime = struct(
    command_alias = _runtime_rule("command_alias"),
    cxx_binary = _runtime_rule("cxx_binary"),
    cxx_library = _runtime_cxx_library,
    cxx_python_extension = _runtime_rule("cxx_python_extension"),
    cxx_test = _runtime_cxx_test,
    export_file = _runtime_rule("export_file"),
    filegroup = _runtime_rule("filegroup"),
    genrule = _runtime_rule("genrule"),
    python_binary = _runtime_rule("python_binary"),
    python_library = _runtime_rule("python_library"),
    python_test = _runtime_rule("python_test"),
    external_dep_location = _external_dep_location,
    is_oss = {is_oss},
)
"""


# In the internal cells the runtime wrapper is Meta's own; rules are recorded as given.
RUNTIME_WRAPPER = "xplat/executorch/build/runtime_wrapper.bzl"


def reexport_source(symbols: dict[str, str]) -> str:
    """A module re-exporting host names (the built-in equivalent of a shim file)."""
    names = sorted(set(symbols.values()))
    listed = ", ".join(repr(n) for n in names)
    exports = "\n".join(f"{name} = _{name}" for name in names)
    aliases = ", ".join(f"_{n} = {HOST_NAME_OF.get(n, n)!r}" for n in names)
    return f"load({HOST_MODULE!r}, {aliases})\n{exports}\n" if names else f"# no symbols: {listed}\n"


_STRING_OR_COMMENT = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|#[^\n]*'
)
_CALL_USE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_ATTRIBUTE_USE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")


_PLURAL_CONSTANT = re.compile(r"^[A-Z0-9_]*_[A-Z0-9]*S$")


def stub_source(symbols: dict[str, str], importer_text: str) -> str:
    """A recording stub for a module the cell cannot read (Meta-internal macros).

    Each requested name becomes what its importer uses it as: a struct when the importer
    reads attributes of it; a constant when it is UPPER_CASE (a list when its name is plural,
    `OPERATOR_SRCS`, or the importer iterates or concatenates it as one, else its own name);
    otherwise a function that records a rule when called with `name =`. A function returns
    what its call sites need: a list where its result is concatenated to a list (a macro
    that defines a rule and returns deps, `get_pt_ops_deps`), a string where concatenated to
    a string, a dict where it is unpacked as keyword arguments (`**get_oss_build_kwargs()`,
    2023 targets), else None after recording a rule and an empty list otherwise.
    """
    local_to_remote = dict(symbols)
    code = _STRING_OR_COMMENT.sub('""', importer_text)
    called = {local_to_remote[n] for n in _CALL_USE.findall(code) if n in local_to_remote}
    fields: dict[str, set[str]] = {}
    for local, attribute in _ATTRIBUTE_USE.findall(code):
        if local in local_to_remote and local_to_remote[local] not in called:
            fields.setdefault(local_to_remote[local], set()).add(attribute)
    results: dict[str, str] = {}
    for local, remote in local_to_remote.items():
        for result in _concatenations(code, local):
            if results.get(remote) not in ("string", "dict"):
                results[remote] = result
    lines = [f"load({HOST_MODULE!r}, _stub_call = 'stub_call')"]
    for remote in sorted(set(local_to_remote.values())):
        if remote in fields:
            members = ", ".join(f"{attr} = _stub_function({remote + '.' + attr!r})" for attr in sorted(fields[remote]))
            lines.append(f"{remote} = struct({members})")
        elif remote.isupper():
            is_list = _PLURAL_CONSTANT.match(remote) or results.get(remote) == "list"
            lines.append(f"{remote} = []" if is_list else f"{remote} = {remote!r}")
        else:
            result = results.get(remote, "")
            lines.append(
                f"def {remote}(*args, **kwargs):\n    return _stub_call({remote!r}, call_stack(), kwargs, {result!r})"
            )
    body = "\n".join(lines[1:])
    helper = (
        "def _stub_function(kind):\n"
        "    def call(*args, **kwargs):\n"
        "        return _stub_call(kind, call_stack(), kwargs)\n"
        "    return call\n"
    )
    return lines[0] + "\n" + helper + body + "\n"


def _concatenations(code: str, local: str) -> Iterator[str]:
    """For each use of `local` (a call or a name) joined by `+`: "string" or "list", by its other operand.

    `code` has its strings blanked to `""`, so a string operand reads as `"`; an operand that
    is neither a list nor a string literal (a variable, a call) counts as a list, the type
    Buck macros concatenate most.
    """
    for match in re.finditer(rf"(?<![\w.])({re.escape(local)})\b(?!\s*=[^=])", code):
        end = match.end()
        if code[end:].lstrip().startswith("("):
            end = _closing_parenthesis(code, code.index("(", end))
        before = code[: match.start()].rstrip()
        after = code[end:].lstrip()
        if before.endswith("**"):  # Starlark has no power operator: `**` unpacks keyword arguments
            yield "dict"
        elif before.endswith("+") and not before.endswith("++"):
            other = before[:-1].rstrip()
            yield "string" if other.endswith('"') else "list"
        elif before.endswith("+="):
            yield "list"
        elif after.startswith("+") and not after.startswith("+="):
            other = after[1:].lstrip()
            yield "string" if other.startswith('"') else "list"
        elif re.search(r"\bin$", before):
            yield "list"


def _closing_parenthesis(code: str, start: int) -> int:
    """The index after the parenthesis that closes the one at `start` (strings already blanked)."""
    depth = 0
    for index in range(start, len(code)):
        if code[index] in "([{":
            depth += 1
        elif code[index] in ")]}":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(code)


STUB_CALL_SOURCE = """
def stub_call(kind, stack, kwargs, result = ""):
    if "name" in kwargs:
        __record(kind, stack, kwargs)
    if result == "list":
        return []
    if result == "string":
        return ""
    if result == "dict":
        return {}
    return None if "name" in kwargs else []
"""
