"""Policy for predictions the compiler can decide: confirmed ones say so, refuted ones are not posted.

A rule that predicts a missing header (`dep-private-for-exported-header`: every dependent that
includes the exported header; `dep-undeclared-header` and `dep-undeclared-latent`: the target's
own source, or its dependents where the header is compiled only there) passes its hits through
`confirmed`; the fact (bot/facts/confirmation.py) asks the compiler in the hit's cell:
- confirmed: the hit is posted with "The compiler agrees" and, first among its evidence, the
  compiler's own error line, the configuration and the build that shows it (`EvidenceRole.COMPILER`:
  code finds it by its role, never by its wording);
- refuted, the compiler finds the header: dropped (no configuration fails, so nothing is called a
  compile failure);
- refuted, no source of the cell includes the header: dropped, or kept at info with that reason
  where the rule's gap is worth knowing before anything compiles it (`uncompiled_at_info`);
- unknown (the tier off, or no compile reached the include): the hit stands as the rule made it;
  with the tier on it says why the compiler could not check it (a reader of a review where other
  predictions were checked would otherwise take it for checked).

`new_hits` keeps a whole-tree rule's confirmation to what the change adds: a hit the base has too
is filtered by the engine's baseline anyway, so it is not compiled for. A rule asks at most
MAX_PREDICTIONS per review (a scan, where every hit is new, has hundreds); the rest stand as the
rule made them and say they were not checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from bot.facts.confirmation import Verdict, confirm_missing_header
from bot.model import Evidence, EvidenceRole, Hit, ReviewMode, Severity
from bot.toolchain.switch import tier_state

MAX_PREDICTIONS = 24  # asked of the compiler per rule and review (a scan of a whole tree has hundreds)


def confirmed(model, hits: Iterable[Hit], *, own: bool, uncompiled_at_info: bool = False) -> Iterator[Hit]:
    """`hits` (each on a header or source at `path`, naming the include in `offending_text`, its
    target and cell), as the compiler decides them. `own`: the target's own sources break (else
    its dependents)."""
    checking = tier_state()[1] is not None
    asked = 0
    for hit in hits:
        if not hit.cell or not hit.target or not hit.offending_text:
            yield hit
            continue
        if checking and asked >= MAX_PREDICTIONS:
            yield dataclasses.replace(
                hit,
                message=f"{hit.message} Not checked by the compiler: over the {MAX_PREDICTIONS} predictions a review asks.",
            )
            continue
        asked += 1
        # The files the hit names (the dependent's include, the target's source) are compiled first.
        named = tuple(dict.fromkeys(e.path for e in hit.evidence))
        verdict = confirm_missing_header(
            model, hit.cell, hit.target, hit.path, hit.offending_text, own=own, prefer=(hit.path, *named)
        )
        if verdict.state == "confirmed":
            yield agreed(hit, verdict)
        elif verdict.state == "refuted" and not verdict.compiled and uncompiled_at_info:
            yield dataclasses.replace(
                hit,
                message=f"{hit.message} Nothing fails to compile yet: {verdict.reason}.",
                at_most=Severity.INFO,
            )
        elif verdict.state == "unknown":
            yield (
                dataclasses.replace(hit, message=f"{hit.message} Not checked by the compiler: {verdict.reason}.")
                if (checking)
                else hit
            )


def agreed(hit: Hit, verdict: Verdict) -> Hit:
    """The hit with the compiler's agreement: in its message, and first in its evidence, typed."""
    words = verdict.words
    if words is not None:
        said = Evidence(
            words.path,
            words.line,
            f"the compiler agrees: {words.error} ({words.configuration}); reproduce: `{words.command}`",
            EvidenceRole.COMPILER,
        )
        message = f"{hit.message} The compiler agrees: `{words.error}` ({words.configuration})."
        return dataclasses.replace(hit, message=message, evidence=(said, *hit.evidence))
    listed = tuple(
        Evidence(path, line, f"the compiler agrees: {note}", EvidenceRole.COMPILER)
        for path, line, note in verdict.evidence
    )
    message = f"{hit.message} The compiler agrees: {verdict.reason.removeprefix('the compiler agrees: ')}."
    return dataclasses.replace(hit, message=message, evidence=(*listed, *hit.evidence))


def new_hits(snap, hits: Iterable[Hit], base_hits: Iterable[Hit]) -> tuple[list[Hit], list[Hit]]:
    """(hits the base lacks, hits the base has): the engine's fingerprint (path, key, include)."""
    if snap.mode is ReviewMode.BASELINE:
        return [], list(hits)
    before = {(h.path, h.key, h.offending_text) for h in base_hits}
    new, old = [], []
    for hit in hits:
        (old if (hit.path, hit.key, hit.offending_text) in before else new).append(hit)
    return new, old
