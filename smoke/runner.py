"""`smoke run`: the four stages in order, each timed, none able to crash the others, into one report."""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from smoke.backend_build import find_toolset
from smoke.backend_run import BackendOptions, backend_stages
from smoke.canary import CANARY_TIMEOUT_S, CanaryOutcome, CanaryWrapper, compile_canary
from smoke.config import HostConfig
from smoke.host_under_test import BUILD_TIMEOUT_S, check_host
from smoke.link_contract import prove_link_contract
from smoke.machine import MachineFacts, find_toolchain, inspect_machine
from smoke.report import StageOutcome, StageResult, build_report


@dataclass(frozen=True, slots=True)
class RunOptions:
    host_config: HostConfig
    build_dir: Path | None = None
    require_gpu: bool = False
    correlation_id: str | None = None
    canary_timeout: float = CANARY_TIMEOUT_S
    host_build_timeout: float = BUILD_TIMEOUT_S
    # The pull request's own CUDA backend (backend_run.py); None: those stages are not run.
    backend: BackendOptions | None = None
    # Only doctor and the backend's stages: the machine-level stages prove nothing new per commit.
    backend_only: bool = False
    cuda_arch: str | None = None
    jobs: int = 0
    # Kept across runs: compiled objects, exported programs, and the canary per toolkit (None: nothing kept).
    cache_dir: Path | None = None


def run_smoke(options: RunOptions) -> dict:
    """Run every stage and return the report; build outputs go to a temporary directory unless kept."""
    with _build_root(options.build_dir) as build_root:
        started = time.monotonic()
        toolchain = find_toolchain()
        facts = inspect_machine(toolchain)
        doctor = _timed("doctor", lambda: _doctor_outcome(facts, options.require_gpu), started)
        backend_results: tuple[StageResult, ...] = ()
        backend_block: dict | None = None
        if options.backend is not None:
            backend_results, backend_block = _backend(options, options.backend, facts, build_root)
        if options.backend_only:
            stages = (doctor, *backend_results)
            report = build_report(facts.to_json(), stages, {}, {}, options.correlation_id)
            report["backend"] = backend_block
            return report
        link = _timed(
            "link-contract", lambda: prove_link_contract(build_root / "link-contract", toolchain, facts.has_gpu)
        )
        # The host stage needs the canary's wrapper, a by-product _timed does not carry; a crashed
        # canary stage leaves the list empty and the host stage is skipped.
        canary_outcomes: list[CanaryOutcome] = []

        def canary_stage() -> StageOutcome:
            canary_outcomes.append(cached_canary(options.cache_dir, build_root, facts, options.canary_timeout))
            return canary_outcomes[0].stage

        canary = _timed("canary", canary_stage)
        wrapper = canary_outcomes[0].wrapper if canary_outcomes else None
        host = _timed(
            "host-under-test",
            lambda: check_host(
                options.host_config,
                wrapper,
                canary.reason,
                options.host_build_timeout,
                cc=toolchain.cc,
                work_dir=build_root / "host-under-test",
            ),
        )
        stages = (doctor, link, canary, host, *backend_results)
        report = build_report(
            machine=facts.to_json(),
            stages=stages,
            link_contract=_link_contract_block(link),
            canary=_canary_block(canary),
            correlation_id=options.correlation_id,
        )
        if backend_block is not None:
            report["backend"] = backend_block
        return report


def _backend(
    options: RunOptions, backend: BackendOptions, facts: MachineFacts, build_root: Path
) -> tuple[tuple[StageResult, ...], dict]:
    started = time.monotonic()
    try:
        tools = find_toolset(options.cuda_arch, options.jobs)
        return backend_stages(backend, facts, tools, build_root / "backend")
    except Exception as error:  # a crashing stage becomes a failed result; the run goes on
        outcome = StageResult(
            "compile",
            "failed",
            f"internal error: {type(error).__name__}: {error}",
            time.monotonic() - started,
            {"traceback": traceback.format_exc()[-4000:]},
        )
        return (outcome,), {"error": outcome.reason}


