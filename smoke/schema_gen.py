"""The flatbuffers headers the runtime's program loader includes, generated from the pull request's own
schemas with the flatc the `executorch` wheel ships (executorch/data/bin/flatc), as the tree's custom
commands generate them at build time.

Two custom commands of the tree write headers the runtime host needs: schema/CMakeLists.txt
(program.fbs, scalar_type.fbs -> <build>/schema/include/executorch/schema/, included by
runtime/executor/program.cpp as <executorch/schema/program_generated.h>) and
extension/flat_tensor/serialize/CMakeLists.txt (flat_tensor.fbs, scalar_type.fbs ->
<build>/extension/flat_tensor/include/executorch/extension/flat_tensor/serialize/, included by the .ptd
reader). The CMake model does not evaluate custom commands, so where the outputs go is this table; the
flatc options are read from the command in the pull request's own CMake file, so a change there is used.

The generated code includes <flatbuffers/flatbuffers.h> from the third-party/flatbuffers submodule at
the commit the tree pins (its headers static_assert flatc's version), so the checkout must have it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from smoke.commands import run_command
from smoke.report import StageOutcome

FLATC_TIMEOUT_S = 120
FLATBUFFERS_HEADER = "third-party/flatbuffers/include/flatbuffers/flatbuffers.h"
# The submodule's include directory, copied from a google/flatbuffers mirror at the pinned commit.
FLATBUFFERS_INCLUDE = "third-party/flatbuffers/include"
COMMAND = re.compile(r"COMMAND\s+flatc\s+(?P<options>.*?)\s+-o\b", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SchemaSet:
    directory: str  # where the .fbs files and the CMakeLists.txt with the custom command are
    schemas: tuple[str, ...]
    output: str  # under the build tree


SCHEMA_SETS = (
    SchemaSet("schema", ("program.fbs", "scalar_type.fbs"), "schema/include/executorch/schema"),
    SchemaSet(
        "extension/flat_tensor/serialize",
        ("flat_tensor.fbs", "scalar_type.fbs"),
        "extension/flat_tensor/include/executorch/extension/flat_tensor/serialize",
    ),
)


def find_flatc() -> str | None:
    """$SMOKE_FLATC, else the flatc inside an installed `executorch` wheel (found without importing it)."""
    configured = os.environ.get("SMOKE_FLATC")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    try:
        spec = importlib.util.find_spec("executorch")
    except (ImportError, ValueError):
        spec = None
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "data" / "bin" / "flatc"
        if candidate.is_file():
            if not os.access(candidate, os.X_OK):
                candidate.chmod(candidate.stat().st_mode | 0o111)
            return str(candidate)
    return None


def flatc_options(checkout: Path, directory: str) -> list[str] | None:
    """The options of the tree's own flatc custom command in directory/CMakeLists.txt."""
    cmake = checkout / directory / "CMakeLists.txt"
    if not cmake.is_file():
        return None
    match = COMMAND.search(cmake.read_text(errors="replace"))
    return match.group("options").split() if match else None


def generate_schemas(checkout: Path, binary_root: Path, flatc: str | None) -> StageOutcome:
    """Run flatc over each schema set present in the checkout; skipped (never failed) without flatc or
    the flatbuffers submodule, failed when flatc rejects the pull request's schema."""
    if flatc is None:
        return StageOutcome(
            "skipped",
            "no flatc: install the executorch wheel (it ships executorch/data/bin/flatc) "
            "or set SMOKE_FLATC; the program loader's sources are left out",
        )
    if not (checkout / FLATBUFFERS_HEADER).is_file():
        return StageOutcome(
            "skipped",
            f"the flatbuffers submodule is not checked out ({FLATBUFFERS_HEADER} is "
            "missing); the program loader's sources are left out",
        )
    version = run_command([flatc, "--version"], timeout=FLATC_TIMEOUT_S).stdout.strip()
    generated: list[str] = []
    steps = []
    for schema_set in SCHEMA_SETS:
        sources = [checkout / schema_set.directory / name for name in schema_set.schemas]
        if not all(path.is_file() for path in sources):
            continue
        options = flatc_options(checkout, schema_set.directory)
        if options is None:
            return StageOutcome(
                "failed", f"{schema_set.directory}/CMakeLists.txt has no flatc custom command to read the options from"
            )
        output = binary_root / schema_set.output
        if output.exists():
            shutil.rmtree(output)
        output.mkdir(parents=True)
        result = run_command(
            [flatc, *options, "-o", str(output), *map(str, sources)],
            timeout=FLATC_TIMEOUT_S,
            cwd=checkout / schema_set.directory,
        )
        steps.append(result.to_json())
        if not result.ok:
            first = (result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}").splitlines()[0]
            return StageOutcome(
                "failed",
                f"flatc rejected {schema_set.directory}: {first}",
                {"flatc": flatc, "version": version, "steps": steps},
            )
        generated += [f"{schema_set.output}/{path.name}" for path in sorted(output.glob("*_generated.h"))]
    if not generated:
        return StageOutcome("skipped", "the checkout has none of the schemas the runtime host needs")
    return StageOutcome(
        "passed",
        f"{version or 'flatc'} generated {len(generated)} header(s) from the tree's "
        f"schemas: {', '.join(Path(name).name for name in generated)}",
        {"flatc": flatc, "version": version, "generated": generated, "steps": steps},
    )
