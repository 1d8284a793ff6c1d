"""The host stage: does the repository's own host export every shim the canary needs, and load it?

The host is built by the one command this package runs from a repository, the configured `host_build`.
Two ways to check it, either or both:

- `host`, an executable: its dynamic symbol table must define every needed `aoti_torch_*` symbol. An
  arbitrary host cannot be driven generically, so loading the canary is delegated to the host itself
  through `host_load_args` when configured.
- `host_archive`, the static archive of shims the host links (ExecuTorch's, in real use): csrc/load_canary.c
  is linked against it the way a host must be (--whole-archive, --export-dynamic, plus `host_link_args`),
  and dlopens with RTLD_NOW | RTLD_LOCAL a probe library generated from the canary's needed symbols, then
  the canary's wrapper itself when it does not bring libtorch (whose own shims would answer instead).
  Loading is the proof: the loader's exact message names a symbol the archive does not provide.
"""

from __future__ import annotations

import re
from pathlib import Path

from smoke.canary import CanaryWrapper
from smoke.commands import CommandResult, run_command
from smoke.config import HostConfig
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols
from smoke.report import StageOutcome

BUILD_TIMEOUT_S = 3600
LOAD_TIMEOUT_S = 300
LINK_TIMEOUT_S = 180
LIBRARY_PLACEHOLDER = "{library}"
NO_HOST = (
    "no host under test configured (--host or --host-archive, or [smoke] host / host_archive in .github/pr-check.toml)"
)
LOADER_SOURCE = Path(__file__).with_name("csrc") / "load_canary.c"
LOADED = "loaded: "
DLOPEN_FAILED = "dlopen failed: "
C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
UNDEFINED_SYMBOL = re.compile(r"undefined symbol: (\S+)")


def check_host(
    config: HostConfig,
    wrapper: CanaryWrapper | None,
    canary_reason: str,
    build_timeout: float = BUILD_TIMEOUT_S,
    cc: str | None = None,
    work_dir: Path | None = None,
) -> StageOutcome:
    """Build the host, then check the executable's exports and/or load the canary through the archive."""
    if config.host is None and config.archive is None:
        return StageOutcome("skipped", NO_HOST)
    if wrapper is None:
        return StageOutcome("skipped", f"no canary wrapper to check the host against ({canary_reason})")
    details: dict = {"needed_symbols": len(wrapper.needed_symbols)}
    if config.build_command:
        build = run_command(config.build_command, timeout=build_timeout, cwd=config.repo)
        details["build"] = build.to_json()
        if not build.ok:
            reason = f"host build failed (exit {build.returncode}): {config.build_command}"
            return StageOutcome("failed", reason, details)
    verdicts = []
    if config.host is not None:
        details["host"] = str(config.host)
        verdicts.append(_check_executable(config.host, config.load_args, wrapper, details))
    if config.archive is not None:
        archive_details: dict = {"archive": str(config.archive)}
        details["archive"] = archive_details
        directory = work_dir if work_dir is not None else config.archive.parent / "pr-check-smoke-loader"
        verdicts.append(load_through_archive(config.archive, config.link_args, wrapper, cc, directory, archive_details))
    status = "failed" if any(status == "failed" for status, _ in verdicts) else "passed"
    return StageOutcome(status, "; ".join(reason for _, reason in verdicts), details)


def _check_executable(
    host: Path, load_args: tuple[str, ...] | None, wrapper: CanaryWrapper, details: dict
) -> tuple[str, str]:
    try:
        exported = read_dynamic_symbols(host).defined
    except SymbolReadError as error:
        return "failed", f"cannot read the host's dynamic symbols: {error}"
    missing = sorted(set(wrapper.needed_symbols) - exported)
    details["missing_symbols"] = missing
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        needed = len(wrapper.needed_symbols)
        return "failed", f"host does not export {len(missing)} of the {needed} symbols the canary needs: {shown}"
    if load_args is None:
        return "passed", "exports checked, load not configured (set [smoke] host_load_args)"
    return _load_canary(host, load_args, wrapper.path, details)


def _load_canary(host: Path, load_args: tuple[str, ...], library: Path, details: dict) -> tuple[str, str]:
    args = [arg.replace(LIBRARY_PLACEHOLDER, str(library)) for arg in load_args]
    if not any(LIBRARY_PLACEHOLDER in arg for arg in load_args):
        args.append(str(library))
    load = run_command([str(host), *args], timeout=LOAD_TIMEOUT_S)
    details["load"] = load.to_json()
    if not load.ok:
        return "failed", f"host exports every symbol but failed to load the canary (exit {load.returncode})"
    return "passed", "host exports every symbol the canary needs and loaded it"


