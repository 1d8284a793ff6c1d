"""The layout stays as the README and the docstrings describe it: every check module is registered,
every repository path a docstring names exists, and the README's rule count is the registry's.

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
_NUMBERS = {
    word: value
    for value, word in enumerate(
        (
            "zero",
            "one",
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
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        )
    )
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
    return [text for node in nodes if (text := ast.get_docstring(node))]


def _number(words: str) -> int:
    """An English number word up to ninety-nine ("Twenty-one" -> 21), or a plain numeral."""
    words = words.lower()
    if words.isdigit():
        return int(words)
    tens, _, ones = words.partition("-")
    if tens in _TENS:
        return _TENS[tens] + (_NUMBERS[ones] if ones else 0)
    return _NUMBERS[words]


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


def test_the_readmes_rule_count_is_the_registrys():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^([A-Z][a-z]+(?:-[a-z]+)?|\d+) rules \(`RULES\.md`", readme, re.MULTILINE)
    assert match, "README's 'What it checks' no longer opens with the rule count"
    assert _number(match.group(1)) == len(CHECKS), f"README says {match.group(1)} rules; checks.ALL has {len(CHECKS)}"
    assert _number("Twenty-one") == 21 and _number("nine") == 9 and _number("34") == 34
