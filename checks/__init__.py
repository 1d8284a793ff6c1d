"""Every check pr-check runs, one module each; ALL is explicit and sorted by id."""

from __future__ import annotations

from bot.check import Check
from checks import (
    buck_eval_error,
    cell_dependency_missing,
    cuda_guard_missing,
    dep_unknown_external,
    eval_error,
    header_private_across_cells,
    link_whole_without_python_dlopen,
    parse_error,
    test_missing,
)

ALL: tuple[Check, ...] = tuple(
    sorted(
        (
            buck_eval_error.CHECK,
            cell_dependency_missing.CHECK,
            cuda_guard_missing.CHECK,
            dep_unknown_external.CHECK,
            eval_error.CHECK,
            header_private_across_cells.CHECK,
            link_whole_without_python_dlopen.CHECK,
            parse_error.CHECK,
            test_missing.CHECK,
        ),
        key=lambda check: check.id,
    )
)

BY_ID: dict[str, Check] = {check.id: check for check in ALL}
