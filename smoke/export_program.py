"""Export one program of the catalogue (programs.json) to an ExecuTorch program (.pte + .ptd) delegated to
CudaBackend.

Run in its own process by smoke/program_run.py, with torch and the `executorch` wheel importable:

    python export_program.py NAME OUT_DIR [TREE]

With TREE, the pull request's own Python of the backend (TREE/backends/cuda and TREE/backends/aoti)
is laid over the installed wheel through a package of symbolic links (OUT_DIR/overlay/executorch: the
wheel's entries, with those two directories pointing into the tree), so the partitioner and the
preprocess that run are the pull request's; exir and the rest are the wheel's. Without TREE, the
wheel's own. Which one ran is in the result, read from the imported module's file.

Each program takes one float32 input and returns one float32 output, so the runtime host runs them all
alike: `sort` (aten.sort.stable over rows of 2048, which the backend maps to its thrust kernel in
backends/cuda/runtime/shims/sort.cu; values plus indices, so a wrong index shows), `tensor` (views,
slices and copies: the memory and tensor shims), `int4mm` (aten._weight_int4pack_mm with a packed
constant: int4mm.cu), `sdpa` (scaled_dot_product_attention: the backend's SDPA path).

Writes OUT_DIR/model.pte, the .ptd file(s), input.bin and expected.bin (raw float32, eager on the GPU);
prints one JSON object as its last line. Only the standard library is imported at module level.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import struct
import sys
import time
from pathlib import Path

EXPORT_EXIT_IMPORT = 3  # the exporter did not import: the caller retries with the wheel's
CATALOGUE = Path(__file__).with_name("programs.json")


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


def export(out_dir: Path, tree: Path | None, name: str) -> dict:
    if tree is not None:
        sys.path.insert(0, str(lay_over(out_dir, tree)))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(out_dir / "inductor-cache"))
    import torch  # pyright: ignore[reportMissingImports] - only on the GPU runner

    try:
        from executorch.backends.cuda.cuda_backend import CudaBackend  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.backends.cuda.cuda_partitioner import CudaPartitioner  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.exir.backend.compile_spec_schema import CompileSpec  # pyright: ignore[reportMissingImports] - only on the GPU runner
        from executorch.exir.passes import MemoryPlanningPass  # pyright: ignore[reportMissingImports] - only on the GPU runner
    except Exception as error:  # the pull request's Python may not import over this wheel
        print(json.dumps({"import_error": f"{type(error).__name__}: {error}"}))
        raise SystemExit(EXPORT_EXIT_IMPORT) from error
    import executorch.backends.cuda.cuda_backend as backend_module  # pyright: ignore[reportMissingImports] - only on the GPU runner

    torch.manual_seed(0)
    model, example = build_program(torch, name)
    with torch.no_grad():
        expected = model(example)
    for file_name, tensor in (("input.bin", example), ("expected.bin", expected)):
        values = tensor.detach().float().cpu().flatten().tolist()
        (out_dir / file_name).write_bytes(struct.pack(f"<{len(values)}f", *values))
    started = time.monotonic()
    with torch.no_grad():
        exported = torch.export.export(model, (example,), strict=True)
    specs = [CudaBackend.generate_method_name_compile_spec("forward")]
    if "max_autotune" in inspect.getsource(CudaBackend):  # trees that know the spec: no minutes of tuning
        specs.append(CompileSpec("max_autotune", b"OFF"))
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
        "program": name,
        "input_shape": list(example.shape),
        "export_seconds": round(time.monotonic() - started, 3),
    }


def build_program(torch, name: str):
    """The model of catalogue entry `name` (programs.json) on the GPU, and its one float32 input."""
    catalogue = {entry["name"]: entry for entry in json.loads(CATALOGUE.read_text())["programs"]}
    rows, columns = catalogue[name]["input"]
    example = torch.randn(rows, columns, device="cuda")
    nn = torch.nn

    class Sort(nn.Module):
        """aten.sort.stable over rows of 2048: Inductor's fallback, the backend's thrust kernel (sort.cu)."""

        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(columns))

        def forward(self, x):
            values, indices = torch.sort(x * self.weight + 0.5, dim=-1, stable=True)
            return values + indices.to(torch.float32)

    class Tensor(nn.Module):
        """Views, a transpose made contiguous, a slice and a reshape: the memory and tensor shims."""

        def forward(self, x):
            transposed = x.t().contiguous()
            sliced = transposed[:, 1:] * 2.0 + 1.0
            return torch.cat([sliced.reshape(columns, rows - 1), transposed[:, :1]], dim=1)

    class Int4Matmul(nn.Module):
        """aten._weight_int4pack_mm with a packed constant: the backend's int4mm.cu fallback."""

        def __init__(self) -> None:
            super().__init__()
            out_features, group = 128, 128
            values = torch.randint(0, 16, (out_features, columns), dtype=torch.int32, device="cuda")
            packed_bytes = (values[:, ::2] << 4 | values[:, 1::2]).to(torch.uint8)
            self.register_buffer("packed", torch.ops.aten._convert_weight_to_int4pack(packed_bytes, 8))
            scales = torch.rand(columns // group, out_features, 1, device="cuda") * 0.02 + 0.01
            zeros = torch.randn(columns // group, out_features, 1, device="cuda") * 0.01
            self.register_buffer("scales_and_zeros", torch.cat([scales, zeros], dim=2).to(torch.bfloat16))
            self.group = group

        def forward(self, x):
            result = torch.ops.aten._weight_int4pack_mm(
                x.to(torch.bfloat16), self.packed, self.group, self.scales_and_zeros
            )
            return result.to(torch.float32)

    class Attention(nn.Module):
        """scaled_dot_product_attention over 4 heads of 64 in bfloat16: the backend's SDPA path, its Triton
        kernel (backends/cuda/triton/kernels/sdpa.py), which refuses any other dtype ("Expected bfloat16
        inputs"), so a float32 attention fails the export instead of running the kernel."""

        def forward(self, x):
            heads = x.reshape(1, 4, rows // 4, columns).to(torch.bfloat16)
            attended = torch.nn.functional.scaled_dot_product_attention(heads, heads * 0.5, heads + 1.0)
            return attended.reshape(rows, columns).to(torch.float32)

    models = {"sort": Sort, "tensor": Tensor, "int4mm": Int4Matmul, "sdpa": Attention}
    return models[name]().to("cuda").eval(), example


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    name, out_dir = argv[0], Path(argv[1]).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    print(json.dumps(export(out_dir, Path(argv[2]).resolve() if len(argv) == 3 else None, name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
