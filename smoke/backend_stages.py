"""The stages about the pull request's own CUDA backend: schema, compile, exports, duplicates, the hosts.

Each is a function of what the build produced; none raises. Loading and running programs is backend_load.py's and program_run.py's.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

from smoke.backend_build import (
    BuildOutcome,
    Layout,
    Toolset,
    build,
    library_words,
    linker_words,
    object_path,
    output_path,
)
from smoke.build_plan import HOST_NAME, NO_SOURCES, RUNTIME_HOST_NAME, BuildPlan, CompileStep
from smoke.commands import run_command
from smoke.elf_symbols import SymbolReadError, read_dynamic_symbols
from smoke.link_errors import LinkProblem, explain, parse_link_errors
from smoke.report import StageOutcome
from smoke.schema_gen import generate_schemas

SHIM_LIBRARY = "aoti_cuda_shims"
SHIM_PREFIX = "aoti_torch_"
NM_TIMEOUT_S = 120
LOAD_TIMEOUT_S = 300
# nm types of strong definitions: weak (W, V), unique (u) and undefined (U) ones never clash.
STRONG_TYPES = frozenset("TDBRGS")
UNDEFINED_REFERENCE = re.compile(r"undefined reference to `([^']+)'")


@dataclass(frozen=True, slots=True)
class BackendRun:
    """The stage outcomes of one checkout, and the facts base and head are compared on."""

    compile: StageOutcome
    exports: StageOutcome
    duplicates: StageOutcome
    host: StageOutcome
    build: BuildOutcome | None
    exported: frozenset[str]
    duplicated: frozenset[str]
    schema: StageOutcome = StageOutcome("skipped", "not run")
    runtime_host: StageOutcome = StageOutcome("skipped", "not run")
    # aoti_torch_* symbol -> the source whose object defines it, over the shim library and the archives it
    # links (`.cpp` and `.cu` alike): where a failing or lost shim is looked up.
    definitions: tuple[tuple[str, str], ...] = ()
    seconds: tuple[tuple[str, float], ...] = ()  # per stage, as timed here

    def stages(self) -> tuple[tuple[str, StageOutcome], ...]:
        return (
            ("schema", self.schema),
            ("compile", self.compile),
            ("exports", self.exports),
            ("duplicates", self.duplicates),
            ("backend-host", self.host),
            ("runtime-host", self.runtime_host),
        )


def run_backend(plan: BuildPlan, checkout: Path, build_dir: Path, tools: Toolset, cache=None) -> BackendRun:
    """Build the plan and read the shim library's exports and the loaded objects' definitions. cache: an
    ObjectCache (object_cache.py) that serves objects compiled earlier from the same inputs."""
    layout = Layout(checkout, build_dir)
    clock = _Clock()
    # flatc's headers first, so the program loader's sources compile instead of being left out.
    schema = clock.time("schema", lambda: generate_schemas(layout.checkout, layout.binary_root, tools.flatc))
    outcome = clock.time("compile", lambda: build(plan, layout, tools, cache=cache))
    compile_stage = compile_outcome(plan, outcome, layout)
    shims = plan.target(SHIM_LIBRARY)
    if shims is None or SHIM_LIBRARY not in outcome.outputs:
        why = f"{SHIM_LIBRARY} was not built" + ("" if shims else " (not in the plan)")
        skipped = StageOutcome("skipped", why)
        return BackendRun(
            compile_stage,
            skipped,
            skipped,
            skipped,
            outcome,
            frozenset(),
            frozenset(),
            schema,
            skipped,
            seconds=clock.items(),
        )
    exports, exported = clock.time(
        "exports", lambda: exports_outcome(plan, layout, Path(outcome.outputs[SHIM_LIBRARY]))
    )
    duplicates, duplicated = clock.time("duplicates", lambda: duplicates_outcome(plan, layout, tools, outcome))
    return BackendRun(
        compile_stage,
        exports,
        duplicates,
        host_outcome(plan, outcome, layout),
        outcome,
        exported,
        duplicated,
        schema,
        runtime_host_outcome(plan, outcome, layout, schema),
        clock.time("definitions", lambda: shim_definitions(plan, layout)),
        clock.items(),
    )


class _Clock:
    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def time(self, name: str, work):
        started = time.monotonic()
        try:
            return work()
        finally:
            self._seconds[name] = time.monotonic() - started

    def items(self) -> tuple[tuple[str, float], ...]:
        return tuple(self._seconds.items())


def shim_sources(plan: BuildPlan) -> list[tuple[str, CompileStep]]:
    """(target, step) for each source compiled into the shim library or an archive it links."""
    shims = plan.target(SHIM_LIBRARY)
    if shims is None:
        return []
    targets = [shims] + [
        linked
        for item in shims.link_items
        if item.kind == "target-archive" and (linked := plan.target(item.value)) is not None
    ]
    return [(target.name, step) for target in targets for step in target.compile_steps]


def shim_definitions(plan: BuildPlan, layout: Layout) -> tuple[tuple[str, str], ...]:
    """aoti_torch_* symbol -> defining source, read from each compiled object of shim_sources."""
    found: dict[str, str] = {}
    for _, step in shim_sources(plan):
        path = object_path(step, layout)
        if path.is_file():
            for name in sorted(strong_definitions(path)):
                if name.startswith(SHIM_PREFIX):
                    found.setdefault(name, step.source)
    return tuple(sorted(found.items()))


def compile_outcome(plan: BuildPlan, outcome: BuildOutcome, layout: Layout | None = None) -> StageOutcome:
    compiled = sum(1 for step in outcome.steps if step.command and " -c " in step.command and step.ok)
    details = {
        "targets": [target.name for target in plan.targets],
        "objects_compiled": compiled - outcome.from_cache,
        "objects_from_cache": outcome.from_cache,
        "seconds": round(outcome.seconds, 3),
        "gaps": [{"name": gap.name, "reason": gap.reason, "origin": gap.origin} for gap in plan.gaps],
        "external": list(plan.external),
        "machine_gaps": list(outcome.machine_gaps),
        "not_generated": list(outcome.not_generated),
        "errors": [error.to_json() for error in outcome.errors],
        "outputs": outcome.outputs,
    }
    if outcome.errors:
        first = outcome.errors[0]
        reason = f"{len(outcome.errors)} compile error(s); first {first.path}:{first.line}: {first.message}"
        return StageOutcome("failed", reason, details)
    failed = outcome.failed_step  # None exactly when outcome.ok
    if failed is not None and not _host_only_failure(plan, outcome):
        details["failed_step"] = failed.to_json()
        problems = link_problems(plan, layout, failed) if layout is not None else []
        details["link_problems"] = [problem.to_json() for problem in problems]
        if problems:
            # The first cause, not the driver's last line ("collect2: error: ld returned 1 exit status").
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return StageOutcome("failed", f"link failed: {problems[0].message()}{more}", details)
        return StageOutcome("failed", f"link failed: {_first_line(failed.stderr)}", details)
    gaps = f"; not evaluable: {', '.join(gap.name for gap in plan.gaps)}" if plan.gaps else ""
    left_out = f"; {len(outcome.machine_gaps)} source(s) left out for the machine" if outcome.machine_gaps else ""
    if outcome.not_generated:
        left_out += (
            f"; {len(outcome.not_generated)} source(s) left out: they include headers generated at "
            f"build time ({', '.join(gap.name.rsplit('/', 1)[-1] for gap in plan.generated)})"
        )
    names = ", ".join(target.name for target in plan.targets)
    return StageOutcome(
        "passed",
        f"compiled {compiled - outcome.from_cache} objects ({outcome.from_cache} more from the object cache), "
        f"built {names} from the CMake model ({plan.profile}){gaps}{left_out}",
        details,
    )


def link_problems(plan: BuildPlan, layout: Layout, step) -> list[LinkProblem]:
    """The failed link's first causes, each object traced to the source and target it came from."""
    targets = list(plan.targets) + [host for host in (plan.host, plan.runtime_host) if host is not None]
    objects = {
        object_path(compile_step, layout).name: (target.name, compile_step.source)
        for target in targets
        for compile_step in target.compile_steps
    }
    archives = {target.output_name: target.name for target in targets}
    words = shlex.split(step.command)
    output = words[words.index("-o") + 1] if "-o" in words[:-1] else ""
    linking = next(
        (target.name for target in targets if output_path(target, layout) == Path(output)), Path(output).name
    )
    return explain(parse_link_errors(step.stderr + "\n" + step.stdout), linking, objects, archives, layout.checkout)


