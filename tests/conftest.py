"""Shared fixtures: real git repositories built from the fixture cases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.repo import GitRepository
from fixtures.cases import build_case_repository
from pr_check.review import Report, review_repository


@pytest.fixture
def case_repo(tmp_path: Path):
    """Build a fixture PR as a real git repository: returns a function case -> (path, base, head)."""

    def build(case: str) -> tuple[Path, str, str]:
        return build_case_repository(case, tmp_path)

    return build


# The one place the tests learn where the pytorch/executorch mirror is: every test that reads it asks
# for the `executorch_mirror` fixture, which makes it a `real_tree` test (`make test-fast` leaves those out).
EXECUTORCH_MIRROR = Path(os.environ.get("PR_CHECK_EXECUTORCH_MIRROR", "/work/.mirror/pytorch+executorch/repo"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `real_tree` every test that needs the mirror, through `executorch_mirror` directly or a
    fixture built on it (`real_review`, a module's real tree)."""
    for item in items:
        if "executorch_mirror" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_tree)


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


@pytest.fixture(scope="session")
def real_review(executorch_mirror, real_tree_cache):
    """review_repository on the mirror, each (base, head) reviewed once a session and its Report shared.

    Several real-tree files review the same commits (the layout baseline and the verdicts, the
    verdicts and the regression pairs). A review is a pure function of the two trees, the code and
    the base tree's configuration, all fixed for a session, and a Report is frozen all the way down,
    so a test reading a shared one sees exactly what a fresh review would give it. Keyed by the
    resolved commits, so `abc1234567^` and the full sha of the same parent are one review.
    """
    reports: dict[tuple[str, str], Report] = {}
    with GitRepository(executorch_mirror) as repo:

        def review(base: str, head: str) -> Report:
            key = (repo.resolve(base), repo.resolve(head))
            if key not in reports:
                reports[key] = review_repository(executorch_mirror, *key, cache_dir=real_tree_cache)
            return reports[key]

        yield review
