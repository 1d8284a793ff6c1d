"""The program-run stage: an ExecuTorch program (.pte + .ptd) exported with the pull request's backend
Python (smoke/export_program.py), loaded and run by the pull request's own runtime in
csrc/runtime_host.cpp (Program::load, load_method -> CudaBackend::init, execute -> CudaBackend::execute),
its output compared with eager.

When the output differs, the stage names the CUDA kernels the program's AOTInductor wrapper calls that
the pull request's .cu sources define (the wrapper's undefined aoti_torch_* symbols against the symbols
each compiled .cu object defines), so that compare() can place a wrong result at the line a pull request
changed in one of them. Without a GPU, skipped.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import sys
from pathlib import Path

from smoke.canary import describe_child_failure
from smoke.commands import run_command
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols
from smoke.machine import MachineFacts
from smoke.report import StageOutcome

EXPORT_SCRIPT = Path(__file__).with_name("export_program.py")
EXPORT_TIMEOUT_S = 480
RUN_TIMEOUT_S = 300
TOLERANCE = 1e-4
SHIM_PREFIX = "aoti_torch_"
EXPORT_EXIT_IMPORT = 3
ELF_MAGIC = b"\x7fELF"


def python_key(tree: Path) -> str:
    """What the export depends on in the tree: its backend Python. Trees that share it share a program."""
    digest = hashlib.sha256()
    for directory in ("backends/cuda", "backends/aoti"):
        for path in sorted((tree / directory).rglob("*.py")):
            if "__pycache__" not in path.parts:
                digest.update(path.relative_to(tree).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def prepare_program(facts: MachineFacts, work_dir: Path, tree: Path) -> tuple[dict | None, StageOutcome | None]:
    """Export the canary once per distinct backend Python (kept under work_dir for later runs)."""
    if not facts.has_gpu:
        return None, StageOutcome("skipped", "no GPU: exporting with the CUDA backend and running need one")
    if not facts.torch.importable or not facts.torch.cuda_available:
        return None, StageOutcome("skipped", f"PyTorch with CUDA is not usable here: {facts.torch.error}")
    out_dir = work_dir / python_key(tree)
    record = out_dir / "program.json"
    if record.is_file():
        return json.loads(record.read_text()), None
    out_dir.mkdir(parents=True, exist_ok=True)
    exported = run_command(
        [sys.executable, str(EXPORT_SCRIPT), str(out_dir), str(tree)], timeout=EXPORT_TIMEOUT_S, cwd=out_dir
    )
    import_error = None
    if exported.returncode == EXPORT_EXIT_IMPORT:
        import_error = _last_json(exported.stdout).get("import_error", "did not import")
        exported = run_command(
            [sys.executable, str(EXPORT_SCRIPT), str(out_dir)], timeout=EXPORT_TIMEOUT_S, cwd=out_dir
        )
    result = _last_json(exported.stdout) if exported.ok else {}
    if "pte" not in result:
        if exported.returncode == EXPORT_EXIT_IMPORT:
            why = f"the executorch wheel's exporter does not import: {_last_json(exported.stdout).get('import_error')}"
        else:
            why = describe_child_failure(exported)
        return None, StageOutcome("failed", f"exporting the program failed: {why}", {"export": exported.to_json()})
    result["tree_python_import_error"] = import_error
    # The backend keeps the wrapper in the named data the .pte or the .ptd carries.
    wrapper = extract_wrapper([*result["ptd"], result["pte"]], out_dir / "wrapper.so")
    result["wrapper"] = str(wrapper) if wrapper else None
    result["needed_symbols"] = sorted(_needed(wrapper)) if wrapper else []
    record.write_text(json.dumps(result))
    return result, None


def _last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return {}


def extract_wrapper(ptd_files: list[str], destination: Path) -> Path | None:
    """The AOTInductor wrapper the .ptd carries (a whole ELF shared object among its segments), cut out
    by the size its own header gives: section headers come last, so e_shoff + e_shnum * e_shentsize."""
    for name in ptd_files:
        data = Path(name).read_bytes()
        start = data.find(ELF_MAGIC)
        while start >= 0:
            header = data[start : start + 64]
            if len(header) == 64 and header[4] == 2 and header[5] == 1:  # 64-bit, little-endian
                section_offset = struct.unpack_from("<Q", header, 0x28)[0]
                entry_size, count = struct.unpack_from("<HH", header, 0x3A)
                end = start + section_offset + entry_size * count
                if section_offset and end <= len(data):
                    destination.write_bytes(data[start:end])
                    return destination
            start = data.find(ELF_MAGIC, start + 4)
    return None


def _needed(path: Path) -> frozenset[str]:
    try:
        return frozenset(name for name in read_dynamic_symbols(path).undefined if name.startswith(SHIM_PREFIX))
    except SymbolReadError:
        return frozenset()


def run_program(program: dict, host: Path, kernels: dict[str, str], work_dir: Path) -> StageOutcome:
    """Run the program in the runtime host; kernels: aoti_torch_* symbol -> the .cu source defining it."""
    work_dir.mkdir(parents=True, exist_ok=True)
    called = {name: kernels[name] for name in program.get("needed_symbols", ()) if name in kernels}
    exporter = (
        "the pull request's backends/cuda and backends/aoti over the executorch wheel"
        if program.get("exporter") == "tree"
        else f"the executorch wheel's own backend Python (the tree's did not import: "
        f"{program.get('tree_python_import_error')})"
    )
    details: dict = {
        "pte": program["pte"],
        "ptd": program["ptd"],
        "host": str(host),
        "exporter": exporter,
        "backend_module": program.get("backend_module"),
        "wrapper": program.get("wrapper"),
        "needed_symbols": program.get("needed_symbols", []),
        "kernels_called": called,
    }
    rows, columns = program["input_shape"]
    directory = Path(program["pte"]).parent
    output = work_dir / "output.bin"
    output.unlink(missing_ok=True)
    ptd = next((name for name in program["ptd"] if "cuda" in Path(name).name), program["ptd"][0])
    ran = run_command(
        [str(host), program["pte"], ptd, str(directory / "input.bin"), str(rows), str(columns), str(output)],
        timeout=RUN_TIMEOUT_S,
    )
    details["run"] = ran.to_json()
    lines = ran.stdout.splitlines()
    details["lines"] = lines[-12:]
    registry = next((line.removeprefix("registered: ") for line in lines if line.startswith("registered: ")), None)
    failure = next((line for line in lines if line.startswith("failed: ")), None)
    if failure or not ran.ok:
        why = failure.removeprefix("failed: ") if failure else describe_child_failure(ran)
        log = _first_error_log(ran.stderr)
        return StageOutcome(
            "failed", f"{host.name} did not run the program: {why}" + (f"; {log}" if log else ""), details
        )
    expected, actual = _floats(directory / "expected.bin"), _floats(output)
    if len(actual) != len(expected):
        return StageOutcome("failed", f"the program returned {len(actual)} values, eager {len(expected)}", details)
    differences = [abs(a - e) for a, e in zip(actual, expected, strict=True)]
    worst = max(differences, default=0.0)
    wrong = sum(1 for value in differences if math.isnan(value) or value > TOLERANCE)
    details.update({"max_abs_diff": worst, "wrong_values": wrong, "values": len(expected)})
    if wrong:
        kernels_text = ", ".join(f"{name} ({source})" for name, source in sorted(called.items())) or "none found"
        return StageOutcome(
            "failed",
            f"CudaBackend::execute ran the program but {wrong} of {len(expected)} values "
            f"differ from eager (max abs diff {worst:.3g}); the wrapper calls these "
            f"kernels of the tree's .cu sources: {kernels_text}",
            details,
        )
    kernels_text = f"; it calls {', '.join(sorted(called))} from the tree's .cu sources" if called else ""
    return StageOutcome(
        "passed",
        f"{host.name} (CudaBackend registered: {registry}) loaded the .pte and .ptd "
        f"(exported by {exporter}), ran CudaBackend::init and ::execute; matches eager "
        f"(max abs diff {worst:.3g}){kernels_text}",
        details,
    )


def _first_error_log(stderr: str) -> str:
    """The runtime's first error log line (ET_LOG(Error, ...) is printed with an E prefix)."""
    for line in stderr.splitlines():
        # load_library's "Failed to promote symbols" is expected in a static host (the backend is in the
        # executable, which dlopen cannot reopen by name) and harmless: the wrapper resolves from it.
        if line.startswith("E ") and "promote symbols" not in line:
            return line.strip()[:300]
    return ""


def _floats(path: Path) -> list[float]:
    data = path.read_bytes() if path.is_file() else b""
    return list(struct.unpack(f"<{len(data) // 4}f", data[: len(data) // 4 * 4]))


def cuda_kernels(objects: list[tuple[str, Path]]) -> dict[str, str]:
    """aoti_torch_* symbol -> the .cu source whose object defines it; objects: (source, object path)."""
    from smoke.backend_stages import strong_definitions

    found: dict[str, str] = {}
    for source, path in objects:
        if source.endswith(".cu") and path.is_file():
            for name in strong_definitions(path):
                if name.startswith(SHIM_PREFIX):
                    found.setdefault(name, source)
    return found
