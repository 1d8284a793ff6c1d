"""CMake profiles as data: the built-ins, profiles a repository defines in .github/pr-check.toml,
and the checks evaluating every configured profile."""

from __future__ import annotations

import pytest

from bot import engine
from bot.cmake.profiles import BACKEND_PROFILES, DEFAULT_PROFILE, PROFILES, platform_variables, profiles_touched
from bot.config import parse_config
from bot.diff import ChangeSet, FileChange
from bot.errors import ConfigError
from bot.model import ReviewMode
from bot.snapshot import BuildModel, Snapshot
from bot.tree import memory_tree
from checks import BY_ID

LLM = """
[cmake]
profiles = ["linux-gcc-cuda", "cuda-llm"]

[cmake.profile.cuda-llm]
extends = "linux-gcc-cuda"
variables = { EXECUTORCH_BUILD_EXTENSION_LLM = "ON" }
"""


def test_the_built_in_profiles_are_frozen_data():
    assert list(PROFILES)[:3] == ["linux-gcc-cuda", "msvc", "cpu-only"]
    assert set(PROFILES) - {"linux-gcc-cuda", "msvc", "cpu-only"} == set(BACKEND_PROFILES)
    assert DEFAULT_PROFILE is PROFILES["linux-gcc-cuda"]
    with pytest.raises(TypeError):
        PROFILES["mine"] = DEFAULT_PROFILE  # type: ignore[index]
    with pytest.raises(TypeError):
        DEFAULT_PROFILE.variables["EXECUTORCH_BUILD_CUDA"] = "OFF"  # type: ignore[index]


def test_a_change_evaluates_the_profiles_of_the_backends_it_touches():
    assert profiles_touched(["backends/arm/runtime/VGFBackend.cpp", "backends/cortex_m/ops/BUCK"]) == ("backend-arm",)
    assert profiles_touched(["extension/llm/runner/CMakeLists.txt", "backends/cadence/CMakeLists.txt"]) == (
        "backend-cadence",
        "extension-llm",
    )
    assert profiles_touched(["runtime/core/evalue.h", "backends/cuda/CMakeLists.txt"]) == ()
    arm = BACKEND_PROFILES["backend-arm"]
    assert (arm.platform, arm.cuda, arm.variables["EXECUTORCH_BUILD_VGF"]) == ("Linux", False, "ON")
    assert BACKEND_PROFILES["backend-apple"].platform == "Darwin"


def test_the_android_jni_library_is_configured_as_the_ndk_does_when_extension_android_changes():
    assert profiles_touched(["extension/android/CMakeLists.txt"]) == ("extension-android",)
    android = BACKEND_PROFILES["extension-android"]
    assert (android.compiler_id, android.platform, android.variables["EXECUTORCH_BUILD_ANDROID_JNI"]) == (
        "Clang",
        "Android",
        "ON",
    )
    values = platform_variables(android, "/src", "/build")
    # extension/android/CMakeLists.txt stops with FATAL_ERROR unless ANDROID is set; the host stays Linux.
    assert (values["ANDROID"], values["CMAKE_SYSTEM_NAME"], values["CMAKE_HOST_SYSTEM_NAME"]) == (
        "1",
        "Android",
        "Linux",
    )
    assert "ANDROID" not in platform_variables(BACKEND_PROFILES["backend-xnnpack"], "/src", "/build")


def test_a_profile_extends_a_built_in_with_its_own_variables():
    config = parse_config(LLM)
    assert config.cmake_profiles == ("linux-gcc-cuda", "cuda-llm")
    llm = config.cmake_defined["cuda-llm"]
    assert (llm.compiler_id, llm.platform, llm.cuda) == ("GNU", "Linux", True)
    assert llm.variables == {**DEFAULT_PROFILE.variables, "EXECUTORCH_BUILD_EXTENSION_LLM": "ON"}
    assert llm.prelude == DEFAULT_PROFILE.prelude


