"""The load stage: the wrappers of the pull request's own exported programs (program_run.py), each loaded
with dlopen(RTLD_NOW) inside the host the smoke build linked as a real consumer of the pull request's
backend (csrc/backend_host.cpp: aoti_cuda_backend taken whole, the core runtime from the tree's
executorch_core, libaoti_cuda_shims.so as the backend's usage requirements link it).

Every aoti_torch_* symbol a wrapper needs must resolve from that process: a shim the build no longer
exports fails here by name, before any program runs. Running the programs is the program-run stage's.
Without a GPU (no exported program) the stage is skipped, never failed.
"""

from __future__ import annotations

from pathlib import Path

from smoke.commands import run_command
from smoke.report import StageOutcome

LOAD_TIMEOUT_S = 120


def load_programs(prepared: dict[str, dict], host: Path, shims: Path, exported: frozenset[str]) -> StageOutcome:
    """dlopen each exported program's wrapper in the host; the stage fails on the first that does not load."""
    wrappers = {
        name: item["program"]["wrapper"] for name, item in prepared.items() if item.get("program", {}).get("wrapper")
    }
    if not wrappers:
        problems = [item["problem"] for item in prepared.values() if "problem" in item]
        why = problems[0].reason if problems else "no exported program holds a wrapper"
        return StageOutcome("skipped", f"no wrapper to load: {why}")
    loaded, failures = [], []
    details: dict = {"host": str(host), "wrappers": wrappers, "runs": {}}
    for name, wrapper in sorted(wrappers.items()):
        needed = set(prepared[name]["program"].get("needed_symbols", []))
        missing = sorted(needed - exported)
        ran = run_command([str(host), wrapper], timeout=LOAD_TIMEOUT_S)
        details["runs"][name] = {"run": ran.to_json(), "needed": sorted(needed), "missing": missing}
        failure = next((line for line in ran.stdout.splitlines() if line.startswith("dlopen failed: ")), None)
        if failure or not ran.ok:
            hint = (
                f" ({len(missing)} needed shim(s) not exported by {shims.name}: {', '.join(missing[:5])})"
                if missing
                else ""
            )
            failures.append(f"{name}: {failure or ran.stderr.strip()[:200] or 'exit ' + str(ran.returncode)}{hint}")
        else:
            loaded.append(f"{name} ({len(needed)} shims)")
    if failures:
        return StageOutcome(
            "failed", f"the PR's exported wrapper did not load in {host.name}: {'; '.join(failures)}", details
        )
    return StageOutcome(
        "passed", f"{host.name} loaded the PR's exported wrappers through {shims.name}: {', '.join(loaded)}", details
    )
