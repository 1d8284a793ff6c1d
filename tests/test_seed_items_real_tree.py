"""#24643 as first posted, rebuilt on the Aug 2026 tree in memory, reviewed end to end (mirror).

The seed PR (../shared/seeds/, review of 5 files) adds `use_cuda` to `executorch_pybindings`,
a `cuda_lib` extension built with it, and `link_whole = True` on `common_shims_slim`. What is
rebuilt here, written from the PR description and both reviews, with each adaptation to the
Aug 2026 tree noted:
- `pybindings.bzl`: `use_cuda` adds `-DEXECUTORCH_PYBINDINGS_CUDA`, `:caller_stream` and the
  `("cuda", None, "cuda-lazy")` external dep (#24643's macro change; the OSS skip came later);
- `pybindings.cpp` includes `pybindings_cuda.h` under that define, and that header includes the
  CUDA allocator's header and calls it. Adaptation: on the Aug tree the allocator is
  `//backends/cuda/runtime:cuda_allocator`; it moved to `//extension/cuda` by November;
- `extension/pybindings/BUCK` defines `cuda_lib` with `use_cuda = True` and the CUDA backend in
  `cppdeps` (which depends on the allocator privately, so its header does not reach `cuda_lib`);
- `backends/aoti/targets.bzl`: `common_shims_slim` gains `link_whole = True` only;
- `backends/aoti/tests`: `test_common_shims_slim_link`, a statically linked fbcode test that looks
  every shim up by name. Adaptation: it links the CUDA shims (`runtime_shims`, whose CMake twin
  `aoti_cuda_shims` exports `--export-dynamic` on the Aug tree) rather than `common_shims_slim`
  alone, and sets no `linker_flags` (the author added `-Wl,--export-dynamic` after the test failed
  with `undefined symbol: aoti_torch_dtype_float32`).
"""

from __future__ import annotations

import difflib

import pytest

from bot.model import Severity
from bot.patch import apply_diff
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache
from bot.tree import FileTree
from pr_check.review import review_trees


def edited(base: FileTree, files: dict[str, str]):
    """The head (tree and changes) that replacing or adding `files` makes of `base`."""
    parts = []
    for path, text in sorted(files.items()):
        old = base.read_text(path)
        before = (old or "").splitlines(keepends=True)
        after = text.splitlines(keepends=True)
        header = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None else "")
        lines = difflib.unified_diff(before, after, "/dev/null" if old is None else f"a/{path}", f"b/{path}", n=3)
        parts.append(header + "".join(lines))
    return apply_diff(base, "".join(parts))


def replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old  # the Aug 2026 text this edit is written against
    return text.replace(old, new)


PYBINDINGS_CUDA_H = """#pragma once

#include <executorch/backends/cuda/runtime/cuda_allocator.h>
#include <executorch/extension/cuda/caller_stream.h>

namespace executorch::extension::pybindings {
inline void register_cuda_allocator() {
  (void)executorch::backends::cuda::CudaAllocator::instance();
}
} // namespace executorch::extension::pybindings
"""


