"""A miniature open-source Buck wrapper (`shim_et/`), for examples that need the `oss` cell.

Self-written, shaped like ExecuTorch's: `runtime` forwards to `native` rules, resolves
`external_deps` by a bare lookup in a table, and pops `platforms`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.tree import Gitlink

BUCKCONFIG = """[repositories]
  root = .
  shim_et = shim_et
  shim = shim

[repository_aliases]
  fbcode = shim_et
  fbsource = shim_et
  fbcode_macros = shim
"""

RUNTIME_WRAPPER = """load(":env_interface.bzl", "env")

def _cxx_library(**kwargs):
    kwargs = env.patch_kwargs(kwargs)
    native.cxx_library(**kwargs)

def _cxx_test(**kwargs):
    kwargs = env.patch_kwargs(kwargs)
    native.cxx_test(**kwargs)

def _python_library(**kwargs):
    native.python_library(**kwargs)

runtime = struct(
    cxx_library = _cxx_library,
    cxx_test = _cxx_test,
    python_library = _python_library,
    is_oss = True,
)
"""

ENV_INTERFACE = """_EXTERNAL_DEPS = {
    "gflags": "//third-party:gflags",
    "gtest": "//third-party:gtest",
    "libtorch": "//third-party:libtorch",
}

def _resolve_external_dep(name):
    return _EXTERNAL_DEPS[name]

def _patch_kwargs(kwargs):
    kwargs.pop("platforms", None)
    deps = kwargs.pop("external_deps", [])
    kwargs["deps"] = kwargs.get("deps", []) + [_resolve_external_dep(d) for d in deps]
    return kwargs

env = struct(patch_kwargs = _patch_kwargs)
"""


def oss_files() -> dict[str, str | Gitlink]:
    """The files (and the `shim` submodule) an example needs to be evaluated in `oss`."""
    from bot.tree import Gitlink

    return {
        ".buckconfig": BUCKCONFIG,
        "shim_et/xplat/executorch/build/runtime_wrapper.bzl": RUNTIME_WRAPPER,
        "shim_et/xplat/executorch/build/env_interface.bzl": ENV_INTERFACE,
        "shim": Gitlink("0" * 40),
    }
