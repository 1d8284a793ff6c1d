"""Which C++ compiler builds the canary: one whose shared libraries use the process's own libstdc++.

An AOTInductor wrapper is a C++ shared library loaded into a process that already runs a C++ runtime
(PyTorch's, or the host's). A compiler that links libstdc++ statically into shared libraries (a wrapper
script adding `-static-libstdc++`, as /opt/gcc/bin/g++ on the measured H200 machine does) gives the
wrapper a second copy of libstdc++ whose symbols are only partly interposed by the process's copy; the
two disagree about std::locale's facet table, and the wrapper crashes on its first std::regex
(`parse_device_str`, while `AOTInductorModelContainerCreateWithDevice` builds the model), which
`aoti_load_package` reports as nothing more than SIGSEGV. So each candidate compiler is asked to build a
tiny shared library first, and its DT_NEEDED entries say how it links the C++ runtime.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from smoke.commands import run_command
from smoke.elf_symbols import DynamicSymbols, SymbolReadError, read_dynamic_symbols

Linkage = Literal["shared", "static", "none"]
PROBE_TIMEOUT_S = 120
# std::locale().name() pulls libstdc++'s locale machinery in, the part that breaks when duplicated.
PROBE_SOURCE = (
    "#include <locale>\n#include <string>\nstd::string smoke_locale_name() { return std::locale().name(); }\n"
)
SHARED_RUNTIMES = ("libstdc++.so", "libc++.so")
# Exported from a shared library only when the C++ runtime itself was linked into it.
RUNTIME_INTERNALS = ("_ZNSt6locale", "_ZNKSt7codecvt")
COMPILER_NAMES = ("g++", "c++", "clang++")


@dataclass(frozen=True, slots=True)
class CompilerProbe:
    """How one C++ compiler links the C++ runtime into a shared library."""

    path: str
    linkage: Linkage | None
    error: str | None = None

    def to_json(self) -> dict:
        return {"path": self.path, "linkage": self.linkage, "error": self.error}


@dataclass(frozen=True, slots=True)
class CompilerChoice:
    """The compiler for AOTInductor (None: leave Inductor's default) and every candidate's probe."""

    path: str | None
    probes: tuple[CompilerProbe, ...]

    @property
    def reason(self) -> str:
        if self.path is None:
            tried = ", ".join(f"{p.path} ({p.linkage or p.error})" for p in self.probes) or "none found"
            return f"no C++ compiler links libstdc++ dynamically into shared libraries (tried: {tried})"
        rejected = [p for p in self.probes if p.path != self.path]
        skipped = "".join(f"; skipped {p.path}: {_describe_probe(p)}" for p in rejected)
        return f"{self.path} links libstdc++ dynamically{skipped}"

    def to_json(self) -> dict:
        return {"path": self.path, "reason": self.reason, "probes": [probe.to_json() for probe in self.probes]}


def libstdcxx_linkage(symbols: DynamicSymbols) -> Linkage:
    """'shared' if the library needs a shared C++ runtime, 'static' if it carries one, else 'none'."""
    if any(library.startswith(SHARED_RUNTIMES) for library in symbols.needed_libraries):
        return "shared"
    if any(name.startswith(RUNTIME_INTERNALS) for name in symbols.defined):
        return "static"
    return "none"


def candidate_compilers(preferred: str | None = None) -> tuple[str, ...]:
    """$CXX, the toolchain's choice, then g++, c++ and clang++ on PATH; one entry per real file."""
    found = [os.environ.get("CXX"), preferred, *(shutil.which(name) for name in COMPILER_NAMES)]
    unique: dict[str, str] = {}
    for path in filter(None, found):
        resolved = shutil.which(path) or path
        unique.setdefault(os.path.realpath(resolved), resolved)
    return tuple(unique.values())


def choose_compiler(candidates: tuple[str, ...], probe_dir: Path) -> CompilerChoice:
    """The first candidate whose shared libraries link libstdc++ dynamically."""
    probe_dir.mkdir(parents=True, exist_ok=True)
    source = probe_dir / "runtime_probe.cpp"
    source.write_text(PROBE_SOURCE)
    probes = []
    for index, compiler in enumerate(candidates):
        probe = probe_compiler(compiler, source, probe_dir / f"runtime_probe_{index}.so")
        probes.append(probe)
        if probe.linkage == "shared":
            return CompilerChoice(compiler, tuple(probes))
    return CompilerChoice(None, tuple(probes))


def probe_compiler(compiler: str, source: Path, output: Path) -> CompilerProbe:
    """Build source into a shared library with compiler and read how it links the C++ runtime."""
    result = run_command([compiler, "-shared", "-fPIC", "-O1", str(source), "-o", str(output)], timeout=PROBE_TIMEOUT_S)
    if not result.ok:
        detail = "timed out" if result.timed_out else (result.stderr.strip()[-300:] or f"exit {result.returncode}")
        return CompilerProbe(compiler, None, f"cannot build a shared library: {detail}")
    try:
        return CompilerProbe(compiler, libstdcxx_linkage(read_dynamic_symbols(output)))
    except SymbolReadError as error:
        return CompilerProbe(compiler, None, str(error))


def _describe_probe(probe: CompilerProbe) -> str:
    if probe.linkage == "static":
        return "links libstdc++ statically into shared libraries"
    return probe.error or f"linkage {probe.linkage}"
