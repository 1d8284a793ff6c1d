"""The layout stays as the README and the docstrings describe it: every check module is registered,
every repository path a docstring names exists, and the rule count is stated only where it is generated (RULES.md).

Reads the source tree (ast, no imports of the modules' code beyond `checks`): fast, no git, no I/O
beyond the files themselves.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import checks
from pr_check.review import CHECKS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("bot", "checks", "pr_check", "webhooks", "smoke", "bench", "tests")
# A repository path in prose: a top-level folder of this repository, then a file with an extension.
# Placeholders (`checks/<what_is_wrong>.py`) and globs are not paths and do not match.
_PATH = re.compile(
    r"(?<![\w./<-])((?:bot|checks|pr_check|webhooks|smoke|fixtures|tests|bench|docs)/[\w/.-]*\.(?:py|md|toml|json|yml|yaml|txt|sh))\b"
)


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return [text for node in nodes if (text := ast.get_docstring(node))]


def test_every_check_module_is_registered_once():
    modules = sorted(p.stem for p in (ROOT / "checks").glob("*.py") if p.name != "__init__.py")
    registered = {check.id: check for check in checks.ALL}
    for name in modules:
        module = importlib.import_module(f"checks.{name}")
        check = getattr(module, "CHECK", None)
        assert check is not None, f"checks/{name}.py defines no CHECK (helpers belong in checks/support/)"
        assert registered.get(check.id) is check, f"checks/{name}.py is not in checks.ALL"
    assert len(registered) == len(checks.ALL) == len(modules), "a check registered twice, or one from outside checks/"
    assert tuple(checks.ALL) == CHECKS  # the composition root binds exactly the registry


def test_every_path_a_docstring_names_exists():
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            for text in _docstrings(path):
                missing += [
                    f"{path.relative_to(ROOT)}: {name}" for name in _PATH.findall(text) if not (ROOT / name).exists()
                ]
    assert missing == []


def test_the_path_pattern_finds_paths_and_skips_placeholders():
    # The detector itself: a renamed module is caught, a placeholder or an output folder is not a path.
    assert _PATH.findall("see bot/render/review.py, and checks/<what_is_wrong>.py") == ["bot/render/review.py"]
    assert _PATH.findall("writes bench/out/history and ../shared/gpu/README.md") == []


def test_the_rule_count_lives_in_rules_md_alone():
    # Adding a rule touches its module, the registry and RULES.md (README, "Add a rule"): a count
    # written into the README would be a fourth file to edit, and one more to go stale.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    counted = re.findall(r"\b([A-Z][a-z]+(?:-[a-z]+)?|\d+) (?:rules|checks)\b", readme)
    assert not [c for c in counted if c.isdigit() or c.lower().split("-")[0] in _COUNT_WORDS], counted
    rules_md = (ROOT / "RULES.md").read_text(encoding="utf-8")
    assert f"\n{len(CHECKS)} rules" in rules_md, "RULES.md no longer states the count (`make rules`)"


_COUNT_WORDS = {
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
}
