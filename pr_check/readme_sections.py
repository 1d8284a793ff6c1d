"""The README's generated sections, each between `<!-- generated: NAME -->` and `<!-- end: NAME -->`.

`python -m pr_check.readme_sections README.md` rewrites them (`make readme`); tests check they are
current. Each section is rendered from the one place its facts live.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable, Mapping


def _config_reference() -> str:
    from bot.config_schema import reference_markdown

    return reference_markdown()


SECTIONS: Mapping[str, Callable[[], str]] = {"config-reference": _config_reference}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(<!-- end: {re.escape(name)} -->)", re.S)


def section_text(readme: str, name: str) -> str | None:
    """The text of section `name` as the README has it, or None when its markers are missing."""
    found = _pattern(name).search(readme)
    return found.group(2) if found else None


def regenerate(readme: str) -> str:
    """The README with every generated section rendered anew; a section without markers is an error."""
    for name, render in SECTIONS.items():
        if section_text(readme, name) is None:
            raise ValueError(f"README: the markers of the generated section {name!r} are missing")
        readme = _pattern(name).sub(lambda found, text=render(): found.group(1) + text + found.group(3), readme)
    return readme


def main(argv: list[str] | None = None) -> int:
    [path] = argv if argv is not None else sys.argv[1:]
    readme = Path(path)
    readme.write_text(regenerate(readme.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
