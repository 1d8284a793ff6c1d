"""Cold evaluation over forked workers gives exactly what one process gives, in the same order,
from a real git repository whose blob reader the workers must not share."""

from __future__ import annotations

import subprocess

import pytest

from bot.buck.cell_graphs import evaluate_cell, evaluate_packages
from bot.buck.packages import find_packages, load_buckconfig
from bot.parallel import evaluation_pool
from bot.repo import GitRepository
from bot.store.evaluations import EvaluationCache
from bot.store.memo import reviewing

PACKAGES = 18
MACROS = (
    "def library(name, deps = []):\n"
    "    native.cxx_library(name = name, srcs = native.glob(['*.cpp']), deps = deps, exported_headers = [name + '.h'])\n"
)


def _repository(path) -> GitRepository:
    files = {".buckconfig": "[repositories]\n  root = .\n", "defs/macros.bzl": MACROS}
    for index in range(PACKAGES):
        deps = f'["//p{index - 1}:p{index - 1}"]' if index else "[]"
        files[f"p{index}/BUCK"] = f'load("//defs:macros.bzl", "library")\nlibrary(name = "p{index}", deps = {deps})\n'
        files[f"p{index}/p{index}.cpp"] = f"int f{index}() {{ return {index}; }}\n"
    files["p7/BUCK"] = 'fail("p7 is broken")\n'  # an error is a result too, and travels back
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(path), *command], check=True)
    return GitRepository(path)


@pytest.fixture(autouse=True)
def _small_shares(monkeypatch):
    """Workers for a batch this small (real cells have hundreds of packages)."""
    monkeypatch.setattr(evaluation_pool, "MIN_PACKAGES_PER_JOB", 4)


def test_workers_give_what_one_process_gives_in_the_same_order(tmp_path):
    with _repository(tmp_path) as repo:
        tree = repo.tree("HEAD")
        config = load_buckconfig(tree)
        packages = list(find_packages(tree, config, "xplat").items())
        alone = evaluate_packages(tree, "xplat", config, packages, {}, jobs=1)
        shared = evaluate_packages(tree, "xplat", config, packages, {}, jobs=3)
        assert shared == alone
        assert [result.package for result, _complete in shared] == [package for package, _file in packages]
        by_package = {result.package: result for result, _complete in shared}
        broken = by_package["p7"]
        assert broken.targets == () and broken.error is not None and "p7 is broken" in broken.error.message
        assert by_package["p9"].targets[0].attrs["deps"] == ["//p8:p8"]
        assert all(complete for _result, complete in shared)
        # The parent's own blob reader was left alone by the workers.
        assert tree.read_text("p3/p3.cpp") == "int f3() { return 3; }\n"


def test_a_cold_cell_through_the_pool_is_stored_and_composed_like_one_evaluated_alone(tmp_path, monkeypatch):
    repo_dir, store_one, store_pool = tmp_path / "repo", tmp_path / "one", tmp_path / "pool"
    repo_dir.mkdir()
    with _repository(repo_dir) as repo:
        tree = repo.tree("HEAD")
        graphs = {}
        for jobs, store in (("1", store_one), ("2", store_pool)):
            monkeypatch.setenv("PR_CHECK_JOBS", jobs)
            cache = EvaluationCache(store)
            with reviewing(cache.facts):
                graphs[jobs] = evaluate_cell(tree, "xplat", cache=cache)
        assert graphs["2"].targets == graphs["1"].targets and len(graphs["2"].targets) == PACKAGES - 1
        assert graphs["2"].digest == graphs["1"].digest
        cache = EvaluationCache(store_pool)
        with reviewing(cache.facts):
            composed = evaluate_cell(tree, "xplat", cache=cache)
        assert composed.targets == graphs["1"].targets and all(r.cached for r in composed.packages.values())
