"""Time the CMake model and the C++ facts of ExecuTorch's CUDA directories, cold and warm.

    python bench/bench_cmake_cpp.py [--repo PATH] [--revision REV]

Cold: empty parse caches and a fresh tree (blobs read from git). Warm: the same work again on
the same tree, which is what a second model of one revision costs (base and head share most
files). Uses the ExecuTorch mirror when present, else a generated tree of ~200 CMake files
built in a temporary git repository.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.cmake.blocks import clear_caches
from bot.cmake.interpreter import evaluate_cmake_dirs
from bot.cmake.profiles import DEFAULT_PROFILE, PROFILES
from bot.cpp.declarations import is_source_path, source_facts_in_tree
from bot.repo import GitRepository
from bot.store.memo import current
from bot.tree import FileTree

DEFAULT_MIRROR = Path("/work/.mirror/pytorch+executorch/repo")
CUDA_DIRS = ("extension/cuda", "backends/aoti", "backends/cuda")
GENERATED_DIRECTORIES = 200


def run_once(tree: FileTree, dirs: tuple[str, ...], source_prefixes: tuple[str, ...]) -> tuple[int, int]:
    """One full pass: every profile's model of `dirs`, and the facts of every source below them."""
    targets = 0
    for profile in (DEFAULT_PROFILE, PROFILES["msvc"], PROFILES["cpu-only"]):
        targets += len(evaluate_cmake_dirs(tree, profile, dirs).targets)
    sources = [p for p in tree.paths() if p.startswith(source_prefixes) and is_source_path(p)]
    tree.prefetch(sources)
    for path in sources:
        source_facts_in_tree(tree, path)
    return targets, len(sources)


def timed(action) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def generated_repository(directory: Path) -> tuple[str, ...]:
    """Write a synthetic ExecuTorch-shaped tree (self-written CMake and sources) and commit it."""
    (directory / "tools/cmake/common").mkdir(parents=True)
    (directory / "tools/cmake/preset").mkdir(parents=True)
    (directory / "tools/cmake/common/preset.cmake").write_text(
        "macro(define_overridable_option NAME DOC KIND DEFAULT)\n"
        '  if(NOT DEFINED CACHE{${NAME}})\n    set(${NAME} ${DEFAULT} CACHE ${KIND} "${DOC}")\n  endif()\n'
        "endmacro()\n"
    )
    (directory / "tools/cmake/preset/default.cmake").write_text(
        "".join(
            f'define_overridable_option(GEN_OPTION_{i} "option {i}" BOOL {"ON" if i % 2 else "OFF"})\n'
            for i in range(60)
        )
    )
    (directory / "tools/cmake/Utils.cmake").write_text(
        "function(gen_keep target)\n  get_target_property(_kind ${target} TYPE)\n"
        '  if(_kind STREQUAL "STATIC_LIBRARY" AND NOT MSVC)\n'
        '    target_link_options(${target} INTERFACE "SHELL:LINKER:--whole-archive $<TARGET_FILE:${target}> '
        'LINKER:--no-whole-archive")\n  endif()\nendfunction()\n'
    )
    dirs = []
    for i in range(GENERATED_DIRECTORIES):
        name = f"backends/gen{i:03d}"
        dirs.append(name)
        root = directory / name
        (root / "src").mkdir(parents=True)
        (root / "CMakeLists.txt").write_text(
            f"include(${{CMAKE_CURRENT_SOURCE_DIR}}/../../tools/cmake/Utils.cmake)\n"
            f'set(_flag "")\nif(NOT MSVC)\n  if(APPLE)\n    set(_flag -Wl,-export_dynamic)\n'
            f"  else()\n    set(_flag -Wl,--export-dynamic)\n  endif()\nendif()\n"
            f"set(_srcs src/a.cpp src/b.cpp)\nif(GEN_OPTION_{i % 60})\n  list(APPEND _srcs src/k.cu)\nendif()\n"
            f"foreach(_n RANGE 3)\n  list(APPEND _extra src/extra_${{_n}}.cpp)\nendforeach()\n"
            f"add_library(gen{i}_core STATIC ${{_srcs}})\n"
            f"target_compile_options(gen{i}_core PUBLIC $<$<AND:$<COMPILE_LANGUAGE:CXX>,"
            f"$<NOT:$<CXX_COMPILER_ID:MSVC>>>:-fexceptions -frtti>)\n"
            f"if(_flag)\n  target_link_options(gen{i}_core PUBLIC ${{_flag}})\nendif()\n"
            f"gen_keep(gen{i}_core)\n"
            f"add_library(gen{i}_shared SHARED ${{_extra}})\n"
            f"target_link_libraries(gen{i}_shared PRIVATE -Wl,--whole-archive gen{i}_core -Wl,--no-whole-archive)\n"
            f"install(TARGETS gen{i}_core gen{i}_shared DESTINATION lib)\n"
        )
        if i < 100:
            (root / "src/a.cpp").write_text(
                '#include <cstdint>\n#ifdef __cplusplus\nextern "C" {\n#endif\n'
                + "".join(f"int gen_{i}_f{j}(int x) {{ return x + {j}; }}\n" for j in range(20))
                + "#ifdef __cplusplus\n}\n#endif\n"
            )
            (root / "src/k.cu").write_text(
                "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n__global__ void k(float* x) { x[0] = 1; }\n#endif\n"
            )
    subprocess.run(["git", "init", "-q", str(directory)], check=True)
    subprocess.run(["git", "-C", str(directory), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(directory),
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "commit",
            "-q",
            "-m",
            "generated",
        ],
        check=True,
    )
    return tuple(dirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=None, help="an ExecuTorch git repository (bare is fine)")
    parser.add_argument("--revision", default=None, help="revision to read (default: refs/heads/main, else HEAD)")
    args = parser.parse_args(argv)

    repo_path = args.repo or (DEFAULT_MIRROR if DEFAULT_MIRROR.exists() else None)
    if repo_path is not None and not repo_path.exists():
        print(f"bench_cmake_cpp: no repository at {repo_path}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pr-check-bench-") as scratch:
        if repo_path is not None:
            dirs, prefixes = CUDA_DIRS, tuple(d + "/" for d in CUDA_DIRS)
            repository = GitRepository(repo_path)
            revision = args.revision or "refs/heads/main"
            label = f"{repo_path} @ {revision}"
        else:
            dirs = generated_repository(Path(scratch))
            prefixes = ("backends/",)
            repository = GitRepository(scratch)
            revision = args.revision or "HEAD"
            label = f"generated tree ({GENERATED_DIRECTORIES} CMake directories)"

        clear_caches()
        current().forget("cpp-source-facts")
        cold, (targets, sources) = timed(lambda: run_once(repository.tree(revision), dirs, prefixes))
        tree = repository.tree(revision)
        run_once(tree, dirs, prefixes)  # read this tree's blobs once
        warm, _ = timed(lambda: run_once(tree, dirs, prefixes))
        fresh_tree, _ = timed(lambda: run_once(repository.tree(revision), dirs, prefixes))

    print(f"source: {label}")
    print(f"work:   3 profiles x {len(dirs)} CMake directories ({targets} targets), C++ facts of {sources} files")
    print(f"cold:   {cold * 1000:8.1f} ms  (empty caches, blobs read from git)")
    print(f"warm:   {warm * 1000:8.1f} ms  (same tree again)")
    print(f"warm, new tree object: {fresh_tree * 1000:8.1f} ms  (caches by blob id, blobs re-read)")
    print(f"ratio cold/warm: {cold / warm:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