def _host_only_failure(plan: BuildPlan, outcome: BuildOutcome) -> bool:
    return all(target.name in outcome.outputs for target in plan.targets)


def exports_outcome(plan: BuildPlan, layout: Layout, library: Path) -> tuple[StageOutcome, frozenset[str]]:
    """The shim library must export every aoti_torch_* its own objects and whole archives define."""
    try:
        exported = frozenset(name for name in read_dynamic_symbols(library).defined if name.startswith(SHIM_PREFIX))
    except SymbolReadError as error:
        return StageOutcome("failed", f"cannot read {library.name}: {error}"), frozenset()
    shims = plan.target(SHIM_LIBRARY)
    if shims is None:
        return StageOutcome("failed", f"the build plan has no {SHIM_LIBRARY}"), exported
    inputs = [
        output_path(linked, layout)
        for item in shims.link_items
        if item.kind == "target-archive" and (linked := plan.target(item.value)) is not None
    ]
    defined_in_inputs: dict[str, str] = {}
    for path in inputs:
        for name in strong_definitions(path):
            if name.startswith(SHIM_PREFIX):
                defined_in_inputs.setdefault(name, path.name)
    lost = sorted(set(defined_in_inputs) - exported)
    details = {
        "library": str(library),
        "exported": sorted(exported),
        "count": len(exported),
        "defined_in_linked_archives_not_exported": [
            {"symbol": name, "archive": defined_in_inputs[name]} for name in lost
        ],
    }
    if lost:
        archives = sorted({defined_in_inputs[name] for name in lost})
        # Where the plan links those archives: the CMake line that should name them whole.
        lines = sorted(
            {
                f"{item.origin[0]}:{item.origin[1]}"
                for item in shims.link_items
                if item.kind == "target-archive"
                and not item.whole_archive
                and (linked := plan.target(item.value)) is not None
                and output_path(linked, layout).name in archives
            }
        )
        where = f" at {', '.join(lines)}" if lines else ""
        details["not_whole_at"] = lines
        return StageOutcome(
            "failed",
            f"{library.name} exports {len(exported)} {SHIM_PREFIX}* symbols but not "
            f"{len(lost)} defined in {', '.join(archives)} (e.g. {lost[0]}): the "
            f"archive is not linked whole{where}",
            details,
        ), exported
    if not exported:
        return StageOutcome("failed", f"{library.name} exports no {SHIM_PREFIX}* symbol", details), exported
    return StageOutcome("passed", f"{library.name} exports {len(exported)} {SHIM_PREFIX}* symbols", details), exported


