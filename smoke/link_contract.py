"""The link contract, proven with real compilers and the real dynamic loader.

A static archive of AOTI-style shim functions that the host never calls; a library (playing an
AOTInductor wrapper) that calls one and hands the result to a CUDA kernel; a host linked four ways
(with and without `--whole-archive` around the archive, with and without `--export-dynamic`) that
dlopens the library with RTLD_NOW | RTLD_LOCAL. Only the host linked with both flags can load it: without
`--whole-archive` the linker drops the unreferenced archive member, and without `--export-dynamic` the
symbol is in the binary but not in its dynamic symbol table, which is all a RTLD_LOCAL library can see.

Loading needs no GPU (nvcc links the CUDA runtime statically and it reaches for the driver only on the
first CUDA call), so the contract is proven anywhere gcc and nvcc exist; only the kernel run needs a GPU.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from smoke.commands import CommandResult, run_command
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols, read_static_symbols
from smoke.machine import Toolchain
from smoke.report import StageOutcome, Status

SOURCES = Path(__file__).with_name("csrc")
SHIM_SYMBOL = "aoti_torch_dtype_float32"
COMPILE_TIMEOUT_S = 180
LOAD_TIMEOUT_S = 60
DLOPEN_FAILED = "dlopen failed: "


@dataclass(frozen=True, slots=True)
class LinkWay:
    """One of the four ways to link the shim archive into the host."""

    whole_archive: bool
    export_dynamic: bool

    @property
    def label(self) -> str:
        archive = "whole-archive" if self.whole_archive else "plain-archive"
        exports = "export-dynamic" if self.export_dynamic else "no-export"
        return f"{archive}+{exports}"

    @property
    def expected_to_load(self) -> bool:
        return self.whole_archive and self.export_dynamic


LINK_WAYS = tuple(LinkWay(whole, export) for whole in (False, True) for export in (False, True))


@dataclass(frozen=True, slots=True)
class ContractBuild:
    """The compiled contract; on a failed step, `steps` ends with it and the outputs may be missing."""

    steps: tuple[CommandResult, ...]
    library: Path
    hosts: tuple[tuple[LinkWay, Path], ...]
    kernel: str
    archive: Path

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)


@dataclass(frozen=True, slots=True)
class Combination:
    """What the loader did with one host."""

    whole_archive: bool
    export_dynamic: bool
    expected_to_load: bool
    loaded: bool
    ran: bool | None
    message: str
    as_expected: bool
    exit_code: int | None
    symbol_exported: bool | None
    symbol_in_binary: bool | None
    host: str

    def to_json(self) -> dict:
        return asdict(self)


def prove_link_contract(build_dir: Path, toolchain: Toolchain, gpu_present: bool) -> StageOutcome:
    """Build the contract and load the library from each host; passes when only both flags load."""
    if toolchain.cc is None:
        return StageOutcome("skipped", "no C compiler found (set CC, or install gcc)")
    build = build_contract(build_dir, toolchain)
    details = {
        "kernel": build.kernel,
        "symbol": SHIM_SYMBOL,
        "build_dir": str(build_dir),
        "steps": [step.to_json() for step in build.steps],
        "combinations": [],
    }
    if not build.ok:
        failed = build.steps[-1]
        return StageOutcome("failed", f"compiling the contract failed: {failed.command}", details)
    run_kernel = gpu_present and build.kernel == "cuda"
    combinations = tuple(try_combination(way, host, build.library, run_kernel) for way, host in build.hosts)
    details["combinations"] = [combination.to_json() for combination in combinations]
    return StageOutcome(*_verdict(combinations, build.kernel, gpu_present), details)


def build_contract(build_dir: Path, toolchain: Toolchain) -> ContractBuild:
    """Compile archive, library and the four hosts into build_dir, stopping at the first failure."""
    cc = toolchain.cc
    if cc is None:
        raise ValueError("the link contract needs a C compiler (prove_link_contract skips without one)")
    build_dir.mkdir(parents=True, exist_ok=True)
    kernel = "cuda" if toolchain.nvcc else "cpu-stand-in"
    library = build_dir / "libsmoke_contract.so"
    hosts = tuple((way, build_dir / f"host-{way.label}") for way in LINK_WAYS)
    archive = build_dir / "libaoti_shim.a"
    host_object = build_dir / "load_library.o"
    commands = [
        [cc, "-c", "-fPIC", "-O1", str(SOURCES / "aoti_shim.c"), "-o", str(build_dir / "aoti_shim.o")],
        [shutil.which("ar") or "ar", "rcs", str(archive), str(build_dir / "aoti_shim.o")],
        [
            cc,
            "-c",
            "-fPIC",
            "-O1",
            f"-I{SOURCES}",
            str(SOURCES / "contract_library.c"),
            "-o",
            str(build_dir / "contract_library.o"),
        ],
        _kernel_command(toolchain, cc, build_dir / "contract_kernel.o"),
        # The library is linked by nvcc, as a CUDA library is, which also brings in the CUDA runtime.
        [
            toolchain.nvcc or cc,
            "-shared",
            *(["-Xcompiler", "-fPIC"] if toolchain.nvcc else ["-fPIC"]),
            str(build_dir / "contract_library.o"),
            str(build_dir / "contract_kernel.o"),
            "-o",
            str(library),
        ],
        [cc, "-c", "-O1", str(SOURCES / "load_library.c"), "-o", str(host_object)],
        *(_host_link_command(cc, way, host_object, archive, host) for way, host in hosts),
    ]
    steps: list[CommandResult] = []
    for command in commands:
        steps.append(run_command(command, timeout=COMPILE_TIMEOUT_S))
        if not steps[-1].ok:
            break
    return ContractBuild(steps=tuple(steps), library=library, hosts=hosts, kernel=kernel, archive=archive)


def _kernel_command(toolchain: Toolchain, cc: str, output: Path) -> list[str]:
    if toolchain.nvcc:
        return [
            toolchain.nvcc,
            "-c",
            "-Xcompiler",
            "-fPIC",
            f"-I{SOURCES}",
            str(SOURCES / "contract_kernel.cu"),
            "-o",
            str(output),
        ]
    return [cc, "-c", "-fPIC", f"-I{SOURCES}", str(SOURCES / "contract_kernel_cpu.c"), "-o", str(output)]


def _host_link_command(cc: str, way: LinkWay, host_object: Path, archive: Path, output: Path) -> list[str]:
    archive_args = (
        ["-Wl,--whole-archive", str(archive), "-Wl,--no-whole-archive"] if way.whole_archive else [str(archive)]
    )
    export_args = ["-Wl,--export-dynamic"] if way.export_dynamic else []
    return [cc, str(host_object), *archive_args, *export_args, "-ldl", "-o", str(output)]


def try_combination(way: LinkWay, host: Path, library: Path, run_kernel: bool) -> Combination:
    """dlopen the library from one host (and call it when run_kernel) and record what happened."""
    argv = [str(host), str(library)] if run_kernel else [str(host), "--load-only", str(library)]
    result = run_command(argv, timeout=LOAD_TIMEOUT_S)
    lines = result.stdout.splitlines()
    first = lines[0] if lines else ""
    loaded = first == "loaded"
    if loaded:
        ran, message = _kernel_outcome(lines[1:], result, run_kernel)
    else:
        ran = None
        message = first.removeprefix(DLOPEN_FAILED) or _no_output(result)
    exported, in_binary = _symbol_presence(host)
    expected = way.expected_to_load and loaded and (ran is True if run_kernel else ran is None)
    rejected = not way.expected_to_load and not loaded and f"undefined symbol: {SHIM_SYMBOL}" in message
    return Combination(
        whole_archive=way.whole_archive,
        export_dynamic=way.export_dynamic,
        expected_to_load=way.expected_to_load,
        loaded=loaded,
        ran=ran,
        message=message,
        as_expected=expected or rejected,
        exit_code=result.returncode,
        symbol_exported=exported,
        symbol_in_binary=in_binary,
        host=host.name,
    )


def _kernel_outcome(lines: list[str], result: CommandResult, run_kernel: bool) -> tuple[bool | None, str]:
    if not run_kernel:
        return None, "loaded; kernel run skipped"
    if result.ok and lines and lines[0].startswith("ran: "):
        return True, lines[0]
    return False, lines[0] if lines else _no_output(result)


def _no_output(result: CommandResult) -> str:
    if result.timed_out:
        return f"timed out after {LOAD_TIMEOUT_S}s"
    return f"exit {result.returncode}, no loader message; stderr: {result.stderr.strip()[-500:]}"


def _symbol_presence(host: Path) -> tuple[bool | None, bool | None]:
    try:
        exported = SHIM_SYMBOL in read_dynamic_symbols(host).defined
        return exported, SHIM_SYMBOL in read_static_symbols(host)
    except SymbolReadError:
        return None, None


def _verdict(combinations: tuple[Combination, ...], kernel: str, gpu_present: bool) -> tuple[Status, str]:
    unexpected = [c for c in combinations if not c.as_expected]
    if unexpected:
        return "failed", "; ".join(
            f"{LinkWay(c.whole_archive, c.export_dynamic).label}: "
            f"{'loaded' if c.loaded else 'did not load'}, ran={c.ran}: {c.message}"
            for c in unexpected
        )
    proven = (
        f"only --whole-archive with --export-dynamic loads; the other three fail with 'undefined symbol: {SHIM_SYMBOL}'"
    )
    if kernel != "cuda":
        return "passed", f"{proven}; kernel not built: no nvcc (CPU stand-in library)"
    if not gpu_present:
        return "passed", f"{proven}; kernel run skipped: no GPU"
    return "passed", f"{proven}; its kernel ran on the GPU"
