"""Every check pr-check runs, one module each; ALL is explicit and sorted by id."""

from __future__ import annotations

from bot.check import Check
from checks import (
    buck_eval_error,
    buck_select_unresolvable,
    cell_arch_flags_missing,
    cell_dependency_missing,
    cmake_config_unknown_target,
    cmake_eval_limit,
    cpp_read_limit,
    cuda_guard_missing,
    dep_private_for_exported_header,
    dep_undeclared_header,
    dep_unknown_external,
    eval_error,
    gate_declaration_outside,
    gate_else_removed,
    gate_header_of_unbuilt_source,
    gate_macro_build_parity,
    gate_macro_misspelt,
    gate_macro_not_exported,
    header_private_across_cells,
    header_unowned,
    link_duplicate_symbol,
    link_export_dynamic_missing,
    link_whole_archive_public,
    link_whole_parity,
    link_whole_without_python_dlopen,
    missing_test,
    parse_error,
    shim_duplicate_symbol,
    shim_public_visibility,
    source_missing,
    source_parity,
)

ALL: tuple[Check, ...] = tuple(
    sorted(
        (
            buck_eval_error.CHECK,
            buck_select_unresolvable.CHECK,
            cell_arch_flags_missing.CHECK,
            cell_dependency_missing.CHECK,
            cmake_config_unknown_target.CHECK,
            cmake_eval_limit.CHECK,
            cpp_read_limit.CHECK,
            cuda_guard_missing.CHECK,
            dep_private_for_exported_header.CHECK,
            dep_undeclared_header.CHECK,
            dep_unknown_external.CHECK,
            eval_error.CHECK,
            gate_declaration_outside.CHECK,
            gate_macro_build_parity.CHECK,
            gate_else_removed.CHECK,
            gate_header_of_unbuilt_source.CHECK,
            gate_macro_misspelt.CHECK,
            gate_macro_not_exported.CHECK,
            header_private_across_cells.CHECK,
            header_unowned.CHECK,
            link_duplicate_symbol.CHECK,
            link_export_dynamic_missing.CHECK,
            link_whole_archive_public.CHECK,
            link_whole_parity.CHECK,
            link_whole_without_python_dlopen.CHECK,
            parse_error.CHECK,
            shim_duplicate_symbol.CHECK,
            shim_public_visibility.CHECK,
            source_missing.CHECK,
            source_parity.CHECK,
            missing_test.CHECK,
        ),
        key=lambda check: check.id,
    )
)

BY_ID: dict[str, Check] = {check.id: check for check in ALL}
