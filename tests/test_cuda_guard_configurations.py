"""cuda-guard-missing reads each platform as buck2 configures it: the finding names the platforms
where the target breaks, its dependents ride on it, and the platforms come from the config."""

from __future__ import annotations

from bot import engine
from bot.check import Example
from bot.config import parse_config
from bot.model import ReviewMode
from bot.snapshot import BuildModel, Snapshot
from bot.tree import memory_tree
from checks.cuda_guard_missing import CHECK
from tests.test_check_examples import _snapshot

BUCK = (
    'load("@fbcode_macros//build_defs:build_file_migration.bzl", "non_fbcode_target")\n'
    "non_fbcode_target(\n"
    "    _kind = cxx_library,\n"
    '    name = "linux_kernels",\n'
    '    srcs = ["kernels.cu"],\n'
    '    compatible_with = ["ovr_config//os:linux"],\n'
    ")\n"
    "non_fbcode_target(\n"
    "    _kind = cxx_library,\n"
    '    name = "android_user",\n'
    '    srcs = ["user.cpp"],\n'
    '    compatible_with = ["ovr_config//os:android", "ovr_config//os:linux"],\n'
    '    deps = [":linux_kernels"],\n'
    ")\n"
    "non_fbcode_target(\n"
    "    _kind = cxx_library,\n"
    '    name = "plain_user",\n'
    '    srcs = ["plain.cpp"],\n'
    '    deps = [":linux_kernels"],\n'
    ")\n"
)
FILES = {".buckconfig": "[repositories]\n  root = .\n", "gpu/BUCK": BUCK}


def _findings(snapshot):
    return [f for f in engine.run([CHECK], snapshot).findings if f.rule == CHECK.id]


def test_the_finding_names_the_platforms_where_the_target_breaks_and_its_dependents():
    (finding,) = _findings(_snapshot(Example(head=FILES)))
    assert finding.target == "//gpu:linux_kernels"
    # Only CPU-only Linux builds it: Android and iOS are excluded by its own compatible_with.
    assert "CPU-only platform(s) `linux-x86_64` of the `xplat` cell" in finding.message
    assert "`//gpu:android_user`, `//gpu:plain_user`" in finding.message
    # android_user asks for Linux too: once the kernels are guarded, buck2 fails it there.
    assert "Of these, `//gpu:android_user` name(s) those platforms in `compatible_with`" in finding.message
    assert {(e.path, e.line, e.note) for e in finding.evidence if e.note.startswith("depends on it")} == {
        ("gpu/BUCK", 8, "depends on it: //gpu:android_user -> //gpu:linux_kernels"),
        ("gpu/BUCK", 15, "depends on it: //gpu:plain_user -> //gpu:linux_kernels"),
    }


def test_the_platforms_come_from_the_configuration():
    config = parse_config(
        '[buck.platforms]\nxplat = [\n  {name = "jetson", constraints = ["ovr_config//os:linux", '
        '"ovr_config//cpu:arm64", "ovr_config//cuda:has_cuda"]},\n'
        '  {name = "quest", constraints = ["ovr_config//os:android", "ovr_config//cpu:arm64"]},\n]\n'
    )
    plain = _snapshot(Example(head=FILES))
    configured = Snapshot(
        BuildModel(memory_tree({}), config),
        BuildModel(memory_tree(FILES), config),
        plain.changes,
        config,
        mode=ReviewMode.SCAN,
    )
    # Neither platform builds the kernels on a CPU: Jetson has CUDA, Quest is not Linux.
    assert _findings(configured) == []
