"""The review benchmark measures what it says: a generated tree the engine evaluates cleanly, and a
pull request of exactly the asked number of files, one per package, of each kind in turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_review import change_files, extend_tree, parent_of, pull_request
from bench.child import review_in_child
from fixtures.cases import git, init_base_repository


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, str]:
    repo, _ = init_base_repository(tmp_path_factory.mktemp("bench"))
    extend_tree(repo, 0, 9)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "generated")
    return repo, git(repo, "rev-parse", "HEAD")


def test_the_graph_is_shallow():
    depth = 0
    index = 6399
    while index:
        index = parent_of(index)
        depth += 1
    assert depth <= 7


def test_a_pull_request_changes_one_file_in_each_of_distinct_packages(generated):
    repo, base = generated
    head = pull_request(repo, base, packages=9, count=6)
    changed = git(repo, "diff", "--name-only", base, head).splitlines()
    assert len(changed) == 6
    assert len({Path(path).parent for path in changed}) == 6
    assert sorted(Path(path).suffix for path in changed) == [".bzl", ".bzl", ".cpp", ".cpp", ".h", ".h"]
    assert git(repo, "rev-parse", "HEAD") == base  # the working tree is back at the base


def test_more_changed_files_than_packages_is_refused(generated):
    repo, _ = generated
    with pytest.raises(ValueError):
        change_files(repo, packages=9, count=10)


def test_the_generated_tree_is_evaluated_and_clean(generated, tmp_path):
    """Every generated package is in the graph and none fails or draws a finding, so the timings are
    of the engine doing its ordinary work, not of error paths."""
    repo, base = generated
    head = pull_request(repo, base, packages=9, count=3)
    cold = review_in_child(repo, base, head, tmp_path / "cache")
    warm = review_in_child(repo, base, head, tmp_path / "cache")
    files = git(repo, "ls-tree", "-r", "--name-only", base).splitlines()
    buck_packages = sum(1 for path in files if Path(path).name == "BUCK")
    assert buck_packages == 9 + sum(1 for path in files if Path(path).name == "BUCK" and "generated/" not in path)
    assert cold.packages == warm.packages == buck_packages
    assert cold.findings == warm.findings == 0