def strong_definitions(path: Path) -> frozenset[str]:
    """Global strong definitions of an object, archive or shared library (its dynamic table for .so)."""
    dynamic = ["-D"] if path.suffix == ".so" else []
    result = run_command(["nm", *dynamic, "--defined-only", "-P", str(path)], timeout=NM_TIMEOUT_S)
    names = set()
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1] in STRONG_TYPES and not fields[0].endswith(":"):
            names.add(fields[0].split("@")[0])
    return frozenset(names)


def loaded_objects(plan: BuildPlan, layout: Layout, tools: Toolset, outcome: BuildOutcome) -> list[tuple[str, Path]]:
    """What a process running the host holds: the host (or, unlinked, the archives its link takes whole)
    and each shared library it links."""
    host = plan.host
    if host is None:
        return []
    objects: list[tuple[str, Path]] = []
    if HOST_NAME in outcome.outputs:
        objects.append((HOST_NAME, Path(outcome.outputs[HOST_NAME])))
    else:
        whole = whole_archives_of(host, layout)
        objects += [(f"{HOST_NAME} (its link takes {path.name} whole)", path) for path in whole]
    for item in host.link_items:
        if item.kind == "target-shared" and item.value in outcome.outputs:
            objects.append((item.value, Path(outcome.outputs[item.value])))
    return objects


def whole_archives_of(target, layout: Layout) -> list[Path]:
    """The archives a target's link line takes whole, read from the words the linker gets."""
    words: list[str] = []
    for item in target.link_items:
        words += linker_words(item.value, layout) if item.kind == "option" else library_words(item, layout, _NO_TOOLS)
    found, whole = [], False
    for word in words:
        for part in word.removeprefix("-Wl,").split(",") if word.startswith("-Wl,") else [word]:
            if part == "--whole-archive":
                whole = True
            elif part == "--no-whole-archive":
                whole = False
            elif whole and part.endswith(".a") and Path(part) not in found:
                found.append(Path(part))
    return found


_NO_TOOLS = Toolset(None, None, None, None, None, None)


