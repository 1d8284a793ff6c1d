"""The host stage: does the repository's own host export every shim the canary needs, and load it?

The host is built by the one command this package runs from a repository, the configured `host_build`.
An arbitrary host cannot be driven generically, so loading the canary is delegated to the host itself
through `host_load_args` when configured; otherwise the exports are the check.
"""

from __future__ import annotations

from pathlib import Path

from smoke.canary import CanaryWrapper
from smoke.commands import run_command
from smoke.config import HostConfig
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols
from smoke.report import StageOutcome

BUILD_TIMEOUT_S = 3600
LOAD_TIMEOUT_S = 300
LIBRARY_PLACEHOLDER = "{library}"
NO_HOST = "no host under test configured (--host, or [smoke] host in .github/pr-check.toml)"


def check_host(
    config: HostConfig,
    wrapper: CanaryWrapper | None,
    canary_reason: str,
    build_timeout: float = BUILD_TIMEOUT_S,
) -> StageOutcome:
    """Build the host, compare its exports with the canary's needs, then let it load the canary."""
    if config.host is None:
        return StageOutcome("skipped", NO_HOST)
    if wrapper is None:
        return StageOutcome("skipped", f"no canary wrapper to check the host against ({canary_reason})")
    details: dict = {"host": str(config.host), "needed_symbols": len(wrapper.needed_symbols)}
    if config.build_command:
        build = run_command(config.build_command, timeout=build_timeout, cwd=config.repo)
        details["build"] = build.to_json()
        if not build.ok:
            reason = f"host build failed (exit {build.returncode}): {config.build_command}"
            return StageOutcome("failed", reason, details)
    try:
        exported = read_dynamic_symbols(config.host).defined
    except SymbolReadError as error:
        return StageOutcome("failed", f"cannot read the host's dynamic symbols: {error}", details)
    missing = sorted(set(wrapper.needed_symbols) - exported)
    details["missing_symbols"] = missing
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        needed = len(wrapper.needed_symbols)
        reason = f"host does not export {len(missing)} of the {needed} symbols the canary needs: {shown}"
        return StageOutcome("failed", reason, details)
    if config.load_args is None:
        return StageOutcome("passed", "exports checked, load not configured (set [smoke] host_load_args)", details)
    return _load_canary(config.host, config.load_args, wrapper.path, details)


def _load_canary(host: Path, load_args: tuple[str, ...], library: Path, details: dict) -> StageOutcome:
    args = [arg.replace(LIBRARY_PLACEHOLDER, str(library)) for arg in load_args]
    if not any(LIBRARY_PLACEHOLDER in arg for arg in load_args):
        args.append(str(library))
    load = run_command([str(host), *args], timeout=LOAD_TIMEOUT_S)
    details["load"] = load.to_json()
    if not load.ok:
        reason = f"host exports every symbol but failed to load the canary (exit {load.returncode})"
        return StageOutcome("failed", reason, details)
    return StageOutcome("passed", "host exports every symbol the canary needs and loaded it", details)
