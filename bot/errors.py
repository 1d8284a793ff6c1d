"""The one exception hierarchy: startup, configuration and usage errors.

Everything found *in* a repository (a BUCK file that does not parse, a check that crashes)
is a finding, not an exception. These are for the cases where no review can be made.
"""

from __future__ import annotations


class PrCheckError(Exception):
    """Base of every error pr-check reports to its caller; carries an exit code."""

    exit_code = 2


class UsageError(PrCheckError):
    """The command line or an argument is wrong."""


class NotAGitRepository(PrCheckError):
    """The path given with --repo is not a git repository."""


class UnknownRevision(PrCheckError):
    """A revision does not name a commit in the repository."""


class MalformedDiff(PrCheckError):
    """A unified diff could not be parsed."""


class ConfigError(PrCheckError):
    """`.github/pr-check.toml` is invalid (unknown key, wrong type)."""


class MissingObjects(PrCheckError):
    """The repository lacks objects a review needs (a partial clone that cannot fetch, a damaged clone)."""


class GitError(PrCheckError):
    """git itself failed in a way that is not the user's input."""

    exit_code = 3
