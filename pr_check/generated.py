"""Text generated from the one place its facts live, kept in files people read (`make generated`).

- README.md: each section between `<!-- generated: NAME -->` and `<!-- end: NAME -->`;
- bot/render/report.schema.json: the cell names a finding may carry (the cell table's).
`python -m pr_check.generated` rewrites them in place; tests check they are current.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from bot.buck.cells import CELLS
from bot.config_schema import reference_markdown

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = Path("bot/render/report.schema.json")
_SCHEMA_CELLS = re.compile(r'("cell": \{"enum": )\[[^\]]*\]')


README_SECTIONS: Mapping[str, Callable[[], str]] = {"config-reference": reference_markdown}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(<!-- end: {re.escape(name)} -->)", re.S)


def section_text(readme: str, name: str) -> str | None:
    """The text of section `name` as the README has it, or None when its markers are missing."""
    found = _pattern(name).search(readme)
    return found.group(2) if found else None


def regenerate_readme(readme: str) -> str:
    """The README with every generated section rendered anew; a section without markers is an error."""
    for name, render in README_SECTIONS.items():
        if section_text(readme, name) is None:
            raise ValueError(f"README: the markers of the generated section {name!r} are missing")
        text = render()
        readme = _pattern(name).sub(lambda found, text=text: found.group(1) + text + found.group(3), readme)
    return readme


def regenerate_schema(schema: str) -> str:
    """The report schema with the finding's cell list taken from the cell table (null: no cell)."""
    if not _SCHEMA_CELLS.search(schema):
        raise ValueError(f'{SCHEMA_PATH}: no `"cell": {{"enum": [...]}}` to fill in')
    cells = json.dumps([*CELLS, None])
    return _SCHEMA_CELLS.sub(lambda found: found.group(1) + cells, schema)


FILES: Mapping[Path, Callable[[str], str]] = {Path("README.md"): regenerate_readme, SCHEMA_PATH: regenerate_schema}


def main(argv: list[str] | None = None) -> int:
    """Rewrite every generated file under the repository root (default: this checkout)."""
    arguments = sys.argv[1:] if argv is None else argv
    root = Path(arguments[0]) if arguments else ROOT
    for path, regenerate in FILES.items():
        target = root / path
        target.write_text(regenerate(target.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
