"""What the README and docs/deploy.md tell users to type or set exists and does what they say."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("bot", "pr_check", "webhooks", "smoke", "checks")


def test_every_reviewdog_line_keeps_findings_on_untouched_lines():
    """reviewdog's default filter keeps only added lines; a guard finding sits on an untouched one."""
    lines = [
        line
        for path in ("README.md", "docs/deploy.md")
        for line in (ROOT / path).read_text().splitlines()
        if re.search(r"\|\s*reviewdog\b", line)
    ]
    assert lines, "the README shows how to feed reviewdog"
    assert [line for line in lines if "-filter-mode=nofilter" not in line] == []


def test_every_documented_setting_is_read_by_the_code():
    documented = set(
        re.findall(
            r"\bPR_CHECK_[A-Z0-9_]+", (ROOT / "docs" / "deploy.md").read_text() + (ROOT / "README.md").read_text()
        )
    )
    code = subprocess.run(
        ["git", "-C", str(ROOT), "grep", "-h", "-o", r"PR_CHECK_[A-Z0-9_]*", "--", *CODE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The test suite's own setting (where the ExecuTorch mirror is) is read by tests/conftest.py.
    suite = set(re.findall(r"\bPR_CHECK_[A-Z0-9_]+", (ROOT / "tests" / "conftest.py").read_text()))
    assert sorted(documented - set(code.split()) - suite) == []


def test_the_readme_shows_the_generated_screenshots():
    """`make screenshots` writes them (docs/screenshots.py); the README shows each one."""
    readme = (ROOT / "README.md").read_text()
    for name in ("review", "check-run"):
        assert f"](docs/screenshots/{name}.png)" in readme
        picture = ROOT / "docs" / "screenshots" / f"{name}.png"
        assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "screenshots:" in (ROOT / "Makefile").read_text()


def test_the_screenshot_pages_are_the_apps_own_payloads(case_repo, tmp_path):
    """The pages the screenshots are taken of hold what the App posts (without Chromium here)."""
    import pytest

    pytest.importorskip("cmarkgfm")
    import importlib.util

    from bot.render.github_review import plan_review
    from pr_check.review import review_repository

    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "docs" / "screenshots.py")
    screenshots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(screenshots)
    repo, base, head = case_repo(screenshots.CASE)
    report = review_repository(repo, base, head, cache_dir=tmp_path / "cache")
    plan = plan_review(report.findings, report.changes, (), (), head)
    review = screenshots.review_page(report, plan, lambda path: (repo / path).read_text())
    # One finding (test_fixture_cases: the BUCK line that exposes two CUDA targets to xplat; the
    # targets CUDA only through them are named on it), so one inline comment.
    assert review.count("<strong>cuda-guard-missing</strong> (blocker)") == len(plan.comments) == 1
    # The guard goes into targets.bzl, not the commented BUCK line: a folded patch, not a suggestion.
    assert "guard each of them" in review and "+++ b/extension/cuda/targets.bzl" in review
    assert "requested changes" in review
    check_run = screenshots.check_run_page(report)
    assert "<span class='badge failure'>failure</span>" in check_run
    assert "<strong>Not evaluated</strong>" in check_run and "<table>" in check_run
