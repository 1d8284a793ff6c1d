"""The checks on two cores (bot/parallel/check_split.py): a forked worker's share gives the serial result.

Serial (`check_jobs=1`) and forked (`check_jobs=2`: a worker whenever both shares hold a check)
reviews of the same revisions must agree on everything but the clock: findings in their order,
what was suppressed, the checks run, what was not blamed and why, the cells used. A worker that is
killed mid-run costs time, never a result; one whose review process is SIGKILLed (the App's
deadline) dies with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import checks
from bot import engine
from bot.check import Share
from bot.diff import parse_diff
from bot.parallel.collector import collector_paused
from bot.repo import GitRepository
from bot.snapshot import BuildModel, Snapshot
from bot.store.evaluations import EvaluationCache
from bot.store.memo import reviewing
from bot.toolchain.switch import compiling
from fixtures.cases import CASES, build_case_repository
from pr_check.review import Report, load_config, review_repository
from tests.processes import gone, kill_and_expect_worker_gone, leave_nothing_behind

ROOT = Path(__file__).resolve().parents[1]


def _comparable(report: Report) -> tuple:
    """Everything a review reports but its work: its duration, and how many packages it evaluated
    rather than read from the store (a review after another one in the same store reads more)."""
    cells = {name: dataclasses.replace(cell, evaluated=0) for name, cell in report.stats.cells.items()}
    return (
        report.findings,
        report.suppressed,
        report.smoke,
        report.fail_level,
        dataclasses.replace(report.stats, seconds=0.0, cells=cells),
    )


WORKER_SHARE = frozenset(check.id for check in checks.ALL if check.share is Share.WORKER)


def test_the_worker_share_holds_the_costly_buck_rules_and_leaves_the_review_some():
    # bot/check.py's Share says why these go to the worker: the header, dependency and CUDA rules.
    assert {"dep-undeclared-header", "dep-private-for-exported-header", "cuda-guard-missing"} <= WORKER_SHARE
    assert {check.id for check in checks.ALL} - WORKER_SHARE >= {"source-parity", "gate-macro-misspelt"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fixture_case_gives_the_same_review_serial_and_forked(case, tmp_path):
    repo, base, head = build_case_repository(case, tmp_path)
    serial = review_repository(repo, base, head, cache_dir=tmp_path / "serial", check_jobs=1)
    forked = review_repository(repo, base, head, cache_dir=tmp_path / "forked", check_jobs=2)
    assert _comparable(forked) == _comparable(serial)


_REVIEW_WITH_A_KILLED_WORKER = """
import dataclasses, json, os, signal, sys
import checks
from bot.check import Share
from bot.render.json import render_json
from pr_check.review import review_repository

repo, base, head, cache, marker = sys.argv[1:]
review_pid = os.getpid()
serial = review_repository(repo, base, head, cache_dir=cache + "-serial", check_jobs=1)
# The first worker check the review runs dies in the worker, which must then be re-run here.
victim = next(c for c in checks.ALL if c.share is Share.WORKER and c.id in serial.stats.checks)

def killed(snapshot, options):
    if os.getpid() != review_pid:  # in the worker: say who it is, then die
        with open(marker, "w") as out:
            out.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    yield from victim.run(snapshot, options)

with_victim = [dataclasses.replace(c, run=killed) if c is victim else c for c in checks.ALL]
forked = review_repository(repo, base, head, checks=with_victim, cache_dir=cache + "-forked", check_jobs=2)
print(json.dumps({"review": review_pid, "serial": render_json(serial)["findings"], "forked": render_json(forked)["findings"]}))
"""


def _script_command(script: str, repo: Path, base: str, head: str, cache: Path, marker: Path) -> list[str]:
    """A new interpreter running one of the review scripts above on a repository's base..head."""
    return [sys.executable, "-c", script, str(repo), base, head, str(cache), str(marker)]


