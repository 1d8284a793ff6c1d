"""pr-check installed as its documents say, and the GPU smoke workflow installing exactly itself.

`pr-check` is no name on any package index this project controls: an install line that asks an
index for it installs nothing today, and whatever someone registers under it tomorrow. So every
install line in the documents, the Action, the image and the generated workflow names a git URL
and a ref, a directory or a wheel; and the README's Install lines are run, one by one, in clean
virtual environments, against a local bare repository (a `file://` URL) tagged as a release is.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from pr_check.version import VERSION
from smoke.cli import WORKFLOW_TEMPLATE, main
from tests.packaging import ROOT, clean_environment, copy_tracked_tree, make_venv

pytestmark = pytest.mark.timeout(600)

TAG = f"v{VERSION}"
# Files a user reads or runs install lines from; the generated workflow is checked on its own below.
DOCUMENTS = ("README.md", "action.yml", ".pre-commit-hooks.yaml", "Dockerfile", "Makefile", "smoke/gpu-smoke.yml")
_INSTALL = re.compile(r"\b(?:pipx|pip3?)\s+install\s+([^`\n#|;&)]*)")
_BARE_NAME = re.compile(r"pr[-_]check(\[[^\]]*\])?((?:[<>=!~]=?|===)\S*)?", re.I)


def bare_index_installs(text: str) -> list[str]:
    """Every install command of `text` that asks a package index for `pr-check` by name."""
    found = []
    for match in _INSTALL.finditer(text):
        words = _words(match.group(1).strip())
        if any(_BARE_NAME.fullmatch(word) for word in words if not word.startswith("-")):
            found.append(match.group(0).strip())
    return found


def _words(arguments: str) -> list[str]:
    """The shell words of an install command's arguments; a fragment that ends inside a string of
    the surrounding text (a message in Python source) is cut at its last quote until it splits."""
    while True:
        try:
            return shlex.split(arguments)
        except ValueError:
            cut = max(arguments.rfind("'"), arguments.rfind('"'))
            if cut < 0:
                return arguments.split()
            arguments = arguments[:cut]


def _documents() -> list[Path]:
    """The documents, and the product's sources (the advice its messages give)."""
    sources = [path for package in ("bot", "pr_check", "smoke", "webhooks") for path in (ROOT / package).rglob("*.py")]
    return [ROOT / name for name in DOCUMENTS] + sorted((ROOT / "docs").rglob("*.md")) + sorted(sources)


def test_the_check_for_bare_index_installs_tells_them_apart():
    # By hand: what asks an index for the name, and what names a source.
    assert bare_index_installs("pip install pr-check") == ["pip install pr-check"]
    assert bare_index_installs("run `pip install 'pr-check[app]'` first") == ["pip install 'pr-check[app]'"]
    assert bare_index_installs('pip install --quiet "pr-check==0.1.0"') == ['pip install --quiet "pr-check==0.1.0"']
    assert bare_index_installs("pipx install pr-check  # the CLI") == ["pipx install pr-check"]
    assert bare_index_installs("pip install 'pr-check @ git+https://h/o/pr-check@v0.1.0'") == []
    assert bare_index_installs('pip install --quiet "pr-check @ git+$PR_CHECK_GIT_URL@$PR_CHECK_COMMIT"') == []
    assert bare_index_installs("pip install . && pip install './[app]' dist/pr_check-0.1.0-py3-none-any.whl") == []
    assert bare_index_installs("pip install --quiet executorch==1.5.1 torchao==0.18.0") == []
    assert (
        bare_index_installs(""""with: pip install 'pr-check[app] @ git+<URL>@<tag>', or pip install '.[app]'",""") == []
    )
    assert bare_index_installs(""""install them with: pip install 'pr-check[app]'",""") == [
        "pip install 'pr-check[app]'\","
    ]


def test_no_document_installs_pr_check_by_name_from_an_index():
    offenders = {
        str(path.relative_to(ROOT)): found for path in _documents() if (found := bare_index_installs(path.read_text()))
    }
    assert offenders == {}


def test_the_generated_smoke_workflow_installs_the_pr_check_it_names_by_url_and_commit(capsys):
    url, commit = "https://git.example/tools/pr-check.git", "0123456789abcdef0123456789abcdef01234567"
    assert main(["workflow", "--git-url", url, "--commit", commit]) == 0
    text = capsys.readouterr().out
    assert f'      PR_CHECK_GIT_URL: "{url}"\n      PR_CHECK_COMMIT: "{commit}"\n' in text
    assert '-m pip install --quiet "pr-check @ git+$PR_CHECK_GIT_URL@$PR_CHECK_COMMIT"\n' in text
    assert "@PR_CHECK_" not in text and bare_index_installs(text) == []
    assert text == WORKFLOW_TEMPLATE.read_text().replace("@PR_CHECK_GIT_URL@", url).replace("@PR_CHECK_COMMIT@", commit)


def test_the_smoke_workflow_refuses_a_pin_that_is_not_a_url_and_a_commit(capsys):
    assert main(["workflow", "--git-url", "https://git.example/pr-check.git", "--commit", "v0.1.0"]) == 2
    assert "40 hex digits" in capsys.readouterr().err
    assert main(["workflow", "--git-url", "pr-check", "--commit", "0" * 40]) == 2
    assert "is not a git URL" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tagged_repository(tmp_path_factory) -> tuple[Path, str]:
    """This tree committed into a bare repository tagged `v<VERSION>` (a release), and the tag's commit."""
    base = tmp_path_factory.mktemp("release")
    work = copy_tracked_tree(base / "work")
    env = {**clean_environment(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "release"], ["tag", TAG]):
        subprocess.run(["git", "-C", str(work), *command], check=True, env=env, capture_output=True)
    bare = base / "pr-check.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    commit = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", f"{TAG}^{{commit}}"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return bare, commit


