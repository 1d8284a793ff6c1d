"""The CMake model against the real ExecuTorch repository, when a mirror of it is present.

Design 3.2 states facts of ExecuTorch's CUDA build; this checks that the model finds them
under the default profile and that the MSVC profile finds neither. CI may not have the
mirror: then the tests are skipped, with the reason.
"""

from __future__ import annotations

import pytest

from bot.cmake.interpreter import evaluate_cmake_dirs
from bot.cmake.profiles import DEFAULT_PROFILE, PROFILES

REVISION = "refs/heads/main"
CUDA_DIRS = ("extension/cuda", "backends/aoti", "backends/cuda")
EXPORTING_TARGETS = ("aoti_common", "aoti_cuda_shims", "aoti_cuda_backend")


@pytest.fixture(scope="module")
def tree(executorch_mirror):
    from bot.repo import GitRepository

    return GitRepository(executorch_mirror).tree(REVISION)


@pytest.fixture(scope="module")
def default_model(tree):
    return evaluate_cmake_dirs(tree, DEFAULT_PROFILE, CUDA_DIRS)


@pytest.fixture(scope="module")
def msvc_model(tree):
    return evaluate_cmake_dirs(tree, PROFILES["msvc"], CUDA_DIRS)


def export_dynamic(target):
    return [o for o in target.link_options if o.value == "-Wl,--export-dynamic"]


@pytest.mark.parametrize("name", EXPORTING_TARGETS)
def test_export_dynamic_is_public_under_the_default_profile(default_model, name):
    options = export_dynamic(default_model.targets[name])
    assert len(options) == 1
    assert options[0].scope == "PUBLIC"


@pytest.mark.parametrize("name", ("aoti_cuda_shims", "aoti_cuda_backend"))
def test_cuda_targets_export_through_the_variable(default_model, name):
    (option,) = export_dynamic(default_model.targets[name])
    assert option.path == "backends/cuda/CMakeLists.txt"
    assert option.condition_text == "_cuda_export_dynamic_option"


def test_slim_shims_whole_archive_is_private(default_model):
    archives = [
        w for w in default_model.targets["aoti_cuda_shims"].whole_archive if w.library == "aoti_common_shims_slim"
    ]
    assert [(w.scope, w.path) for w in archives] == [("PRIVATE", "backends/cuda/CMakeLists.txt")]


def test_msvc_profile_has_neither(msvc_model):
    for name in EXPORTING_TARGETS:
        assert export_dynamic(msvc_model.targets[name]) == [], name
    shims = msvc_model.targets["aoti_cuda_shims"]
    assert not [w for w in shims.whole_archive if w.library == "aoti_common_shims_slim"]


def test_the_default_profile_configures_without_fatal_errors(default_model):
    assert [p for p in default_model.problems if "FATAL_ERROR" in p.message] == []
    assert set(CUDA_DIRS) <= {path.rsplit("/", 1)[0] for path in default_model.files_read}
