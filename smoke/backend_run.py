"""The pull request's backend, built at head (and at base when given), as report stages.

Stages at head: compile, exports, duplicates, backend-host, load-run; with a base, new-at-head lists what
head breaks that base did not. A head stage that fails at base too is marked `also_at_base`: the tree's
or the machine's problem, reported but not counted against the pull request.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from smoke.backend_build import Layout, Toolset, object_path
from smoke.backend_compare import backend_summary, compare, fixed_at_head
from smoke.backend_load import load_and_run, prepare_wrapper
from smoke.backend_stages import SHIM_LIBRARY, BackendRun, run_backend
from smoke.build_plan import HOST_NAME, RUNTIME_HOST_NAME, BuildPlan, plan_from_json
from smoke.machine import MachineFacts
from smoke.program_run import cuda_kernels, prepare_program, run_program
from smoke.report import StageOutcome, StageResult


@dataclass(frozen=True, slots=True)
class BackendOptions:
    head: Path
    base: Path | None = None
    diff: Path | None = None
    head_plan: Path | None = None  # a plan written by `smoke plan` where the CMake model runs
    base_plan: Path | None = None
    wrapper_dir: Path | None = None  # where the standalone canary is compiled once and reused
    # A report of an earlier run at base: its head block stands for base, which is then not rebuilt.
    base_report: Path | None = None


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
    wrapper_dir = options.wrapper_dir or build_root / "standalone-canary"
    wrapper, wrapper_problem = prepare_wrapper(facts, wrapper_dir)
    program_dir = (options.wrapper_dir or build_root) / "programs"

    def program_for(tree: Path) -> tuple[dict | None, StageOutcome | None]:
        return prepare_program(facts, program_dir, tree)

    head = _one_side(options.head, options.head_plan, build_root / "head", tools, wrapper, wrapper_problem, program_for)
    block: dict = {"head": head["block"], "seconds": None}
    head_stages = head["stages"]
    base = None
    if options.base is not None:
        base = _one_side(
            options.base, options.base_plan, build_root / "base", tools, wrapper, wrapper_problem, program_for
        )
    elif options.base_report is not None:
        base = _side_from_report(options.base_report)
    if base is not None:
        block["base"] = base["block"]
        diff_text = options.diff.read_text(errors="replace") if options.diff else ""
        new = (
            compare(base["summary"], head["summary"], diff_text, options.head)
            if base["summary"] and head["summary"]
            else []
        )
        block["new_at_head"] = [item.to_json() for item in new]
        block["fixed_at_head"] = (
            fixed_at_head(base["summary"], head["summary"]) if base["summary"] and head["summary"] else []
        )
        base_failed = {name for name, outcome in base["stages"] if outcome.status == "failed"}
        head_stages = [(name, _mark_shared(outcome, name in base_failed)) for name, outcome in head_stages]
        new_stage = (
            StageOutcome(
                "failed", f"{len(new)} new at head; first: {new[0].message}", {"new_at_head": block["new_at_head"]}
            )
            if new
            else StageOutcome("passed", "nothing new at head: every failure, if any, is also at base")
        )
        head_stages.append(("new-at-head", new_stage))
    block["seconds"] = round(time.monotonic() - started, 3)
    results = tuple(
        StageResult(name, outcome.status, outcome.reason, 0.0, outcome.details) for name, outcome in head_stages
    )
    return results, block


def _program_stage(plan: BuildPlan, run: BackendRun, checkout: Path, build_dir: Path, program_for) -> StageOutcome:
    """The exported program through the tree's runtime and CudaBackend (program_run.py)."""
    outputs = run.build.outputs if run.build else {}
    if RUNTIME_HOST_NAME not in outputs:
        return StageOutcome("skipped", f"{RUNTIME_HOST_NAME} was not built (runtime-host: {run.runtime_host.reason})")
    if program_for is None:
        return StageOutcome("skipped", "no program to run")
    program, problem = program_for(checkout)
    if program is None:
        return problem
    layout = Layout(checkout, build_dir)
    shims = plan.target(SHIM_LIBRARY)
    objects = [(step.source, object_path(step, layout)) for step in (shims.compile_steps if shims else ())]
    return run_program(program, Path(outputs[RUNTIME_HOST_NAME]), cuda_kernels(objects), build_dir / "program-run")


def _side_from_report(path: Path) -> dict:
    earlier = json.loads(path.read_text())["backend"]["head"]
    summary = earlier["summary"]
    stages = [(name, StageOutcome(status, summary["reasons"][name])) for name, status in summary["statuses"].items()]
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
    checkout: Path,
    plan_file: Path | None,
    build_dir: Path,
    tools: Toolset,
    wrapper: dict | None,
    wrapper_problem: StageOutcome | None,
    program_for=None,
) -> dict:
    plan, problem = plan_for(checkout, plan_file)
    if plan is None:
        return {"stages": [("compile", problem)], "block": {"checkout": str(checkout)}, "summary": None}
    run: BackendRun = run_backend(plan, checkout, build_dir, tools)
    stages = list(run.stages())
    outputs = run.build.outputs if run.build else {}
    if wrapper is None:  # prepare_wrapper gives a wrapper or the problem that stopped it
        load = wrapper_problem or StageOutcome("skipped", "no wrapper was prepared")
    elif SHIM_LIBRARY not in outputs:
        load = StageOutcome("skipped", f"{SHIM_LIBRARY} was not built")
    elif HOST_NAME not in outputs:
        load = StageOutcome("skipped", f"{HOST_NAME} did not link (backend-host): the wrapper runs inside it")
    else:
        load = load_and_run(
            wrapper,
            Path(outputs[HOST_NAME]),
            Path(outputs[SHIM_LIBRARY]),
            run.exported,
            build_dir / "load-run",
        )
    stages.append(("load-run", load))
    program = _program_stage(plan, run, checkout, build_dir, program_for)
    stages.append(("program-run", program))
    summary = backend_summary(run)
    for name, outcome in (("load-run", load), ("program-run", program)):
        summary["statuses"][name] = outcome.status
        summary["reasons"][name] = outcome.reason
    summary["program_kernels"] = program.details.get("kernels_called", {})
    summary["program_wrong_values"] = program.details.get("wrong_values", 0)
    block = {
        "checkout": str(checkout),
        "plan": plan.to_json(),
        "summary": summary,
        "build_seconds": round(run.build.seconds, 3) if run.build else None,
    }
    return {"stages": stages, "block": block, "summary": summary}
