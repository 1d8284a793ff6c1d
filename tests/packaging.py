"""What the packaging tests share: the tracked source tree copied out, and clean virtual environments.

Both the wheel test and the image test install into a fresh venv from the copy, never from this
checkout, so a file that only an editable install sees (an untracked fixture, a stale build/) cannot
make them pass.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The packages of the wheel (pyproject.toml [tool.setuptools.packages.find]) and what MANIFEST.in prunes.
PACKAGES = ("bot", "checks", "fixtures", "pr_check", "smoke", "webhooks")
PRUNED = ("smoke/reports/", "smoke/device/")


def tracked_files() -> list[str]:
    """Files git tracks or would add (untracked, not ignored), relative to the repository root."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    return sorted(name for name in listing.split("\0") if name and (ROOT / name).is_file())


def copy_tracked_tree(destination: Path) -> Path:
    """The working tree as a fresh clone would have it (tracked files and new ones), under destination."""
    for name in tracked_files():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target, follow_symlinks=False)
    return destination


def clean_environment() -> dict[str, str]:
    """The environment minus what would let a child import this checkout instead of what it installed."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_COMPILE"] = "1"  # no .pyc at install time: the tests' installs run once, compiling costs more
    return env


def make_venv(directory: Path, python: str = sys.executable) -> Path:
    """A new virtual environment (no system site packages) of `python`; returns its bin directory."""
    subprocess.run([python, "-m", "venv", str(directory)], check=True, env=clean_environment())
    return directory / "bin"


def installed_distributions(bin_dir: Path) -> dict[str, str]:
    """name -> version of every distribution in that venv, pip and setuptools (the venv's own) left out."""
    import json

    listing = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
        env=clean_environment(),
    ).stdout
    return {
        row["name"].lower(): row["version"]
        for row in json.loads(listing)
        if row["name"].lower() not in ("pip", "setuptools")
    }
