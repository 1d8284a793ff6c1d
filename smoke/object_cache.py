"""Objects compiled by the smoke build, kept by content across runs: a pull request that does not touch
sort.cu does not compile it again.

The key of a compile is its command (build-directory paths written as one placeholder, so base, head and
every later run share it) and its source's bytes; under each key, one entry per set of headers the
compiler read (its `-MD` dependency file), each header by content where it lies in the checkout and by
size and modification time elsewhere (the toolkit's and the system's). An entry serves a compile only
when every header it lists is unchanged; a compile that fails is never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

PLACEHOLDER = "@build"


@dataclass(frozen=True, slots=True)
class CacheStats:
    served: int
    compiled: int


class ObjectCache:
    """A directory of compiled objects, shared by every run that names it (--object-cache)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def dependency_words(self, output: Path) -> list[str]:
        """What to add to a compile so that it writes the headers it read."""
        return ["-MD", "-MF", str(output.with_suffix(".d"))]

    def fetch(self, command: list[str], source: Path, output: Path, build_dir: Path, checkout: Path) -> bool:
        """Copy a stored object to output when one was compiled from the same command, source and headers."""
        folder = self.root / _command_key(command, source, build_dir)
        if not folder.is_dir():
            return False
        for manifest in sorted(folder.glob("*.json")):
            try:
                headers = json.loads(manifest.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if all(_fingerprint(_resolve(name, build_dir, checkout)) == print_ for name, print_ in headers.items()):
                stored = manifest.with_suffix(".o")
                if stored.is_file():
                    output.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(stored, output)
                    return True
        return False

    def store(self, command: list[str], source: Path, output: Path, build_dir: Path, checkout: Path) -> None:
        """Keep a freshly compiled object with the fingerprints of the headers its dependency file names."""
        depfile = output.with_suffix(".d")
        if not output.is_file() or not depfile.is_file():
            return
        headers = {}
        for name in _dependencies(depfile.read_text(errors="replace"))[1:]:  # the first is the source
            path = Path(name) if os.path.isabs(name) else build_dir / name
            headers[_portable(path, build_dir, checkout)] = _fingerprint(path)
        folder = self.root / _command_key(command, source, build_dir)
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(headers, sort_keys=True)
        entry = folder / hashlib.sha256(text.encode()).hexdigest()[:20]
        with tempfile.NamedTemporaryFile(dir=folder, delete=False) as temporary:
            temporary.write(output.read_bytes())
        os.replace(temporary.name, entry.with_suffix(".o"))
        entry.with_suffix(".json").write_text(text)


def _command_key(command: list[str], source: Path, build_dir: Path) -> str:
    digest = hashlib.sha256()
    for word in command:
        digest.update(word.replace(str(build_dir), PLACEHOLDER).encode() + b"\0")
    digest.update(source.read_bytes() if source.is_file() else b"")
    return digest.hexdigest()[:24]


def _portable(path: Path, build_dir: Path, checkout: Path) -> str:
    """A header's name that holds across checkouts: under the tree, relative to it."""
    text = os.path.normpath(str(path))
    for root, mark in (
        (str(build_dir / "src" / "executorch"), "@tree"),
        (str(checkout), "@tree"),
        (str(build_dir), PLACEHOLDER),
    ):
        if text.startswith(root + os.sep):
            return mark + text[len(root) :]
    real = os.path.realpath(text)
    if real.startswith(str(checkout) + os.sep):
        return "@tree" + real[len(str(checkout)) :]
    return text


def _resolve(name: str, build_dir: Path, checkout: Path) -> Path:
    if name.startswith("@tree"):
        return Path(str(checkout) + name[len("@tree") :])
    if name.startswith(PLACEHOLDER):
        return Path(str(build_dir) + name[len(PLACEHOLDER) :])
    return Path(name)


def _fingerprint(path: Path) -> str:
    """Content for the tree's and the build's files; size and time for the machine's (thousands of them)."""
    try:
        if str(path).startswith(("/usr/", "/opt/")) and "executorch" not in str(path):
            status = path.stat()
            return f"{status.st_size}:{int(status.st_mtime)}"
        return hashlib.sha256(path.read_bytes()).hexdigest()[:24]
    except OSError:
        return "absent"


def _dependencies(text: str) -> list[str]:
    """The prerequisites of a make-style dependency file (escaped spaces kept), in order."""
    body = text.replace("\\\n", " ").split(":", 1)[-1] if ": " in text else ""
    words = body.replace("\\ ", "\0").split()
    return [word.replace("\0", " ") for word in words]
