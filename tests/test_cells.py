"""The cell table drives the Starlark host: every row's semantics show in what a BUCK file defines."""

from __future__ import annotations

import pytest

from bot.buck.cell_graphs import evaluate_cell
from bot.buck.cells import CELL_TABLE, CELLS, cell_named, cells_where
from bot.buck.packages import build_file_names, load_buckconfig
from tests.test_buck_model import MIGRATION, tree

PROBE = MIGRATION + (
    'load("@fbsource//tools/build_defs:fbsource_utils.bzl", "is_fbcode")\n'
    'fbcode_target(_kind = native.genrule, name = "via_fbcode_target", out = "a")\n'
    'non_fbcode_target(_kind = native.genrule, name = "via_non_fbcode_target", out = "b")\n'
    'native.genrule(name = "is_fbcode_" + str(is_fbcode()), out = "c")\n'
)


@pytest.mark.parametrize("cell", CELL_TABLE, ids=lambda c: c.name)
def test_host_follows_the_cell_row(cell):
    defined = {label.split(":")[1] for label in evaluate_cell(tree(PROBE), cell.name).targets}
    assert ("via_fbcode_target" in defined) is cell.defines_fbcode_target
    assert ("via_non_fbcode_target" in defined) is cell.defines_non_fbcode_target
    assert f"is_fbcode_{cell.is_fbcode}" in defined


def test_build_file_names_are_the_rows_or_buckconfigs():
    config = load_buckconfig(tree(""))
    assert build_file_names(config, "fbcode") == ("TARGETS", "BUCK")
    assert build_file_names(config, "xplat") == ("BUCK",)
    assert build_file_names(config, "oss") == config.build_file_names


def test_table_queries():
    assert CELLS == ("fbcode", "xplat", "oss")
    assert cells_where(cpu_only=True) == ("xplat",)
    assert cells_where(headers_visible_to_dependents=False) == ("xplat", "oss")
    with pytest.raises(ValueError, match="unknown cell 'android'"):
        cell_named("android")
