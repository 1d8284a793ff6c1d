"""Whole-review results, kept by the content digests of everything the review read.

A review is a pure function of its inputs: the two trees (every path, mode and blob, mounted
submodule files included: `FileTree.digest`), the change set, the configuration and the checks
(their ids, options, severities, and the code that runs them). The store's keys already carry the
digest of the code under bot/ and checks/ (`bot/store/disk.py`'s `CODE_DIGEST`), so a result stored under the
digest of the rest is the result of reviewing those inputs again: a re-run, a re-review after a
restart, the same pull request asked for twice. Such a review reads one entry instead of loading
the cell graphs and running every check (issue 21: a warm review that still walked whole graphs).

Two cases are never served:
- checks whose code is not covered by the code digest (a test's own check function): their
  behaviour could change under the same ids, so nothing is stored for them;
- a result derived while blobs were missing (a partial clone): it names those blobs and is served
  only while every one of them is still missing, so a fetched blob is reviewed afresh.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.store.disk import entry_key
from bot.store.memo import FactCache, digest

FACT = "review-result-1"  # bump when StoredReview's fields change
# Checks whose run functions live here are covered by the store's code digest (bot/, checks/).
_COVERED_PACKAGES = frozenset({"bot", "checks"})


@dataclass(frozen=True, slots=True)
class StoredReview:
    """What a review found and measured, less what only this run can say (its seconds, which
    packages it evaluated): the pipeline's Report without its renderer-facing wrapping."""

    findings: tuple
    suppressed: tuple
    smoke: Any  # SmokeDecision
    cells: Mapping[str, Any]  # cell -> CellStats as the first review counted them
    checks: tuple[str, ...]
    unevaluated: tuple
    not_blamed: Mapping[str, int]
    fail_level: Any  # Severity, from the configuration the review used
    missing: frozenset[str]  # blob ids read as missing while deriving it
    inline_level: Any = None  # Severity, from the configuration the review used (None: the default)
    # The shim/ submodule path when its stand-ins were evaluated: kept with the result, so a stored
    # review is served without listing either tree.
    shim_stand_ins: str | None = None


def canonical(value: Any) -> Any:
    """A value whose `repr` is the same in every process for equal inputs: sets and mappings
    sorted (a frozenset of strings iterates in a per-process order), dataclasses by field."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__qualname__,
            *((f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value)),
        )
    if isinstance(value, enum.Enum):
        return repr(value)
    if isinstance(value, Mapping):
        return ("{}", *sorted(((canonical(k), canonical(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (set, frozenset)):
        return ("set", *sorted((canonical(v) for v in value), key=repr))
    if isinstance(value, (tuple, list)):
        return tuple(canonical(v) for v in value)
    return value


def checks_identity(checks: Sequence) -> tuple | None:
    """What names a set of checks in the key: a lazily imported product set names itself
    (`identity`, pr_check/review.py); otherwise each check's id, options, severity, title, inputs
    and run function. None when a run function lies outside the code digest (see the module)."""
    named = getattr(checks, "identity", None)
    if named is not None:
        return ("named", named)
    identities = []
    for check in checks:
        run = check.run
        module = getattr(run, "__module__", None) or ""
        if module.split(".", 1)[0] not in _COVERED_PACKAGES:
            return None
        identities.append(
            (
                check.id,
                module,
                getattr(run, "__qualname__", repr(run)),
                repr(canonical(check.options)),
                int(check.severity),
                check.title,
                check.inputs,
            )
        )
    return tuple(identities)


def review_key(base_tree, head_tree, changes, config, checks: Sequence) -> str | None:
    """The digest of a review's inputs, or None when it must not be stored (see the module).
    `config` None: the base tree's own, which the base tree's digest covers."""
    identity = checks_identity(checks)
    if identity is None:
        return None
    return digest(
        base_tree.digest(),
        head_tree.digest(),
        repr(canonical(changes)),
        "from the base tree" if config is None else repr(canonical(config)),
        identity,
    )


def load(facts: FactCache, key: str, tree) -> StoredReview | None:
    """The stored result for `key`, unless a blob it was derived without can be read now."""
    stored = facts.load(FACT, key, keep=False)
    if not isinstance(stored, StoredReview):
        return None
    if any(tree.read_text_by_blob(blob) is not None for blob in sorted(stored.missing)):
        return None  # a blob that was missing is here now: review it afresh
    return stored


def save(facts: FactCache, key: str, stored: StoredReview) -> None:
    """Keep the result in the store, unless it is there already (a review told not to read it):
    a process's first write counts the whole store's size (`DiskStore.put`), which a review that
    writes nothing else should not pay."""
    if facts.store is not None and facts.store.has(entry_key(FACT, key)):
        return
    facts.save(FACT, key, stored)
