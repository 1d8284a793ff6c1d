# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench rules clean

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

bench: $(STAMP)
	$(BIN)/python -m bench

rules: $(STAMP)
	$(BIN)/pr-check rules --markdown > RULES.md

clean:
	rm -rf $(VENV) .pr-check-cache
