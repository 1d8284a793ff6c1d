"""`pr-check smoke ...`: the GPU smoke runner's own command line (smoke/cli.py), arguments passed on."""

from __future__ import annotations

from smoke.cli import main


def run_smoke(argv: list[str]) -> int:
    """Run the smoke runner's command line."""
    return main(argv)
