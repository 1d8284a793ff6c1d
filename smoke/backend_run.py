"""The pull request's backend, built at head (and at base when given), as report stages.

Stages at head: schema, compile, exports, duplicates, backend-host, runtime-host, load, program-run; with
a base, new-at-head lists what head breaks that base did not, and coverage says which of the shims and
kernels the diff changes a program ran on the GPU. A head stage that fails at base too is marked
`also_at_base`. What could not be tested is never passed: a head that does not build fails the run
("could not build at head"), and a comparison that base or the GPU prevented is said and leaves the run
neutral (skipped), not passed.

The programs are exported (in their own processes) while the backend compiles: the export needs only
the tree's Python, and it is the longer of the two when nothing is cached.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from smoke.backend_build import Toolset
from smoke.backend_compare import backend_summary, compare, fixed_at_head
from smoke.backend_load import load_programs
from smoke.backend_stages import SHIM_LIBRARY, BackendRun, run_backend
from smoke.blame import Tree, changed_definitions, changed_lines, is_test, python_function_at
from smoke.build_plan import HOST_NAME, RUNTIME_HOST_NAME, BuildPlan, plan_from_json
from smoke.machine import MachineFacts
from smoke.object_cache import ObjectCache
from smoke.program_run import catalogue, choose_programs, prepare_programs, run_programs
from smoke.report import StageOutcome, StageResult

PROGRAM_FIELDS = ("name", "status", "reason", "ran", "needed_symbols", "calls", "errors", "wrong_values", "from_cache")


@dataclass(frozen=True, slots=True)
class BackendOptions:
    head: Path
    base: Path | None = None
    diff: Path | None = None
    head_plan: Path | None = None  # a plan written by `smoke plan` where the CMake model runs
    base_plan: Path | None = None
    # Kept across runs: objects/ (object_cache.py) and programs/ (exported programs by content).
    cache_dir: Path | None = None
    # A report of an earlier run at base: its head block stands for base, which is then not rebuilt.
    base_report: Path | None = None
    programs: tuple[str, ...] = ()  # the catalogue's programs to run; empty: chosen by the diff


def plan_for(checkout: Path, plan_file: Path | None) -> tuple[BuildPlan | None, StageOutcome | None]:
    """The plan from its JSON file when given, else from the CMake model of the checkout."""
    if plan_file is not None:
        return plan_from_json(json.loads(plan_file.read_text())), None
    try:
        from smoke.build_plan import plan_directory

        return plan_directory(checkout), None
    except ImportError as error:
        return None, StageOutcome(
            "failed",
            f"the CMake model is not importable here ({error}); pass a plan written by `smoke plan` (--head-plan)",
        )


def backend_stages(
    options: BackendOptions, facts: MachineFacts, tools: Toolset, build_root: Path
) -> tuple[tuple[StageResult, ...], dict]:
    """Run head (and base) and return the head's stages plus the report's `backend` block."""
    started = time.monotonic()
    diff_text = options.diff.read_text(errors="replace") if options.diff else ""
    changed = changed_lines(diff_text)
    names = list(options.programs) or choose_programs(sorted(changed))
    cache = ObjectCache(options.cache_dir / "objects") if options.cache_dir else None
    program_dir = (options.cache_dir or build_root) / "programs"
    with ThreadPoolExecutor(max_workers=2) as pool:
        exports = {
            side: pool.submit(prepare_programs, facts, program_dir, tree, names)
            for side, tree in (("head", options.head), ("base", options.base))
            if tree is not None
        }
        head = _one_side(options.head, options.head_plan, build_root / "head", tools, cache, exports["head"])
        base = None
        if options.base is not None:
            base = _one_side(options.base, options.base_plan, build_root / "base", tools, cache, exports["base"])
        elif options.base_report is not None:
            base = _side_from_report(options.base_report)
    block: dict = {"head": head["block"], "programs_chosen": names, "seconds": None}
    head_stages = head["stages"]
    verdict = _untested(head, base, facts)
    if base is not None:
        block["base"] = base["block"]
        base_summary, head_summary = base["summary"], head["summary"]
        new, fixed = [], []
        if base_summary is not None and head_summary is not None:
            new = compare(base_summary, head_summary, diff_text, options.head)
            fixed = fixed_at_head(base_summary, head_summary)
        block["new_at_head"] = [item.to_json() for item in new]
        block["fixed_at_head"] = fixed
        base_failed = {name for name, outcome, _ in base["stages"] if outcome.status == "failed"}
        head_stages = [(name, _mark_shared(outcome, name in base_failed), s) for name, outcome, s in head_stages]
        if new:
            new_stage = StageOutcome(
                "failed", f"{len(new)} new at head; first: {new[0].message}", {"new_at_head": block["new_at_head"]}
            )
        elif verdict is not None:
            new_stage = verdict
        else:
            new_stage = StageOutcome("passed", "nothing new at head: every failure, if any, is also at base")
        head_stages.append(("new-at-head", new_stage, 0.0))
    elif verdict is not None:
        head_stages.append(("verdict", verdict, 0.0))
    block["coverage"] = coverage(changed, head["summary"], Tree(options.head))
    block["seconds"] = round(time.monotonic() - started, 3)
    results = tuple(
        StageResult(name, outcome.status, outcome.reason, seconds, outcome.details)
        for name, outcome, seconds in head_stages
    )
    return results, block


def _untested(head: dict, base: dict | None, facts: MachineFacts) -> StageOutcome | None:
    """What kept the run from testing the pull request, as a failed (head) or neutral (base, GPU) verdict."""
    statuses = {name: outcome for name, outcome, _ in head["stages"]}
    compiled = statuses.get("compile")
    plan = head["block"].get("plan") or {}
    if plan and not any(target["name"] == SHIM_LIBRARY for target in plan.get("targets", ())):
        # A tree older than the CUDA backend: nothing of it to test, which is neither a pass nor a fault.
        gaps = "; ".join(gap["reason"] for gap in plan.get("gaps", ())[:2])
        return StageOutcome(
            "skipped", f"could not build at head: the tree has no {SHIM_LIBRARY} ({gaps})", {"untested": True}
        )
    if compiled is None or compiled.status != "passed":
        why = compiled.reason if compiled else "no build"
        return StageOutcome("failed", f"could not build at head: {why}", {"untested": True})
    if base is not None and base["summary"] is None:
        return StageOutcome(
            "skipped", f"no comparison: could not plan base: {base['stages'][0][1].reason}", {"untested": True}
        )
    if base is not None and base["summary"]["statuses"].get("compile") != "passed":
        why = base["summary"]["reasons"].get("compile", "")
        return StageOutcome("skipped", f"no comparison: could not build at base: {why}", {"untested": True})
    program = statuses.get("program-run")
    if facts.has_gpu and program is not None and program.status == "skipped":
        return StageOutcome("skipped", f"could not run at head: {program.reason}", {"untested": True})
    runs = (head["summary"] or {}).get("programs", [])
    if facts.has_gpu and runs and not any(run.get("ran") for run in runs):
        # Every program chosen failed before it ran (an export, say): nothing the diff touches was tested.
        why = "; ".join(f"{run['name']}: {run['reason'][:200]}" for run in runs)
        return StageOutcome("skipped", f"could not run at head: no chosen program ran ({why})", {"untested": True})
    if not facts.has_gpu:
        # The build stages say nothing of a shim's value or a kernel's result: "nothing new" there is
        # not a pass of what the diff changes.
        return StageOutcome(
            "skipped",
            "could not run at head: no GPU, so the programs the diff calls for were neither exported nor run "
            "(only the build stages ran)",
            {"untested": True},
        )
    return None


def coverage(changed: dict[str, frozenset[int]], head: dict | None, tree: Tree) -> list[dict]:
    """Each shim or kernel the diff changes, and whether a program that ran on the GPU called it (a
    shim in the wrapper's needed symbols; another function through a shim defined in its file)."""
    runs = (head or {}).get("programs", [])
    called_ran: dict[str, list[str]] = {}
    files_ran: dict[str, list[str]] = {}
    for run in runs:
        if run.get("ran"):
            for symbol, source in run.get("calls", {}).items():
                called_ran.setdefault(symbol, []).append(run["name"])
                files_ran.setdefault(source, []).append(run["name"])
    rows = []
    for path, function, line in changed_definitions(changed, tree):
        # A shim is reached only if a program called it; a kernel or helper, through a shim of its file.
        is_shim = function.startswith("aoti_torch_")
        programs = called_ran.get(function, []) if is_shim else files_ran.get(path, [])
        how = "called by" if function in called_ran else "in the file of a shim called by"
        rows.append(
            {
                "path": path,
                "function": function,
                "line": line,
                "ran_on_gpu": bool(programs),
                "how": f"{how} {', '.join(sorted(set(programs)))}"
                if programs
                else "not reached by any program that ran",
            }
        )
    # The backend's Python is reached when a program it exported ran: one the catalogue ties to its path.
    for path, lines in sorted(changed.items()):
        if not path.startswith(("backends/cuda/", "backends/aoti/")) or not path.endswith(".py") or is_test(path):
            continue
        line = min(lines)
        tied = {entry["name"] for entry in catalogue() if path.startswith(tuple(entry["reaches"]))}
        ran = sorted(
            run["name"] for run in runs if run.get("ran") and run.get("exporter") == "tree" and run["name"] in tied
        )
        rows.append(
            {
                "path": path,
                "function": python_function_at(tree.text(path), line) or "(module level)",
                "line": line,
                "ran_on_gpu": bool(ran),
                "how": f"exported {', '.join(ran)}, which ran" if ran else "not reached by any program that ran",
            }
        )
    return rows


def _side_from_report(path: Path) -> dict:
    earlier = json.loads(path.read_text())["backend"]["head"]
    summary = earlier["summary"]
    stages = [
        (name, StageOutcome(status, summary["reasons"][name]), 0.0) for name, status in summary["statuses"].items()
    ]
    return {
        "stages": stages,
        "block": {"from_report": str(path), "checkout": earlier.get("checkout"), "summary": summary},
        "summary": summary,
    }


def _mark_shared(outcome: StageOutcome, shared: bool) -> StageOutcome:
    if not shared or outcome.status != "failed":
        return outcome
    return replace(
        outcome, reason=f"(also at base) {outcome.reason}", details={**outcome.details, "also_at_base": True}
    )


def _one_side(
    checkout: Path, plan_file: Path | None, build_dir: Path, tools: Toolset, cache: ObjectCache | None, exported: Future
) -> dict:
    plan, problem = plan_for(checkout, plan_file)
    if plan is None:
        return {"stages": [("compile", problem, 0.0)], "block": {"checkout": str(checkout)}, "summary": None}
    run: BackendRun = run_backend(plan, checkout, build_dir, tools, cache)
    seconds = dict(run.seconds)
    stages = [(name, outcome, seconds.get(name, 0.0)) for name, outcome in run.stages()]
    outputs = run.build.outputs if run.build else {}
    waited = time.monotonic()
    prepared = exported.result()
    export_wait = time.monotonic() - waited
    started = time.monotonic()
    if SHIM_LIBRARY not in outputs:
        load = StageOutcome("skipped", f"{SHIM_LIBRARY} was not built")
    elif HOST_NAME not in outputs:
        load = StageOutcome("skipped", f"{HOST_NAME} did not link (backend-host): the wrappers load inside it")
    else:
        load = load_programs(prepared, Path(outputs[HOST_NAME]), Path(outputs[SHIM_LIBRARY]), run.exported)
    stages.append(("load", load, time.monotonic() - started + export_wait))
    started = time.monotonic()
    if RUNTIME_HOST_NAME not in outputs:
        program = StageOutcome(
            "skipped", f"{RUNTIME_HOST_NAME} was not built (runtime-host: {run.runtime_host.reason})"
        )
    else:
        program = run_programs(
            prepared, Path(outputs[RUNTIME_HOST_NAME]), dict(run.definitions), build_dir / "program-run"
        )
    stages.append(("program-run", program, time.monotonic() - started))
    summary = backend_summary(run, plan)
    for name, outcome in (("load", load), ("program-run", program)):
        summary["statuses"][name] = outcome.status
        summary["reasons"][name] = outcome.reason
    summary["programs"] = [
        {key: item[key] for key in PROGRAM_FIELDS if key in item} for item in program.details.get("programs", [])
    ]
    block = {
        "checkout": str(checkout),
        "plan": plan.to_json(),
        "summary": summary,
        "build_seconds": round(run.build.seconds, 3) if run.build else None,
        "stage_seconds": {name: round(value, 3) for name, _, value in stages},
        "exports": {
            name: {
                "export_seconds": item.get("program", {}).get("export_seconds"),
                "from_cache": item.get("program", {}).get("from_cache"),
                "problem": item["problem"].reason if "problem" in item else None,
            }
            for name, item in prepared.items()
        },
        "export_wait_seconds": round(export_wait, 3),
    }
    return {"stages": stages, "block": block, "summary": summary}
