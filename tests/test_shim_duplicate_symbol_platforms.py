"""shim-duplicate-symbol per configuration: two force-linked libraries collide only on a platform
where one target links both. Expectations follow from buck2's select() rules, written by hand."""

from __future__ import annotations

from bot.snapshot import BuildModel
from bot.tree import memory_tree
from checks.shim_duplicate_symbol import _linked_together

_SHIM = 'extern "C" int aoti_torch_get_device_type(void* tensor, int* out) { *out = 1; return 0; }\n'


def _model(deps: str) -> BuildModel:
    return BuildModel(
        memory_tree(
            {
                "backends/BUCK": (
                    'cxx_library(name = "cuda_shims", srcs = ["cuda_shims.cpp"], link_whole = True)\n'
                    'cxx_library(name = "cpu_shims", srcs = ["cpu_shims.cpp"], link_whole = True)\n'
                    f'cxx_library(name = "shims", deps = {deps})\n'
                ),
                "backends/cuda_shims.cpp": _SHIM,
                "backends/cpu_shims.cpp": _SHIM,
            }
        )
    )


def test_libraries_a_select_chooses_between_are_never_linked_together():
    model = _model('select({"ovr_config//cuda:has_cuda": [":cuda_shims"], "DEFAULT": [":cpu_shims"]})')
    for cell in ("fbcode", "xplat", "oss"):
        assert _linked_together(model, cell, "//backends:cuda_shims", "//backends:cpu_shims") == []


def test_a_library_added_with_cuda_collides_on_the_cuda_platforms_only():
    model = _model('[":cpu_shims"] + select({"ovr_config//cuda:has_cuda": [":cuda_shims"], "DEFAULT": []})')
    assert _linked_together(model, "xplat", "//backends:cuda_shims", "//backends:cpu_shims") == [
        ("//backends:shims", "linux-x86_64-cuda")
    ]
    assert _linked_together(model, "oss", "//backends:cuda_shims", "//backends:cpu_shims") == []
