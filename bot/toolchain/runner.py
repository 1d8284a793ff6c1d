"""Discover the host toolchain and run one compiler command confined.

A compile reads what a pull request's `#include`s name and can be made to run for ever (a
template bomb): every command runs in a new session under `prlimit` (CPU seconds, address
space), without a network (`unshare -n`, where the kernel lets this user make a network
namespace; said in `Toolchain.isolation` otherwise), with a wall-clock timeout that kills the
whole process group. Nothing a pull request holds is executed: only the compiler and linker run.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CUDA_ROOTS = ("/usr/local/cuda",)
_KILLED = re.compile(r"signal terminated program|CPU time limit exceeded|virtual memory exhausted|out of memory")
_RUNS = [0]  # commands this process ran: a review reports how many of its verdicts were not stored
_RUNS_LOCK = threading.Lock()


def runs_so_far() -> int:
    """How many compiler and linker commands this process has run."""
    return _RUNS[0]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one compile may spend."""

    cpu_seconds: int = 60
    memory_bytes: int = 2 << 30
    wall_seconds: float = 90.0


LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Toolchain:
    """The host compiler and what comes with it.

    `identity` (the compiler's path and its `--version`) is part of every compile's cache key:
    an upgraded compiler never serves an old verdict. `cuda_include` is the CUDA toolkit's
    header directory, given only to configurations that have CUDA."""

    cxx: str
    identity: str
    cuda_include: str | None
    prlimit: str | None
    isolation: str  # "unshare -n", or why compiles run with the network visible

    @property
    def confined_prefix(self) -> tuple[str, ...]:
        return ("unshare", "-n") if self.isolation == "unshare -n" else ()


@dataclass(frozen=True, slots=True)
class RunResult:
    """How one command ended: its exit status and combined output, or a timeout."""

    returncode: int
    output: str
    timed_out: bool
    seconds: float


@functools.cache
def discover(cxx: str | None = None) -> Toolchain | None:
    """The host's C++ compiler (`$CXX`, else g++, else clang++), or None when there is none."""
    wanted = cxx or os.environ.get("PR_CHECK_CXX") or ""
    found = shutil.which(wanted) if wanted else (shutil.which("g++") or shutil.which("clang++"))
    if found is None:
        return None
    try:
        version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if version.returncode != 0:
        return None
    identity = hashlib.sha256(f"{found}\0{version.stdout}".encode()).hexdigest()[:16]
    cuda = next((f"{root}/include" for root in CUDA_ROOTS if Path(root, "include", "cuda_runtime.h").is_file()), None)
    return Toolchain(found, identity, cuda, shutil.which("prlimit"), _isolation())


def _isolation() -> str:
    unshare = shutil.which("unshare")
    if unshare is None:
        return "network not isolated: unshare is not installed"
    try:
        probe = subprocess.run([unshare, "-n", "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "network not isolated: unshare -n failed"
    if probe.returncode != 0:
        return "network not isolated: this user may not create a network namespace"
    return "unshare -n"


def version_line(toolchain: Toolchain) -> str:
    """The compiler as a person names it (`g++ (Debian 12.2.0-14) 12.2.0`)."""
    result = subprocess.run([toolchain.cxx, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return (result.stdout.splitlines() or [toolchain.cxx])[0]


def run_confined(toolchain: Toolchain, argv: tuple[str, ...], cwd: Path, limits: Limits) -> RunResult:
    """Run `argv` (the compiler or linker) in `cwd` under `limits`; a timeout is a result."""
    command: list[str] = []
    if toolchain.prlimit is not None:
        command += [toolchain.prlimit, f"--cpu={limits.cpu_seconds}", f"--as={limits.memory_bytes}", "--"]
    command += [*toolchain.confined_prefix, *argv]
    with _RUNS_LOCK:
        _RUNS[0] += 1
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=environment,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=limits.wall_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return RunResult(-1, output.decode("utf-8", "replace"), True, time.perf_counter() - started)
    code = process.returncode
    text = output.decode("utf-8", "replace")
    # Killed for CPU seconds or memory (SIGXCPU/SIGKILL from the limit) is a timeout too, the same
    # bound: the driver itself, or the compiler proper under it, which the driver then reports.
    timed_out = code in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL) or bool(
        _KILLED.search(text)
    )
    return RunResult(code, text, timed_out, time.perf_counter() - started)
