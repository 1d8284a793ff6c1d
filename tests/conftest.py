"""Shared fixtures: real git repositories built from the fixture cases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures.cases import build_case_repository


@pytest.fixture
def case_repo(tmp_path: Path):
    """Build a fixture PR as a real git repository: returns a function case -> (path, base, head)."""

    def build(case: str) -> tuple[Path, str, str]:
        return build_case_repository(case, tmp_path)

    return build


EXECUTORCH_MIRROR = Path(os.environ.get("PR_CHECK_EXECUTORCH_MIRROR", "/work/.mirror/pytorch+executorch/repo"))


@pytest.fixture(scope="session")
def executorch_mirror() -> Path:
    """A fetched pytorch/executorch mirror; tests that need the real tree skip without one."""
    if not (EXECUTORCH_MIRROR / "objects").is_dir() and not (EXECUTORCH_MIRROR / ".git").exists():
        pytest.skip(f"no ExecuTorch mirror at {EXECUTORCH_MIRROR} (set PR_CHECK_EXECUTORCH_MIRROR to point at one)")
    return EXECUTORCH_MIRROR


@pytest.fixture(scope="session")
def real_tree_cache(tmp_path_factory) -> Path:
    """One evaluation cache for every real-tree review of a test session (as the App keeps one)."""
    return tmp_path_factory.mktemp("real-tree-cache")
