"""The canary stage: compile a tiny model with AOTInductor and list what its wrapper needs from a host.

The list of `aoti_torch_*` functions depends on the model's operators and the PyTorch version, so it is
generated on every run, never hard-coded; the host stage checks a host against it.

The wrapper is built by a C++ compiler that links libstdc++ dynamically (see cxx_runtime.py): a wrapper
carrying its own copy of libstdc++ crashes while loading, in std::locale, inside a process that has one.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from smoke.commands import CommandResult, run_command
from smoke.cxx_runtime import CompilerChoice, Linkage, candidate_compilers, choose_compiler, libstdcxx_linkage
from smoke.elf_symbols import DynamicSymbols, SymbolReadError, read_dynamic_symbols
from smoke.machine import MachineFacts
from smoke.report import StageOutcome

CANARY_SCRIPT = Path(__file__).with_name("canary_model.py")
# Runs the script with `-c` in the build directory rather than by path: run by path, Python would put
# this package's directory first on sys.path, where config.py, report.py and friends shadow any
# top-level module of the same name that torch and its dependencies import.
CHILD_BOOTSTRAP = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
SHIM_PREFIX = "aoti_torch_"
CANARY_TIMEOUT_S = 900


@dataclass(frozen=True, slots=True)
class CanaryWrapper:
    """The compiled wrapper library and the shim functions it needs its host to export."""

    path: Path
    needed_symbols: tuple[str, ...]
    # DT_NEEDED: a wrapper linked against libtorch cannot load in a host without it, shims or not.
    needed_libraries: tuple[str, ...] = ()
    libstdcxx: Linkage = "none"


@dataclass(frozen=True, slots=True)
class CanaryOutcome:
    stage: StageOutcome
    wrapper: CanaryWrapper | None


def compile_canary(build_dir: Path, facts: MachineFacts, timeout: float = CANARY_TIMEOUT_S) -> CanaryOutcome:
    """Compile the canary, read its wrapper's undefined symbols, then run it in a fresh process.

    A run that fails still returns the wrapper: what it needs from a host is known once it is compiled.
    """
    skip = _reason_to_skip(facts)
    if skip:
        return CanaryOutcome(StageOutcome("skipped", skip), None)
    build_dir.mkdir(parents=True, exist_ok=True)
    compiler = choose_compiler(candidate_compilers(facts.cxx.path), build_dir / "compiler-probe")
    environment = child_environment(compiler, build_dir)
    compile_run = _run_child("compile", build_dir, timeout, environment)
    compiled = _last_json_line(compile_run)
    if compiled is None:
        reason = f"compiling the canary failed: {describe_child_failure(compile_run)}"
        details = {"compiler": compiler.to_json(), "compile": compile_run.to_json()}
        return CanaryOutcome(StageOutcome("failed", reason, details), None)
    details = {**compiled, "compiler": compiler.to_json()}
    try:
        wrapper, libraries = _find_wrapper(Path(compiled["package"]), build_dir / "package")
    except (SymbolReadError, zipfile.BadZipFile, LookupError) as error:
        return CanaryOutcome(StageOutcome("failed", f"reading the canary package failed: {error}", details), None)
    details.update(
        wrapper=str(wrapper.path),
        needed_symbols=list(wrapper.needed_symbols),
        wrapper_needed_libraries=list(wrapper.needed_libraries),
        wrapper_libstdcxx=wrapper.libstdcxx,
        libraries=libraries,
    )
    needs = f"wrapper needs {len(wrapper.needed_symbols)} {SHIM_PREFIX}* symbols"
    load_run = _run_child("run", build_dir, timeout, environment)
    ran = _last_json_line(load_run)
    if ran is None:
        details["run"] = load_run.to_json()
        failure = describe_child_failure(load_run)
        reason = f"compiled ({needs}), but aoti_load_package and run failed: {failure}"
        if wrapper.libstdcxx == "static":
            reason += (
                f"; the wrapper carries its own libstdc++ ({compiled.get('cxx')} links it statically), "
                f"a second C++ runtime in the process; {compiler.reason}"
            )
        return CanaryOutcome(StageOutcome("failed", reason, details), wrapper)
    details.update(ran)
    if not ran["matches_eager"]:
        reason = f"compiled ({needs}), but its output differs from eager: max abs diff {ran['max_abs_diff']:.3g}"
        return CanaryOutcome(StageOutcome("failed", reason, details), wrapper)
    reason = (
        f"compiled with PyTorch {compiled['torch_version']} and {compiled.get('cxx')}, matches eager "
        f"(max abs diff {ran['max_abs_diff']:.3g}); {needs}"
    )
    return CanaryOutcome(StageOutcome("passed", reason, details), wrapper)


def child_environment(compiler: CompilerChoice, build_dir: Path) -> dict[str, str]:
    """The canary children's environment: the chosen C++ compiler and a fresh Inductor cache."""
    environment = dict(os.environ)
    if compiler.path is not None:
        # Inductor reads $CXX once, when torch._inductor.config is imported in the child.
        environment["CXX"] = compiler.path
    # A cache of an earlier run (or another PyTorch) would hand back a wrapper this run never built.
    environment["TORCHINDUCTOR_CACHE_DIR"] = str(build_dir / "inductor-cache")
    return environment


