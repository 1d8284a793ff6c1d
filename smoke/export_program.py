"""Export the runtime canary to an ExecuTorch program (.pte + .ptd) delegated to CudaBackend.

Run in its own process by smoke/program_run.py, with torch and the `executorch` wheel importable:

    python export_program.py OUT_DIR [TREE]

With TREE, the pull request's own Python of the backend (TREE/backends/cuda and TREE/backends/aoti)
is laid over the installed wheel through a package of symbolic links (OUT_DIR/overlay/executorch: the
wheel's entries, with those two directories pointing into the tree), so the partitioner and the
preprocess that run are the pull request's; exir and the rest are the wheel's. Without TREE, the
wheel's own. Which one ran is in the result, read from the imported module's file.

The canary sorts rows of 2048 values (stable): Inductor lowers a sort that wide by the fallback
`aten.sort.stable`, which the backend maps to its own thrust kernel (backends/cuda/runtime/shims/sort.cu,
aoti_torch_cuda_sort_stable), so the pull request's .cu code runs. Values plus indices come out as
one float32 tensor: a wrong index shows as much as a wrong value.

Writes OUT_DIR/model.pte, the .ptd file(s), input.bin and expected.bin (raw float32, eager on the GPU);
prints one JSON object as its last line. Only the standard library is imported at module level.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import sys
import time
from pathlib import Path

ROWS, COLUMNS = 8, 2048
EXPORT_EXIT_IMPORT = 3  # the exporter did not import: the caller retries with the wheel's


def lay_over(out_dir: Path, tree: Path) -> Path:
    """A package directory that is the wheel's `executorch` with backends/cuda and backends/aoti taken
    from the tree; returns the directory to put first on sys.path."""
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the executorch wheel is not installed")
    wheel = Path(next(iter(spec.submodule_search_locations)))
    root = out_dir / "overlay"
    package = root / "executorch"
    backends = package / "backends"
    backends.mkdir(parents=True, exist_ok=True)
    for entry in wheel.iterdir():
        if entry.name != "backends" and not (package / entry.name).exists():
            (package / entry.name).symlink_to(entry)
    for entry in (wheel / "backends").iterdir():
        if entry.name not in ("cuda", "aoti") and not (backends / entry.name).exists():
            (backends / entry.name).symlink_to(entry)
    for name in ("cuda", "aoti"):
        if not (backends / name).exists():
            (backends / name).symlink_to(tree / "backends" / name, target_is_directory=True)
    return root


def export(out_dir: Path, tree: Path | None) -> dict:
    if tree is not None:
        sys.path.insert(0, str(lay_over(out_dir, tree)))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(out_dir / "inductor-cache"))
    import torch  # pyright: ignore[reportMissingImports] - only on the GPU runner

    try:
        from executorch.backends.cuda.cuda_backend import CudaBackend  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.backends.cuda.cuda_partitioner import CudaPartitioner  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.exir.passes import MemoryPlanningPass  # pyright: ignore[reportMissingImports] - only on the GPU runner
    except Exception as error:  # the pull request's Python may not import over this wheel
        print(json.dumps({"import_error": f"{type(error).__name__}: {error}"}))
        raise SystemExit(EXPORT_EXIT_IMPORT) from error
    import executorch.backends.cuda.cuda_backend as backend_module  # pyright: ignore[reportMissingImports] - only on the GPU runner

    class SortCanary(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(COLUMNS))

        def forward(self, x):
            values, indices = torch.sort(x * self.weight + 0.5, dim=-1, stable=True)
            return values + indices.to(torch.float32)

    torch.manual_seed(0)
    model = SortCanary().to("cuda").eval()
    example = torch.randn(ROWS, COLUMNS, device="cuda")
    with torch.no_grad():
        expected = model(example)
    for name, tensor in (("input.bin", example), ("expected.bin", expected)):
        values = tensor.detach().cpu().flatten().tolist()
        (out_dir / name).write_bytes(struct.pack(f"<{len(values)}f", *values))
    started = time.monotonic()
    with torch.no_grad():
        exported = torch.export.export(model, (example,), strict=True)
    specs = [CudaBackend.generate_method_name_compile_spec("forward")]
    lowered = to_edge_transform_and_lower(
        exported,
        partitioner=[CudaPartitioner(specs)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False, _skip_dim_order=True),
    )
    program = lowered.to_executorch(
        config=ExecutorchBackendConfig(
            extract_delegate_segments=True,
            do_quant_fusion_and_const_prop=True,
            memory_planning_pass=MemoryPlanningPass(alloc_graph_input=False),
        )
    )
    with open(out_dir / "model.pte", "wb") as file:
        program.write_to_file(file)
    program.write_tensor_data_to_file(str(out_dir))
    return {
        "torch_version": torch.__version__,
        "backend_module": backend_module.__file__,
        "exporter": "tree"
        if tree is not None and str(tree) in os.path.realpath(backend_module.__file__ or "")
        else "wheel",
        "pte": str(out_dir / "model.pte"),
        "ptd": sorted(str(path) for path in out_dir.glob("*.ptd")),
        "input_shape": [ROWS, COLUMNS],
        "export_seconds": round(time.monotonic() - started, 3),
    }


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(argv[0]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    print(json.dumps(export(out_dir, Path(argv[1]).resolve() if len(argv) == 2 else None)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