def seed_24643(base: FileTree, first_posted: bool = False):
    """#24643 as reviewed (`cuda_lib` included), or as first posted (the macro and the flag only)."""
    macro_path = "shim_et/xplat/executorch/extension/pybindings/pybindings.bzl"
    macro = base.read_text(macro_path) or ""
    macro = replaced(
        macro,
        "types = [], compiler_flags = []):\n",
        "types = [], compiler_flags = [], use_cuda = False):\n"
        "    preprocessor_flags = []\n"
        "    external_deps = []\n"
        "    if use_cuda:\n"
        '        preprocessor_flags.append("-DEXECUTORCH_PYBINDINGS_CUDA")\n'
        '        cppdeps = cppdeps + ["//executorch/extension/cuda:caller_stream"]\n'
        '        external_deps.append(("cuda", None, "cuda-lazy"))\n',
    )
    macro = replaced(
        macro,
        '            "-DEXECUTORCH_PYTHON_MODULE_NAME={}".format(python_module_name),\n        ],',
        '            "-DEXECUTORCH_PYTHON_MODULE_NAME={}".format(python_module_name),\n        ] + preprocessor_flags,',
    )
    macro = replaced(
        macro,
        '            "libtorch_python",\n        ],',
        '            "libtorch_python",\n        ] + external_deps,',
    )
    build = replaced(
        base.read_text("extension/pybindings/BUCK") or "",
        'fbcode_target(_kind = runtime.python_library,\n    name = "portable_lib",',
        "fbcode_target(_kind = executorch_pybindings,\n"
        '    cppdeps = PORTABLE_MODULE_DEPS + ["//executorch/backends/cuda/runtime:cuda_backend"],\n'
        '    python_module_name = "cuda_lib",\n'
        "    use_cuda = True,\n"
        '    visibility = ["//executorch/extension/pybindings/..."],\n'
        ")\n\n"
        'fbcode_target(_kind = runtime.python_library,\n    name = "portable_lib",',
    )
    source = replaced(
        base.read_text("extension/pybindings/pybindings.cpp") or "",
        "#include <executorch/runtime/platform/runtime.h>\n",
        "#include <executorch/runtime/platform/runtime.h>\n\n"
        "#if defined(EXECUTORCH_PYBINDINGS_CUDA)\n"
        "#include <executorch/extension/pybindings/pybindings_cuda.h>\n"
        "#endif\n",
    )
    aoti = replaced(
        base.read_text("backends/aoti/targets.bzl") or "",
        '        visibility = ["@EXECUTORCH_CLIENTS"],\n        exported_deps = [\n            "//executorch/runtime/core:core",',
        "        # @lint-ignore BUCKLINT: Avoid `link_whole=True` (https://fburl.com/avoid-link-whole)\n"
        "        link_whole = True,\n"
        '        visibility = ["@EXECUTORCH_CLIENTS"],\n        exported_deps = [\n            "//executorch/runtime/core:core",',
    )
    tests = (base.read_text("backends/aoti/tests/targets.bzl") or "") + (
        "\n"
        "    # Looks every shim up by name in a statically linked binary that never calls them.\n"
        "    cpp_unittest(\n"
        '        name = "test_common_shims_slim_link",\n'
        "        srcs = [\n"
        '            "test_common_shims_slim_link.cpp",\n'
        "        ],\n"
        '        link_style = "static",\n'
        "        deps = [\n"
        '            "//executorch/backends/cuda/runtime:runtime_shims",\n'
        '            "//executorch/runtime/core:core",\n'
        "        ],\n"
        "    )\n"
    )
    if first_posted:
        return edited(base, {macro_path: macro, "backends/aoti/targets.bzl": aoti})
    return edited(
        base,
        {
            macro_path: macro,
            "extension/pybindings/BUCK": build,
            "extension/pybindings/pybindings.cpp": source,
            "extension/pybindings/pybindings_cuda.h": PYBINDINGS_CUDA_H,
            "backends/aoti/targets.bzl": aoti,
            "backends/aoti/tests/targets.bzl": tests,
            "backends/aoti/tests/test_common_shims_slim_link.cpp": "#include <dlfcn.h>\n",
        },
    )


def _review(mirror, cache, first_posted: bool):
    with GitRepository(mirror) as repo:
        base = repo.tree(repo.resolve("refs/heads/main"))
        head = seed_24643(base, first_posted)
        report = review_trees(base, head.tree, head.changes, cache=EvaluationCache(cache))
    assert not [f for f in report.findings if f.rule == "internal-error"]
    return report


@pytest.fixture(scope="module")
def review_24643(executorch_mirror, real_tree_cache):
    return _review(executorch_mirror, real_tree_cache, first_posted=False)


@pytest.fixture(scope="module")
def review_24643_first(executorch_mirror, real_tree_cache):
    return _review(executorch_mirror, real_tree_cache, first_posted=True)