def load_through_archive(
    archive: Path,
    link_args: tuple[str, ...],
    wrapper: CanaryWrapper,
    cc: str | None,
    work_dir: Path,
    details: dict,
) -> tuple[str, str]:
    """Link the loader against archive and dlopen the symbol probe (and a libtorch-free wrapper) from it."""
    if cc is None:
        return "failed", "host_archive is configured but no C compiler was found to link the loader"
    if not archive.is_file():
        return "failed", f"host archive not found: {archive}"
    unusable = [name for name in wrapper.needed_symbols if not C_IDENTIFIER.fullmatch(name)]
    if unusable:
        return "failed", f"needed symbols that are not C identifiers: {', '.join(unusable[:5])}"
    work_dir.mkdir(parents=True, exist_ok=True)
    loader, probe = work_dir / "load_canary", work_dir / "libsymbol_probe.so"
    probe_source = work_dir / "symbol_probe.c"
    probe_source.write_text(symbol_probe_source(wrapper.needed_symbols))
    steps = _run_until_failure(
        [
            [cc, "-c", "-O1", str(LOADER_SOURCE), "-o", str(work_dir / "load_canary.o")],
            link_loader_command(cc, work_dir / "load_canary.o", archive, link_args, loader),
            [cc, "-shared", "-fPIC", "-O1", str(probe_source), "-o", str(probe)],
        ]
    )
    details["steps"] = [step.to_json() for step in steps]
    if not steps[-1].ok:
        return "failed", f"building the loader against {archive.name} failed: {steps[-1].command}"
    # A wrapper linked against libtorch resolves its shims from libtorch, whatever the host exports.
    torch_libraries = [name for name in wrapper.needed_libraries if name.startswith("libtorch")]
    libraries = [probe] if torch_libraries else [probe, wrapper.path]
    details["wrapper_loaded_too"] = not torch_libraries
    load = run_command([str(loader), *map(str, libraries)], timeout=LOAD_TIMEOUT_S)
    details["load"] = load.to_json()
    lines = load.stdout.splitlines()
    details["messages"] = lines
    failures = [line.removeprefix(DLOPEN_FAILED) for line in lines if line.startswith(DLOPEN_FAILED)]
    details["missing_symbols"] = sorted({m.group(1) for f in failures if (m := UNDEFINED_SYMBOL.search(f))})
    loaded = len([line for line in lines if line.startswith(LOADED)])
    if failures:
        return "failed", f"a loader linked with {archive.name} could not load: {failures[0]}"
    if not load.ok or loaded != len(libraries):
        return (
            "failed",
            f"the loader linked with {archive.name} ended with exit {load.returncode}: {load.stderr[-300:]}",
        )
    what = (
        "the symbol probe and the canary's wrapper"
        if not torch_libraries
        else ("the symbol probe (the wrapper itself links libtorch, so loading it would prove nothing)")
    )
    count = len(wrapper.needed_symbols)
    return "passed", f"a loader linked with {archive.name} exports all {count} needed symbols and loaded {what}"


def link_loader_command(
    cc: str, loader_object: Path, archive: Path, link_args: tuple[str, ...], output: Path
) -> list[str]:
    """Link the loader as a host must link its shims: every member kept, every symbol exported."""
    return [
        cc,
        str(loader_object),
        "-Wl,--whole-archive",
        str(archive),
        "-Wl,--no-whole-archive",
        *link_args,
        "-Wl,--export-dynamic",
        "-ldl",
        "-o",
        str(output),
    ]


def symbol_probe_source(symbols: tuple[str, ...]) -> str:
    """C for a library whose only content is a reference to each symbol; RTLD_NOW resolves them all."""
    declarations = "".join(f"extern void {name}(void);\n" for name in symbols)
    entries = "".join(f"    {name},\n" for name in symbols)
    return (
        "/* Generated by pr-check smoke: one reference to each symbol the canary needs from its host. */\n"
        f"{declarations}\n"
        f"void (*const smoke_symbol_probe[])(void) = {{\n{entries}    0,\n}};\n"
    )


def _run_until_failure(commands: list[list[str]]) -> list[CommandResult]:
    steps: list[CommandResult] = []
    for command in commands:
        steps.append(run_command(command, timeout=LINK_TIMEOUT_S))
        if not steps[-1].ok:
            break
    return steps
