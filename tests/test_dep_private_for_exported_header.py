"""dep-private-for-exported-header per configuration: each cell's findings name the platforms
where a select() makes the owner's dep private, and only where a finding does not hold on every
platform the target builds on. Expectations follow from buck2's rules, written by hand."""

from __future__ import annotations

from bot.model import Severity
from bot.snapshot import BuildModel
from bot.tree import memory_tree
from checks.dep_private_for_exported_header import cell_hits

_KERNEL = {
    "runtime/kernel/BUCK": (
        'cxx_library(name = "kernel_includes", exported_headers = ["kernel_includes.h"], visibility = ["PUBLIC"])\n'
    ),
    "runtime/kernel/kernel_includes.h": "int k();\n",
    # A dependent that includes stack_util.h and has no dep on the owner: where the gap holds, it breaks.
    "app/BUCK": 'cxx_library(name = "app", srcs = ["app.cpp"], deps = ["//util:stack_util"])\n',
    "app/app.cpp": "#include <executorch/util/stack_util.h>\n",
}
_INCLUDE = "executorch/runtime/kernel/kernel_includes.h"


def _model(deps: str) -> BuildModel:
    return BuildModel(
        memory_tree(
            {
                **_KERNEL,
                "util/BUCK": (
                    'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], exported_headers = ["stack_util.h"],\n'
                    f"{deps})\n"
                ),
                "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
                "util/stack_util.h": f"#include <{_INCLUDE}>\n",
            }
        )
    )


def _keys(model: BuildModel, cell: str) -> list[str]:
    return sorted(hit.key for hit in cell_hits(model, cell).values())


def test_a_dep_private_only_with_cuda_is_a_finding_on_the_cuda_platforms_only():
    model = _model(
        '    deps = select({"ovr_config//cuda:has_cuda": ["//runtime/kernel:kernel_includes"], "DEFAULT": []}),\n'
    )
    # fbcode builds with CUDA only: there it holds on every platform and reads as before.
    assert _keys(model, "fbcode") == [f"//util:stack_util<-{_INCLUDE}"]
    assert _keys(model, "xplat") == [f"//util:stack_util<-{_INCLUDE}|linux-x86_64-cuda"]
    (hit,) = cell_hits(model, "xplat").values()
    assert "on `linux-x86_64-cuda` (in `xplat`)" in hit.message
    # Without CUDA the owner is not reached at all: dep-undeclared-header's, not this rule's.
    assert _keys(model, "oss") == []


def test_a_dep_exported_only_with_cuda_is_a_finding_on_every_cpu_only_platform():
    model = _model(
        '    deps = select({"ovr_config//cuda:has_cuda": [], "DEFAULT": ["//runtime/kernel:kernel_includes"]}),\n'
        '    exported_deps = select({"ovr_config//cuda:has_cuda": ["//runtime/kernel:kernel_includes"], "DEFAULT": []}),\n'
    )
    assert _keys(model, "fbcode") == []
    (hit,) = cell_hits(model, "xplat").values()
    assert hit.key == f"//util:stack_util<-{_INCLUDE}|android-arm64"
    assert "on `android-arm64`, `iphoneos-arm64`, `linux-x86_64` (in `xplat`)" in hit.message
    assert "linux-x86_64-cuda" not in hit.message
    assert _keys(model, "oss") == [f"//util:stack_util<-{_INCLUDE}"]  # oss builds without CUDA only


def test_a_header_exported_only_with_cuda_is_held_to_the_rule_only_there():
    # Exported with CUDA, private without it: on the CPU-only platforms dependents never see it.
    model = BuildModel(
        memory_tree(
            {
                **_KERNEL,
                "cuda/BUCK": 'cxx_library(name = "stream", exported_headers = ["stream.h"], visibility = ["PUBLIC"])\n',
                "util/BUCK": (
                    'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"],\n'
                    '    exported_headers = select({"ovr_config//cuda:has_cuda": ["stack_util.h"], "DEFAULT": []}),\n'
                    '    headers = select({"ovr_config//cuda:has_cuda": [], "DEFAULT": ["stack_util.h"]}),\n'
                    '    deps = ["//runtime/kernel:kernel_includes"] + select({"ovr_config//cuda:has_cuda": ["//cuda:stream"], "DEFAULT": []}))\n'
                ),
                "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
                "util/stack_util.h": f"#include <{_INCLUDE}>\n",
            }
        )
    )
    assert _keys(model, "xplat") == [f"//util:stack_util<-{_INCLUDE}|linux-x86_64-cuda"]
    assert _keys(model, "oss") == []


def _plain(attribute: str, app_deps: str = '"//util:stack_util"') -> BuildModel:
    return BuildModel(
        memory_tree(
            {
                **_KERNEL,
                "app/BUCK": f'cxx_library(name = "app", srcs = ["app.cpp"], deps = [{app_deps}])\n',
                "util/BUCK": (
                    f'cxx_library(name = "stack_util", srcs = ["stack_util.cpp"], {attribute} = ["stack_util.h"],\n'
                    '    deps = ["//runtime/kernel:kernel_includes"])\n'
                ),
                "util/stack_util.cpp": "#include <executorch/util/stack_util.h>\n",
                "util/stack_util.h": f"#include <{_INCLUDE}>\n",
            }
        )
    )


def test_fbcode_shows_plain_headers_to_dependents_so_exporting_one_there_is_no_new_gap():
    # The same gap at base (a plain header, seen by dependents in fbcode) and at head: one key, not new.
    key = f"//util:stack_util<-{_INCLUDE}"
    assert _keys(_plain("headers"), "fbcode") == _keys(_plain("exported_headers"), "fbcode") == [key]
    # In xplat a plain header is private: only the exported one is a gap there.
    assert _keys(_plain("headers"), "xplat") == []
    assert _keys(_plain("exported_headers"), "xplat") == [key]


def test_the_finding_names_the_dependent_that_breaks():
    (hit,) = cell_hits(_plain("exported_headers"), "xplat").values()
    assert "`//app:app` includes `stack_util.h` and does not reach `//runtime/kernel:kernel_includes`" in hit.message
    assert ("app/app.cpp", 1) in {(e.path, e.line) for e in hit.evidence}


def test_a_gap_every_includer_survives_through_another_dep_is_latent_and_info():
    # 19d22ab8de: op_stack includes stack_util.h and has kernel_includes of its own.
    reaching = _plain("exported_headers", '"//util:stack_util", "//runtime/kernel:kernel_includes"')
    (hit,) = cell_hits(reaching, "xplat").values()
    assert hit.at_most is Severity.INFO
    assert "`//app:app` includes `stack_util.h` and builds only because it reaches" in hit.message
    (breaking,) = cell_hits(_plain("exported_headers"), "xplat").values()
    assert breaking.at_most is None
