"""What the backend and the runtime say when a program fails, read from their own lines.

Three kinds of evidence, in the words the code that failed printed them:
- the AOTInductor wrapper's own check: a shim that returns an error makes the wrapper throw
  "<shim>(<arguments>) API call failed at <wrapper>.cpp, line N", printed by the model container's
  exception handler as "Error: ..." (torch/csrc/inductor/aoti_runtime);
- ExecuTorch's error log lines, "E <time> executorch:<file>:<line>] <message>" (ET_LOG(Error, ...) and
  the ET_CHECK_* macros), which name the file and line of the check that failed (the shims' own
  checks, the CUDA error checks after a kernel launch);
- a CUDA error string ("misaligned address", "an illegal memory access was encountered", ...).

Values only: nothing here reads the tree or decides who is to blame (blame.py does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

API_CALL_FAILED = re.compile(r"\b(?P<shim>aoti_torch_\w+)\s*\(.*\bAPI call failed\b")
LOG_LINE = re.compile(r"^(?P<level>[EF]) [\d:.]+ executorch:(?P<file>[^:\s]+):(?P<line>\d+)\] (?P<message>.*)$")
CUDA_ERRORS = (
    "misaligned address",
    "an illegal memory access was encountered",
    "unspecified launch failure",
    "invalid configuration argument",
    "invalid argument",
    "out of memory",
    "device-side assert triggered",
    "too many resources requested for launch",
    "invalid device function",
    "no kernel image is available for execution on the device",
    "operation not supported on global/shared address space",
)
# Lines that say nothing about this failure: a static host cannot reopen itself by name, and the wrapper
# still resolves its shims from the executable (see program_run.py).
HARMLESS = ("promote symbols",)


@dataclass(frozen=True, slots=True)
class LogPlace:
    """One error log line: the file (as the log names it, a base name) and line of the failed check."""

    file: str
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class RuntimeErrors:
    """Everything a failed run said, most specific first; empty fields where it said nothing of that kind."""

    failed_shims: tuple[str, ...]  # shims whose call the wrapper reported failed, in order
    places: tuple[LogPlace, ...]  # error log lines with their file:line, in order
    cuda_errors: tuple[str, ...]
    lines: tuple[str, ...]  # the error lines themselves, as printed

    @property
    def said_anything(self) -> bool:
        return bool(self.failed_shims or self.places or self.cuda_errors)

    def summary(self) -> str:
        """The lines a maintainer needs, most specific first: the failed shim call, then the checks."""
        shown = [line for line in self.lines if API_CALL_FAILED.search(line)]
        shown += [line for line in self.lines if line not in shown]
        return "; ".join(_short(line) for line in shown[:3])

    def to_json(self) -> dict:
        return {
            "failed_shims": list(self.failed_shims),
            "places": [{"file": p.file, "line": p.line, "message": p.message} for p in self.places],
            "cuda_errors": list(self.cuda_errors),
            "lines": list(self.lines),
        }


def read_runtime_errors(*outputs: str) -> RuntimeErrors:
    """The evidence in a run's stderr and stdout (both: the wrapper prints to stderr, the host to stdout)."""
    shims: list[str] = []
    places: list[LogPlace] = []
    cuda: list[str] = []
    lines: list[str] = []
    for text in outputs:
        for raw in text.splitlines():
            line = raw.strip()
            if not line or any(word in line for word in HARMLESS):
                continue
            relevant = False
            call = API_CALL_FAILED.search(line)
            if call:
                if call.group("shim") not in shims:
                    shims.append(call.group("shim"))
                relevant = True
            logged = LOG_LINE.match(line)
            if logged:
                places.append(LogPlace(logged.group("file"), int(logged.group("line")), logged.group("message")))
                relevant = True
            lowered = line.lower()
            for error in CUDA_ERRORS:
                if error in lowered and error not in cuda:
                    cuda.append(error)
                    relevant = True
            if relevant and line not in lines:
                lines.append(line)
    return RuntimeErrors(tuple(shims), tuple(places), tuple(cuda), tuple(lines))


def _short(line: str) -> str:
    # The wrapper's argument list and its temporary file say nothing a reader acts on.
    call = API_CALL_FAILED.search(line)
    if call:
        where = line[line.index("API call failed") :].split(" at ", 1)[0]
        return f"{call.group('shim')}(...) {where}"
    return line[:240]
