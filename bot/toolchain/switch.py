"""Whether reviews ask the compiler: set once by the entry point (`--compile/--no-compile`)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from bot.toolchain.runner import Toolchain, discover

_ENABLED: contextvars.ContextVar[bool | None] = contextvars.ContextVar("compiled_tier", default=None)


@contextlib.contextmanager
def compiling(enabled: bool | None) -> Iterator[None]:
    """Switch the tier on or off for the reviews run inside (None: on where a compiler is found)."""
    token = _ENABLED.set(enabled)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def tier_state() -> tuple[str, Toolchain | None]:
    """("on", toolchain), or (why not, None)."""
    if _ENABLED.get() is False:
        return "off (--no-compile)", None
    toolchain = discover()
    if toolchain is None:
        return "off: no C++ compiler found", None
    return "on", toolchain
