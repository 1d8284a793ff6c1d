"""What the README and docs/deploy.md tell users to type or set exists and does what they say."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("bot", "pr_check", "webhooks", "smoke", "checks")


def test_every_reviewdog_line_keeps_findings_on_untouched_lines():
    """reviewdog's default filter keeps only added lines; a guard finding sits on an untouched one."""
    lines = [line for path in ("README.md", "docs/deploy.md") for line in (ROOT / path).read_text().splitlines()
             if re.search(r"\|\s*reviewdog\b", line)]
    assert lines, "the README shows how to feed reviewdog"
    assert [line for line in lines if "-filter-mode=nofilter" not in line] == []


def test_every_documented_setting_is_read_by_the_code():
    documented = set(re.findall(r"\bPR_CHECK_[A-Z0-9_]+", (ROOT / "docs" / "deploy.md").read_text()
                                + (ROOT / "README.md").read_text()))
    code = subprocess.run(["git", "-C", str(ROOT), "grep", "-h", "-o", r"PR_CHECK_[A-Z0-9_]*", "--", *CODE],
                          capture_output=True, text=True, check=True).stdout
    assert sorted(documented - set(code.split())) == []
