"""What a round of fixes does to where targets build: the judgment every fix gets before `fix` applies it.

A fix that changes where a target builds (a guard, `compatible_with`, a fbcode-only wrapper) takes
every target that depends on it off the same platforms: buck2 skips a dependent of an incompatible
target. That is worse than the defect when a dependent built there before the change (a `.cu` added
to the shared `//extension/tensor:tensor`: guarding it takes the Android JNI layer off the CPU-only
platforms, whatever kind of rule that layer is). `cuda-guard-missing` weighs its own C++ dependents
when it computes its fix; this judgment is the same question asked of any fix by what it actually
does, the tree before the round against the tree after it, so a rule that does not look (or a
dependent it does not count) cannot slip one through.

Pure over three builds: the pull request's base (what built before the change), the tree a round
starts from and the tree its fixes make. `fix_until_settled` (pr_check/fix.py) judges each round of
`pr-check fix`; `judge_files` judges the one commit of `/pr-check fix`, in the App's review child
(webhooks/fix_judgment.py), file by file, with the same words for why a fix is withheld.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bot.buck.cells import CELLS
from bot.facts import revision
from bot.model import Fix
from bot.snapshot import BuildModel
from bot.tree import FileTree, blob_id_of, with_files


@dataclass(frozen=True, slots=True)
class PlatformLoss:
    """A target the fixes take off a platform where it built before the change."""

    cell: str
    platform: str
    label: str
    follows: str  # the first target on its incompatibility chain: the one the fixes changed

    def describe(self) -> str:
        return f"`{self.label}` ({self.cell}) off `{self.platform}`, through `{self.follows}`"


def loss_reason(lost: Sequence[PlatformLoss]) -> str:
    """Why a fix that makes these losses is withheld: the words `pr-check fix` and `/pr-check fix` both use."""
    more = f" and {len(lost) - 1} more" if len(lost) > 1 else ""
    return (
        f"takes {lost[0].describe()}{more}, where it built before the change; "
        "left as a suggestion: keep the change out of those platforms another way"
    )


def withheld_reason(why: str, alone: bool) -> str:
    """The reason a fix is withheld, from why its result is worse: its own doing (`alone`), or only
    with the other fixes of its round."""
    return f"applying it {why}" if alone else f"applied with the other fixes it {why}"


def platform_losses(base: BuildModel, before: BuildModel, after: BuildModel) -> tuple[PlatformLoss, ...]:
    """Targets incompatible with a platform after the round and not before it, whose own definition
    the round did not change (they follow a target they depend on: the dependents of what the fixes
    changed), and that built on that platform at the base of the change (defined in the cell,
    compatible there and not CUDA there)."""
    losses: list[PlatformLoss] = []
    settings = after.config.buck
    for cell in CELLS:
        for platform in settings.platforms_of(cell):
            was = revision.incompatible(before, cell, platform)
            now = revision.incompatible(after, cell, platform)
            leaving = sorted(set(now) - set(was))
            if not leaving:
                continue
            old, new = before.cell(cell).targets, after.cell(cell).targets
            base_targets = base.cell(cell).targets
            for label in leaving:
                if label not in old or label not in base_targets or old[label].attrs != new[label].attrs:
                    continue  # new with the change, or changed by the fixes itself
                if label in revision.incompatible(base, cell, platform):
                    continue
                if label in revision.cuda_reasons(base, cell, platform):
                    continue  # it did not build there before the change either
                losses.append(PlatformLoss(cell, platform.name, label, now[label].chain[-1]))
    return tuple(losses)


def changed_targets(before: BuildModel, after: BuildModel, fix: Fix) -> tuple[str, ...]:
    """The targets whose definition a fix changed: defined within the lines it replaced (in any
    cell) and evaluated differently after the round (or gone)."""
    changed: dict[str, None] = {}
    for cell in CELLS:
        old, new = before.cell(cell).targets, after.cell(cell).targets
        for label, target in sorted(old.items()):
            if target.path != fix.path or target.line > fix.end_line or target.end_line < fix.line:
                continue
            if label not in new or new[label].attrs != target.attrs:
                changed.setdefault(label)
    return tuple(changed)


@dataclass(frozen=True)
class RoundJudge:
    """The builds the fix rounds are judged on: the change's base, and any tree the rounds make."""

    base: BuildModel
    build: Callable[[FileTree], BuildModel]  # the build of a tree, with the review's config and cache

    def losses(self, before: FileTree, after: FileTree) -> tuple[PlatformLoss, ...]:
        return platform_losses(self.base, self.build(before), self.build(after))

    def changed(self, before: FileTree, after: FileTree, fix: Fix) -> tuple[str, ...]:
        return changed_targets(self.build(before), self.build(after), fix)


@dataclass(frozen=True, slots=True)
class FileVerdict:
    """The judgment of one file a fix commit would write: the platforms its fixes would take targets off."""

    path: str
    blob: str  # git's blob id of the contents judged: a verdict holds for those contents only
    losses: tuple[PlatformLoss, ...]  # empty: it may be written
    alone: bool = True  # False: the losses come only with the other files, none of them alone

    @property
    def reason(self) -> str:
        """Why its fixes are withheld ("" when they are not), as `pr-check fix` words it."""
        if not self.losses:
            return ""
        return withheld_reason(loss_reason(self.losses), self.alone)


def judge_files(judge: RoundJudge, head: FileTree, files: Mapping[str, bytes]) -> tuple[FileVerdict, ...]:
    """Judge the files one commit of fixes would write over `head` (path -> new contents), as
    `pr-check fix` judges a round: all of them together; when that loses a platform, each alone, and
    the files that lose one on their own are withheld (when none does, all of them are); then the
    rest again, until what is left loses nothing. One verdict per file, sorted by path."""
    verdicts: dict[str, FileVerdict] = {}
    remaining = dict(files)
    while remaining:
        lost = judge.losses(head, with_files(head, remaining))
        if not lost:
            break
        alone = {path: judge.losses(head, with_files(head, {path: data})) for path, data in sorted(remaining.items())}
        blamed = {path: losses for path, losses in alone.items() if losses}
        for path, data in remaining.items():
            if not blamed:
                verdicts[path] = FileVerdict(path, blob_id_of(data), lost, alone=False)
            elif path in blamed:
                verdicts[path] = FileVerdict(path, blob_id_of(data), blamed[path])
        remaining = {path: data for path, data in remaining.items() if path not in verdicts}
    verdicts.update({path: FileVerdict(path, blob_id_of(data), ()) for path, data in remaining.items()})
    return tuple(verdicts[path] for path in sorted(verdicts))