def test_label_source_is_walked_and_the_missing_allocator_dep_found(review_24643):
    # Review item 3: `cuda_lib`'s only source is the label
    # `//executorch/extension/pybindings:pybindings.cpp`; walked under `use_cuda`'s define, it
    # reaches pybindings_cuda.h, whose allocator include no dep of `cuda_lib` provides.
    found = [f for f in review_24643.findings if f.rule == "dep-undeclared-header"]
    assert [(f.path, f.line, f.target, f.cell) for f in found] == [
        ("extension/pybindings/pybindings_cuda.h", 3, "//extension/pybindings:cuda_lib", "fbcode")
    ]
    finding = found[0]
    assert "`//backends/cuda/runtime:cuda_allocator`" in finding.message
    assert "defined(EXECUTORCH_PYBINDINGS_CUDA)" in finding.message
    notes = {(e.path, e.note.split("`")[1]) for e in finding.evidence}
    assert ("extension/pybindings/pybindings.cpp", "//extension/pybindings:cuda_lib") in notes  # the walk's first step
    assert ("shim_et/xplat/executorch/extension/pybindings/pybindings.bzl", "-DEXECUTORCH_PYBINDINGS_CUDA") in notes


def test_link_whole_without_the_flag_every_other_force_linked_library_of_the_file_sets(review_24643_first):
    # Review item 1 (and the human reviewer's first point), on the PR as first posted:
    # common_shims_slim gains link_whole on line 109 while common_shims, delegate_handle,
    # aoti_common and aoti_common_slim, the other force-linked libraries of
    # backends/aoti/targets.bzl, all set supports_python_dlopen; no Python extension of the tree
    # links it yet (no target passes use_cuda = True before cuda_lib).
    found = [f for f in review_24643_first.findings if f.rule == "link-whole-without-python-dlopen"]
    assert [(f.path, f.line, f.target, f.severity) for f in found] == [
        ("backends/aoti/targets.bzl", 109, "//backends/aoti:common_shims_slim", Severity.MINOR)
    ]
    finding = found[0]
    assert "every other force-linked library in `backends/aoti/targets.bzl` (4:" in finding.message
    assert {e.line for e in finding.evidence} >= {
        42,
        65,
        83,
        121,
    }  # the four that set it (aoti_common_slim moved down 2)
    assert (finding.fix.line, finding.fix.replacement) == (
        109,
        "        link_whole = True,\n        supports_python_dlopen = True,",
    )


def test_once_cuda_lib_links_the_shims_the_finding_says_so(review_24643):
    # cuda_lib -> cuda_backend -> aoti_common_slim -> common_shims_slim: a Python extension now
    # links the force-linked library; one finding, with that reason.
    found = [f for f in review_24643.findings if f.rule == "link-whole-without-python-dlopen"]
    assert [(f.path, f.line, f.target) for f in found] == [
        ("backends/aoti/targets.bzl", 109, "//backends/aoti:common_shims_slim")
    ]
    assert "in a Python extension its unreferenced symbols can be dropped" in found[0].message


def test_oss_load_failure_no_ci_job_sees_is_reported_at_minor(review_24643):
    # The #24817 review's "lower confidence" item: use_cuda's ("cuda", None, "cuda-lazy") is not a
    # key of _EXTERNAL_DEPS (shim_et/xplat/executorch/build/env_interface.bzl), so OSS fails to
    # evaluate //extension/pybindings at the cuda_lib call (line 65 of the head BUCK). No command
    # of .ci/ or .github/ loads that package: a minor finding naming the command that fails.
    found = [f for f in review_24643.findings if f.rule == "dep-unknown-external"]
    assert [(f.path, f.line, f.cell, f.severity) for f in found] == [
        ("extension/pybindings/BUCK", 65, "oss", Severity.MINOR)
    ]
    assert "`buck2 uquery //extension/pybindings/...` fails" in found[0].message
    assert "shim_et/xplat/executorch/extension/pybindings/pybindings.bzl" in {e.path for e in found[0].evidence}
    assert "`cuda-lazy`" in found[0].message or "cuda-lazy" in found[0].message


