"""SARIF (OASIS schema + GitHub's limits), workflow annotations and rdjson, from real and hand-built reports."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import checks
from bot.engine import ENGINE_RULES
from bot.render.github_annotations import annotation_command, escape_property, render_github_annotations
from bot.render.rdjson import render_rdjson
from bot.render.sarif import MAX_RESULTS_PER_RUN, render_sarif
from bot.render.statistics import rule_by_cell_table
from bot.review_stats import ConfigSource, ReviewStats
from tests.reports import CRASH, GUARD, HEAD, MINOR, assert_valid_sarif, finding, report

ROOT = Path(__file__).resolve().parents[1]
CASES = ("pr24817-cuda-outside-fbcode", "pr24643-shim-linkage", "clean-cpu-target", "whole-archive-public-scope")


def pr_check(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *args], capture_output=True, text=True, cwd=cwd, input=stdin, timeout=300
    )


@pytest.mark.parametrize("case", CASES)
def test_cli_sarif_validates_against_the_oasis_schema(case_repo, case):
    repo, base, head = case_repo(case)
    result = pr_check("review", "--repo", str(repo), "--base", base, "--head", head, "--format", "sarif")
    assert result.returncode in (0, 1), result.stderr
    document = json.loads(result.stdout)
    assert_valid_sarif(document)
    # A fixture repository has no remote: no provenance rather than one without its required URI.
    assert "versionControlProvenance" not in document["runs"][0]


def test_sarif_of_every_kind_of_finding_validates():
    suppressed = replace(MINOR, suppressed="built only by the Jetson toolchain")
    document = render_sarif(
        report([GUARD, CRASH], suppressed=[suppressed], stats=ReviewStats(config=ConfigSource("local", "x.toml"))),
        checks.ALL,
        "0.1.0",
        repository_uri="https://github.com/pytorch/executorch",
        category="pr-check",
    )
    assert_valid_sarif(document)
    run = document["runs"][0]
    assert run["versionControlProvenance"] == [
        {"repositoryUri": "https://github.com/pytorch/executorch", "revisionId": HEAD}
    ]
    assert run["automationDetails"] == {"id": "pr-check/"} and run["properties"]["config"]["source"] == "local"
    crash = next(r for r in run["results"] if r["ruleId"] == "internal-error")
    assert crash["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == ".github/pr-check.toml"
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert set(rules) == {c.id for c in checks.ALL} | set(ENGINE_RULES)
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in run["results"])
    assert next(r for r in run["results"] if r["ruleId"] == MINOR.rule)["suppressions"][0]["kind"] == "inSource"


def test_sarif_stays_within_githubs_result_limit():
    many = [finding(line=n, path=f"p{n % 50}/BUCK") for n in range(1, MAX_RESULTS_PER_RUN + 11)]
    document = render_sarif(report(many), checks.ALL, "0.1.0")
    run = document["runs"][0]
    assert len(run["results"]) == MAX_RESULTS_PER_RUN and run["properties"]["truncatedResults"] == 10
    assert_valid_sarif({**document, "runs": [{**run, "results": run["results"][:50]}]})  # the schema walk is slow


def test_github_annotations_escape_what_ends_a_command():
    line = annotation_command(finding(message="50% of it\nsecond line", path="a,b:c.bzl", line=3))
    assert line.startswith("::error file=a%2Cb%3Ac.bzl,line=3,endLine=3,title=cuda-guard-missing (blocker)%3A ")
    assert line.endswith("::50%25 of it%0Asecond line") and "\n" not in line
    assert escape_property("x\r") == "x%0D"
    text = render_github_annotations(report([GUARD, MINOR, CRASH]))
    assert [row.split(" ", 1)[0] for row in text.splitlines()] == ["::error", "::warning", "::error"]
    assert "file=" not in text.splitlines()[2]  # a finding without a file is annotated on the run


def test_rdjson_is_a_reviewdog_diagnostic_result():
    document = render_rdjson(report([GUARD, MINOR]))
    assert document["source"] == {"name": "pr-check"} and document["severity"] == "ERROR"
    first = document["diagnostics"][0]
    assert first["location"] == {
        "path": "backends/cuda/targets.bzl",
        "range": {"start": {"line": 100}, "end": {"line": 100}},
    }
    assert first["code"] == {"value": "cuda-guard-missing"} and first["severity"] == "ERROR"
    assert first["suggestions"][0]["range"] == {"start": {"line": 101, "column": 1}, "end": {"line": 102, "column": 1}}
    assert first["related_locations"][0]["location"]["path"] == "backends/cuda/targets.bzl"
    assert document["diagnostics"][1]["severity"] == "WARNING"


def test_cli_github_and_rdjson_formats(case_repo):
    repo, base, head = case_repo("pr24817-cuda-outside-fbcode")
    github = pr_check(
        "review", "--repo", str(repo), "--base", base, "--head", head, "--no-compile", "--format", "github"
    )
    assert github.returncode == 1 and github.stdout.startswith("::error file=extension/cuda/BUCK,line=6,")
    rdjson = pr_check(
        "review", "--repo", str(repo), "--base", base, "--head", head, "--no-compile", "--format", "rdjson"
    )
    assert {d["code"]["value"] for d in json.loads(rdjson.stdout)["diagnostics"]} == {"cuda-guard-missing"}


def test_check_run_summary_has_a_rule_by_cell_table():
    table = rule_by_cell_table([GUARD, MINOR, finding(cell="xplat"), CRASH])
    assert table == [
        "| rule | fbcode | xplat | (no cell) | total |",
        "|---|---:|---:|---:|---:|",
        "| `cuda-guard-missing` |  | 2 |  | 2 |",
        "| `internal-error` |  |  | 1 | 1 |",
        "| `link-whole-without-python-dlopen` | 1 |  |  | 1 |",
    ]
