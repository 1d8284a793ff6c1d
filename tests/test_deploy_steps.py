"""docs/deploy.md followed as an operator follows it, on the image's file set, as the image's user.

The Dockerfile is replayed (tests/test_docker_image.py) into a directory every user can enter; the
secrets are made by running deploy.md's own lines (everything after the manifest code's exchange,
with GitHub's answer written locally instead of fetched); then the image's CMD starts as uid and gid
10001 (this test runs as root to switch to them; it is skipped otherwise), with `/secrets` and `/data`
as the `docker run` line mounts them, and must answer /healthz.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.packaging import ROOT, clean_environment
from tests.standin.keys import app_key_pair
from tests.test_app_harness import wait_for
from tests.test_docker_image import replay_image

pytestmark = pytest.mark.timeout(600)

IMAGE_UID = 10001


def _secrets_lines() -> list[str]:
    """deploy.md's lines from `install -d` on (they make secrets/), continuation lines joined."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if "install -d" in b]
    joined = block.replace("\\\n", " ")
    lines = [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]
    start = next(i for i, line in enumerate(lines) if line.startswith("install -d"))
    return lines[start:]


def _usable_by_all(python: str) -> bool:
    """Runs as another user: every directory up to it can be entered by anyone, and it is 3.11+."""
    path = Path(python)
    if not path.exists() or any(p.stat().st_mode & 0o001 == 0 for p in Path(os.path.realpath(path)).parents):
        return False
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"], capture_output=True)
    return version.stdout.strip() == b"True"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def image_base():
    if os.geteuid() != 0:
        pytest.skip("switching to the image's uid needs root")
    # The image's user must reach the venv, its interpreter and the mounts: a Python outside /root.
    python = next((p for p in ("/usr/bin/python3.11", "/usr/bin/python3") if _usable_by_all(p)), None)
    if python is None:
        pytest.skip("no Python 3.11 or newer that every user can run (the venv's interpreter)")
    base = Path(tempfile.mkdtemp(prefix="pr-check-deploy-"))
    base.chmod(0o755)
    try:
        yield replay_image(base, python)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_key_made_as_deploy_md_says_is_read_by_the_image_user_and_the_service_answers(image_base, tmp_path):
    image = image_base
    host = image.root.root  # the operator's directory: `secrets/` here is what `-v "$PWD/secrets:/secrets:ro"` mounts
    (host / "app.json").write_text(
        json.dumps({"id": 12345, "webhook_secret": "deploy-test-secret", "pem": app_key_pair().private_pem.decode()})
    )
    for line in _secrets_lines():
        command = line.removeprefix("sudo ").replace("&& sudo ", "&& ")  # this test is root already
        step = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=host, capture_output=True, text=True)
        assert step.returncode == 0, f"deploy.md: {line}\n{step.stderr}"
    assert not (host / "app.json").exists()  # shredded, as the doc says
    key = host / "secrets" / "app.pem"
    assert key.stat().st_mode & 0o007 == 0 and (host / "secrets").stat().st_mode & 0o007 == 0  # nobody else
    env_file = dict(line.split("=", 1) for line in (host / "secrets" / "pr-check.env").read_text().splitlines() if line)
    assert env_file["PR_CHECK_PRIVATE_KEY_FILE"] == "/secrets/app.pem"

    # The image's /data as its Dockerfile leaves it (mkdir, chown 10001:10001): the named volume's start.
    data = image.root.path("/data")
    data.mkdir(parents=True, exist_ok=True)
    os.chown(data, IMAGE_UID, IMAGE_UID)
    port = _free_port()
    env = {
        **clean_environment(),
        **image.env,
        **{name: image.root.value(value) for name, value in env_file.items()},
        "PORT": str(port),
        "HOME": str(data),
        "PATH": f"{image.bin_dir}:{os.environ['PATH']}",
    }
    assert image.user == f"{IMAGE_UID}:{IMAGE_UID}"
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        image.cmd,
        cwd=data,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        user=IMAGE_UID,
        group=IMAGE_UID,
        extra_groups=[],
        start_new_session=True,
    )
    try:

        def answered() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return serve.poll() is not None  # it died: asserted below

        wait_for(answered, timeout=90, what="the service started as uid 10001")
        assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()["status"] == "ok"
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=30)
        log.close()