def test_installed_from_a_git_url_at_a_tag_the_smoke_workflow_pins_that_url_and_commit(tagged_repository, tmp_path):
    bare, commit = tagged_repository
    bin_dir = make_venv(tmp_path / "venv")
    url = f"file://localhost{bare}"  # pip of Python 3.11 wants a host in a file URL
    subprocess.run(
        [str(bin_dir / "pip"), "install", "--quiet", f"pr-check @ git+{url}@{TAG}"],
        check=True,
        env=clean_environment(),
        capture_output=True,
        timeout=540,
    )
    recorded = json.loads(
        subprocess.run(
            [str(bin_dir / "python"), "-c", "from importlib import metadata; "
             "print(metadata.distribution('pr-check').read_text('direct_url.json'))"],
            check=True, capture_output=True, text=True, env=clean_environment(), cwd=tmp_path,
        ).stdout
    )  # fmt: skip
    assert recorded["vcs_info"]["commit_id"] == commit
    workflow = subprocess.run(
        [str(bin_dir / "pr-check"), "smoke", "workflow"],
        capture_output=True,
        text=True,
        env=clean_environment(),
        cwd=tmp_path,
    )
    assert workflow.returncode == 0, workflow.stderr
    assert f'PR_CHECK_GIT_URL: "{url}"' in workflow.stdout and f'PR_CHECK_COMMIT: "{commit}"' in workflow.stdout


REPOSITORY_URL = "<repository URL>"  # the README's one placeholder


def readme_install_lines() -> list[str]:
    """The command lines of the README's Install section (its shell blocks), comments dropped."""
    readme = (ROOT / "README.md").read_text()
    section = re.search(r"\n## Install\n(.*?)\n## ", readme, re.S)
    assert section, "README: no ## Install section"
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section.group(1), re.S):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


@pytest.fixture(scope="module")
def pipx(tmp_path_factory) -> Path | None:
    """pipx, from PATH or installed from PyPI into a venv of its own; None where neither works."""
    import shutil

    found = shutil.which("pipx")
    if found:
        return Path(found)
    bin_dir = make_venv(tmp_path_factory.mktemp("pipx") / "venv")
    installed = subprocess.run(
        [str(bin_dir / "pip"), "install", "--quiet", "pipx"], env=clean_environment(), capture_output=True, timeout=300
    )
    return bin_dir / "pipx" if installed.returncode == 0 else None


@pytest.mark.timeout(1800)  # five installs in fresh venvs, the App's stack in one: minutes on a busy machine
def test_the_readme_install_lines_work_one_by_one(tagged_repository, pipx, tmp_path):
    bare, _ = tagged_repository
    lines = readme_install_lines()
    # The README explains its one placeholder, and names the release tag this version is tagged as.
    readme = (ROOT / "README.md").read_text()
    assert f"`{REPOSITORY_URL}`" in readme and all(REPOSITORY_URL in line or TAG not in line for line in lines)
    assert any(f"@{TAG}" in line for line in lines) and bare_index_installs("\n".join(lines)) == []
    url = f"file://localhost{bare}"  # pip of Python 3.11 wants a host in a file URL
    cwd = tmp_path
    ran = []
    for number, line in enumerate(lines):
        command = line.replace(REPOSITORY_URL, url)
        if command.split()[0] == "pipx" and pipx is None:
            continue  # neither on PATH nor installable here: said by the skip below
        # Each line in a fresh venv of its own (so that no line rides on what another installed), pipx's
        # environments under the test's directory.
        bin_dir = make_venv(tmp_path / f"venv-{number}")
        env = {
            **clean_environment(),
            "PATH": f"{bin_dir}:{pipx.parent if pipx else bin_dir}:{os.environ['PATH']}",
            "PIPX_HOME": str(tmp_path / "pipx-home"),
            "PIPX_BIN_DIR": str(tmp_path / "pipx-bin"),
        }
        # `cd` lines move the following lines into the clone, as in a shell.
        step = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", f"{command}\npwd"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=540,
        )
        assert step.returncode == 0, f"README: {line}\n{step.stderr[-3000:]}"
        cwd = Path(step.stdout.strip().splitlines()[-1])
        installed = tmp_path / "pipx-bin" / "pr-check" if command.startswith("pipx") else bin_dir / "pr-check"
        if "install" in command.split():
            rules = subprocess.run([str(installed), "rules"], cwd=tmp_path, env=env, capture_output=True, text=True)
            assert rules.returncode == 0 and "cuda-guard-missing" in rules.stdout, f"after {line}: {rules.stderr}"
            if "[app]" in command:
                app = subprocess.run([str(bin_dir / "python"), "-c", "import fastapi, github, huey"], env=env)
                assert app.returncode == 0, f"after {line}: the app extra is missing"
        ran.append(line)
    assert ran, "no install line ran"
    if pipx is None:
        pytest.skip("pipx is neither on PATH nor installable: its lines were not run")
