# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast lint fuzz soak bench parity corpus precision rules generated screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# The main job: a dry-run review of the bundled example PR (#24817's situation), on embedded defaults.
demo: $(STAMP)
	$(BIN)/pr-check demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider

# The suite without the tests that review the real ExecuTorch tree (marked `real_tree` by tests/conftest.py).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not real_tree"

# Rot detectors: ruff's lint and format check and pyright (standard mode), configured in pyproject.toml;
# `make test` runs them too (tests/test_lint.py).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pyright

# Long fuzz runs: every tests/test_*fuzz*.py under hypothesis's `fuzz` profile (thousands of examples).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning $(wildcard tests/test_*fuzz*.py)

# A bounded loopback soak of the App (a few minutes; writes bench/out/soak_app.png).
soak: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/soak_app.py

# Review time against tree size and PR size (about 5-8 minutes on 2 cores): docs/bench/*.png, review.csv.
bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench
	@if [ -d "$(MIRROR)" ]; then $(MAKE) parity corpus; else echo "no ExecuTorch mirror at $(MIRROR): parity and corpus skipped"; fi

# Findings parity on all 30 commits of tests/real_tree/layout_baseline.json (`make test` checks 9 of
# them; tests/test_real_tree_findings.py says which and why): 274 s of CPU, 8 min wall at load 2-5. Needs the mirror.
parity: $(STAMP)
	PR_CHECK_LONG_RUNS=1 PR_CHECK_EXECUTORCH_MIRROR=$(MIRROR) nice -n 10 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_real_tree_findings.py

# Recall on the regression corpus (tests/real_tree/corpus/): the table and the figures (48
# regressions and 64 quiet commits: about 45 minutes cold in four shards on a loaded 2-core machine,
# longer in one process). Needs a pytorch/executorch mirror.
MIRROR ?= $(or $(PR_CHECK_EXECUTORCH_MIRROR),/work/.mirror/pytorch+executorch/repo)
corpus: $(STAMP)
	nice -n 10 $(BIN)/python -m bench.corpus --repo $(MIRROR)

# Precision on a window of history: loud findings to judge against its verdicts file (about half
# an hour to an hour on 2 cores; docs/evaluation.md). A sample of commits no earlier work reviewed:
# `make precision PRECISION_WINDOW="--since 2023-07-01 --until 2026-09-01 --exclude-earlier"`;
# the default window is Jun 2024 - May 2025 (tests/real_tree/precision_2024.toml).
PRECISION_WINDOW ?=
precision: $(STAMP)
	nice -n 10 $(BIN)/python -m bench.precision --repo $(MIRROR) $(PRECISION_WINDOW)

# The README's pictures of what a pull request gets (docs/screenshots/*.png), from the current code:
# the App's review and check run rendered by cmark-gfm, shot by Debian's headless Chromium.
screenshots: $(STAMP)
	@command -v chromium >/dev/null || { echo "make screenshots needs Chromium: apt-get install -y chromium" >&2; exit 2; }
	$(BIN)/pip install --quiet -e '.[screenshots]'
	$(BIN)/python -m docs.screenshots

rules: $(STAMP)
	$(BIN)/pr-check rules --markdown > RULES.md

# What is generated from the code into files people read: README sections (the configuration
# reference) and the report schema's cell list (pr_check/generated.py).
generated: $(STAMP)
	$(BIN)/python -m pr_check.generated

clean:
	-$(BIN)/pr-check cache clean --repo .
	rm -rf $(VENV)
