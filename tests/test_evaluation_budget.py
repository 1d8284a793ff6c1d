"""A Buck package's evaluation budget is the thread's CPU time, and a limit that depends on the
machine's load (waiting, process-wide memory) is not stored with the package's result.

Found by reading, as the likely cause of the concurrent fact-cache test's rare failures (eight
threads and two processes reviewing against one cache directory on two cores; not reproduced in
about 40 runs): a package whose evaluation waited past ten wall-clock seconds became an
evaluation error, that error was stored under the package's inputs, and every review sharing the
store then reported it, unlike the serial review it is compared with."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bot.buck.budget import WALL_FACTOR, Budget
from bot.buck.cell_graphs import evaluate_cell
from bot.store.evaluations import EvaluationCache
from bot.tree import memory_tree


def test_waiting_is_not_spending():
    budget = Budget(seconds=0.05, memory_bytes=1 << 30)
    budget.start()
    time.sleep(0.2)  # four budgets of wall time, next to none of CPU: a thread waiting for a core
    assert not budget.cancelled(), budget.reason


def test_spending_the_cpu_budget_stops_it_for_good():
    budget = Budget(seconds=0.05, memory_bytes=1 << 30)
    budget.start()
    started = time.thread_time()
    while time.thread_time() - started < 0.1:
        pass
    assert budget.cancelled()
    assert (budget.reason, budget.transient) == ("evaluation exceeded 0.05 s", False)


def test_a_thread_starved_without_end_is_stopped_and_the_stop_is_transient():
    budget = Budget(seconds=0.005, memory_bytes=1 << 30)
    budget.start()
    time.sleep(0.005 * WALL_FACTOR + 0.05)
    assert budget.cancelled() and budget.transient


def _tree(build: str):
    return memory_tree({".buckconfig": "[repositories]\n  root = .\n", "pkg/BUCK": build})


_TRANSIENT_THEN_AGAIN = """
import sys
from bot.buck.cell_graphs import evaluate_cell
from bot.store.evaluations import EvaluationCache
from bot.tree import memory_tree

build = 'big = [str(i) for i in range(300000)]\\ncxx_library(name = "a")\\n'
tree = lambda: memory_tree({".buckconfig": "[repositories]\\n  root = .\\n", "pkg/BUCK": build})
cache = EvaluationCache(sys.argv[1])
squeezed = evaluate_cell(tree(), "xplat", cache=cache, memory_per_package=1 << 20)
again = evaluate_cell(tree(), "xplat", cache=cache)
print([e.kind.value for e in squeezed.errors], [e.kind.value for e in again.errors], sorted(again.targets),
      [r.cached for r in again.packages.values()])
"""


def test_a_package_stopped_by_a_transient_limit_is_evaluated_again_next_time(tmp_path):
    # A package that allocates tens of MiB: over a 1 MiB memory budget (the process's resident
    # memory, which other threads move too), well under the default. In a fresh interpreter, so
    # that the allocation shows in resident memory whatever ran before in this one.
    ran = subprocess.run(
        [sys.executable, "-c", _TRANSIENT_THEN_AGAIN, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[0] == "['limit'] [] ['//pkg:a'] [False]"


def test_a_package_over_its_cpu_budget_is_stored_with_its_error(tmp_path):
    loop = "def f():\n    for i in range(1000000000):\n        pass\nf()\n"
    cache = EvaluationCache(tmp_path)
    first = evaluate_cell(_tree(loop), "xplat", cache=cache, seconds_per_package=0.3)
    again = evaluate_cell(_tree(loop), "xplat", cache=cache, seconds_per_package=0.3)
    assert [e.kind for e in first.errors] == [e.kind for e in again.errors] == ["limit"]
    assert [r.cached for r in again.packages.values()] == [True]
