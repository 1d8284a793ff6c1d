"""gate-macro-not-exported, link-export-dynamic-missing and shim-public-visibility per configuration:
a finding that holds on only some of the platforms a target builds on names them and is keyed by
the first (as dep-private-for-exported-header); one that holds wherever the target builds reads
and is keyed as before. Expectations follow from the cell table's platforms (bot/buck/cells.py:
fbcode builds with CUDA; xplat for android-arm64, iphoneos-arm64, linux-x86_64 and
linux-x86_64-cuda; oss for linux-x86_64), written by hand."""

from __future__ import annotations

from bot.check import Example
from checks.gate_macro_not_exported import CHECK as GATE
from checks.gate_macro_not_exported import _caller_stream
from checks.link_export_dynamic_missing import CHECK as LINK
from checks.link_export_dynamic_missing import _xplat_backend
from checks.shim_public_visibility import CHECK as SHIM
from tests.test_check_examples import _snapshot

_CPU_ONLY = ("`android-arm64`", "`iphoneos-arm64`", "`linux-x86_64`")


def _hits(check, head):
    return list(check.run(_snapshot(Example(head=head)), check.options))


def test_a_macro_exported_only_with_cuda_is_private_on_the_cpu_only_platforms():
    (hit,) = _hits(GATE, GATE.bad[4].head)
    assert (hit.cell, hit.key) == ("xplat", "buck://extension/cuda:caller_stream:CUDA_CALLER_STREAM_POOL|android-arm64")
    assert all(name in hit.message for name in _CPU_ONLY)
    assert "linux-x86_64-cuda" not in hit.message


def test_a_private_macro_on_every_platform_reads_as_before():
    (hit,) = _hits(
        GATE, _caller_stream("CUDA_CALLER_STREAM_POOL", '    preprocessor_flags = ["-DCUDA_CALLER_STREAM_POOL"],\n')
    )
    assert (hit.cell, hit.key) == ("fbcode", "buck://extension/cuda:caller_stream:CUDA_CALLER_STREAM_POOL")
    assert "`linux-x86_64`" not in hit.message and "select()" not in hit.message


def test_an_export_flag_chosen_on_linux_leaves_the_mobile_platforms_without_it():
    (hit,) = _hits(LINK, LINK.bad[3].head)
    assert hit.key == "//backends/cuda/runtime:cuda_backend|xplat|android-arm64"
    assert "`android-arm64`, `iphoneos-arm64` nothing" in hit.message


def test_a_flag_carrying_dep_chosen_with_cuda_leaves_the_cpu_only_platforms_without_it():
    (hit,) = _hits(LINK, LINK.bad[4].head)
    assert hit.key == "//backends/cuda/runtime:cuda_backend|xplat|android-arm64"
    assert all(name in hit.message for name in _CPU_ONLY)
    assert "linux-x86_64-cuda" not in hit.message


def test_a_platform_the_library_is_incompatible_with_is_not_judged():
    # CUDA-only: in xplat it builds on linux-x86_64-cuda alone, and lacks the flag there: everywhere it builds.
    (hit,) = _hits(LINK, _xplat_backend('    target_compatible_with = ["ovr_config//cuda:has_cuda"],\n'))
    assert hit.key == "//backends/cuda/runtime:cuda_backend|xplat"
    assert "`linux-x86_64-cuda`" not in hit.message


def test_shims_public_on_android_only_name_it():
    head = {
        "backends/aoti/common_shims.cpp": 'extern "C" int aoti_torch_dtype_float32(void) { return 6; }\n',
        "backends/aoti/BUCK": (
            "cxx_library(\n"
            '    name = "common_shims",\n'
            '    srcs = ["common_shims.cpp"],\n'
            '    visibility = select({"ovr_config//os:android": ["PUBLIC"], "DEFAULT": ["//executorch/backends/..."]}),\n'
            ")\n"
        ),
    }
    (hit,) = _hits(SHIM, head)
    assert (hit.cell, hit.key) == ("xplat", "//backends/aoti:common_shims|android-arm64")
    assert "`android-arm64` (in `xplat`)" in hit.message and "`linux-x86_64`" not in hit.message


def test_shims_compiled_with_cuda_are_found_in_fbcode_which_always_has_it():
    (hit,) = _hits(SHIM, SHIM.bad[1].head)
    assert (hit.cell, hit.key) == ("fbcode", "//backends/aoti:common_shims")
