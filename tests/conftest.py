"""Shared fixtures: real git repositories built from the fixture cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.cases import build_case_repository


@pytest.fixture
def case_repo(tmp_path: Path):
    """Build a fixture PR as a real git repository: returns a function case -> (path, base, head)."""

    def build(case: str) -> tuple[Path, str, str]:
        return build_case_repository(case, tmp_path)

    return build
