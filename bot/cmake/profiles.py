"""CMake profiles as data: the configurations a review evaluates CMake under.

Three are built in (`PROFILES`); a repository defines more in `.github/pr-check.toml`, each
extending a built-in or another of its own, and chooses which are active:

    [cmake]
    profiles = ["linux-gcc-cuda", "cuda-llm"]

    [cmake.profile.cuda-llm]
    extends = "linux-gcc-cuda"
    variables = { EXECUTORCH_BUILD_EXTENSION_LLM = "ON" }

Definitions live under `cmake.profile` (singular) because TOML cannot hold `cmake.profiles`
as both the list of active names and a table of definitions. `define_profiles` turns the
tables into frozen profiles and raises ConfigError for anything it cannot make sense of;
bot/config.py calls it, so an unknown name stops a review before it starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from bot.config_schema import CONFIG_PATH, PROFILE_TABLE, validate_table
from bot.errors import ConfigError

_DEFAULT_PRELUDE = (
    "tools/cmake/common/preset.cmake",
    "tools/cmake/Utils.cmake",
    "tools/cmake/preset/default.cmake",
)


@dataclass(frozen=True, slots=True)
class CMakeProfile:
    """One configuration to evaluate under.

    `variables` act like `-D` on the cmake command line: they are cache entries before any
    file runs, so `option()` and `set(... CACHE ...)` defaults do not override them.
    `prelude` names the files `evaluate_cmake_dirs` runs first (missing ones are skipped).
    """

    name: str
    compiler_id: str
    platform: str
    cuda: bool
    variables: Mapping[str, str] = field(default_factory=dict)
    prelude: tuple[str, ...] = _DEFAULT_PRELUDE

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", MappingProxyType(dict(self.variables)))

    def with_variables(self, name: str | None = None, **overrides: str) -> CMakeProfile:
        """This profile with some variables overridden (e.g. EXECUTORCH_BUILD_EXTENSION_LLM="ON")."""
        merged = {**self.variables, **overrides}
        suffix = ",".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        return dataclasses.replace(self, name=name or f"{self.name}+{suffix}", variables=merged)


Profile = CMakeProfile

_NVCC_LINUX = "/usr/local/cuda/bin/nvcc"
# ExecuTorch's default.cmake rejects EXECUTORCH_BUILD_CUDA without the tensor extension
# (check_required_options_on), so a CUDA profile that configures at all turns both on.
_CUDA_OPTIONS = {"EXECUTORCH_BUILD_CUDA": "ON", "EXECUTORCH_BUILD_EXTENSION_TENSOR": "ON"}
_NVCC_WINDOWS = "C:/Program Files/NVIDIA GPU Computing Toolkit/CUDA/v12.8/bin/nvcc.exe"

PROFILES: Mapping[str, CMakeProfile] = MappingProxyType(
    {
        "linux-gcc-cuda": CMakeProfile(
            "linux-gcc-cuda",
            "GNU",
            "Linux",
            True,
            {**_CUDA_OPTIONS, "CMAKE_CUDA_COMPILER": _NVCC_LINUX},
        ),
        "msvc": CMakeProfile(
            "msvc",
            "MSVC",
            "Windows",
            True,
            {**_CUDA_OPTIONS, "CMAKE_CUDA_COMPILER": _NVCC_WINDOWS},
        ),
        "cpu-only": CMakeProfile("cpu-only", "GNU", "Linux", False, {"EXECUTORCH_BUILD_CUDA": "OFF"}),
    }
)
DEFAULT_PROFILE = PROFILES["linux-gcc-cuda"]

# Each backend and extension the root CMakeLists.txt can enable, as the option set that enables
# it on top of the CPU-only profile. A review evaluates one only when the change touches its
# directory (below): every review paying for eleven more configurations would be slow, and a
# change elsewhere cannot make the backend's twins drift. Apple's build configures on macOS.
_ON = "ON"
_BACKEND_OPTIONS: Mapping[str, tuple[str, dict[str, str]]] = MappingProxyType(
    {
        "backend-arm": (
            "Linux",
            {"EXECUTORCH_BUILD_ARM_BAREMETAL": _ON, "EXECUTORCH_BUILD_VGF": _ON, "EXECUTORCH_BUILD_CORTEX_M": _ON},
        ),
        "backend-cadence": ("Linux", {"EXECUTORCH_BUILD_CADENCE": _ON}),
        "backend-nxp": ("Linux", {"EXECUTORCH_BUILD_NXP_NEUTRON": _ON, "EXECUTORCH_BUILD_NXP_NEUTRON_RUNNER": _ON}),
        "backend-vulkan": ("Linux", {"EXECUTORCH_BUILD_VULKAN": _ON}),
        "backend-xnnpack": ("Linux", {"EXECUTORCH_BUILD_XNNPACK": _ON}),
        "backend-qualcomm": ("Linux", {"EXECUTORCH_BUILD_QNN": _ON}),
        "backend-mediatek": ("Linux", {"EXECUTORCH_BUILD_NEURON": _ON}),
        "backend-apple": ("Darwin", {"EXECUTORCH_BUILD_COREML": _ON, "EXECUTORCH_BUILD_MPS": _ON}),
        "extension-llm": (
            "Linux",
            {
                "EXECUTORCH_BUILD_EXTENSION_LLM": _ON,
                "EXECUTORCH_BUILD_EXTENSION_LLM_RUNNER": _ON,
                "EXECUTORCH_BUILD_KERNELS_LLM": _ON,
                "EXECUTORCH_BUILD_EXTENSION_MODULE": _ON,
                "EXECUTORCH_BUILD_EXTENSION_TENSOR": _ON,
            },
        ),
        "extension-training": (
            "Linux",
            {
                "EXECUTORCH_BUILD_EXTENSION_TRAINING": _ON,
                "EXECUTORCH_BUILD_EXTENSION_MODULE": _ON,
                "EXECUTORCH_BUILD_EXTENSION_TENSOR": _ON,
            },
        ),
        # The JNI library (libexecutorch_jni.so) as the Android AAR build configures it
        # (scripts/build_android_library.sh): the root build adds extension/android when
        # EXECUTORCH_BUILD_ANDROID_JNI is on (since a1e3d48fee, Jul 2025), so its link line and
        # what it takes whole are seen only under an Android configuration.
        "extension-android": (
            "Android",
            {
                "EXECUTORCH_BUILD_ANDROID_JNI": _ON,
                "EXECUTORCH_BUILD_XNNPACK": _ON,
                "EXECUTORCH_BUILD_EXTENSION_DATA_LOADER": _ON,
                "EXECUTORCH_BUILD_EXTENSION_FLAT_TENSOR": _ON,
                "EXECUTORCH_BUILD_EXTENSION_MODULE": _ON,
                "EXECUTORCH_BUILD_EXTENSION_NAMED_DATA_MAP": _ON,
                "EXECUTORCH_BUILD_EXTENSION_RUNNER_UTIL": _ON,
                "EXECUTORCH_BUILD_EXTENSION_TENSOR": _ON,
                "EXECUTORCH_BUILD_EXTENSION_THREADPOOL": _ON,
                "EXECUTORCH_BUILD_EXTENSION_LLM": _ON,
                "EXECUTORCH_BUILD_EXTENSION_LLM_RUNNER": _ON,
                "EXECUTORCH_BUILD_KERNELS_LLM": _ON,
                "EXECUTORCH_BUILD_KERNELS_OPTIMIZED": _ON,
                "EXECUTORCH_BUILD_KERNELS_QUANTIZED": _ON,
                "EXECUTORCH_BUILD_LLAMA_JNI": _ON,
            },
        ),
    }
)
BACKEND_PROFILES: Mapping[str, CMakeProfile] = MappingProxyType(
    {
        name: CMakeProfile(
            name,
            {"Darwin": "AppleClang", "Android": "Clang"}.get(platform, "GNU"),
            platform,
            False,
            {"EXECUTORCH_BUILD_CUDA": "OFF", **options},
        )
        for name, (platform, options) in _BACKEND_OPTIONS.items()
    }
)
# Which directories each backend profile builds from: a change under one evaluates it.
BACKEND_DIRECTORIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "backend-arm": ("backends/arm/", "backends/cortex_m/"),
        "backend-cadence": ("backends/cadence/",),
        "backend-nxp": ("backends/nxp/",),
        "backend-vulkan": ("backends/vulkan/",),
        "backend-xnnpack": ("backends/xnnpack/",),
        "backend-qualcomm": ("backends/qualcomm/",),
        "backend-mediatek": ("backends/mediatek/",),
        "backend-apple": ("backends/apple/", "extension/apple/"),
        "extension-llm": ("extension/llm/",),
        "extension-training": ("extension/training/",),
        "extension-android": ("extension/android/",),
    }
)
PROFILES = MappingProxyType({**PROFILES, **BACKEND_PROFILES})
# Profiles whose build links a binary of its own on top of the root build's libraries, one no
# configured profile has: the link rules evaluate them too when the change touches them.
CONSUMER_PROFILES = ("extension-android",)


def profiles_touched(paths) -> tuple[str, ...]:
    """The backend profiles whose directories any of `paths` lies under, in table order."""
    return tuple(name for name, prefixes in BACKEND_DIRECTORIES.items() if any(p.startswith(prefixes) for p in paths))


# -- profiles a repository defines ----------------------------------------------------------

_CONFIG = CONFIG_PATH
# Without `extends` a profile must say what it builds with.
_REQUIRED_ALONE = ("compiler_id", "platform", "cuda")


def define_profiles(tables: Mapping[str, Any], active: tuple[str, ...]) -> Mapping[str, CMakeProfile]:
    """The repository's `[cmake.profile.NAME]` tables as profiles; checks `active` names them all.

    Returns only the repository's own profiles (the built-ins stay in PROFILES). Raises
    ConfigError for an unknown key, a missing or cyclic `extends`, a built-in redefined, or an
    active name that is neither built in nor defined.
    """
    for name, table in tables.items():
        if name in PROFILES:
            raise ConfigError(
                f"{_CONFIG}: [cmake.profile.{name}] redefines a built-in profile; "
                f'give it a new name with extends = "{name}"'
            )
        if not isinstance(table, dict):
            raise ConfigError(f"{_CONFIG}: cmake.profile.{name} must be a table")
        validate_table(PROFILE_TABLE, f"cmake.profile.{name}", table, _CONFIG)
    defined: dict[str, CMakeProfile] = {}
    for name in tables:
        _resolve(name, tables, defined, ())
    for name in active:
        if name not in PROFILES and name not in defined:
            known = ", ".join([*PROFILES, *defined])
            raise ConfigError(f"{_CONFIG}: cmake.profiles names an unknown profile {name!r} (known: {known})")
    return MappingProxyType(defined)


def _resolve(
    name: str, tables: Mapping[str, Any], defined: dict[str, CMakeProfile], chain: tuple[str, ...]
) -> CMakeProfile:
    if name in PROFILES:
        return PROFILES[name]
    if name in defined:
        return defined[name]
    if name in chain:
        raise ConfigError(f"{_CONFIG}: cmake.profile extends in a cycle: {' -> '.join((*chain, name))}")
    table = tables.get(name)
    if table is None:
        raise ConfigError(f"{_CONFIG}: cmake.profile.{chain[-1]} extends unknown profile {name!r}")
    parent_name = table.get("extends")
    if parent_name is None:
        missing = [key for key in _REQUIRED_ALONE if key not in table]
        if missing:
            raise ConfigError(f"{_CONFIG}: cmake.profile.{name} needs {', '.join(missing)} (or extends)")
        parent = CMakeProfile(name, table["compiler_id"], table["platform"], table["cuda"])
    else:
        parent = _resolve(parent_name, tables, defined, (*chain, name))
    cuda = table.get("cuda", parent.cuda)
    variables = dict(parent.variables)
    if not cuda:
        # No CUDA compiler found is what `cuda = false` means; an inherited nvcc would contradict it.
        variables.pop("CMAKE_CUDA_COMPILER", None)
    for variable, value in table.get("variables", {}).items():
        variables[variable] = _cmake_value(name, variable, value)
    prelude = table.get("prelude", parent.prelude)
    if not all(isinstance(path, str) for path in prelude):
        raise ConfigError(f"{_CONFIG}: cmake.profile.{name}.prelude must be a list of paths")
    profile = CMakeProfile(
        name,
        table.get("compiler_id", parent.compiler_id),
        table.get("platform", parent.platform),
        cuda,
        variables,
        tuple(prelude),
    )
    defined[name] = profile
    return profile


def _cmake_value(profile: str, variable: str, value: object) -> str:
    """A TOML value as the string `-D` would pass: booleans become ON/OFF."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (str, int)):
        return str(value)
    raise ConfigError(f"{_CONFIG}: cmake.profile.{profile}.variables.{variable} must be a string, integer or boolean")