def test_a_worker_killed_mid_run_still_gives_the_full_result(tmp_path):
    # In a new interpreter: a fork needs a process with one thread, and this test process may hold
    # threads other tests left (an App server's), which would make the review run serially.
    repo, base, head = build_case_repository("pr24817-cuda-outside-fbcode", tmp_path)
    marker = tmp_path / "killed-worker-pid"
    done = subprocess.run(
        _script_command(_REVIEW_WITH_A_KILLED_WORKER, repo, base, head, tmp_path / "cache", marker),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["serial"]  # the merge has something to get right
    assert marker.is_file() and int(marker.read_text()) != result["review"]  # a worker ran it, and died
    assert result["forked"] == result["serial"]


_REVIEW_WITH_A_STUCK_WORKER = """
import dataclasses, os, sys, time
import checks
from bot.check import Share
from pr_check.review import review_repository

repo, base, head, cache, marker = sys.argv[1:]
review_pid = os.getpid()

def stuck(snapshot, options):
    if os.getpid() != review_pid:  # in the worker: say who it is, then never finish
        with open(marker + ".tmp", "w") as out:
            out.write(str(os.getpid()))
        os.rename(marker + ".tmp", marker)
        time.sleep(600)
    return iter(())

victims = [dataclasses.replace(c, run=stuck) if c.share is Share.WORKER else c for c in checks.ALL]
review_repository(repo, base, head, checks=victims, cache_dir=cache, check_jobs=2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_worker_dies_with_its_review_process(tmp_path):
    repo, base, head = build_case_repository("pr24817-cuda-outside-fbcode", tmp_path)
    marker = tmp_path / "worker-pid"
    review = subprocess.Popen(
        _script_command(_REVIEW_WITH_A_STUCK_WORKER, repo, base, head, tmp_path / "cache", marker),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    worker = 0
    try:
        deadline = time.monotonic() + 60
        while not marker.is_file():
            assert review.poll() is None, "the review ended before its worker got stuck"
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.05)
        worker = int(marker.read_text())
        assert worker != review.pid and not gone(worker)
        kill_and_expect_worker_gone(review, worker)  # what the App does at the deadline (webhooks/isolation.py)
    finally:
        leave_nothing_behind(review, worker)


def _engine_result(repo: Path, base: str, head: str, cache: Path, jobs: int) -> engine.EngineResult:
    """The engine's own result (not-blamed findings in order, not only their counts), for a review
    wired as bot/pipeline.py wires it."""
    with GitRepository(repo) as git:
        base_tree, head_tree = git.tree(git.resolve(base)), git.tree(git.resolve(head))
        changes = parse_diff(git.diff(base_tree.revision, head_tree.revision))
        config = load_config(base_tree)
        evaluations = EvaluationCache(cache)
        snapshot = Snapshot(
            BuildModel(base_tree, config, evaluations), BuildModel(head_tree, config, evaluations), changes, config
        )
        # The rules' split is under test, not the compiled tier: off, as bot/pipeline.py's default.
        with collector_paused(), reviewing(evaluations.facts), compiling(False):
            return engine.run(checks.ALL, snapshot, jobs=jobs)


def test_a_real_range_gives_the_same_result_serial_and_forked(executorch_mirror, real_tree_cache):
    # From one commit of bench/cold_pairs.py to another (the one the issue profiled): a change of
    # months, whose findings and findings outside the open-source build scope come from checks of
    # both shares, so the merge's order (of findings and of what is not blamed) is exercised.
    base, head = "8c7630aead", "05af014160"
    forked = _engine_result(executorch_mirror, base, head, real_tree_cache, jobs=2)
    serial = _engine_result(executorch_mirror, base, head, real_tree_cache, jobs=1)
    for rules in ({f.rule for f in serial.findings}, {f.rule for _why, f in serial.not_blamed}):
        assert rules & WORKER_SHARE and rules - WORKER_SHARE
    assert forked == serial
