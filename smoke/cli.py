"""`pr-check smoke` (also `python -m smoke`): doctor, run (the default) and workflow.

Exit codes of `run`: 0 passed, 1 failed, 77 every stage skipped (no GPU, no compilers, no PyTorch);
2 for usage and configuration errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from smoke.backend_run import BackendOptions
from smoke.canary import CANARY_TIMEOUT_S
from smoke.config import SmokeConfigError, read_host_config
from smoke.host_under_test import BUILD_TIMEOUT_S
from smoke.machine import describe_machine, find_toolchain, inspect_machine
from smoke.report import EXIT_CODES, describe_report, write_report
from smoke.runner import RunOptions, run_smoke
from smoke.workflow_source import WorkflowSourceUnknown, checked, installed_source, render_workflow

WORKFLOW_TEMPLATE = Path(__file__).with_name("gpu-smoke.yml")
COMMANDS = ("doctor", "run", "plan", "workflow")


def main(argv: list[str] | None = None) -> int:
    """Parse argv (sys.argv[1:] when None), run the subcommand and return its exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    # `run` is the default: `pr-check smoke --report x.json` means `pr-check smoke run --report x.json`.
    if not arguments or arguments[0] not in (*COMMANDS, "-h", "--help"):
        arguments.insert(0, "run")
    parsed = build_parser().parse_args(arguments)
    try:
        return parsed.command(parsed)
    except SmokeConfigError as error:
        print(f"pr-check smoke: {error}", file=sys.stderr)
        return error.exit_code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pr-check smoke", description="The GPU smoke runner.")
    commands = parser.add_subparsers(required=True, metavar="{doctor,run,workflow}")

    doctor = commands.add_parser("doctor", help="report GPU, driver, nvcc, PyTorch and compilers")
    doctor.add_argument("--json", action="store_true", help="print the facts as JSON")
    doctor.set_defaults(command=doctor_command)

    run = commands.add_parser("run", help="run every stage and write the JSON report (the default)")
    run.add_argument(
        "--report", type=Path, default=Path("smoke-report.json"), help="report path (default: %(default)s)"
    )
    run.add_argument("--repo", type=Path, default=Path("."), help="repository root holding .github/pr-check.toml")
    run.add_argument("--host-build-cmd", help="shell command, run in --repo, that builds the host under test")
    run.add_argument("--host", help="path of the host under test, relative to --repo")
    run.add_argument("--host-load-args", help="arguments that make the host load a library; {library} is replaced")
    run.add_argument(
        "--host-archive",
        help="static archive of the shims the host links, relative to --repo; "
        "a loader linked against it must load the canary's symbols",
    )
    run.add_argument("--host-link-args", help="extra link arguments the host archive needs (e.g. '-lcudart')")
    run.add_argument("--build-dir", type=Path, help="keep build outputs here instead of a temporary directory")
    run.add_argument("--require-gpu", action="store_true", help="fail, rather than skip, when there is no GPU")
    run.add_argument("--correlation-id", help="recorded in the report so the dispatcher can match it")
    run.add_argument("--canary-timeout", type=float, default=CANARY_TIMEOUT_S, help="seconds (default: %(default)s)")
    run.add_argument("--host-build-timeout", type=float, default=BUILD_TIMEOUT_S, help="seconds (default: %(default)s)")
    backend = run.add_argument_group("the pull request's CUDA backend (compiled from the CMake model)")
    backend.add_argument("--tree", type=Path, help="checkout (or subtree) of head to compile; enables these stages")
    backend.add_argument("--base-tree", type=Path, help="checkout of base: what is new at head is reported")
    backend.add_argument(
        "--base-report",
        type=Path,
        help="a report of an earlier run at base, instead of --base-tree (base is then not rebuilt)",
    )
    backend.add_argument("--diff", type=Path, help="the pull request's unified diff, to place compile errors in it")
    backend.add_argument(
        "--head-plan",
        type=Path,
        help="a plan from `smoke plan`, when the CMake model cannot be imported on this machine",
    )
    backend.add_argument("--base-plan", type=Path, help="the same for base")
    backend.add_argument(
        "--cache-dir",
        type=Path,
        default=default_cache_dir(),
        help="keep compiled objects, exported programs and the canary here across runs (default: %(default)s)",
    )
    backend.add_argument("--no-cache", action="store_true", help="keep nothing across runs")
    backend.add_argument(
        "--programs", help="comma-separated programs of smoke/programs.json to run (default: chosen by the diff)"
    )
    backend.add_argument("--backend-only", action="store_true", help="skip link-contract, canary and host-under-test")
    backend.add_argument("--cuda-arch", help="nvcc -arch (e.g. native, sm_90); default: nvcc's own")
    backend.add_argument("--jobs", type=int, default=0, help="parallel compiles (default: one per CPU)")
    run.set_defaults(command=run_command)

    plan = commands.add_parser("plan", help="write the build plan of a checkout's CUDA backend as JSON")
    plan.add_argument("--tree", type=Path, required=True, help="checkout (or subtree) to read the CMake model of")
    plan.add_argument("--out", type=Path, required=True, help="plan JSON path")
    plan.set_defaults(command=plan_command)

    workflow = commands.add_parser("workflow", help="print the GitHub Actions workflow that runs this job")
    workflow.add_argument(
        "--git-url", help="git repository of the pr-check the runner installs (default: where this one came from)"
    )
    workflow.add_argument(
        "--commit", help="its commit, 40 hex digits (default: the one this pr-check was installed at)"
    )
    workflow.set_defaults(command=workflow_command)
    return parser


