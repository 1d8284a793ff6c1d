"""The load-run stage: an AOTInductor wrapper built as the CUDA backend builds them (no libtorch), loaded
and run through the pull request's compiled libaoti_cuda_shims.so, its output compared with eager.

Where it stops: csrc/run_wrapper.cpp drives the wrapper's model container directly, as the backend's
`CudaBackend::init`/`execute` do, rather than through the backend itself: the backend's host also needs
the core runtime (executorch_core), whose sources the CMake model cannot evaluate. The shims, the
wrapper and the CUDA kernels are the real ones. Without a GPU the stage is skipped, never failed.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import zipfile
from pathlib import Path

from smoke.backend_build import Toolset
from smoke.canary import CANARY_SCRIPT, CHILD_BOOTSTRAP, describe_child_failure
from smoke.commands import run_command
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols
from smoke.machine import MachineFacts
from smoke.report import StageOutcome

RUNNER_SOURCE = Path(__file__).with_name("csrc") / "run_wrapper.cpp"
CANARY_TIMEOUT_S = 900
RUN_TIMEOUT_S = 300
TOLERANCE = 1e-3
SHIM_PREFIX = "aoti_torch_"
STOPPED_AT = ("the wrapper's model container is driven directly (run_wrapper.cpp), not through "
              "CudaBackend::init/execute: the backend's host also needs executorch_core, whose sources the "
              "CMake model cannot evaluate")


def prepare_wrapper(facts: MachineFacts, work_dir: Path) -> tuple[dict | None, StageOutcome | None]:
    """Compile the standalone canary once into work_dir (kept: later runs on the same machine reuse it)."""
    if not facts.has_gpu:
        return None, StageOutcome("skipped", "no GPU: loading and running the wrapper needs one")
    if not facts.torch.importable or not facts.torch.cuda_available:
        return None, StageOutcome("skipped", f"PyTorch with CUDA is not usable here: {facts.torch.error}")
    record, failure = work_dir / "standalone.json", work_dir / "standalone-failed.json"
    if record.is_file():
        return json.loads(record.read_text()), None
    if failure.is_file():  # one failed compile per machine: the next runs report it without minutes more
        earlier = json.loads(failure.read_text())
        return None, StageOutcome("failed", earlier["reason"], earlier["details"])
    work_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", CHILD_BOOTSTRAP, str(CANARY_SCRIPT), "compile-standalone", str(work_dir)]
    result = run_command(argv, timeout=CANARY_TIMEOUT_S, cwd=work_dir,
                         env=_child_environment(work_dir))
    try:
        compiled = json.loads(result.stdout.strip().splitlines()[-1]) if result.ok else None
    except (IndexError, json.JSONDecodeError):
        compiled = None
    if compiled is None:
        outcome = StageOutcome("failed", f"compiling the standalone canary failed: {describe_child_failure(result)}",
                               {"compile": result.to_json()})
        failure.write_text(json.dumps({"reason": outcome.reason, "details": outcome.details}))
        return None, outcome
    with zipfile.ZipFile(compiled["package"]) as archive:
        archive.extractall(work_dir / "package")
    libraries = sorted((work_dir / "package").rglob("*.so"))
    if not libraries:
        return None, StageOutcome("failed", "the standalone canary package holds no library")
    compiled["wrapper"] = str(max(libraries, key=lambda path: len(_needed_shims(path))))
    compiled["needed_symbols"] = sorted(_needed_shims(Path(compiled["wrapper"])))
    record.write_text(json.dumps(compiled))
    return compiled, None


def _child_environment(work_dir: Path) -> dict[str, str]:
    import os

    return {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work_dir / "inductor-cache")}


def _needed_shims(path: Path) -> frozenset[str]:
    try:
        return frozenset(name for name in read_dynamic_symbols(path).undefined if name.startswith(SHIM_PREFIX))
    except SymbolReadError:
        return frozenset()


def load_and_run(wrapper: dict, shims: Path, exported: frozenset[str], tools: Toolset, work_dir: Path) -> StageOutcome:
    """Link the runner against the PR's shims, load the wrapper, run it, compare with eager."""
    needed = set(wrapper["needed_symbols"])
    missing = sorted(needed - exported)
    details: dict = {"wrapper": wrapper["wrapper"], "needed_symbols": sorted(needed), "missing": missing,
                     "stopped_at": STOPPED_AT}
    work_dir.mkdir(parents=True, exist_ok=True)
    runner = work_dir / "run_wrapper"
    # --allow-shlib-undefined: the shim library leaves the core runtime to its host (see the module docstring).
    link = run_command([tools.cxx or "c++", "-O1", f"-I{tools.cuda_include}", str(RUNNER_SOURCE), "-o", str(runner),
                        str(shims), f"-L{tools.cuda_lib}", "-lcudart", "-ldl", "-Wl,--allow-shlib-undefined",
                        f"-Wl,-rpath,{shims.parent}", f"-Wl,-rpath,{tools.cuda_lib}"], timeout=RUN_TIMEOUT_S)
    details["link"] = link.to_json()
    if not link.ok:
        return StageOutcome("failed", f"linking the runner against {shims.name} failed", details)
    rows, columns = wrapper["input_shape"]
    output = work_dir / "output.bin"
    input_path = Path(wrapper["package"]).parent / "standalone-input.bin"
    ran = run_command([str(runner), wrapper["wrapper"], str(input_path), str(rows), str(columns), str(output)],
                      timeout=RUN_TIMEOUT_S)
    details["run"] = ran.to_json()
    lines = ran.stdout.splitlines()
    failure = next((line for line in lines if line.startswith(("dlopen failed: ", "failed: "))), None)
    if failure or not ran.ok:
        why = failure or describe_child_failure(ran)
        hint = f" ({len(missing)} needed shim(s) not exported: {', '.join(missing[:5])})" if missing else ""
        return StageOutcome("failed", f"the wrapper did not load and run through {shims.name}: {why}{hint}", details)
    expected = _floats(Path(wrapper["package"]).parent / "standalone-expected.bin")
    actual = _floats(output)
    if len(actual) != len(expected):
        return StageOutcome("failed", f"the wrapper returned {len(actual)} values, eager {len(expected)}", details)
    difference = max((abs(a - e) for a, e in zip(actual, expected)), default=0.0)
    details["max_abs_diff"] = difference
    if math.isnan(difference) or difference > TOLERANCE:
        return StageOutcome("failed", f"output differs from eager: max abs diff {difference:.3g}", details)
    return StageOutcome("passed", f"the wrapper ({len(needed)} {SHIM_PREFIX}* needed) loaded through {shims.name} "
                                  f"and ran; matches eager (max abs diff {difference:.3g})", details)


def _floats(path: Path) -> list[float]:
    data = path.read_bytes()
    return list(struct.unpack(f"<{len(data) // 4}f", data))
