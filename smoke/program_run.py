"""The program-run stage: the exported programs the diff calls for (programs.json, chosen by the paths it
changes), each exported with the pull request's backend Python (export_program.py), loaded and run by the
pull request's own runtime in csrc/runtime_host.cpp (Program::load, load_method -> CudaBackend::init,
execute -> CudaBackend::execute), its output compared with eager at the catalogue's tolerance.

Each program's wrapper (cut out of its .ptd) says which aoti_torch_* shims it calls. A failed run keeps
its own error lines (runtime_errors.py), so that the comparison can name the shim and the line that
failed (blame.py). Exported programs are kept by content (the tree's backend Python, the exporter, the
program's name): a pull request that changes no Python exports nothing. Without a GPU, skipped.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from smoke.canary import describe_child_failure
from smoke.commands import CommandResult, run_command
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols
from smoke.machine import MachineFacts
from smoke.report import StageOutcome
from smoke.runtime_errors import read_runtime_errors

EXPORT_SCRIPT = Path(__file__).with_name("export_program.py")
CATALOGUE = Path(__file__).with_name("programs.json")
EXPORT_TIMEOUT_S = 300
RUN_TIMEOUT_S = 300
SHIM_PREFIX = "aoti_torch_"
EXPORT_EXIT_IMPORT = 3
ELF_MAGIC = b"\x7fELF"


def catalogue() -> list[dict]:
    return json.loads(CATALOGUE.read_text())["programs"]


def choose_programs(changed_paths: list[str]) -> list[str]:
    """The programs whose `reaches` prefixes a changed path starts with; the default ones when none does."""
    entries = catalogue()
    chosen = [
        entry["name"] for entry in entries if any(path.startswith(tuple(entry["reaches"])) for path in changed_paths)
    ]
    return chosen or [entry["name"] for entry in entries if entry["default"]]


def python_key(tree: Path) -> str:
    """What an export depends on besides its name: the tree's backend Python and the exporter itself."""
    digest = hashlib.sha256(EXPORT_SCRIPT.read_bytes() + CATALOGUE.read_bytes())
    for directory in ("backends/cuda", "backends/aoti"):
        for path in sorted((tree / directory).rglob("*.py")):
            if "__pycache__" not in path.parts:
                digest.update(path.relative_to(tree).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def prepare_programs(facts: MachineFacts, work_dir: Path, tree: Path, names: list[str]) -> dict[str, dict]:
    """Export each named program (in parallel, each in its own process; kept under work_dir by content).
    Per name: {"program": {...}} or {"problem": StageOutcome}."""
    if not facts.has_gpu:
        problem = StageOutcome("skipped", "no GPU: exporting with the CUDA backend and running need one")
        return {name: {"problem": problem} for name in names}
    if not facts.torch.importable or not facts.torch.cuda_available:
        problem = StageOutcome("skipped", f"PyTorch with CUDA is not usable here: {facts.torch.error}")
        return {name: {"problem": problem} for name in names}
    key = python_key(tree)
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        results = list(pool.map(lambda name: _prepare_one(work_dir / f"{key}-{name}", tree, name), names))
    return dict(zip(names, results, strict=True))


def _prepare_one(out_dir: Path, tree: Path, name: str) -> dict:
    record, failed = out_dir / "program.json", out_dir / "failed.json"
    if record.is_file():
        return {"program": {**json.loads(record.read_text()), "from_cache": True}}
    if failed.is_file():  # the same Python fails the same way: said again without minutes more
        kept = json.loads(failed.read_text())
        return {"problem": StageOutcome("failed", f"(kept) {kept['reason']}", kept["details"])}
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(EXPORT_SCRIPT), name, str(out_dir)]
    exported = run_command([*argv, str(tree)], timeout=EXPORT_TIMEOUT_S, cwd=out_dir)
    import_error = None
    if exported.returncode == EXPORT_EXIT_IMPORT:
        import_error = _last_json(exported.stdout).get("import_error", "did not import")
        exported = run_command(argv, timeout=EXPORT_TIMEOUT_S, cwd=out_dir)
    result = _last_json(exported.stdout) if exported.ok else {}
    if "pte" not in result:
        if exported.returncode == EXPORT_EXIT_IMPORT:
            why = f"the executorch wheel's exporter does not import: {_last_json(exported.stdout).get('import_error')}"
        else:
            why = describe_export_failure(exported)
        problem = StageOutcome("failed", f"exporting {name} failed: {why}", {"export": exported.to_json()})
        failed.write_text(json.dumps({"reason": problem.reason, "details": problem.details}))
        return {"problem": problem}
    result["tree_python_import_error"] = import_error
    # The backend keeps the wrapper in the named data the .pte or the .ptd carries.
    wrapper = extract_wrapper([*result["ptd"], result["pte"]], out_dir / "wrapper.so")
    result["wrapper"] = str(wrapper) if wrapper else None
    result["needed_symbols"] = sorted(_needed(wrapper)) if wrapper else []
    record.write_text(json.dumps(result))
    return {"program": {**result, "from_cache": False}}


