"""The real tree's CUDA backend subtree, and the regressions the smoke job must catch, made on a copy.

Used by the tests (with a fetched mirror) and by smoke/device/pack_cases.sh. Each regression edits an
extracted tree in place and returns where it broke it; an edit whose anchor text is gone raises, so a
changed tree fails loudly instead of testing nothing.

    python3 -m smoke.regressions extract MIRROR REV DEST      # the subtree of REV into DEST/executorch
    python3 -m smoke.regressions apply NAME TREE               # one regression, in place; prints JSON
    python3 -m smoke.regressions diff BASE HEAD                # the unified diff between two trees
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

# What the CMake model and the compile of the CUDA backend read: the root and the helpers it includes
# (version.txt, which the root CMakeLists.txt parses), the source lists the root loads from
# build_variables.bzl (executorch_load_build_variables), the backend and the extensions it links, the
# runtime (executorch_core's sources and headers), the schema and third-party listings.
# The data loader and the flat tensor (.ptd) reader are what the runtime host adds.
SUBTREE = (
    "CMakeLists.txt",
    "version.txt",
    "tools/cmake",
    "shim_et/xplat/executorch/build/build_variables.bzl",
    "backends/aoti",
    "backends/cuda",
    "extension/cuda",
    "extension/tensor",
    "extension/data_loader",
    "extension/flat_tensor",
    "kernels/portable/cpu/op__device_copy.cpp",
    "runtime",
    "schema",
    "third-party/CMakeLists.txt",
)
# A google/flatbuffers mirror: the submodule's headers come from it at the commit the tree pins.
FLATBUFFERS_MIRROR = Path(os.environ.get("SMOKE_FLATBUFFERS_MIRROR", "/work/.mirror/google+flatbuffers/repo"))


class RegressionError(Exception):
    """The tree no longer has the text a regression edits."""


@dataclass(frozen=True, slots=True)
class Regression:
    name: str
    path: str
    line: int
    expect: str  # what the smoke job must report, in words


def extract(mirror: Path, revision: str, destination: Path) -> Path:
    """`git archive` of SUBTREE at revision into destination/executorch (paths absent there are skipped)."""
    listed = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", "--name-only", revision, "--", *SUBTREE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    root = destination / "executorch"
    root.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(mirror), "archive", "--format=tar", revision, *listed], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    add_flatbuffers(mirror, revision, root)
    return root


def add_flatbuffers(mirror: Path, revision: str, root: Path, flatbuffers: Path = FLATBUFFERS_MIRROR) -> str | None:
    """The third-party/flatbuffers submodule's include/ at the commit revision pins, as `git submodule
    update` would check it out; None (and nothing written) without the mirror or that commit."""
    listed = subprocess.run(
        ["git", "-C", str(mirror), "ls-tree", revision, "--", "third-party/flatbuffers"], capture_output=True, text=True
    ).stdout.split()
    if len(listed) < 3 or listed[1] != "commit" or not (flatbuffers / "HEAD").exists():
        return None
    pinned = listed[2]
    archive = subprocess.run(
        ["git", "-C", str(flatbuffers), "archive", "--format=tar", pinned, "include/flatbuffers"], capture_output=True
    )
    if archive.returncode != 0:
        return None
    target = root / "third-party" / "flatbuffers"
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return pinned


def _replace(tree: Path, path: str, old: str, new: str) -> int:
    file = tree / path
    text = file.read_text()
    if old not in text:
        raise RegressionError(f"{path}: the text to edit is gone: {old[:60]!r}")
    line = text[: text.index(old)].count("\n") + 1
    file.write_text(text.replace(old, new, 1))
    return line


def drop_whole_archive(tree: Path) -> Regression:
    """aoti_cuda_shims links aoti_common_shims_slim as a plain archive: its unreferenced shims vanish."""
    path = "backends/cuda/CMakeLists.txt"
    line = _replace(
        tree,
        path,
        "PRIVATE cuda_platform -Wl,--whole-archive aoti_common_shims_slim\n            -Wl,--no-whole-archive",
        "PRIVATE cuda_platform aoti_common_shims_slim",
    )
    return Regression(
        "no-whole-archive",
        path,
        line,
        "exports fails: aoti_torch_* defined in libaoti_common_shims_slim.a not exported",
    )


def make_shim_static(tree: Path) -> Regression:
    """aoti_torch_cuda_guard_set_index made file-local (its header declaration removed with it)."""
    header = "backends/cuda/runtime/shims/cuda_guard.h"
    text = (tree / header).read_text()
    start = text.find("aoti_torch_cuda_guard_set_index(")
    if start < 0:
        raise RegressionError(f"{header}: no aoti_torch_cuda_guard_set_index declaration")
    # The declaration spans from the AOTI_SHIM_EXPORT line before the name to the `;` after it.
    begin = text.rfind("AOTI_SHIM_EXPORT", 0, start)
    end = text.index(";", start) + 1
    (tree / header).write_text(text[:begin] + text[end:])
    path = "backends/cuda/runtime/shims/cuda_guard.cpp"
    line = _replace(
        tree,
        path,
        "AOTITorchError aoti_torch_cuda_guard_set_index(",
        "static AOTITorchError aoti_torch_cuda_guard_set_index(",
    )
    return Regression("static-shim", path, line, "symbol lost: aoti_torch_cuda_guard_set_index no longer exported")


def break_cuda_syntax(tree: Path) -> Regression:
    """A statement that does not parse, in sort.cu, right after its includes."""
    path = "backends/cuda/runtime/shims/sort.cu"
    text = (tree / path).read_text()
    lines = text.splitlines(keepends=True)
    after = max(index for index, row in enumerate(lines[:80]) if row.startswith("#include"))
    lines.insert(after + 1, "int smoke_syntax_error = ;\n")
    (tree / path).write_text("".join(lines))
    return Regression("cu-syntax-error", path, after + 2, f"compile error at {path}:{after + 2}")


def join_tensor_attribute(tree: Path) -> Regression:
    """The ETensor `tensor_attribute.cpp` joined to the CUDA shim library's sources: it defines shims
    (aoti_torch_get_device_type, ...) that common_shims_slim.cpp, linked whole into the same library,
    defines too."""
    path = "backends/cuda/CMakeLists.txt"
    old = "set(_aoti_cuda_shim_sources runtime/cuda_allocator.cpp runtime/shims/memory.cpp\n"
    line = _replace(tree, path, old, old + "                            runtime/shims/tensor_attribute.cpp\n")
    return Regression(
        "tensor-attribute",
        path,
        line + 1,
        "link fails: multiple definition of aoti_torch_* between common_shims_slim.cpp and tensor_attribute.cpp",
    )


def shift_sort_indices(tree: Path) -> Regression:
    """A wrong result in a kernel the exported program calls: sort.cu numbers each slice's indices from
    1 instead of 0 (init_indices_kernel), so aoti_torch_cuda_sort_stable returns every index off by one.
    It compiles, links, exports and loads; only running the program and comparing shows it."""
    path = "backends/cuda/runtime/shims/sort.cu"
    line = _replace(tree, path, "data[idx] = idx % slice_size;", "data[idx] = (idx + 1) % slice_size;")
    return Regression("sort-wrong-index", path, line, f"program-run: values differ from eager; {path}:{line}")


def drop_cuda_guard(tree: Path) -> Regression:
    """A CMake edit drops cuda_guard.cpp from the shim library's sources: its stream-guard shims, which
    every wrapper calls, are no longer exported. Blame: the CMake line that named it."""
    path = "backends/cuda/CMakeLists.txt"
    line = _replace(tree, path, "                            runtime/shims/cuda_guard.cpp\n", "")
    return Regression("drop-cuda-guard", path, line, f"symbol-lost: cuda_guard.cpp no longer compiled; {path}:{line}")


def hide_shims(tree: Path) -> Regression:
    """-fvisibility=hidden on the shim library's C++ sources: AOTI_SHIM_EXPORT is empty on Linux, so
    every shim of memory.cpp and cuda_guard.cpp drops out of the dynamic table. Blame: that option's line."""
    path = "backends/cuda/CMakeLists.txt"
    old = "target_compile_definitions(aoti_cuda_shims PRIVATE CUDA_AVAILABLE=1)\n"
    added = "target_compile_options(aoti_cuda_shims PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fvisibility=hidden>)\n"
    line = _replace(tree, path, old, old + added) + 1
    return Regression("hidden-visibility", path, line, f"symbol-lost: -fvisibility=hidden at {path}:{line}")


def refuse_two_dimensions(tree: Path) -> Regression:
    """A `.cpp` shim that fails at run time: aoti_torch_empty_strided refuses tensors of two or more
    dimensions. The wrapper's call fails ("aoti_torch_empty_strided(...) API call failed") and the shim's
    own check logs memory.cpp:LINE. Blame: that line."""
    path = "backends/cuda/runtime/shims/memory.cpp"
    old = '"aoti_torch_empty_strided: sizes_ptr is null but ndim > 0");\n'
    check = (
        "  ET_CHECK_OR_RETURN_ERROR(\n"
        '      ndim < 2, InvalidArgument, "aoti_torch_empty_strided: %d dimensions", static_cast<int>(ndim));\n'
    )
    line = _replace(tree, path, old, old + check) + 1
    return Regression("empty-strided-check", path, line, f"run failure of aoti_torch_empty_strided; {path}:{line}")


def halve_int4_group(tree: Path) -> Regression:
    """The int4 matmul shim passes half the quantization group size to its kernel: the scales of the
    wrong group apply (or the kernel's own check refuses). Blame: the shim's changed line."""
    path = "backends/cuda/runtime/shims/int4mm.cu"
    old = "_weight_int4pack_mm_cuda(*self, *mat2, qGroupSize, *qScaleAndZeros)"
    line = _replace(tree, path, old, "_weight_int4pack_mm_cuda(*self, *mat2, qGroupSize / 2, *qScaleAndZeros)")
    return Regression("int4mm-group", path, line, f"int4mm fails or differs from eager; {path}:{line}")


def refuse_device_zero(tree: Path) -> Regression:
    """A second `.cpp` shim that fails at run time: aoti_torch_create_cuda_stream_guard takes only
    device indices above 0 (an off-by-one range check), so every wrapper's stream guard for device 0
    fails ("aoti_torch_create_cuda_stream_guard(...) API call failed"). Blame: the check's line."""
    path = "backends/cuda/runtime/shims/cuda_guard.cpp"
    old = '"aoti_torch_create_cuda_stream_guard failed: stream is null");\n'
    check = (
        "  ET_CHECK_OR_RETURN_ERROR(\n"
        "      device_index > 0,\n"
        "      InvalidArgument,\n"
        '      "aoti_torch_create_cuda_stream_guard failed: device %d out of range",\n'
        "      static_cast<int>(device_index));\n"
    )
    line = _replace(tree, path, old, old + check) + 1
    return Regression(
        "stream-guard-device", path, line, f"run failure of aoti_torch_create_cuda_stream_guard; {path}:{line}"
    )


def scale_sdpa_by_dimension(tree: Path) -> Regression:
    """A wrong value from the SDPA Triton kernel: the backend's Python scales the scores by 1/D instead
    of 1/sqrt(D). The exported program's kernel is built from this Python at export, so only the sdpa
    program run and compared with eager shows it. Blame: the changed line of sdpa.py."""
    path = "backends/cuda/triton/kernels/sdpa.py"
    old = "sm_scale = 1.0 / math.sqrt(D) if scale == 0.0 else scale"
    line = _replace(tree, path, old, "sm_scale = 1.0 / D if scale == 0.0 else scale")
    return Regression("sdpa-scale", path, line, f"program-run sdpa: values differ from eager; {path}:{line}")


def comment_in_sort(tree: Path) -> Regression:
    """Quiet: a comment inside the sort shim."""
    path = "backends/cuda/runtime/shims/sort.cu"
    old = "    Tensor** ret1) {\n"
    line = _replace(tree, path, old, old + "  // Sorts along dim with thrust; indices are int64.\n") + 1
    return Regression("quiet-sort-comment", path, line, "nothing new at head")


def rename_in_memory(tree: Path) -> Regression:
    """Quiet: a local variable of aoti_torch_empty_strided renamed."""
    path = "backends/cuda/runtime/shims/memory.cpp"
    file = tree / path
    text = file.read_text()
    if "contig_strides" not in text:
        raise RegressionError(f"{path}: the text to edit is gone: 'contig_strides'")
    line = text[: text.index("contig_strides")].count("\n") + 1
    file.write_text(text.replace("contig_strides", "contiguous_strides"))
    return Regression("quiet-memory-rename", path, line, "nothing new at head")


def reorder_shim_sources(tree: Path) -> Regression:
    """Quiet: the shim library's first two sources listed the other way round."""
    path = "backends/cuda/CMakeLists.txt"
    old = "set(_aoti_cuda_shim_sources runtime/cuda_allocator.cpp runtime/shims/memory.cpp\n"
    line = _replace(
        tree, path, old, "set(_aoti_cuda_shim_sources runtime/shims/memory.cpp runtime/cuda_allocator.cpp\n"
    )
    return Regression("quiet-cmake-reorder", path, line, "nothing new at head")


def tree_diff(base: Path, head: Path) -> str:
    """A unified diff (a/ and b/ paths relative to the trees) of the files that differ."""
    paths = sorted({p.relative_to(root).as_posix() for root in (base, head) for p in root.rglob("*") if p.is_file()})
    chunks = []
    for path in paths:
        old = (base / path).read_text(errors="replace").splitlines(keepends=True) if (base / path).is_file() else []
        new = (head / path).read_text(errors="replace").splitlines(keepends=True) if (head / path).is_file() else []
        if old != new:
            chunks += difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", n=3)
    return "".join(chunks)


REGRESSIONS = {
    "no-whole-archive": drop_whole_archive,
    "static-shim": make_shim_static,
    "cu-syntax-error": break_cuda_syntax,
    "tensor-attribute": join_tensor_attribute,
    "sort-wrong-index": shift_sort_indices,
    "drop-cuda-guard": drop_cuda_guard,
    "hidden-visibility": hide_shims,
    "empty-strided-check": refuse_two_dimensions,
    "int4mm-group": halve_int4_group,
    "stream-guard-device": refuse_device_zero,
    "sdpa-scale": scale_sdpa_by_dimension,
}
# Edits that change nothing the smoke job can observe: each must report nothing new at head.
QUIET = {
    "quiet-sort-comment": comment_in_sort,
    "quiet-memory-rename": rename_in_memory,
    "quiet-cmake-reorder": reorder_shim_sources,
}


def main(argv: list[str]) -> int:
    if argv[:1] == ["extract"] and len(argv) == 4:
        print(extract(Path(argv[1]), argv[2], Path(argv[3])))
        return 0
    if argv[:1] == ["apply"] and len(argv) == 3 and argv[1] in {**REGRESSIONS, **QUIET}:
        print(json.dumps(asdict({**REGRESSIONS, **QUIET}[argv[1]](Path(argv[2])))))
        return 0
    if argv[:1] == ["diff"] and len(argv) == 3:
        sys.stdout.write(tree_diff(Path(argv[1]), Path(argv[2])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
