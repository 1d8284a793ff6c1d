"""Which CMake configurations a link rule evaluates for one change."""

from __future__ import annotations

from bot.cmake.profiles import CONSUMER_PROFILES, profiles_touched
from bot.snapshot import Snapshot


def link_profiles(snap: Snapshot) -> tuple[str, ...]:
    """The configured builds, and each build the change touches that links a binary of its own on
    the root build's libraries (the Android JNI library, under extension/android): that link line
    exists only there. A scan has no change and evaluates the configured builds alone."""
    touched = profiles_touched(
        [path for change in snap.changes.files for path in (change.path, change.old_path) if path]
    )
    return tuple(dict.fromkeys((*snap.config.cmake_profiles, *(p for p in touched if p in CONSUMER_PROFILES))))
