"""What to review: every way in, resolved in one place into one `ReviewInput`.

A source says what the user (or the runner, or GitHub) asked for: the work tree, a commit, a diff
file, the index, a pull request event, two revisions, or a whole tree. `resolve` turns it into the
base and head trees, the changes between them and the notes that say how they were chosen. The
CLI's `review`, `scan`, `fix` and `hook`, the GitHub Action and the App's review child all review
what `resolve` returns; nothing else works out what a review compares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from bot.diff import ChangeSet, parse_diff
from bot.errors import UsageError
from bot.patch import apply_diff
from bot.repo import EMPTY_TREE, GitRepository
from bot.tree import FileTree, memory_tree
from pr_check import revisions

WORK_TREE = "work tree"  # the head's name when the work tree is reviewed (the text's first line shows it)
INDEX = "index"


@dataclass(frozen=True, slots=True)
class WorkTree:
    """The work tree as `git add -A` would stage it, against `base` (None: the default base of HEAD).
    In a bare repository, which has no work tree, HEAD's commit."""

    base: str | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    """A committed revision (None: HEAD) against `base` (None: its default base)."""

    head: str | None = None
    base: str | None = None


@dataclass(frozen=True, slots=True)
class DiffFile:
    """A unified diff applied in memory to `base` (None: the commit HEAD points at)."""

    text: str
    base: str | None = None


@dataclass(frozen=True, slots=True)
class Index:
    """What is staged, against HEAD (the empty tree before the first commit): what pre-commit asks."""


@dataclass(frozen=True, slots=True)
class PullRequestEvent:
    """A GitHub Actions pull request event's head against the merge base with its base branch's tip."""

    base: str  # the base branch's tip when the event was sent
    head: str

    @classmethod
    def of(cls, event: Mapping) -> PullRequestEvent:
        """The base and head shas of the event's pull request; UsageError when it has none."""
        pull_request = event.get("pull_request")
        if not isinstance(pull_request, Mapping):
            raise UsageError("the event has no pull_request: run the action on pull_request or pull_request_target")
        try:
            return cls(pull_request["base"]["sha"], pull_request["head"]["sha"])
        except (KeyError, TypeError):
            raise UsageError("the event's pull_request has no base.sha/head.sha") from None


@dataclass(frozen=True, slots=True)
class Revisions:
    """Two revisions exactly as given (the App's review of a pull request's base and head commits)."""

    base: str
    head: str


@dataclass(frozen=True, slots=True)
class Scan:
    """A whole tree at one revision (None: what HEAD points at), compared with nothing."""

    revision: str | None = None


@dataclass(frozen=True, slots=True)
class TreeAgainst:
    """A tree id against a commit or tree id, both git objects (the trees of `fix` rounds)."""

    base: str
    tree: str
    label: str


ReviewSource = WorkTree | Commit | DiffFile | Index | PullRequestEvent | Revisions | Scan | TreeAgainst


@dataclass(frozen=True, slots=True)
class ReviewInput:
    """What one review compares: two trees, the changes between them, and how they were chosen."""

    base: FileTree
    head: FileTree
    changes: ChangeSet
    base_id: str  # the base as a git object id (a commit, a tree, or the empty tree)
    head_id: str | None  # the head as a git tree-ish; None when it exists only in memory (a diff file)
    head_note: str | None = None  # how the head was chosen, shown above the findings
    base_note: str | None = None  # how the base was chosen, when it was not given

    @property
    def notes(self) -> tuple[str, ...]:
        """The head's note, then the base's: the lines the text output starts with."""
        return tuple(note for note in (self.head_note, self.base_note) if note)

    def with_files(self, add: Callable[[FileTree], FileTree]) -> ReviewInput:
        """Both trees with files laid over them (the shim submodule's, pr_check/shim.py)."""
        return replace(self, base=add(self.base), head=add(self.head))


