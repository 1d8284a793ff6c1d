"""Built-in stand-ins for library modules the repository loads but does not contain.

ExecuTorch's open-source build loads bazel-skylib's `lib/paths.bzl` (through the `shim/`
submodule) and the buck2 prelude's `utils/*.bzl` and `paths.bzl` (the `third-party/prelude`
submodule); Meta's internal cells load the same modules from their own monorepo. A revision
read from git's object database has none of them, so the host provides equivalents written
from their documented behaviour: path strings handled as POSIX paths, `is_select` true for a
`select()`, buckconfig readers over `read_config`. The real shim files, when mounted, replace
the shim ones (`SHIM_BUILTINS`); the prelude ones are always these.
"""

from __future__ import annotations

# Starlark appended to the host module; every name here is a host name that a built-in module
# can re-export (see `host.reexport_source`).
STAND_IN_SOURCE = """
# --- paths (bazel-skylib lib/paths.bzl, buck2 prelude paths.bzl): POSIX path strings ---
def _paths_basename(p):
    return p.rpartition("/")[2]

def _paths_dirname(p):
    head, separator, _ = p.rpartition("/")
    if head == "":
        return separator
    return head.rstrip("/")

def _paths_is_absolute(p):
    return p.startswith("/") or (len(p) > 2 and p[1] == ":")

def _paths_join(first, *rest):
    joined = first
    for part in rest:
        if _paths_is_absolute(part) or joined == "":
            joined = part
        elif joined.endswith("/"):
            joined = joined + part
        else:
            joined = joined + "/" + part
    return joined

def _paths_normalize(p):
    if p == "":
        return "."
    leading = ""
    if p.startswith("//") and not p.startswith("///"):
        leading = "//"
    elif p.startswith("/"):
        leading = "/"
    kept = []
    for part in p.split("/"):
        if part == "" or part == ".":
            continue
        if part == ".." and kept and kept[-1] != "..":
            kept.pop()
        elif part == ".." and leading:
            continue
        else:
            kept.append(part)
    result = leading + "/".join(kept)
    return result if result else "."

def _paths_relativize(path, start):
    parts = _paths_normalize(path).split("/")
    base = _paths_normalize(start).split("/")
    if base == ["."]:
        base = []
    if path.startswith("/") != start.startswith("/") or parts[:len(base)] != base:
        fail("Path '%s' is not beneath '%s'" % (path, start))
    return "/".join(parts[len(base):])

def _paths_split_extension(p):
    name = _paths_basename(p)
    dot = name.rfind(".")
    if dot <= 0:
        return (p, "")
    cut = len(p) - (len(name) - dot)
    return (p[:cut], p[cut:])

def _paths_replace_extension(p, extension):
    return _paths_split_extension(p)[0] + extension

paths = struct(
    basename = _paths_basename,
    dirname = _paths_dirname,
    is_absolute = _paths_is_absolute,
    join = _paths_join,
    normalize = _paths_normalize,
    relativize = _paths_relativize,
    replace_extension = _paths_replace_extension,
    split_extension = _paths_split_extension,
)

# --- prelude utils/type_defs.bzl ---
def is_select(value):
    return starlark_type(value) == "select"

def is_list(value):
    return starlark_type(value) == "list"

def is_tuple(value):
    return _real_type(value) == "tuple"

def is_dict(value):
    return _real_type(value) == "dict"

def is_string(value):
    return _real_type(value) == "string"

def is_bool(value):
    return _real_type(value) == "bool"

def is_number(value):
    return _real_type(value) == "int" or _real_type(value) == "float"

def is_struct(value):
    return _real_type(value) == "struct"

def is_function(value):
    return _real_type(value) == "function"

def is_collection(value):
    return is_list(value) or is_tuple(value) or is_dict(value)

# --- prelude utils/selects.bzl ---
def _selects_apply(value, function):
    if is_select(value):
        return select_map(value, function)
    return function(value)

selects = struct(apply = _selects_apply)

# --- prelude utils/buckconfig.bzl: typed readers over read_config ---
_TRUE_WORDS = ("1", "true", "yes", "on")
_FALSE_WORDS = ("0", "false", "no", "off")

def read_bool(section, field, default = None, required = True):
    value = read_config(section, field)
    if value == None:
        if default == None and required:
            fail("`{}:{}`: no value set".format(section, field))
        return default
    if value.lower() in _TRUE_WORDS:
        return True
    if value.lower() in _FALSE_WORDS:
        return False
    fail("`{}:{}`: cannot coerce {!r} to bool".format(section, field, value))

def read_choice(section, field, choices, default = None, required = True):
    value = read_config(section, field)
    if value == None:
        if default == None and required:
            fail("`{}:{}`: no value set".format(section, field))
        return default
    if value not in choices:
        fail("`{}:{}`: must be one of {}, got {!r}".format(section, field, choices, value))
    return value

def read_list(section, field, delimiter = ",", default = None, required = True):
    value = read_config(section, field)
    if value == None:
        if default == None and required:
            fail("`{}:{}`: no value set".format(section, field))
        return default
    return [item.strip() for item in value.split(delimiter) if item.strip()]

def read_int(section, field, default = None, required = True):
    value = read_config(section, field)
    if value == None:
        if default == None and required:
            fail("`{}:{}`: no value set".format(section, field))
        return default
    return int(value)

# --- buck2's set type (starlark-pyo3 has none): the operations the shim files use ---
def set(items = []):
    kept = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return _make_set(kept)

def _set_items(value):
    return value.set_items_ if _real_type(value) == "struct" and hasattr(value, "set_items_") else list(value)

def _make_set(kept):
    def difference(*others):
        dropped = [item for other in others for item in _set_items(other)]
        return _make_set([item for item in kept if item not in dropped])
    def union(*others):
        return set(kept + [item for other in others for item in _set_items(other)])
    def intersection(other):
        wanted = _set_items(other)
        return _make_set([item for item in kept if item in wanted])
    return struct(set_items_ = kept, difference = difference, union = union, intersection = intersection)

def set_aware_list(value = []):
    return list(_set_items(value))

def set_aware_sorted(value, **kwargs):
    return sorted(_set_items(value), **kwargs)

# --- the shim's shims.bzl `cpp_library` (open-source build): `headers` become the library's
# exported headers, `private_headers` its own; linked statically. Labels are kept as written
# (the real macro rewrites internal labels through the shim's `translate_target`). ---
# With auto headers (the default), headers named like a source (`a.cpp` -> `a.h`, `a-inl.h`, ...)
# that exist are exported too.
_AUTO_HEADER_SUFFIXES = (".h", ".hpp", ".tcc", "-inl.h", "-inl.hpp", "-inl.tcc", "-defs.h", "-defs.hpp", "-defs.tcc")

def _auto_headers(srcs, headers, private_headers):
    if is_select(srcs) or is_select(headers):
        return headers
    patterns = []
    for src in srcs:
        src = src[0] if is_tuple(src) else src
        stem, extension = _paths_split_extension(src)
        if "//" not in src and not src.startswith(":") and extension in (".c", ".cc", ".cpp"):
            patterns += [stem + suffix for suffix in _AUTO_HEADER_SUFFIXES]
    found = glob(patterns) if patterns else []
    extra = sorted([h for h in found if h not in (private_headers or []) and h not in headers])
    if is_dict(headers):
        return dict(headers, **{h: h for h in extra})
    return list(headers) + extra

def shim_cpp_library(name, headers = None, private_headers = None, deps = [], exported_deps = [], srcs = [],
                     auto_headers = None, **kwargs):
    for ignored in ("undefined_symbols", "modular_headers", "labels", "propagated_pp_flags", "feature",
                    "preferred_linkage", "external_deps", "exported_external_deps"):
        kwargs.pop(ignored, None)
    headers = headers if headers != None else []
    if (auto_headers or read_config("cxx", "auto_headers", "sources")) == "sources":
        headers = _auto_headers(srcs, headers, private_headers)
    kwargs.update(
        srcs = srcs,
        name = name,
        deps = deps,
        exported_deps = exported_deps,
        preferred_linkage = "static",
        exported_headers = headers,
        headers = private_headers,
        header_namespace = package_name(),
    )
    kwargs.setdefault("visibility", ["PUBLIC"])
    __record("cxx_library", call_stack(), kwargs)
"""

