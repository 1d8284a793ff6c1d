"""The canary: a tiny CUDA model compiled with AOTInductor, then run from its package against eager.

Two commands, each in its own process, so that importing torch, and any crash in compiled code, cannot
take the smoke runner down, and so that a crash while loading the package still leaves the compiled
wrapper for the runner to inspect:

    python canary_model.py compile OUT_DIR   # writes OUT_DIR/canary.pt2 and the eager reference
    python canary_model.py run OUT_DIR       # loads the package in a fresh process, compares

Each prints one JSON object as its last stdout line. Only the standard library is imported at module
level: the runner never imports this file.
"""

from __future__ import annotations

import faulthandler
import json
import os
import struct
import sys
import time
from pathlib import Path

# matmul goes through cuBLAS on both sides, so differences come only from the fused relu/sort: tiny.
TOLERANCE = {"rtol": 1e-3, "atol": 1e-3}
# Autotuning would benchmark many kernel variants: minutes, for a model whose speed nobody measures.
INDUCTOR_OPTIONS = {"max_autotune": False}
PACKAGE_NAME = "canary.pt2"
REFERENCE_NAME = "eager-reference.pt"


def build_model(torch):
    """matmul + relu + sort: the operators of the first measured H200 run, whose wrapper needed 23 shims."""

    class Canary(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(64, 64))

        def forward(self, x):
            return torch.sort(torch.relu(x @ self.weight), dim=-1).values

    return Canary()


def compile_canary(out_dir: Path) -> dict:
    """Export and compile the model into a package; save the input and eager output beside it."""
    torch = _import_torch(out_dir)
    torch.manual_seed(0)
    model = build_model(torch).to("cuda").eval()
    example = torch.randn(32, 64, device="cuda")
    with torch.no_grad():
        torch.save({"input": example.cpu(), "output": model(example).cpu()}, out_dir / REFERENCE_NAME)
    progress("exporting and compiling")
    started = time.monotonic()
    exported = torch.export.export(model, (example,))
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(out_dir / PACKAGE_NAME), inductor_configs=dict(INDUCTOR_OPTIONS)
    )
    return {
        "torch_version": torch.__version__,
        # The compiler Inductor built the wrapper with: the runner's choice, passed as $CXX.
        "cxx": _inductor_compiler(torch),
        "device_name": torch.cuda.get_device_name(0),
        "package": str(package),
        "compile_seconds": round(time.monotonic() - started, 3),
    }


def run_canary(out_dir: Path) -> dict:
    """Load the package with aoti_load_package, run it and compare with the saved eager output."""
    torch = _import_torch(out_dir)
    reference = torch.load(out_dir / REFERENCE_NAME)
    example, expected = reference["input"].to("cuda"), reference["output"].to("cuda")
    progress("loading the package")
    started = time.monotonic()
    compiled = torch._inductor.aoti_load_package(str(out_dir / PACKAGE_NAME))
    progress("running the compiled model")
    with torch.no_grad():
        actual = compiled(example)
    actual = actual[0] if isinstance(actual, (list, tuple)) else actual
    torch.cuda.synchronize()
    progress("comparing with eager")
    return {
        "load_and_run_seconds": round(time.monotonic() - started, 3),
        "matches_eager": bool(torch.allclose(actual, expected, **TOLERANCE)),
        "max_abs_diff": float((actual - expected).abs().max().item()),
        "tolerance": TOLERANCE,
    }


def _import_torch(out_dir: Path):
    # Set before torch._inductor is imported, which reads it once: a fresh cache per run means the
    # wrapper really is compiled here, by this machine's toolchain (the runner sets the same path).
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(out_dir / "inductor-cache")
    import torch  # pyright: ignore[reportMissingImports] - only on the GPU runner

    return torch


def _inductor_compiler(torch) -> str:
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler  # pyright: ignore[reportMissingImports] - only on the GPU runner

        return str(get_cpp_compiler())
    except Exception as error:  # a private API: its absence must not fail the canary
        return f"unknown ({type(error).__name__}: {error})"


def progress(phase: str) -> None:
    """Say which phase is running, so a crash in native code is placed by the last line on stderr."""
    print(f"canary: {phase}", file=sys.stderr, flush=True)


# The backend's own settings (backends/cuda/cuda_backend.py): no libtorch, kernels inside the library, so
# every aoti_torch_* the wrapper calls must come from the host, here the pull request's compiled shims.
STANDALONE_OPTIONS = {
    "max_autotune": False,
    "aot_inductor.link_libtorch": False,
    "aot_inductor.embed_kernel_binary": True,
    "aot_inductor.package_constants_in_so": True,
}
STANDALONE_NAME = "standalone.pt2"


def build_standalone_model(torch):
    """Pointwise + sort: Triton kernels and the sort shim ExecuTorch implements; no matmul, whose
    fallback (aoti_torch_cuda_mm_out) the backend leaves to Triton autotuning, minutes a smoke run skips."""

    class Standalone(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(64))

        def forward(self, x):
            return torch.sort(torch.relu(x * self.weight + 0.5), dim=-1).values

    return Standalone()


def compile_standalone(out_dir: Path) -> dict:
    """The backend's kind of wrapper, with its input and eager output as raw float32 for a C++ runner."""
    torch = _import_torch(out_dir)
    torch.manual_seed(0)
    model = build_standalone_model(torch).to("cuda").eval()
    example = torch.randn(32, 64, device="cuda")
    with torch.no_grad():
        expected = model(example)
    # struct, not numpy: the GPU machine's PyTorch may come without numpy.
    for name, tensor in (("standalone-input.bin", example), ("standalone-expected.bin", expected)):
        values = tensor.cpu().flatten().tolist()
        (out_dir / name).write_bytes(struct.pack(f"<{len(values)}f", *values))
    progress("exporting and compiling the standalone wrapper")
    started = time.monotonic()
    exported = torch.export.export(model, (example,))
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(out_dir / STANDALONE_NAME), inductor_configs=dict(STANDALONE_OPTIONS)
    )
    return {
        "torch_version": torch.__version__,
        "package": str(package),
        "input_shape": list(example.shape),
        "output_shape": list(expected.shape),
        "compile_seconds": round(time.monotonic() - started, 3),
    }


COMMANDS = {"compile": compile_canary, "run": run_canary, "compile-standalone": compile_standalone}


def main(argv: list[str]) -> int:
    # A crash in compiled code (SIGSEGV) then leaves a Python traceback on stderr, not just an exit code.
    faulthandler.enable()
    command, out_dir = COMMANDS[argv[1]], Path(argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    # Flushed at once: stdout is a pipe, and a crash during interpreter shutdown must not lose the result.
    print(json.dumps(command(out_dir)), flush=True)
    progress("exiting")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
