"""`pr-check review` and `pr-check scan`: resolve what to review, review it, render, exit status."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from bot.config import CONFIG_PATH, Config
from bot.errors import UsageError
from bot.pipeline import Report, default_cache_dir, load_config, review_trees
from bot.repo import GitRepository
from bot.review_stats import ConfigSource
from bot.store.evaluations import EvaluationCache
from bot.toolchain.runner import version_line
from bot.toolchain.switch import compiling, tier_state
from bot.tree import FileTree
from pr_check import revisions
from pr_check.commands.request import local_config, output_request
from pr_check.output import OutputRequest, exit_status, render, write
from pr_check.product_checks import ProductChecks, all_checks
from pr_check.review_input import Commit, DiffFile, ReviewSource, Scan, WorkTree, resolve
from pr_check.shim import shim_files


def run_review(arguments: argparse.Namespace) -> int:
    """`pr-check review`: the work tree, a commit (--head) or a diff file (--diff) against the base."""
    request = output_request(arguments)
    config = local_config(arguments.config)
    source: ReviewSource
    if arguments.diff is not None and arguments.head is not None:
        raise UsageError("--head and --diff: the diff is applied to --base (default HEAD); leave out --head")
    if arguments.diff is not None:
        text = _read_diff(arguments.diff)
        if not text.strip():
            print(f"pr-check: nothing to review: the diff {arguments.diff} is empty", file=sys.stderr)
            return 0
        source = DiffFile(text, arguments.base)
    elif arguments.head is None:
        source = WorkTree(arguments.base)  # a bare repository has none: its HEAD is reviewed
    else:
        source = Commit(arguments.head, arguments.base)
    return review(arguments, source, request, config)


def review(arguments: argparse.Namespace, source: ReviewSource, request: OutputRequest, config: Config | None) -> int:
    """Review `source` in `--repo` with the product's checks (less those not wanted), print, exit status."""
    with GitRepository(arguments.repo) as repo:
        given = resolve(repo, source)
        given = given.with_files(shim_files(repo, arguments.shim))
        cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
        config_notes, config_source = _config_note(arguments.config)
        if arguments.config is None and isinstance(source, WorkTree):
            config_notes += _work_tree_config_note(given.base, given.head)
        with _progress(request) as progress:
            report = review_trees(
                given.base,
                given.head,
                given.changes,
                checks=ProductChecks(request.selected, request.ignored),
                cache=cache,
                progress=progress,
                config=config,
                compiled=arguments.compile,
            )
        notes = given.notes + config_notes + _tier_note(arguments.compile)
        return _finish(report, request, notes, config_source, revisions.repository_uri(repo))


def run_scan(arguments: argparse.Namespace) -> int:
    """`pr-check scan`: every finding in a whole tree at one revision."""
    request = output_request(arguments)
    config = local_config(arguments.config)
    with GitRepository(arguments.repo) as repo:
        given = resolve(repo, Scan(arguments.rev))
        given = given.with_files(shim_files(repo, arguments.shim))
        cache = EvaluationCache(arguments.cache_dir or default_cache_dir(repo))
        config_notes, config_source = _config_note(arguments.config)
        notes = given.notes
        if request.paths:
            notes += (f"paths: {', '.join(request.paths)}",)
        with _progress(request) as progress:
            report = review_trees(
                given.base,
                given.head,
                given.changes,
                checks=request.checks(all_checks()),
                cache=cache,
                progress=progress,
                config=config if config is not None else load_config(given.head, all_checks()),
                compiled=arguments.compile,
            )
        return _finish(
            report,
            request,
            notes + config_notes + _tier_note(arguments.compile),
            config_source,
            revisions.repository_uri(repo),
        )


def _config_note(path: Path | None) -> tuple[tuple[str, ...], ConfigSource | None]:
    if path is None:
        return (), None
    note = f"config: LOCAL FILE {path} (not the base revision's {CONFIG_PATH})"
    return (note,), ConfigSource("local", str(path))


def _tier_note(enabled: bool | None) -> tuple[str, ...]:
    """Whether the compiled tier ran, and with which compiler: a review without it says less."""
    with compiling(enabled):
        state, toolchain = tier_state()
    if toolchain is None:
        return (f"compiled tier: {state}",)
    return (f"compiled tier: on ({version_line(toolchain)})",)


def _work_tree_config_note(base: FileTree, head: FileTree) -> tuple[str, ...]:
    """A work tree whose config differs from the base's: say that the base's is the one used."""
    if head.read(CONFIG_PATH) == base.read(CONFIG_PATH):
        return ()
    note = (
        f"config: the base revision's {CONFIG_PATH}; the work tree's differs and is not used "
        f"(a change cannot switch off its own checks): try it with --config {CONFIG_PATH}"
    )
    return (note,)


def _read_diff(source: str) -> str:
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read diff {source}: {error.strerror}") from None
    # surrogateescape: bytes that are not UTF-8 survive the round trip into the patched files.
    return data.decode("utf-8", errors="surrogateescape")


@contextmanager
def _progress(request: OutputRequest) -> Iterator[Callable[[str, int, int], None] | None]:
    """Progress of long evaluations on stderr: a bar on a terminal, one line per cell elsewhere (a CI
    log would otherwise show nothing for the seconds a cold review takes); nothing with -q."""
    if request.verbosity < 0:
        yield None
        return
    if not sys.stderr.isatty():
        announced: set[str] = set()

        def announce(cell: str, done: int, total: int) -> None:
            if cell not in announced:  # called for packages the cache lacks: a warm review prints nothing
                announced.add(cell)
                print(
                    f"pr-check: evaluating {total} Buck package{'s' if total != 1 else ''} in the {cell} cell "
                    "(kept in the cache for the next review)",
                    file=sys.stderr,
                    flush=True,
                )

        yield announce
        return
    # rich only on a terminal: a CI log or a warm review would pay for its import and use none of it.
    from rich.console import Console
    from rich.progress import Progress, TaskID

    with Progress(console=Console(stderr=True), transient=True) as progress:
        tasks: dict[str, TaskID] = {}

        def update(cell: str, done: int, total: int) -> None:
            if cell not in tasks:
                tasks[cell] = progress.add_task(f"evaluating {cell}", total=total)
            progress.update(tasks[cell], completed=done + 1, total=total)

        yield update


def _finish(
    report: Report,
    request: OutputRequest,
    notes: tuple[str, ...],
    config_source: ConfigSource | None,
    repository_uri: str | None,
) -> int:
    report = request.filter(report)
    if config_source is not None:
        report = replace(report, stats=replace(report.stats, config=config_source))
    write(render(report, request, ProductChecks(), notes=notes, repository_uri=repository_uri), request.output)
    return exit_status(report, request)
