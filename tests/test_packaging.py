"""The wheel as users get it (`pip install pr-check`, the Action, pre-commit): built once per session
from the tracked files, installed into a clean venv without the App's extra, and run from elsewhere."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from fixtures.cases import build_case_repository
from pr_check.commands.app import APP_MODULES
from tests.packaging import (
    PACKAGES,
    PRUNED,
    ROOT,
    clean_environment,
    copy_tracked_tree,
    installed_distributions,
    make_venv,
    tracked_files,
)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """pr-check's wheel, built (with build isolation, as pip does for users) from a copy of the tracked tree."""
    source = copy_tracked_tree(tmp_path_factory.mktemp("wheel-source"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)],
        check=True,
        env=clean_environment(),
        capture_output=True,
    )
    [built] = out.glob("pr_check-*.whl")
    return built


@pytest.fixture(scope="session")
def cli_venv(tmp_path_factory, wheel) -> Path:
    """A clean venv with `pip install <wheel>` (no extras): its bin directory."""
    bin_dir = make_venv(tmp_path_factory.mktemp("cli-venv") / "venv")
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        env=clean_environment(),
        capture_output=True,
    )
    return bin_dir


def _run(bin_dir: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_dir / "pr-check"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env or clean_environment(),
        timeout=300,
    )


def test_the_wheel_holds_every_file_of_its_packages(wheel):
    names = {name for name in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in name}
    expected = {
        name
        for name in tracked_files()
        if name.startswith(tuple(f"{p}/" for p in PACKAGES))
        and not name.startswith(PRUNED)
        and "__pycache__" not in name
    }
    assert sorted(expected - names) == []  # fixtures' DESCRIPTION, TARGETS, .buckconfig, .ci/ scripts...
    assert sorted(names - expected) == []
    # The bundled example cases are data the demo discovers at run time, so check a few by name.
    assert "fixtures/cases/pr24817-cuda-outside-fbcode/DESCRIPTION" in names
    assert "fixtures/executorch_mini/.buckconfig" in names


def test_the_wheel_carries_the_licence(wheel):
    files = zipfile.ZipFile(wheel)
    [licence] = [name for name in files.namelist() if name.endswith(".dist-info/licenses/LICENSE")]
    assert "Apache License" in files.read(licence).decode()
    [meta] = [name for name in files.namelist() if name.endswith(".dist-info/METADATA")]
    assert "License-Expression: Apache-2.0" in files.read(meta).decode().splitlines()


def test_the_installed_wheel_runs_the_demo_from_another_directory(cli_venv, tmp_path):
    listing = _run(cli_venv, tmp_path, "demo", "--list")
    assert listing.returncode == 0, listing.stderr
    assert re.search(r"^pr24817-cuda-outside-fbcode\s+\S", listing.stdout, re.M)
    demo = _run(cli_venv, tmp_path, "demo", "-q")
    assert demo.returncode == 0, demo.stderr
    # The bundled PR makes backends/cuda/runtime's CUDA target visible in xplat without a guard.
    assert "extension/cuda/BUCK:6: blocker cuda-guard-missing:" in demo.stdout


def test_the_installed_wheel_reviews_a_repository(cli_venv, tmp_path):
    repo, base, head = build_case_repository("pr24817-cuda-outside-fbcode", tmp_path / "pr")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    review = _run(cli_venv, elsewhere, "review", "--repo", str(repo), "--base", base, "--head", head, "-q")
    assert review.returncode == 1, review.stderr  # blockers reach the default fail level
    assert "extension/cuda/BUCK:6: blocker cuda-guard-missing:" in review.stdout


def test_serve_without_the_app_extra_says_what_to_install(cli_venv, tmp_path):
    usage = _run(cli_venv, tmp_path, "serve", "--help")
    assert usage.returncode == 0 and usage.stdout.startswith("usage: pr-check serve"), usage.stderr
    key = tmp_path / "app.pem"
    key.write_text(
        "-----BEGIN PRIVATE KEY-----\nnot used: the service stops before reading it\n-----END PRIVATE KEY-----\n"
    )
    env = {
        **clean_environment(),
        "PR_CHECK_WEBHOOK_SECRET": "s",
        "PR_CHECK_APP_ID": "1",
        "PR_CHECK_PRIVATE_KEY_FILE": str(key),
        "PR_CHECK_DATA_DIR": str(tmp_path / "data"),
    }
    serve = _run(cli_venv, tmp_path, "serve", env=env)
    assert serve.returncode == 2
    assert "pip install 'pr-check[app]'" in serve.stderr and "Traceback" not in serve.stderr


def test_pip_install_pulls_at_most_15_packages_and_the_readme_lists_them(cli_venv):
    installed = installed_distributions(cli_venv)
    assert len(installed) <= 15, sorted(installed)
    # None of the App's stack comes with the CLI.
    assert not {"fastapi", "uvicorn", "huey", "redis", "pygithub", "httpx", "cryptography"} & set(installed)
    section = README_INSTALL.search((ROOT / "README.md").read_text())
    assert section, "README: the install section's list of what `pip install pr-check` installs"
    listed = {name.lower() for name in re.findall(r"`([A-Za-z0-9_.-]+)`", section.group(1))}
    assert listed == set(installed)


README_INSTALL = re.compile(r"`pip install pr-check` installs these \d+ distributions[^:]*:(.*?)\n\n", re.S)


def test_app_modules_name_every_package_of_the_app_extra():
    """The CLI's hint for `serve` without the extra recognises every import name the extra provides."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["app"]
    wanted = {_normal(re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)) for requirement in extra}
    providers = metadata.packages_distributions()
    provided = {module for module, dists in providers.items() if {_normal(d) for d in dists} & wanted}
    assert {module for module in provided if not module.startswith("_")} - APP_MODULES == set()
    assert wanted <= {_normal(d) for dists in providers.values() for d in dists}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_action_and_the_pre_commit_hooks_install_the_cli_alone():
    """They run `pr-check action` and `pr-check hook`, which the wheel without extras runs (above)."""
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    installs = [step["run"] for step in action["runs"]["steps"] if "pip install" in step.get("run", "")]
    assert installs and all(re.search(r'pip install --quiet "\$GITHUB_ACTION_PATH"\n', run) for run in installs)
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert {hook["language"] for hook in hooks} == {"python"}
    assert all("additional_dependencies" not in hook for hook in hooks)
    assert {hook["entry"].split()[:2][1] for hook in hooks} == {"hook"}


def test_the_other_cli_commands_run_without_the_app_extra(cli_venv, tmp_path):
    """What the Action, the pre-commit hooks and the GPU smoke job run, from the CLI-only install."""
    import json

    doctor = _run(cli_venv, tmp_path, "smoke", "doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    assert isinstance(json.loads(doctor.stdout)["has_gpu"], bool)
    action = _run(cli_venv, tmp_path, "action", "--help")
    assert action.returncode == 0 and action.stdout.startswith("usage: pr-check action"), action.stderr
    rules = _run(cli_venv, tmp_path, "rules")
    assert rules.returncode == 0 and "cuda-guard-missing" in rules.stdout
    repo, _, _ = build_case_repository("clean-cpu-target", tmp_path / "hooked")
    hook = _run(cli_venv, repo, "hook")
    assert hook.returncode == 0 and "no staged Buck, CMake or C++ change" in hook.stdout, hook.stderr
