"""Facts about the machine the smoke job runs on: GPUs, driver, compilers, PyTorch (`smoke doctor`)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from smoke.commands import run_command

PROC_DRIVER = Path("/proc/driver/nvidia")
PROBE_TIMEOUT_S = 60
# Importing torch and initialising CUDA can take a while on a cold machine.
TORCH_PROBE_TIMEOUT_S = 180

# Runs in a child process so that importing torch (slow, sometimes crashing) never touches the runner.
TORCH_PROBE = """
import json
facts = {"importable": False}
try:
    import torch
except Exception as error:
    facts["error"] = f"{type(error).__name__}: {error}"
else:
    facts.update(importable=True, version=torch.__version__, cuda_version=torch.version.cuda)
    try:
        facts["cuda_available"] = bool(torch.cuda.is_available())
        if facts["cuda_available"]:
            facts["device_name"] = torch.cuda.get_device_name(0)
    except Exception as error:
        facts["error"] = f"{type(error).__name__}: {error}"
print(json.dumps(facts))
"""


@dataclass(frozen=True, slots=True)
class Toolchain:
    """The compilers found on this machine; None where one is missing."""

    cc: str | None
    cxx: str | None
    nvcc: str | None


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    driver_version: str | None
    memory_total: str | None


@dataclass(frozen=True, slots=True)
class Tool:
    """A program and the first informative line of its `--version`."""

    path: str | None
    version: str | None


@dataclass(frozen=True, slots=True)
class TorchFacts:
    importable: bool
    version: str | None = None
    cuda_version: str | None = None
    cuda_available: bool = False
    device_name: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class MachineFacts:
    """Everything `smoke doctor` reports."""

    gpus: tuple[Gpu, ...]
    gpu_source: str | None
    gpu_probe_error: str | None
    driver_version: str | None
    nvcc: Tool
    cc: Tool
    cxx: Tool
    torch: TorchFacts
    python: str
    pyelftools: str | None
    platform: str

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    def to_json(self) -> dict:
        return {"has_gpu": self.has_gpu, **asdict(self)}


def find_toolchain() -> Toolchain:
    """Find the C and C++ compilers ($CC/$CXX first) and nvcc (PATH, $CUDA_HOME, /usr/local/cuda)."""
    return Toolchain(
        cc=_which(os.environ.get("CC"), "cc", "gcc", "clang"),
        cxx=_which(os.environ.get("CXX"), "c++", "g++", "clang++"),
        nvcc=_find_nvcc(),
    )


def inspect_machine(toolchain: Toolchain) -> MachineFacts:
    """Gather the facts; probes that fail leave None and an error, never an exception."""
    gpus, source, error = _probe_gpus()
    return MachineFacts(
        gpus=gpus,
        gpu_source=source,
        gpu_probe_error=error,
        driver_version=gpus[0].driver_version if gpus else _proc_driver_version(),
        # nvcc's first line is its banner; the line naming the release is the one worth reporting.
        nvcc=_tool_version(toolchain.nvcc, line_containing="release"),
        cc=_tool_version(toolchain.cc),
        cxx=_tool_version(toolchain.cxx),
        torch=_probe_torch(),
        python=f"{platform.python_version()} ({sys.executable})",
        pyelftools=_pyelftools_version(),
        platform=platform.platform(),
    )


def describe_machine(facts: MachineFacts) -> str:
    """The facts as a few human-readable lines."""
    gpu_lines = [
        f"{gpu.name} ({gpu.memory_total or 'memory unknown'}), driver {gpu.driver_version or 'unknown'}"
        for gpu in facts.gpus
    ] or [f"none ({facts.gpu_probe_error})"]
    torch = facts.torch
    if torch.importable:
        cuda = f"CUDA {torch.cuda_version}, available: {'yes' if torch.cuda_available else 'no'}"
        torch_line = f"{torch.version}, {cuda}" + (f" ({torch.device_name})" if torch.device_name else "")
    else:
        torch_line = f"not importable ({torch.error})"
    rows = [
        *(("GPU", line) for line in gpu_lines),
        ("driver", facts.driver_version or "unknown"),
        ("nvcc", _describe_tool(facts.nvcc)),
        ("C", _describe_tool(facts.cc)),
        ("C++", _describe_tool(facts.cxx)),
        ("PyTorch", torch_line),
        ("Python", facts.python),
        ("pyelftools", facts.pyelftools or "not installed (falling back to nm/readelf)"),
    ]
    return "\n".join(f"{label + ':':<12} {value}" for label, value in rows)


def _which(*candidates: str | None) -> str | None:
    for candidate in candidates:
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


def _find_nvcc() -> str | None:
    on_path = shutil.which("nvcc")
    if on_path:
        return on_path
    # CUDA installs often leave bin/ off PATH on runners and in containers.
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        candidate = Path(home) / "bin" / "nvcc"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _probe_gpus() -> tuple[tuple[Gpu, ...], str | None, str | None]:
    gpus, error = _gpus_from_nvidia_smi()
    if gpus:
        return gpus, "nvidia-smi", None
    from_proc = _gpus_from_proc()
    if from_proc:
        return from_proc, str(PROC_DRIVER), None
    return (), None, error


def _gpus_from_nvidia_smi() -> tuple[tuple[Gpu, ...], str]:
    if not shutil.which("nvidia-smi"):
        return (), f"nvidia-smi not found and {PROC_DRIVER} has no GPUs"
    result = run_command(
        ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
        timeout=PROBE_TIMEOUT_S,
    )
    if not result.ok:
        return (), f"nvidia-smi failed: {(result.stderr or result.stdout).strip()[:500]}"
    gpus = tuple(
        Gpu(name=name, driver_version=driver, memory_total=memory)
        for name, driver, memory in (
            [field.strip() for field in line.split(",")] for line in result.stdout.splitlines() if line.count(",") == 2
        )
    )
    return gpus, "" if gpus else "nvidia-smi listed no GPUs"


def _gpus_from_proc() -> tuple[Gpu, ...]:
    driver = _proc_driver_version()
    gpus = []
    for information in sorted((PROC_DRIVER / "gpus").glob("*/information")):
        model = re.search(r"^Model:\s*(.+)$", information.read_text(errors="replace"), re.MULTILINE)
        gpus.append(Gpu(name=model.group(1).strip() if model else "unknown", driver_version=driver, memory_total=None))
    return tuple(gpus)


def _proc_driver_version() -> str | None:
    try:
        text = (PROC_DRIVER / "version").read_text(errors="replace")
    except OSError:
        return None
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d[\w.]*)", text)
    return match.group(1) if match else None


def _tool_version(path: str | None, line_containing: str = "") -> Tool:
    if path is None:
        return Tool(path=None, version=None)
    result = run_command([path, "--version"], timeout=PROBE_TIMEOUT_S)
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    chosen = next((line for line in lines if line_containing in line), None)
    return Tool(path=path, version=chosen)


def _describe_tool(tool: Tool) -> str:
    return f"{tool.path} ({tool.version})" if tool.path else "not found"


def _probe_torch() -> TorchFacts:
    result = run_command([sys.executable, "-c", TORCH_PROBE], timeout=TORCH_PROBE_TIMEOUT_S)
    try:
        facts = json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        detail = "timed out" if result.timed_out else (result.stderr.strip()[-500:] or "no output")
        return TorchFacts(importable=False, error=f"torch probe failed: {detail}")
    return TorchFacts(**facts)


def _pyelftools_version() -> str | None:
    try:
        import elftools
    except ImportError:
        return None
    return getattr(elftools, "__version__", "unknown")