# An exception line of a Python traceback: "RuntimeError: ...", "torch._dynamo.exc.Unsupported: ...".
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Unsupported|Exit)\w*: \S")


def describe_export_failure(result: CommandResult) -> str:
    """Why an export child failed, by the exceptions it printed, not its last line: PyTorch's compile
    errors end with advice ("Use tlparse to see full graph", "Set TORCHDYNAMO_VERBOSE=1") that names
    nothing. The first exception (the root, in a chained traceback) and the last (what was raised)."""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    raised = [line for line in lines if EXCEPTION_LINE.match(line)]
    if result.timed_out or not raised:
        return describe_child_failure(result)
    code = result.returncode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
    said = raised[-1] if raised[0] == raised[-1] or raised[0] in raised[-1] else f"{raised[-1]} (from {raised[0]})"
    return f"{how}: {said[:600]}"


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


def run_programs(prepared: dict[str, dict], host: Path, definitions: dict[str, str], work_dir: Path) -> StageOutcome:
    """Run every prepared program in the runtime host; the stage fails if any program failed or was not
    exported. definitions: aoti_torch_* symbol -> the tree source defining it."""
    runs = []
    for name, item in prepared.items():
        if "program" in item:
            runs.append(run_program(name, item["program"], host, definitions, work_dir / name))
        else:
            problem: StageOutcome = item["problem"]
            runs.append({"name": name, "status": problem.status, "reason": problem.reason, "ran": False})
    details = {"programs": runs, "host": str(host)}
    failed = [run for run in runs if run["status"] == "failed"]
    if failed:
        text = "; ".join(f"{run['name']}: {run['reason']}" for run in failed)
        return StageOutcome("failed", f"{len(failed)} of {len(runs)} program(s) failed: {text}", details)
    if all(run["status"] == "skipped" for run in runs):
        return StageOutcome("skipped", runs[0]["reason"] if runs else "no program chosen", details)
    text = "; ".join(f"{run['name']}: {run['reason']}" for run in runs)
    return StageOutcome("passed", f"{len(runs)} program(s) ran through CudaBackend::init/execute: {text}", details)


def run_program(name: str, program: dict, host: Path, definitions: dict[str, str], work_dir: Path) -> dict:
    """One program in the runtime host, compared with eager; a JSON-ready record of what happened."""
    work_dir.mkdir(parents=True, exist_ok=True)
    entry = next(item for item in catalogue() if item["name"] == name)
    needed = program.get("needed_symbols", [])
    record: dict = {
        "name": name,
        "ran": False,
        "pte": program["pte"],
        "exporter": program.get("exporter"),
        "backend_module": program.get("backend_module"),
        "from_cache": program.get("from_cache", False),
        "needed_symbols": needed,
        "calls": {symbol: definitions[symbol] for symbol in needed if symbol in definitions},
        "tolerance": {"atol": entry["atol"], "rtol": entry["rtol"]},
    }
    rows, columns = program["input_shape"]
    directory = Path(program["pte"]).parent
    output = work_dir / "output.bin"
    output.unlink(missing_ok=True)
    ptd = next((path for path in program["ptd"] if "cuda" in Path(path).name), program["ptd"][0])
    ran = run_command(
        [str(host), program["pte"], ptd, str(directory / "input.bin"), str(rows), str(columns), str(output)],
        timeout=RUN_TIMEOUT_S,
    )
    record["run"] = ran.to_json()
    failure = next((line for line in ran.stdout.splitlines() if line.startswith("failed: ")), None)
    if failure or not ran.ok:
        errors = read_runtime_errors(ran.stderr, ran.stdout)
        record["errors"] = errors.to_json()
        why = failure.removeprefix("failed: ") if failure else describe_child_failure(ran)
        said = errors.summary()
        record.update(status="failed", reason=f"did not run: {why}" + (f"; the run said: {said}" if said else ""))
        return record
    record["ran"] = True
    expected, actual = _floats(directory / "expected.bin"), _floats(output)
    if len(actual) != len(expected):
        record.update(
            status="failed", reason=f"returned {len(actual)} values, eager {len(expected)}", wrong_values=len(expected)
        )
        return record
    atol, rtol = entry["atol"], entry["rtol"]
    differences = [abs(a - e) for a, e in zip(actual, expected, strict=True)]
    wrong = sum(
        1 for a, e in zip(actual, expected, strict=True) if math.isnan(a - e) or abs(a - e) > atol + rtol * abs(e)
    )
    worst = max(differences, default=0.0)
    record.update(max_abs_diff=worst, wrong_values=wrong, values=len(expected))
    tolerance = f"atol {atol:g}, rtol {rtol:g}"
    if wrong:
        record.update(
            status="failed",
            reason=f"{wrong} of {len(expected)} values differ from eager beyond {tolerance} (max abs diff {worst:.3g})",
        )
        return record
    record.update(
        status="passed",
        reason=f"matches eager within {tolerance} (max abs diff {worst:.3g}), calls {len(needed)} shims",
    )
    return record


def _floats(path: Path) -> list[float]:
    data = path.read_bytes() if path.is_file() else b""
    return list(struct.unpack(f"<{len(data) // 4}f", data[: len(data) // 4 * 4]))
