"""File names that are not UTF-8: names by their bytes inside, shown escaped outside, reported like any other.

git names files with bytes. pr-check keeps a name that does not decode as Python keeps such file
names (each undecodable byte a lone surrogate, the str is the bytes without loss: bot/tree.py),
hashes and writes it as its bytes, and shows it `pkg-\\xff/BUCK` in text, JSON, GitHub annotations
(and `pkg-%FF/BUCK` in a SARIF URI). The end-to-end tests run `pr-check` as a process on a real
git repository whose names hold the byte 0xff.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.buck.evaluation import CellEvaluator
from bot.diff import parse_diff
from bot.errors import MalformedDiff
from bot.repo import GitRepository
from bot.tree import memory_tree, path_bytes, shown_path
from fixtures.cases import git

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pkg-\udcff"  # the directory b"pkg-\xff"
BUCK = """cxx_library(
    name = "shims",
    srcs = glob(["*.cpp"]),
    exported_headers = glob(["*.h"]),
    link_whole = True,
    visibility = ["PUBLIC"],
)
cxx_python_extension(name = "_shims", deps = [":shims"])
"""
DEFECT_LINE = 5  # link_whole without supports_python_dlopen


@pytest.fixture
def bytes_repo(case_repo) -> tuple[Path, str]:
    """A fixture repository and a commit adding `pkg-\\xff/` (BUCK, `y-\\xff.cpp`, `notes-\\xff.h`)."""
    repo, base, _ = case_repo("clean-cpu-target")
    package = os.path.join(bytes(repo), b"pkg-\xff")
    os.mkdir(package)
    for name, text in (
        (b"BUCK", BUCK),
        (b"y-\xff.cpp", "int shim() { return 1; }\n"),
        (b"notes-\xff.h", "int f(void);\n"),
    ):
        with open(os.path.join(package, name), "w") as stream:
            stream.write(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a package whose name is not UTF-8")
    return repo, base


def pr_check(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pr_check.cli", *arguments], capture_output=True, cwd=ROOT, timeout=300
    )


def test_review_reports_the_finding_in_the_package_in_every_format(bytes_repo, tmp_path):
    repo, base = bytes_repo
    common = (
        "--repo",
        str(repo),
        "--base",
        base,
        "--head",
        "HEAD",
        "--fail-level",
        "minor",
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    outputs = {}
    for format_ in ("json", "text", "sarif", "github"):
        result = pr_check("review", *common, "--no-compile", "--format", format_)
        assert result.returncode == 1, (format_, result.stderr.decode(errors="replace"))
        outputs[format_] = result.stdout.decode("utf-8")  # strict: every output is UTF-8

    [finding] = json.loads(outputs["json"])["findings"]
    assert finding["rule"] == "link-whole-without-python-dlopen"
    assert (finding["path"], finding["line"], finding["target"]) == ("pkg-\\xff/BUCK", DEFECT_LINE, "//pkg-\\xff:shims")
    assert "MINOR    link-whole-without-python-dlopen  pkg-\\xff/BUCK:5" in outputs["text"]
    [result] = json.loads(outputs["sarif"])["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg-%FF/BUCK"
    assert result["partialFingerprints"]["prCheck/v1"] == finding["fingerprint"]
    assert "::warning file=pkg-\\xff/BUCK,line=5," in outputs["github"]


def test_fix_writes_the_file_by_its_bytes(bytes_repo):
    repo, base = bytes_repo
    result = pr_check("fix", "--repo", str(repo), "--base", base)
    assert result.returncode == 1, result.stderr.decode(errors="replace")
    assert "written: pkg-\\xff/BUCK" in result.stdout.decode("utf-8")
    with open(os.path.join(bytes(repo), b"pkg-\xff", b"BUCK")) as stream:
        fixed = stream.read()
    assert fixed == BUCK.replace(
        "    link_whole = True,\n", "    link_whole = True,\n    supports_python_dlopen = True,\n"
    )
    assert git(repo, "status", "--porcelain") == 'M "pkg-\\377/BUCK"'


def test_a_git_diff_names_quoted_files_by_their_bytes(bytes_repo):
    repo, _ = bytes_repo
    with GitRepository(repo) as repository:
        changes = parse_diff(repository.diff("HEAD~1", "HEAD"))
    assert sorted(change.path for change in changes.files) == [
        f"{PACKAGE}/BUCK",
        f"{PACKAGE}/notes-\udcff.h",
        f"{PACKAGE}/y-\udcff.cpp",
    ]
    assert {change.status for change in changes.files} == {"added"}


def test_quoted_diff_names_decode_every_escape_and_are_checked():
    diff = (
        'diff --git "a/caf\\303\\251 \\"q\\"\\t\\\\x" "b/caf\\303\\251 \\"q\\"\\t\\\\x"\n'
        "new file mode 100644\n--- /dev/null\n"
        '+++ "b/caf\\303\\251 \\"q\\"\\t\\\\x"\n@@ -0,0 +1 @@\n+x\n'
    )
    [change] = parse_diff(diff).files
    assert change.path == 'café "q"\t\\x'  # valid UTF-8 decodes to itself
    escaping = '--- "a/\\056\\056/etc"\n+++ "b/\\056\\056/etc"\n@@ -1 +1 @@\n-a\n+b\n'
    with pytest.raises(MalformedDiff, match="not a path inside the repository"):
        parse_diff(escaping)  # `..` written in octal is still `..`


def test_names_are_bytes_to_hashes_and_text_to_readers():
    assert path_bytes(f"{PACKAGE}/BUCK") == b"pkg-\xff/BUCK"
    assert shown_path(f"{PACKAGE}/BUCK") == "pkg-\\xff/BUCK"
    assert shown_path("café/BUCK") == "café/BUCK"
    # Two trees that differ only in a name's bytes are different trees.
    one = memory_tree({"pkg-\udcff/BUCK": "x = 1\n"})
    other = memory_tree({"pkg-\udcfe/BUCK": "x = 1\n"})
    assert one.digest() != other.digest()


def test_starlark_sees_escaped_names_and_the_model_gets_the_paths_back():
    tree = memory_tree(
        {
            ".buckconfig": "[repositories]\n root = .\n",
            f"{PACKAGE}/BUCK": BUCK,
            f"{PACKAGE}/y-\udcff.cpp": "int shim();\n",
            f"{PACKAGE}/plain.cpp": "int p();\n",
        }
    )
    result = CellEvaluator(tree, "fbcode").evaluate_package(PACKAGE, f"{PACKAGE}/BUCK")
    assert result.error is None
    shims = next(target for target in result.targets if target.name == "shims")
    assert shims.attrs["srcs"] == ["plain.cpp", "y-\udcff.cpp"]
    assert (shims.path, shims.line) == (f"{PACKAGE}/BUCK", 1)


def test_a_symlink_to_a_name_that_is_not_utf8_is_followed(tmp_path):
    from bot.repo import directory_tree

    os.mkdir(os.path.join(bytes(tmp_path), b"real-\xff"))
    with open(os.path.join(bytes(tmp_path), b"real-\xff", b"BUCK"), "w") as stream:
        stream.write("x = 1\n")
    os.symlink(b"real-\xff", os.path.join(bytes(tmp_path), b"link"))
    tree = directory_tree(tmp_path)
    assert tree.read_link("link") == "real-\udcff"
    assert tree.resolve("link/BUCK") == "real-\udcff/BUCK" and tree.read("link/BUCK") == b"x = 1\n"
