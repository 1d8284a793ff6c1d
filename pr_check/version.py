"""pr-check's version, alone in a module: the CLI, the SARIF writer, the Action and the package
metadata (pyproject's dynamic version) read it here, so none of them imports the CLI for it."""

VERSION = "0.1.0"