def test_statically_linked_fbcode_test_of_the_shims_without_export_dynamic(review_24643):
    # fbcode links libraries dynamically, but test_common_shims_slim_link (line 64 of the head
    # backends/aoti/tests/targets.bzl) links statically: the shims live in its executable and are
    # not exported without -Wl,--export-dynamic, which CMake's aoti_cuda_shims gives its consumers.
    found = [f for f in review_24643.findings if f.rule == "link-export-dynamic-missing"]
    assert [(f.path, f.line, f.target, f.cell, f.severity) for f in found] == [
        (
            "backends/aoti/tests/targets.bzl",
            64,
            "//backends/aoti/tests:test_common_shims_slim_link",
            "fbcode",
            Severity.MAJOR,
        )
    ]
    finding = found[0]
    assert "`//backends/cuda/runtime:runtime_shims`" in finding.message and "`aoti_cuda_shims`" in finding.message
    assert ("backends/cuda/CMakeLists.txt", "aoti_cuda_shims") in {
        (e.path, e.note.split("`")[1]) for e in finding.evidence
    }
    assert finding.fix.replacement.endswith(
        '        link_style = "static",\n        linker_flags = ["-Wl,--export-dynamic"],'
    )


# ---------------------------------------------------------------------------------------------
# CMake sources chosen by a cache variable, on the Aug 2026 tree

_PAL_SELECT = """        srcs = select({
            "ovr_config//os:android": ["default/android.cpp"],
            "DEFAULT": _select_pal({
                "minimal": ["default/minimal.cpp"],
                "posix": ["default/posix.cpp"],
        })}),"""
_PAL_WITHOUT_ANDROID = """        srcs = _select_pal({
            "minimal": ["default/minimal.cpp"],
            "posix": ["default/posix.cpp"],
        }),"""


def test_pal_values_are_read_from_presets_sets_and_scripts(executorch_mirror):
    from bot.cmake.cache_values import variable_assignments

    with GitRepository(executorch_mirror) as repo:
        tree = repo.tree(repo.resolve("refs/heads/main"))
        found = {(a.value, a.path, a.how) for a in variable_assignments(tree)["EXECUTORCH_PAL_DEFAULT"]}
    # Read in those files: the option's default, the Android preset, Zephyr's own CMakeLists.txt,
    # the Arm Android runner's and the Pico firmware's build scripts. The docs' `posix`/`minimal`
    # suggestions are not configurations and are not read.
    assert found == {
        ("posix", "tools/cmake/preset/default.cmake", "default"),
        ("android", "tools/cmake/preset/android.cmake", "preset"),
        ("zephyr", "zephyr/CMakeLists.txt", "set"),
        ("android", "backends/arm/scripts/build_executor_runner_vgf_android.sh", "command line"),
        ("minimal", "examples/raspberry_pi/pico2/build_firmware_pico.sh", "command line"),
    }


def test_buck_adding_the_android_pal_source_is_not_source_drift(executorch_mirror, real_tree_cache):
    # platform_private gains `default/android.cpp` under `ovr_config//os:android` (the Aug 2026
    # tree has it; the base here is that tree without it). CMake compiles
    # runtime/platform/default/${EXECUTORCH_PAL_DEFAULT}.cpp, and tools/cmake/preset/android.cmake
    # sets the option to `android`: both builds compile the file somewhere.
    with GitRepository(executorch_mirror) as repo:
        main = repo.tree(repo.resolve("refs/heads/main"))
        text = main.read_text("runtime/platform/targets.bzl") or ""
        base = edited(main, {"runtime/platform/targets.bzl": replaced(text, _PAL_SELECT, _PAL_WITHOUT_ANDROID)}).tree
        head = edited(base, {"runtime/platform/targets.bzl": text})
        report = review_trees(base, head.tree, head.changes, cache=EvaluationCache(real_tree_cache))
    assert [f for f in report.findings if f.rule in ("source-parity", "internal-error")] == []
