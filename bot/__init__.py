"""pr-check: deterministic review of build-system changes to a GPU backend."""