def _run_child(command: str, build_dir: Path, timeout: float, environment: dict[str, str]) -> CommandResult:
    argv = [sys.executable, "-c", CHILD_BOOTSTRAP, str(CANARY_SCRIPT), command, str(build_dir)]
    return run_command(argv, timeout=timeout, cwd=build_dir, env=environment)


def _reason_to_skip(facts: MachineFacts) -> str | None:
    if not facts.torch.importable:
        return f"PyTorch is not importable by {sys.executable}: {facts.torch.error}"
    if not facts.torch.cuda_available:
        return f"PyTorch {facts.torch.version} has no usable CUDA device" + (
            f": {facts.torch.error}" if facts.torch.error else ""
        )
    return None


def _last_json_line(result: CommandResult) -> dict | None:
    if not result.ok:
        return None
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return None


def describe_child_failure(result: CommandResult) -> str:
    """Why a canary child failed, in one line: how it ended, in which phase, and the telling line."""
    if result.timed_out:
        return f"timed out after {result.seconds:.0f}s"
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    phases = [line.removeprefix("canary: ") for line in lines if line.startswith("canary: ")]
    code = result.returncode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
    where = f" while {phases[-1]}" if phases else ""
    # After a crash, faulthandler's "Fatal Python error" line says what happened; its last line merely
    # lists extension modules. After an exception, the last line is the exception.
    fatal = [line for line in lines if line.startswith("Fatal Python error")]
    messages = [line for line in lines if not line.startswith("canary: ")]
    return f"{how}{where}: {(fatal or messages or ['no output'])[-1]}"


def _find_wrapper(package: Path, extract_dir: Path) -> tuple[CanaryWrapper, list[dict]]:
    """Extract the .pt2 (a zip) and pick the library needing the most shims: the model's wrapper."""
    with zipfile.ZipFile(package) as archive:
        archive.extractall(extract_dir)
    libraries = sorted(path for path in extract_dir.rglob("*.so") if path.is_file())
    if not libraries:
        raise LookupError(f"no .so in {package}")
    symbols = {path: read_dynamic_symbols(path) for path in libraries}
    chosen = max(libraries, key=lambda path: len(_shims_needed(symbols[path])))
    listing = [_describe_library(path, extract_dir, symbols[path]) for path in libraries]
    wrapper = CanaryWrapper(
        chosen, _shims_needed(symbols[chosen]), symbols[chosen].needed_libraries, libstdcxx_linkage(symbols[chosen])
    )
    return wrapper, listing


def _shims_needed(symbols: DynamicSymbols) -> tuple[str, ...]:
    return tuple(sorted(name for name in symbols.undefined if name.startswith(SHIM_PREFIX)))


def _describe_library(path: Path, extract_dir: Path, symbols: DynamicSymbols) -> dict:
    return {
        "path": str(path.relative_to(extract_dir)),
        "needed_symbols": len(_shims_needed(symbols)),
        "undefined_symbols": len(symbols.undefined),
        "needed_libraries": list(symbols.needed_libraries),
        "libstdcxx": libstdcxx_linkage(symbols),
        "reader": symbols.reader,
    }