# Files of the pinned `shim/` submodule whose semantics design 3.1 states (shim-relative path ->
# host names they define); used when the submodule is not mounted (a diff-only or bare view).
SHIM_BUILTINS: dict[str, tuple[str, ...]] = {
    "tools/build_defs/fbsource_utils.bzl": ("is_fbcode", "is_xplat"),
    "build_defs/build_file_migration.bzl": ("fbcode_target", "non_fbcode_target"),
    "lib/paths.bzl": ("paths",),
}

# Shim files whose built-in equivalent holds only for the open-source build: Meta's internal
# cells record their own macros of these names as given.
OSS_SHIM_BUILTINS: dict[str, tuple[str, ...]] = {
    "build_defs/cpp_library.bzl": ("cpp_library",),
}

# The host name a built-in module's symbol comes from, where the two differ.
HOST_NAME_OF = {"cpp_library": "shim_cpp_library"}

# Files of the buck2 prelude (prelude-relative path -> host names), never in the repository.
PRELUDE_BUILTINS: dict[str, tuple[str, ...]] = {
    "paths.bzl": ("paths",),
    "utils/type_defs.bzl": (
        "is_bool",
        "is_collection",
        "is_dict",
        "is_function",
        "is_list",
        "is_number",
        "is_select",
        "is_string",
        "is_struct",
        "is_tuple",
    ),
    "utils/selects.bzl": ("selects",),
    "utils/buckconfig.bzl": ("read_bool", "read_choice", "read_int", "read_list"),
}