def profile_named(name: str, defined: Mapping[str, CMakeProfile] | None = None) -> CMakeProfile:
    """A built-in profile or one the repository defined; KeyError when neither has it."""
    if defined and name in defined:
        return defined[name]
    return PROFILES[name]


def platform_variables(profile: CMakeProfile, source_root: str, binary_root: str) -> dict[str, str]:
    """The normal variables `project()` would leave behind for this profile."""
    processor = {"Windows": "AMD64", "Darwin": "arm64", "Android": "aarch64"}.get(profile.platform, "x86_64")
    values = {
        "CMAKE_SYSTEM_NAME": profile.platform,
        "CMAKE_HOST_SYSTEM_NAME": profile.platform,
        "CMAKE_SYSTEM_PROCESSOR": processor,
        "CMAKE_HOST_SYSTEM_PROCESSOR": processor,
        "CMAKE_CXX_COMPILER_ID": profile.compiler_id,
        "CMAKE_C_COMPILER_ID": profile.compiler_id,
        "CMAKE_SOURCE_DIR": source_root,
        "CMAKE_BINARY_DIR": binary_root,
        "PROJECT_SOURCE_DIR": source_root,
        "PROJECT_BINARY_DIR": binary_root,
        "CMAKE_INSTALL_LIBDIR": "lib",
        "CMAKE_INSTALL_BINDIR": "bin",
        "CMAKE_INSTALL_INCLUDEDIR": "include",
        "CMAKE_INSTALL_DATADIR": "share",
        "CMAKE_SIZEOF_VOID_P": "8",
        "CMAKE_VERSION": "3.31.6",
        "CMAKE_MAJOR_VERSION": "3",
        "CMAKE_MINOR_VERSION": "31",
        "CMAKE_COMMAND": "cmake",
        "CMAKE_DL_LIBS": "dl" if profile.platform == "Linux" else "",
    }
    if profile.platform == "Windows":
        values.update(WIN32="1", CMAKE_HOST_WIN32="1")
    else:
        values.update(UNIX="1", CMAKE_HOST_UNIX="1")
    if profile.platform == "Linux":
        values.update(LINUX="1", CMAKE_HOST_LINUX="1")
    if profile.platform == "Darwin":
        values.update(APPLE="1", CMAKE_HOST_APPLE="1")
    if profile.platform == "Android":
        # What the NDK's toolchain file sets (arm64, the ABI the AAR ships first).
        values.update(ANDROID="1", ANDROID_ABI="arm64-v8a", CMAKE_ANDROID_ARCH_ABI="arm64-v8a")
        # cross-compiled from a Linux host
        values.update(CMAKE_HOST_SYSTEM_NAME="Linux", CMAKE_HOST_SYSTEM_PROCESSOR="x86_64", CMAKE_HOST_LINUX="1")
        values.update(CMAKE_CROSSCOMPILING="1")
    if profile.compiler_id == "MSVC":
        values.update(MSVC="1", MSVC_VERSION="1940")
    if profile.compiler_id == "GNU":
        values.update(CMAKE_COMPILER_IS_GNUCXX="1", CMAKE_COMPILER_IS_GNUCC="1")
    if profile.cuda:
        values["CMAKE_CUDA_COMPILER_ID"] = "NVIDIA"
    return values