def test_extends_chains_and_overrides_what_each_level_sets():
    config = parse_config(
        """
        [cmake]
        profiles = ["msvc-llm-cpu"]

        [cmake.profile.msvc-llm]
        extends = "msvc"
        variables = { EXECUTORCH_BUILD_EXTENSION_LLM = true, LEVEL = "one" }

        [cmake.profile.msvc-llm-cpu]
        extends = "msvc-llm"
        cuda = false
        variables = { LEVEL = 2, EXECUTORCH_BUILD_CUDA = "OFF" }
        """
    )
    cpu = config.cmake_defined["msvc-llm-cpu"]
    assert (cpu.compiler_id, cpu.platform, cpu.cuda) == ("MSVC", "Windows", False)
    assert cpu.variables["EXECUTORCH_BUILD_EXTENSION_LLM"] == "ON"  # from the middle level, TOML true as ON
    assert cpu.variables["LEVEL"] == "2"  # the lowest level wins
    assert cpu.variables["EXECUTORCH_BUILD_CUDA"] == "OFF"
    assert "CMAKE_CUDA_COMPILER" not in cpu.variables  # cuda = false drops the inherited nvcc
    assert (
        config.cmake_defined["msvc-llm"].variables["CMAKE_CUDA_COMPILER"]
        == PROFILES["msvc"].variables["CMAKE_CUDA_COMPILER"]
    )


def test_a_profile_of_its_own_names_its_compiler_and_platform():
    config = parse_config(
        '[cmake]\nprofiles = ["mac"]\n[cmake.profile.mac]\ncompiler_id = "AppleClang"\nplatform = "Darwin"\ncuda = false\n'
    )
    mac = config.cmake_defined["mac"]
    assert (mac.compiler_id, mac.platform, mac.cuda, dict(mac.variables)) == ("AppleClang", "Darwin", False, {})


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[cmake]\nprofiles = ["linux-gcc-cuda", "linux-clang"]\n', "unknown profile 'linux-clang'"),
        ('[cmake]\nprofiles = ["a"]\n[cmake.profile.a]\nextends = "nowhere"\n', "extends unknown profile 'nowhere'"),
        ('[cmake]\nprofiles = ["a"]\n[cmake.profile.a]\nextends = "b"\n[cmake.profile.b]\nextends = "a"\n', "cycle"),
        (
            '[cmake]\nprofiles = ["a"]\n[cmake.profile.a]\nextends = "msvc"\ncompiler = "Clang"\n',
            "unknown key cmake.profile.a.compiler",
        ),
        ('[cmake]\nprofiles = ["a"]\n[cmake.profile.a]\nextends = "msvc"\ncuda = "yes"\n', "cmake.profile.a.cuda"),
        ('[cmake]\nprofiles = ["a"]\n[cmake.profile.a]\nplatform = "Linux"\n', "needs compiler_id, cuda"),
        ('[cmake.profile.msvc]\nextends = "msvc"\n', "redefines a built-in"),
        ('[cmake]\nprofiles = ["a"]\n[cmake.profile.a]\nextends = "msvc"\nvariables = { X = [1] }\n', "variables.X"),
        ("[cmake]\nprofiles = [1]\n", "cmake.profiles must be a list of strings"),
    ],
)
def test_a_profile_the_config_cannot_make_sense_of_is_a_config_error(text, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_config(text)


def test_a_defined_but_inactive_profile_is_checked_too():
    with pytest.raises(ConfigError, match="extends unknown profile 'gone'"):
        parse_config('[cmake.profile.unused]\nextends = "gone"\n')


# A whole-archive pair in PUBLIC scope of a shared library, only when the LLM extension is on.
_LLM_GATED = {
    "CMakeLists.txt": (
        "add_library(aoti_common_shims_slim STATIC common_shims_slim.cpp)\n"
        "add_library(aoti_cuda_shims SHARED memory.cpp)\n"
        "if(EXECUTORCH_BUILD_EXTENSION_LLM)\n"
        "  target_link_libraries(\n"
        "    aoti_cuda_shims\n"
        "    PUBLIC -Wl,--whole-archive aoti_common_shims_slim -Wl,--no-whole-archive\n"
        "  )\n"
        "endif()\n"
    ),
}


def _review(config_text: str | None) -> set[tuple[str, str, int]]:
    config = parse_config(config_text)
    lines = frozenset(range(1, 9))
    changes = ChangeSet((FileChange("CMakeLists.txt", None, "added", added=lines, commentable=lines, hunks=((1, 8),)),))
    snapshot = Snapshot(
        BuildModel(memory_tree({}), config),
        BuildModel(memory_tree(_LLM_GATED), config),
        changes,
        config,
        mode=ReviewMode.SCAN,
    )
    result = engine.run([BY_ID["link-whole-archive-public"]], snapshot)
    return {(f.rule, f.path, f.line) for f in result.findings}


def test_a_check_evaluates_a_repository_defined_profile():
    # Under the built-in profiles the pair is never linked; the repository's LLM profile links it.
    assert _review(None) == set()
    assert _review(LLM) == {("link-whole-archive-public", "CMakeLists.txt", 6)}