def duplicates_outcome(
    plan: BuildPlan, layout: Layout, tools: Toolset, outcome: BuildOutcome
) -> tuple[StageOutcome, frozenset[str]]:
    """A strong definition in two loaded objects: two copies of its state in one process."""
    objects = [(label, path) for label, path in loaded_objects(plan, layout, tools, outcome) if path.exists()]
    if len(objects) < 2:
        return StageOutcome("skipped", "fewer than two loaded objects to compare"), frozenset()
    definitions = {label: strong_definitions(path) for label, path in objects}
    clashes: dict[str, list[str]] = {}
    labels = [label for label, _ in objects]
    for index, first in enumerate(labels):
        for second in labels[index + 1 :]:
            for name in definitions[first] & definitions[second]:
                holders = clashes.setdefault(name, [])
                holders += [label for label in (first, second) if label not in holders]
    details = {
        "objects": [
            {"name": label, "path": str(path), "strong_definitions": len(definitions[label])} for label, path in objects
        ],
        "duplicated": [{"symbol": name, "in": clashes[name]} for name in sorted(clashes)],
    }
    if clashes:
        shims = sorted(name for name in clashes if name.startswith(SHIM_PREFIX))
        example = (shims or sorted(clashes))[0]
        return StageOutcome(
            "failed",
            f"{len(clashes)} strong definition(s) in more than one loaded object, e.g. "
            f"{example} in {' and '.join(clashes[example])}",
            details,
        ), frozenset(clashes)
    return StageOutcome(
        "passed", f"no strong definition twice across {len(objects)} loaded objects", details
    ), frozenset()


def host_outcome(plan: BuildPlan, outcome: BuildOutcome, layout: Layout | None = None) -> StageOutcome:
    """The host linked as a consumer; undefined references into targets the smoke build leaves to the
    host (the core runtime) are named as such, not blamed on the pull request."""
    if plan.host is None:
        return StageOutcome("skipped", "the model defines no aoti_cuda_backend to link a host against")
    if HOST_NAME in outcome.outputs:
        return StageOutcome(
            "passed",
            f"{HOST_NAME} links {', '.join(i.value for i in plan.host.link_items if i.kind.startswith('target'))}",
            {"host": outcome.outputs[HOST_NAME]},
        )
    failed = outcome.failed_step
    if failed is None or not all(target.name in outcome.outputs for target in plan.targets):
        return StageOutcome("skipped", "the backend did not build")
    undefined = sorted(set(UNDEFINED_REFERENCE.findall(failed.stderr)))
    unevaluated = [gap.name for gap in plan.gaps if gap.reason == NO_SOURCES]
    details = {"undefined": undefined, "link": failed.to_json()}
    if undefined and unevaluated and all(_runtime_symbol(name) for name in undefined):
        return StageOutcome(
            "skipped",
            f"linking {HOST_NAME} needs {', '.join(unevaluated)}, whose sources the "
            f"model cannot evaluate: {len(undefined)} undefined reference(s) into the "
            f"runtime, e.g. {undefined[0]}",
            details,
        )
    problems = link_problems(plan, layout, failed) if layout is not None else []
    details["link_problems"] = [problem.to_json() for problem in problems]
    first = problems[0].message() if problems else _first_line(failed.stderr)
    return StageOutcome("failed", f"linking {HOST_NAME} failed: {first}", details)


def runtime_host_outcome(plan: BuildPlan, outcome: BuildOutcome, layout: Layout, schema: StageOutcome) -> StageOutcome:
    """The runtime host linked with the program loader, the .ptd reader and the backend."""
    if plan.runtime_host is None:
        return StageOutcome(
            "skipped", "the model lacks a target the runtime host links (extension_data_loader, extension_flat_tensor)"
        )
    if RUNTIME_HOST_NAME in outcome.outputs:
        links = ", ".join(item.value for item in plan.runtime_host.link_items if item.kind.startswith("target"))
        return StageOutcome(
            "passed",
            f"{RUNTIME_HOST_NAME} links {links}, with the program loader compiled from the tree",
            {"host": outcome.outputs[RUNTIME_HOST_NAME]},
        )
    if schema.status != "passed":
        return StageOutcome("skipped", f"the program loader was not compiled: schema {schema.status}: {schema.reason}")
    failed = outcome.failed_step
    if failed is None or HOST_NAME not in outcome.outputs:
        return StageOutcome("skipped", "the backend or its host did not build")
    problems = link_problems(plan, layout, failed)
    first = problems[0].message() if problems else _first_line(failed.stderr)
    return StageOutcome(
        "failed",
        f"linking {RUNTIME_HOST_NAME} failed: {first}",
        {"link_problems": [problem.to_json() for problem in problems], "link": failed.to_json()},
    )


def _runtime_symbol(name: str) -> bool:
    # The core runtime's C++ namespace and its C platform layer.
    return name.startswith(("executorch::runtime::", "et_pal_", "torch::executor::")) or name in ("et_pal_init",)


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if "error" in line.lower() or "undefined" in line]
    return (lines or text.splitlines() or ["no output"])[0][:300]
