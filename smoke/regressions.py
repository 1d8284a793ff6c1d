"""The real tree's CUDA backend subtree, and the regressions the smoke job must catch, made on a copy.

Used by the tests (with a fetched mirror) and by smoke/device/pack_tree.sh. Each regression edits an
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
}


def main(argv: list[str]) -> int:
    if argv[:1] == ["extract"] and len(argv) == 4:
        print(extract(Path(argv[1]), argv[2], Path(argv[3])))
        return 0
    if argv[:1] == ["apply"] and len(argv) == 3 and argv[1] in REGRESSIONS:
        print(json.dumps(asdict(REGRESSIONS[argv[1]](Path(argv[2])))))
        return 0
    if argv[:1] == ["diff"] and len(argv) == 3:
        sys.stdout.write(tree_diff(Path(argv[1]), Path(argv[2])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