def resolve(repo: GitRepository, source: ReviewSource) -> ReviewInput:
    """The trees and changes `source` names in `repo`; UnknownRevision or UsageError when it names none."""
    match source:
        case WorkTree(base=base):
            if revisions.is_bare(repo):
                return _commit(repo, None, base, bare=True)
            return _work_tree(repo, base)
        case Commit(head=head, base=base):
            return _commit(repo, head, base, bare=False)
        case DiffFile(text=text, base=base):
            base_sha = repo.resolve(base or revisions.head_reference(repo))
            base_tree = repo.tree(base_sha)
            patched = apply_diff(base_tree, text)
            return ReviewInput(
                base_tree,
                patched.tree,
                patched.changes,
                base_sha,
                None,
                head_note=f"head: the diff applied to {base_sha[:12]}",
            )
        case Index():
            base = repo.head_commit() or EMPTY_TREE
            staged = repo.index_tree_id()
            return replace(
                resolve(repo, TreeAgainst(base, staged, INDEX)), head_note="head: the staged change (the index)"
            )
        case PullRequestEvent(base=base, head=head):
            head_sha = repo.resolve(head)
            # What the pull request's "Files changed" shows: the merge base with the base branch's tip.
            base_sha = repo.merge_base(repo.resolve(base), head_sha)
            return replace(
                _between_commits(repo, base_sha, head_sha),
                base_note=f"base: merge base {base_sha[:12]} of {base[:12]} and the head",
            )
        case Revisions(base=base, head=head):
            return _between_commits(repo, repo.resolve(base), repo.resolve(head))
        case Scan(revision=revision):
            revision = revision or revisions.head_reference(repo)
            tree = repo.tree(revision)
            note = f"revision: {revision}" if revision != tree.revision else None
            return ReviewInput(memory_tree({}, revision=""), tree, ChangeSet(()), EMPTY_TREE, tree.revision, note)
        case TreeAgainst(base=base, tree=tree_id, label=label):
            base_tree = repo.tree_object(base, base if base != EMPTY_TREE else "(no commit)")
            changes = parse_diff(repo.diff_trees(base, tree_id))
            return ReviewInput(base_tree, repo.tree_object(tree_id, label), changes, base, tree_id)


def _between_commits(repo: GitRepository, base_sha: str, head_sha: str) -> ReviewInput:
    changes = parse_diff(repo.diff(base_sha, head_sha))
    return ReviewInput(repo.tree(base_sha), repo.tree(head_sha), changes, base_sha, head_sha)


def _commit(repo: GitRepository, head: str | None, base: str | None, *, bare: bool) -> ReviewInput:
    head_sha = repo.resolve(head or "HEAD")
    head_note = (
        f"head: {head or 'HEAD'} ({head_sha[:12]}, committed{'; a bare repository has no work tree' if bare else ''})"
    )
    base_note = None
    if base is None:
        chosen = revisions.default_base(repo, head_sha)
        base_sha, base_note = chosen.sha, chosen.description
    else:
        base_sha = repo.resolve(base)
    return replace(_between_commits(repo, base_sha, head_sha), head_note=head_note, base_note=base_note)


def _work_tree(repo: GitRepository, base: str | None) -> ReviewInput:
    """The work tree in a copy of the index: nothing on disk or in the index changes."""
    head_commit = repo.head_commit()
    base_note = None
    if base is None:
        if head_commit is None:
            raise UsageError(f"{repo.path}: no commit yet to find a base from; pass --base")
        chosen = revisions.default_base(repo, head_commit)
        base_sha, base_note = chosen.sha, chosen.description
    else:
        base_sha = repo.resolve(base)
    tree_id = repo.work_tree_id()
    return ReviewInput(
        repo.tree(base_sha),
        repo.tree_object(tree_id, WORK_TREE),
        parse_diff(repo.diff_trees(base_sha, tree_id)),
        base_sha,
        tree_id,
        head_note=f"head: {WORK_TREE} (tracked edits, staged or not, and untracked files not ignored; --head REV "
        "reviews a commit)",
        base_note=base_note,
    )
