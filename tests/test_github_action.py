"""The composite GitHub Action, end to end: each step of action.yml run as the runner would, with a
simulated GITHUB_* environment and event file, against a fixture repository. The two `uses:` steps
(setup-python, upload-sarif) are not run; the SARIF file the upload would send is validated."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.reports import assert_valid_sarif

ROOT = Path(__file__).resolve().parents[1]
_EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
_REFERENCE = re.compile(r"\b(inputs|github|steps|runner)((?:\.[A-Za-z_][\w-]*)+)")


class Runner:
    """Just enough of the Actions runner for a composite action: contexts, expressions, step outputs."""

    def __init__(self, action: dict, inputs: dict, event: dict, env: dict, workspace: Path, temp: Path) -> None:
        defaults = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
        self.contexts = {
            "inputs": {**defaults, **inputs},
            "github": {"workspace": str(workspace), "action_path": str(ROOT), "event": event},
            "runner": {"temp": str(temp)},
            "steps": {},
        }
        self.env, self.temp = env, temp

    def lookup(self, context: str, path: str):
        value = self.contexts[context]
        for key in path.strip(".").split("."):
            value = value.get(key, "") if isinstance(value, dict) else ""
        return value

    def evaluate(self, expression: str):
        """`a.b.c`, `'text'`, ==, !=, &&, || and always(): what action.yml uses."""
        python = _REFERENCE.sub(lambda m: repr(self.lookup(m.group(1), m.group(2))), expression)
        python = python.replace("&&", " and ").replace("||", " or ").replace("always()", "True")
        return eval(python, {"__builtins__": {}})

    def substitute(self, text: str) -> str:
        return _EXPRESSION.sub(lambda m: str(self.evaluate(m.group(1))), str(text))

    def run(self, step: dict, index: int) -> int:
        output = self.temp / f"output-{index}"
        output.write_text("")
        env = {**self.env, "GITHUB_OUTPUT": str(output)}
        env.update({key: self.substitute(value) for key, value in step.get("env", {}).items()})
        cwd = self.substitute(step.get("working-directory", "${{ github.workspace }}"))
        result = subprocess.run(
            ["bash", "-e", "-c", self.substitute(step["run"])],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if "id" in step:
            pairs = [line.split("=", 1) for line in output.read_text().splitlines() if "=" in line]
            self.contexts["steps"][step["id"]] = {"outputs": dict(pairs)}
        self.log = result.stdout + result.stderr
        return result.returncode


@pytest.mark.parametrize(
    "case, fail_level, job_status",
    [
        ("pr24817-cuda-outside-fbcode", "", 1),
        ("pr24817-cuda-outside-fbcode", "blocker", 1),
        ("clean-cpu-target", "", 0),
    ],
)
def test_the_action_reviews_the_pull_request_end_to_end(case_repo, tmp_path, case, fail_level, job_status):
    repo, base, head = case_repo(case)
    event = {
        "action": "opened",
        "number": 7,
        "pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}},
    }
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    summary = tmp_path / "summary.md"
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "pytorch/executorch",
        "GITHUB_SHA": head,
        "RUNNER_TEMP": str(temp),
        "PYTHONPATH": str(ROOT),
    }
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    runner = Runner(action, {"fail-level": fail_level}, event, env, repo, temp)
    statuses, uploaded = [], []
    steps = action["runs"]["steps"]
    for index, step in enumerate(steps):
        if "if" in step and not runner.evaluate(step["if"]):
            continue
        if "uses" in step:
            if step["uses"].startswith("github/codeql-action/upload-sarif@"):
                uploaded.append(Path(runner.substitute(step["with"]["sarif_file"])))
                assert runner.substitute(step["with"]["category"]) == "pr-check"
            continue
        statuses.append(runner.run(step, index))
        if statuses[-1] != 0:
            break
    # Every step but the last succeeds: the SARIF upload must run before the job fails.
    assert statuses[:-1] == [0] * (len(statuses) - 1) and len(statuses) == sum(1 for s in steps if "run" in s)
    assert statuses[-1] == job_status, runner.log
    [sarif] = uploaded
    document = json.loads(sarif.read_text())
    assert_valid_sarif(document)
    run = document["runs"][0]
    assert run["versionControlProvenance"] == [
        {"repositoryUri": "https://github.com/pytorch/executorch", "revisionId": head}
    ]
    assert run["automationDetails"] == {"id": "pr-check/"}
    outputs = runner.contexts["steps"]["review"]["outputs"]
    assert outputs["findings"] == str(len(run["results"])) and outputs["status"] == str(job_status)
    markdown = summary.read_text()
    assert markdown.startswith("## pr-check: ")
    assert f"Reviewed `{base[:12]}..{head[:12]}`" in markdown
    if job_status:
        assert "**Findings by rule and cell**" in markdown and "| `cuda-guard-missing` |" in markdown
        assert "CUDA-touching" in markdown
    else:
        assert markdown.startswith("## pr-check: No issues")


def test_the_action_reports_a_bad_event_as_a_usage_error(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    result = subprocess.run(
        [sys.executable, "-m", "pr_check.cli", "action", "--sarif", str(tmp_path / "x.sarif")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "GITHUB_EVENT_PATH": str(event)},
    )
    assert result.returncode == 2 and "run the action on pull_request" in result.stderr


def test_the_job_summary_names_what_was_not_evaluated(case_repo, tmp_path):
    """As the App's check run does: a package the change touches that a cell could not evaluate."""
    from bot.render.job_summary import render_job_summary
    from pr_check.review import review_repository

    repo, base, head = case_repo("history-moved-targets-to-buck")
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    markdown = render_job_summary(report)
    assert "**Not evaluated**: 1 package this change touches failed to evaluate; no rule checked" in markdown
    [line] = [line for line in markdown.splitlines() if line.startswith("- `//backends/nxp` in `oss`: ")]
    assert "oxx_python.bzl" in line
    assert "not checked: every target it defines in `oss`" in line
    assert report.stats.unevaluated[0].failed_at_base is not None  # said either way, never left out
