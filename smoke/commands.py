"""Running external programs with a timeout, keeping what happened as a value for the report."""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# Enough of a compiler's or loader's output to diagnose it, short enough to keep reports readable.
OUTPUT_TAIL_CHARS = 4000


@dataclass(frozen=True, slots=True)
class CommandResult:
    """One finished (or unstartable, or timed-out) program run."""

    command: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def to_json(self) -> dict:
        """The run as report data, with output cut to its tail."""
        return {
            "command": self.command,
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "seconds": round(self.seconds, 3),
            "stdout": self.stdout[-OUTPUT_TAIL_CHARS:],
            "stderr": self.stderr[-OUTPUT_TAIL_CHARS:],
        }


def run_command(
    argv: list[str] | str,
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> CommandResult:
    """Run argv (or, given a string, a shell command line) and capture its output; never raises."""
    shell = isinstance(argv, str)
    command = argv if shell else shlex.join(str(part) for part in argv)
    started = time.monotonic()
    try:
        completed = subprocess.run(
            argv,
            shell=shell,
            cwd=cwd,
            env=env,
            timeout=timeout,
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as expired:
        return CommandResult(
            command,
            None,
            _text(expired.stdout),
            _text(expired.stderr),
            time.monotonic() - started,
            timed_out=True,
        )
    except OSError as error:
        return CommandResult(command, None, "", f"{type(error).__name__}: {error}", time.monotonic() - started)
    return CommandResult(command, completed.returncode, completed.stdout, completed.stderr, time.monotonic() - started)


def _text(output: str | bytes | None) -> str:
    # TimeoutExpired carries bytes even when the run asked for text.
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""