def cached_canary(cache_dir: Path | None, build_root: Path, facts: MachineFacts, timeout: float) -> CanaryOutcome:
    """The canary proves the machine, not the pull request: compiled once per toolkit (PyTorch, nvcc, driver,
    compiler and the canary's own code) and its passing outcome reused from the cache after that."""
    if cache_dir is None:
        return compile_canary(build_root / "canary", facts, timeout)
    digest = hashlib.sha256()
    for text in (facts.torch.version, facts.nvcc.version, facts.driver_version, facts.cxx.path, facts.cxx.version):
        digest.update(f"{text}\0".encode())
    for module in ("canary.py", "canary_model.py"):
        digest.update(Path(__file__).with_name(module).read_bytes())
    folder = cache_dir / "canary" / digest.hexdigest()[:16]
    record = folder / "outcome.json"
    if record.is_file():
        kept = json.loads(record.read_text())
        wrapper = kept["wrapper"]
        stage = StageOutcome(kept["status"], f"(kept for this toolkit) {kept['reason']}", kept["details"])
        return CanaryOutcome(
            stage,
            CanaryWrapper(
                Path(wrapper["path"]),
                tuple(wrapper["needed_symbols"]),
                tuple(wrapper["needed_libraries"]),
                wrapper["libstdcxx"],
            ),
        )
    outcome = compile_canary(folder, facts, timeout)
    if outcome.stage.status == "passed" and outcome.wrapper is not None:
        wrapper = outcome.wrapper
        record.write_text(
            json.dumps(
                {
                    "status": outcome.stage.status,
                    "reason": outcome.stage.reason,
                    "details": outcome.stage.details,
                    "wrapper": {
                        "path": str(wrapper.path),
                        "needed_symbols": list(wrapper.needed_symbols),
                        "needed_libraries": list(wrapper.needed_libraries),
                        "libstdcxx": wrapper.libstdcxx,
                    },
                },
                default=str,
            )
        )
    return outcome


def _doctor_outcome(facts: MachineFacts, require_gpu: bool) -> StageOutcome:
    details = {"gpu_count": len(facts.gpus), "gpu_source": facts.gpu_source}
    if facts.has_gpu:
        names = ", ".join(sorted({gpu.name for gpu in facts.gpus}))
        return StageOutcome("passed", f"{len(facts.gpus)} GPU(s): {names}; driver {facts.driver_version}", details)
    reason = f"no NVIDIA GPU: {facts.gpu_probe_error}"
    # On the GPU runner a missing GPU is a broken machine, not a reason to go green.
    return StageOutcome("failed" if require_gpu else "skipped", reason, details)


def _timed(name: str, stage: Callable[[], StageOutcome], started: float | None = None) -> StageResult:
    started = time.monotonic() if started is None else started
    try:
        outcome = stage()
    except Exception as error:  # a crashing stage becomes a failed result; the run goes on
        outcome = StageOutcome(
            "failed", f"internal error: {type(error).__name__}: {error}", {"traceback": traceback.format_exc()[-4000:]}
        )
    return StageResult(name, outcome.status, outcome.reason, time.monotonic() - started, outcome.details)


def _link_contract_block(stage: StageResult) -> dict:
    return {
        "symbol": stage.details.get("symbol"),
        "kernel": stage.details.get("kernel"),
        "combinations": [
            {key: combination[key] for key in ("whole_archive", "export_dynamic", "loaded", "ran", "message")}
            for combination in stage.details.get("combinations", [])
        ],
    }


def _canary_block(stage: StageResult) -> dict:
    keys = (
        "torch_version",
        "cxx",
        "wrapper",
        "wrapper_needed_libraries",
        "wrapper_libstdcxx",
        "matches_eager",
        "max_abs_diff",
        "tolerance",
    )
    return {"needed_symbols": stage.details.get("needed_symbols", []), **{key: stage.details.get(key) for key in keys}}


@contextmanager
def _build_root(kept: Path | None) -> Iterator[Path]:
    if kept is not None:
        kept.mkdir(parents=True, exist_ok=True)
        yield kept.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="pr-check-smoke-") as temporary:
        yield Path(temporary)
