"""Helpers for tests that watch processes the code under test forks."""

from __future__ import annotations

from pathlib import Path


def gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie no one has reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return status.rsplit(")", 1)[1].split()[0] == "Z"