def default_cache_dir() -> Path:
    """$PR_CHECK_SMOKE_CACHE, else the user's cache directory: a self-hosted runner keeps it between jobs."""
    if os.environ.get("PR_CHECK_SMOKE_CACHE"):
        return Path(os.environ["PR_CHECK_SMOKE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pr-check" / "smoke"


def doctor_command(parsed: argparse.Namespace) -> int:
    facts = inspect_machine(find_toolchain())
    print(json.dumps(facts.to_json(), indent=2) if parsed.json else describe_machine(facts))
    return 0


def run_command(parsed: argparse.Namespace) -> int:
    host_config = read_host_config(
        parsed.repo.resolve(),
        parsed.host_build_cmd,
        parsed.host,
        parsed.host_load_args,
        parsed.host_archive,
        parsed.host_link_args,
    )
    backend = None
    if parsed.tree is not None:
        backend = BackendOptions(
            head=parsed.tree.resolve(),
            base=parsed.base_tree.resolve() if parsed.base_tree else None,
            diff=parsed.diff,
            head_plan=parsed.head_plan,
            base_plan=parsed.base_plan,
            cache_dir=None if parsed.no_cache else parsed.cache_dir.resolve(),
            base_report=parsed.base_report,
            programs=tuple(name for name in (parsed.programs or "").split(",") if name),
        )
    elif parsed.backend_only:
        raise SmokeConfigError("--backend-only needs --tree")
    report = run_smoke(
        RunOptions(
            host_config=host_config,
            build_dir=parsed.build_dir,
            require_gpu=parsed.require_gpu,
            correlation_id=parsed.correlation_id,
            canary_timeout=parsed.canary_timeout,
            host_build_timeout=parsed.host_build_timeout,
            backend=backend,
            backend_only=parsed.backend_only,
            cuda_arch=parsed.cuda_arch,
            jobs=parsed.jobs,
            cache_dir=None if parsed.no_cache else parsed.cache_dir.resolve(),
        )
    )
    write_report(report, parsed.report)
    print(describe_report(report))
    print(f"report: {parsed.report}")
    return EXIT_CODES[report["status"]]


def plan_command(parsed: argparse.Namespace) -> int:
    from smoke.build_plan import plan_directory  # needs the CMake model (pr-check's bot package)

    plan = plan_directory(parsed.tree.resolve())
    parsed.out.parent.mkdir(parents=True, exist_ok=True)
    parsed.out.write_text(json.dumps(plan.to_json(), indent=1) + "\n")
    for gap in plan.gaps:
        print(f"not evaluable: {gap.name}: {gap.reason}")
    print(
        f"plan: {len(plan.targets)} targets, {sum(len(t.compile_steps) for t in plan.targets)} sources -> {parsed.out}"
    )
    return 0


def workflow_command(parsed: argparse.Namespace) -> int:
    # The runner installs this very pr-check, pinned by git URL and commit (smoke/workflow_source.py).
    if (parsed.git_url is None) != (parsed.commit is None):
        raise WorkflowSourceUnknown("--git-url and --commit go together")
    source = checked(parsed.git_url, parsed.commit) if parsed.git_url else installed_source()
    sys.stdout.write(render_workflow(WORKFLOW_TEMPLATE.read_text(), source))
    return 0
