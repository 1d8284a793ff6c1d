"""`pr-check serve` and `pr-check worker` that cannot start say why in one line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.standin.keys import app_key_pair

ROOT = Path(__file__).resolve().parents[1]


def _app_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    key = tmp_path / "app.pem"
    key.write_bytes(app_key_pair().private_pem)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PR_CHECK_")}
    return {
        **env,
        "PR_CHECK_WEBHOOK_SECRET": "s",
        "PR_CHECK_APP_ID": "1",
        "PR_CHECK_PRIVATE_KEY_FILE": str(key),
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def test_serve_and_worker_without_a_writable_data_dir_say_which_variable_to_set(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    env = _app_env(tmp_path, PR_CHECK_DATA_DIR=str(blocker / "data"))  # cannot be made, even by root
    for command in ("serve", "worker"):
        result = subprocess.run(
            [sys.executable, "-m", "pr_check.cli", command],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"pr-check {command}: PR_CHECK_DATA_DIR=")
        assert "cannot write there" in line and "set PR_CHECK_DATA_DIR to a directory this user can write" in line
