"""Policy for predictions the compiler can decide: confirmed ones say so, refuted ones are not posted.

A rule that predicts a missing header (`dep-private-for-exported-header`: every dependent that
includes the exported header; `dep-undeclared-header` and `dep-undeclared-latent`: the target's
own source) passes its hits through `confirmed`; the fact (bot/facts/confirmation.py) asks the
compiler's preprocessor in the hit's cell:
- confirmed: the hit is posted with "the compiler agrees" and the compile that fails as evidence;
- refuted: the hit is dropped (no configuration fails, so nothing is called a compile failure);
- unknown (the tier off, or no compile reached the include): the hit stands as the rule made it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from bot.facts.confirmation import confirm_missing_header
from bot.model import Evidence, Hit


def confirmed(model, hits: Iterable[Hit], *, own: bool) -> Iterator[Hit]:
    """`hits` (each on a header or source at `path`, naming the include in `offending_text`, its
    target and cell), as the compiler decides them. `own`: the target's own sources break (else
    its dependents)."""
    for hit in hits:
        if not hit.cell or not hit.target or not hit.offending_text:
            yield hit
            continue
        verdict = confirm_missing_header(model, hit.cell, hit.target, hit.path, hit.offending_text, own=own)
        if verdict.state == "refuted":
            continue
        if verdict.state == "confirmed":
            evidence = tuple(Evidence(path, line, words) for path, line, words in verdict.evidence)
            yield dataclasses.replace(
                hit,
                message=f"{hit.message} The compiler agrees: {verdict.reason.removeprefix('the compiler agrees: ')}.",
                evidence=hit.evidence + evidence,
            )
            continue
        yield hit
