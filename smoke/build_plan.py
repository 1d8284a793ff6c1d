"""What to compile and link for the CUDA backend, read from pr-check's CMake model of the checkout.

`plan_build(model, subjects)` is pure: it walks the model's targets from the subjects through what they
link and writes, per target, the compile steps (source, language, definitions, include directories,
options) and the link items (archives whole or not, shared libraries, system libraries, link options)
with the CMake line each came from, as CMake would hand them to the compilers: a target's own PRIVATE
and PUBLIC usage requirements, and the INTERFACE and PUBLIC ones of what it links, transitively.

Every target the subjects reach through their link libraries is built, the core runtime
(executorch_core, extension_tensor) included: its source lists come from build_variables.bzl, which
the model evaluates (bot/cmake/commands/processes.py). Files a target lists under the build tree are
generated at build time by a custom command the smoke build does not run (the flatbuffers headers of
program_schema, made by flatc from a submodule); the plan lists them in `generated`, and the builder
leaves out a source that fails only for want of one of them, saying so.

Where the model cannot evaluate something, the plan names it in `gaps` instead of guessing: a target
with no sources evaluated, a link item naming no target the model defines, a generator expression the
model left verbatim. Imported targets that CMake's find_package(CUDAToolkit) would define are resolved
from the machine's toolkit and listed in `external`, so the report says so.

This is the one module of the smoke package that imports the CMake model (the package `bot.cmake`);
the rest of the package stays standard-library only and works from a plan written as JSON.
"""

from __future__ import annotations

import posixpath
from dataclasses import asdict, dataclass, field
from pathlib import Path

SUBJECTS = ("aoti_common_shims_slim", "cuda_platform", "aoti_cuda_shims", "aoti_cuda_backend")
PROFILE = "linux-gcc-cuda"
LANGUAGES = {".cu": "CUDA", ".cpp": "CXX", ".cc": "CXX", ".cxx": "CXX", ".c": "C"}
BUILT_KINDS = ("STATIC_LIBRARY", "SHARED_LIBRARY", "MODULE_LIBRARY", "OBJECT_LIBRARY")
# What find_package(CUDAToolkit) defines, which the model does not run: name -> (library, needs headers).
CUDA_TOOLKIT_TARGETS = {
    "CUDA::cudart": "cudart",
    "CUDA::cuda_driver": "cuda",
    "CUDA::cublas": "cublas",
    "CUDA::cublasLt": "cublasLt",
    "CUDA::curand": "curand",
}
# Model paths: ExecuTorch's checkout is /src/executorch there, and its parent is on the include path.
SOURCE_ROOT = "/src/executorch"
HOST_NAME = "smoke_backend_host"
NO_SOURCES = "the model evaluated no sources for it"
HOST_SOURCE = "@smoke/backend_host.cpp"  # "@smoke/" marks a file of this package, not of the checkout
HOST_LINKS = ("aoti_cuda_backend",)
# The runtime host runs a .pte through the backend: it also links the data loader and the .ptd reader.
RUNTIME_HOST_NAME = "smoke_runtime_host"
RUNTIME_HOST_SOURCE = "@smoke/runtime_host.cpp"
# The tree's own kernels for the device copies the exporter puts at a CUDA delegate's edges, compiled into
# the runtime host (which registers them): the portable kernel library itself is codegen the build skips.
RUNTIME_HOST_KERNELS = ("kernels/portable/cpu/op__device_copy.cpp",)
RUNTIME_HOST_LINKS = ("aoti_cuda_backend", "extension_data_loader", "extension_flat_tensor")
SOURCE_PARENT = "/src"
BINARY_ROOT = "/build"

Location = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Flag:
    """One compile-time item (definition, include directory or option) and the CMake line it came from."""

    value: str
    origin: Location
    # For include directories: "source" (under the checkout), "source-parent", "binary" or "absolute".
    root: str = ""


@dataclass(frozen=True, slots=True)
class CompileStep:
    target: str
    source: str  # repository path
    language: str  # CXX, CUDA or C
    definitions: tuple[Flag, ...]
    include_directories: tuple[Flag, ...]
    options: tuple[Flag, ...]
    position_independent: bool
    origin: Location  # where the source was added


@dataclass(frozen=True, slots=True)
class LinkItem:
    """One item of a link line. kind: target-archive, target-shared, toolkit, system, option."""

    kind: str
    value: str
    scope: str
    origin: Location
    whole_archive: bool = False
    # For toolkit items: the library name in the CUDA toolkit's lib directory.
    library: str = ""


@dataclass(frozen=True, slots=True)
class TargetPlan:
    name: str
    kind: str
    origin: Location
    compile_steps: tuple[CompileStep, ...]
    link_items: tuple[LinkItem, ...]
    output_name: str


@dataclass(frozen=True, slots=True)
class Gap:
    """Something the model could not evaluate, by name, and why."""

    name: str
    reason: str
    origin: Location | None = None


@dataclass(frozen=True, slots=True)
class BuildPlan:
    profile: str
    subjects: tuple[str, ...]
    targets: tuple[TargetPlan, ...]  # in build order: dependencies first
    host: TargetPlan | None = None  # the consumer the smoke job adds: an executable linking HOST_LINKS
    gaps: tuple[Gap, ...] = ()
    external: tuple[str, ...] = ()  # what the machine provides, said in words
    notes: tuple[str, ...] = field(default=())
    # Files generated at build time that the smoke build does not generate: name is the path under
    # the build tree, reason says which target lists them.
    generated: tuple[Gap, ...] = ()
    # The consumer that loads a .pte through the runtime (csrc/runtime_host.cpp); None where the model
    # lacks one of RUNTIME_HOST_LINKS.
    runtime_host: TargetPlan | None = None

    def target(self, name: str) -> TargetPlan | None:
        return next((target for target in self.targets if target.name == name), None)

    def to_json(self) -> dict:
        return asdict(self)


def plan_from_json(data: dict) -> BuildPlan:
    """The inverse of BuildPlan.to_json: a plan made where the model runs, used where it may not."""

    def location(value) -> Location:  # flags, steps, link items and targets always have one
        return (value[0], int(value[1]))

    def gap_location(value) -> Location | None:  # a gap may have none
        return None if value is None else location(value)

    def flags(items) -> tuple[Flag, ...]:
        return tuple(Flag(item["value"], location(item["origin"]), item.get("root", "")) for item in items)

    targets = []
    for target in data["targets"]:
        steps = tuple(
            CompileStep(
                step["target"],
                step["source"],
                step["language"],
                flags(step["definitions"]),
                flags(step["include_directories"]),
                flags(step["options"]),
                step["position_independent"],
                location(step["origin"]),
            )
            for step in target["compile_steps"]
        )
        links = tuple(
            LinkItem(
                item["kind"],
                item["value"],
                item["scope"],
                location(item["origin"]),
                item["whole_archive"],
                item.get("library", ""),
            )
            for item in target["link_items"]
        )
        targets.append(
            TargetPlan(target["name"], target["kind"], location(target["origin"]), steps, links, target["output_name"])
        )
    host, runtime_host = data.get("host"), data.get("runtime_host")
    if host is not None:
        host_plan = plan_from_json({"profile": "", "subjects": [], "targets": [host], "gaps": [], "external": []})
        host = host_plan.targets[0]
    if runtime_host is not None:
        runtime_host = plan_from_json(
            {"profile": "", "subjects": [], "targets": [runtime_host], "gaps": [], "external": []}
        ).targets[0]
    return BuildPlan(
        data["profile"],
        tuple(data["subjects"]),
        tuple(targets),
        host,
        tuple(Gap(g["name"], g["reason"], gap_location(g["origin"])) for g in data["gaps"]),
        tuple(data["external"]),
        tuple(data.get("notes", ())),
        tuple(Gap(g["name"], g["reason"], gap_location(g["origin"])) for g in data.get("generated", ())),
        runtime_host,
    )


# ---------------------------------------------------------------------------------------------------
# Reading the model (the one place bot.cmake is imported)
# ---------------------------------------------------------------------------------------------------


def model_of_directory(root: Path, profile_name: str = PROFILE):
    """The CMake model of a checkout on disk (a subtree is enough: what is absent is reported by the model)."""
    from bot.cmake.interpreter import evaluate_cmake
    from bot.cmake.profiles import PROFILES
    from bot.tree import memory_tree

    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return evaluate_cmake(memory_tree(files, revision=str(root)), PROFILES[profile_name])


def plan_directory(root: Path, subjects: tuple[str, ...] = SUBJECTS, profile_name: str = PROFILE) -> BuildPlan:
    """model_of_directory, then plan_build."""
    return plan_build(model_of_directory(root, profile_name), subjects)


# ---------------------------------------------------------------------------------------------------
# Planning (pure)
# ---------------------------------------------------------------------------------------------------


def plan_build(model, subjects: tuple[str, ...] = SUBJECTS) -> BuildPlan:
    """The build of `subjects` and every target they link, from the model."""
    gaps: list[Gap] = []
    external: dict[str, None] = {}
    targets = model.targets
    for name in subjects:
        if name not in targets:
            gaps.append(Gap(name, f"the model defines no target {name!r} under profile {model.profile.name}"))
    runtime = all(name in targets for name in RUNTIME_HOST_LINKS)
    extra = [name for name in RUNTIME_HOST_LINKS if runtime and name not in subjects]
    order = _build_order([name for name in (*subjects, *extra) if name in targets], targets)
    built = {name for name in order if _is_built(targets[name])}
    plans = []
    for name in order:
        target = targets[name]
        if name not in built:
            if target.kind != "INTERFACE_LIBRARY":  # usage requirements only, nothing to build
                gaps.append(_not_built_gap(target))
            continue
        if not target.sources:
            gaps.append(Gap(name, NO_SOURCES, (target.path, target.line)))
        steps = tuple(_compile_steps(target, targets, gaps))
        links = tuple(_link_items(target, targets, built, gaps, external))
        plans.append(TargetPlan(name, target.kind, (target.path, target.line), steps, links, _output_name(target)))
    host = _host_plan(targets, built, gaps, external) if all(n in targets for n in HOST_LINKS) else None
    runtime_host = (
        _host_plan(
            targets,
            built,
            gaps,
            external,
            RUNTIME_HOST_NAME,
            RUNTIME_HOST_SOURCE,
            RUNTIME_HOST_LINKS,
            RUNTIME_HOST_KERNELS,
        )
        if runtime
        else None
    )
    # The schema libraries (INTERFACE targets listing flatc's outputs) that the extensions reach only
    # through add_dependencies, which the model does not keep: their headers are generated too.
    schemas = [target for name, target in targets.items() if name.endswith("_schema") and name not in order]
    notes = (
        "CMAKE_CXX_STANDARD/CMAKE_CUDA_ARCHITECTURES are variables the model does not keep on targets: "
        "the compilers' defaults apply (g++ 13: gnu++17; nvcc 13: c++17, sm_75) unless the run names "
        "an architecture",
    )
    return BuildPlan(
        model.profile.name,
        tuple(subjects),
        tuple(plans),
        host,
        tuple(_unique_gaps(gaps)),
        tuple(external),
        notes,
        _generated_files([targets[name] for name in order] + schemas),
        runtime_host,
    )


@dataclass(frozen=True, slots=True)
class _LinkEntry:
    value: str
    scope: str
    path: str
    line: int
    language: str | None = None


@dataclass(frozen=True, slots=True)
class _HostSource:
    path_repo_relative: str
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class _Consumer:
    """An executable as `add_executable(host ...)` + `target_link_libraries(host PRIVATE <HOST_LINKS>)`
    would declare it, shaped like the model's targets so the same planning applies."""

    name: str
    kind: str = "EXECUTABLE"
    path: str = "@smoke"
    line: int = 0
    imported: bool = False
    sources: tuple = ()
    link_libraries: tuple = ()
    link_options: tuple = ()
    compile_definitions: tuple = ()
    compile_options: tuple = ()
    include_directories: tuple = ()

    def property(self, name: str) -> str | None:
        return None


def _host_plan(
    targets,
    built: set[str],
    gaps: list[Gap],
    external: dict[str, None],
    name: str = HOST_NAME,
    source_path: str = HOST_SOURCE,
    link_names: tuple[str, ...] = HOST_LINKS,
    tree_sources: tuple[str, ...] = (),
) -> TargetPlan:
    """The consumer: an executable linking the backend as a static runner does, with everything the
    backend's usage requirements (whole-archive and export options included) bring to its link."""
    links = tuple(_LinkEntry(link, "PRIVATE", "@smoke", 0) for link in link_names)
    sources = (_HostSource(source_path, "@smoke", 0), *(_HostSource(path, "@smoke", 0) for path in tree_sources))
    consumer = _Consumer(name, link_libraries=links, sources=sources)
    steps = tuple(_compile_steps(consumer, targets, gaps))
    items: list[LinkItem] = _library_items(consumer, links, ("PRIVATE",), targets, built, gaps, external, ())
    return TargetPlan(name, "EXECUTABLE", ("@smoke", 0), steps, tuple(_dedupe_links(items)), name)


def _is_built(target) -> bool:
    return target.kind in BUILT_KINDS and not target.imported


def _not_built_gap(target) -> Gap:
    return Gap(target.name, f"a {target.kind.lower()} the smoke build does not compile", (target.path, target.line))


def _generated_files(targets) -> tuple[Gap, ...]:
    """The sources the targets list under the build tree: outputs of custom commands, not in the checkout."""
    found = []
    for target in targets:
        for source in target.sources:
            path = posixpath.normpath(source.path_repo_relative)
            if path.startswith(BINARY_ROOT + "/"):
                found.append(
                    Gap(
                        path[len(BINARY_ROOT) + 1 :],
                        f"listed by {target.name}; generated at build time "
                        "by a custom command the smoke build does not run",
                        (source.path, source.line),
                    )
                )
    return tuple(_unique_gaps(found))


def _build_order(roots: list[str], targets) -> list[str]:
    """Every target reachable through link_libraries, dependencies before dependents."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order or name in visiting:
            return
        visiting.add(name)
        for dependency in _linked_targets(targets[name], targets, scopes=("PUBLIC", "PRIVATE", "INTERFACE")):
            visit(dependency)
        visiting.discard(name)
        order.append(name)

    for root in roots:
        visit(root)
    return order


def _resolve_alias(name: str, targets) -> str:
    seen = set()
    while name in targets and targets[name].alias_of and name not in seen:
        seen.add(name)
        name = targets[name].alias_of
    return name


def _linked_targets(target, targets, scopes: tuple[str, ...]) -> list[str]:
    names = []
    for item in target.link_libraries:
        if item.scope in scopes:
            name = _resolve_alias(item.value, targets)
            if name in targets and name != target.name and name not in names:
                names.append(name)
    return names


def _usage_closure(target, targets) -> list:
    """The targets whose INTERFACE/PUBLIC usage requirements reach `target`'s compile, in CMake's order."""
    found: list = []

    def visit(dependency_name: str) -> None:
        dependency = targets[dependency_name]
        if any(d.name == dependency.name for d in found) or dependency.name == target.name:
            return
        found.append(dependency)
        for name in _linked_targets(dependency, targets, scopes=("PUBLIC", "INTERFACE")):
            visit(name)

    for name in _linked_targets(target, targets, scopes=("PUBLIC", "PRIVATE")):
        visit(name)
    return found


def _applies(item, language: str) -> bool:
    return item.language is None or language in item.language.split(",")


def _compile_steps(target, targets, gaps: list[Gap]):
    closure = _usage_closure(target, targets)
    position_independent = target.kind in ("SHARED_LIBRARY", "MODULE_LIBRARY") or target.property(
        "POSITION_INDEPENDENT_CODE"
    ) in ("ON", "TRUE", "1")
    for source in target.sources:
        extension = posixpath.splitext(source.path_repo_relative)[1]
        language = LANGUAGES.get(extension)
        origin = (source.path, source.line)
        if language is None:
            if extension not in (".h", ".hpp", ".cuh"):
                gaps.append(
                    Gap(source.path_repo_relative, f"{target.name}: no compiler for {extension or 'it'}", origin)
                )
            continue

        def gather(field_name: str, own_scopes=("PRIVATE", "PUBLIC"), language=language) -> list:
            items = [item for item in getattr(target, field_name) if item.scope in own_scopes]
            for dependency in closure:
                items += [item for item in getattr(dependency, field_name) if item.scope in ("PUBLIC", "INTERFACE")]
            return [item for item in items if _applies(item, language)]

        definitions = _flags(gather("compile_definitions"), target.name, gaps)
        options = _flags(gather("compile_options"), target.name, gaps)
        includes = tuple(_include(flag) for flag in _flags(gather("include_directories"), target.name, gaps))
        if _links_toolkit(target, targets):
            # CUDA::cudart's INTERFACE_INCLUDE_DIRECTORIES, which the builder takes from the machine's toolkit.
            includes += (Flag("include", ("find_package(CUDAToolkit)", 0), "cuda-toolkit"),)
        yield CompileStep(
            target.name,
            source.path_repo_relative,
            language,
            definitions,
            _dedupe(includes),
            options,
            position_independent,
            origin,
        )


def _links_toolkit(target, targets) -> bool:
    """Whether CUDA::cudart's usage requirements (the toolkit's include directory) reach this target."""
    names = [item.value for item in target.link_libraries if item.scope in ("PUBLIC", "PRIVATE")]
    names += [
        item.value
        for dependency in _usage_closure(target, targets)
        for item in dependency.link_libraries
        if item.scope in ("PUBLIC", "INTERFACE")
    ]
    return any(name in CUDA_TOOLKIT_TARGETS for name in names)


def _flags(items, owner: str, gaps: list[Gap]) -> tuple[Flag, ...]:
    flags = []
    for item in items:
        if "$<" in item.value:
            gaps.append(
                Gap(item.value, f"{owner}: a generator expression the model left unevaluated", (item.path, item.line))
            )
            continue
        flags.append(Flag(item.value, (item.path, item.line)))
    return _dedupe(flags)


def _dedupe(flags) -> tuple[Flag, ...]:
    seen: set[str] = set()
    kept = []
    for flag in flags:
        key = f"{flag.root}:{flag.value}"
        if key not in seen:
            seen.add(key)
            kept.append(flag)
    return tuple(kept)


def _include(flag: Flag) -> Flag:
    path = posixpath.normpath(flag.value)
    if path == SOURCE_ROOT or path.startswith(SOURCE_ROOT + "/"):
        return Flag(path[len(SOURCE_ROOT) + 1 :] if path != SOURCE_ROOT else "", flag.origin, "source")
    if path == SOURCE_PARENT:
        return Flag("", flag.origin, "source-parent")
    if path == BINARY_ROOT or path.startswith(BINARY_ROOT + "/"):
        return Flag(path[len(BINARY_ROOT) + 1 :] if path != BINARY_ROOT else "", flag.origin, "binary")
    return Flag(path, flag.origin, "absolute")


def _output_name(target) -> str:
    base = target.property("OUTPUT_NAME") or target.name
    if target.kind == "STATIC_LIBRARY":
        return f"lib{base}.a"
    if target.kind in ("SHARED_LIBRARY", "MODULE_LIBRARY"):
        return f"lib{base}.so"
    return base


def _link_items(target, targets, built: set[str], gaps: list[Gap], external: dict[str, None]):
    """The link line of a shared library (static ones are archived, not linked) in CMake's order."""
    if target.kind not in ("SHARED_LIBRARY", "MODULE_LIBRARY", "EXECUTABLE"):
        return []
    items: list[LinkItem] = []
    for option in target.link_options:
        if option.scope != "INTERFACE":
            items += _option_items(option, targets, built, gaps)
    items += _library_items(
        target, target.link_libraries, ("PUBLIC", "PRIVATE"), targets, built, gaps, external, (target.name,)
    )
    return _dedupe_links(items)


def _dedupe_links(items: list[LinkItem]) -> list[LinkItem]:
    """Each library once, as CMake writes a link line: a whole-archive mention wins over a plain one of
    the same archive; a plain archive or system library keeps its last place, after everything that
    needs it (the linker reads an archive once, left to right); options keep their first."""
    whole = {item.value for item in items if item.whole_archive}
    items = [
        item for item in items if not (item.kind == "target-archive" and item.value in whole and not item.whole_archive)
    ]
    last = {(item.kind, item.value): index for index, item in enumerate(items)}
    seen: set[tuple[str, str]] = set()
    kept = []
    for index, item in enumerate(items):
        key = (item.kind, item.value)
        keeps_last = item.kind in ("target-archive", "system") and not item.whole_archive
        if key in seen or (keeps_last and last[key] != index):
            continue
        seen.add(key)
        kept.append(item)
    return kept


def _option_items(option, targets, built: set[str], gaps: list[Gap]) -> list[LinkItem]:
    value = option.value
    if "$<TARGET_FILE:" in value or "$<TARGET_LINKER_FILE:" in value:
        # Resolved by the builder, which knows where each target's output lands.
        return [LinkItem("option", value, option.scope, (option.path, option.line))]
    if "$<" in value:
        gaps.append(
            Gap(
                value,
                "a link option with a generator expression the model left unevaluated",
                (option.path, option.line),
            )
        )
        return []
    return [LinkItem("option", value, option.scope, (option.path, option.line))]


def _library_items(owner, link_libraries, scopes, targets, built, gaps, external, path) -> list[LinkItem]:
    """Link items for `link_libraries` in their order, then what each linked target brings to its
    consumers (expanded again at each mention, so that _dedupe_links can leave every archive after all
    that need it, as CMake orders a link line); `path` holds the targets being expanded (no cycles)."""
    items: list[LinkItem] = []
    brought: list[LinkItem] = []
    whole = False
    for entry in link_libraries:
        if entry.scope not in scopes:
            continue
        value = entry.value
        origin = (entry.path, entry.line)
        if value in ("-Wl,--whole-archive", "LINKER:--whole-archive"):
            whole = True
            continue
        if value in ("-Wl,--no-whole-archive", "LINKER:--no-whole-archive"):
            whole = False
            continue
        name = _resolve_alias(value, targets)
        if name in CUDA_TOOLKIT_TARGETS and name not in targets:
            external[
                f"{name}: the CUDA toolkit's lib{CUDA_TOOLKIT_TARGETS[name]} and include directory "
                "(find_package(CUDAToolkit) is not modelled; the machine's toolkit stands in)"
            ] = None
            items.append(LinkItem("toolkit", name, entry.scope, origin, whole, CUDA_TOOLKIT_TARGETS[name]))
            continue
        if name in targets:
            dependency = targets[name]
            if name in built:
                kind = "target-archive" if dependency.kind == "STATIC_LIBRARY" else "target-shared"
                items.append(LinkItem(kind, name, entry.scope, origin, whole and kind == "target-archive"))
            if name in path:
                continue
            for option in dependency.link_options:
                if option.scope in ("PUBLIC", "INTERFACE"):
                    items += _option_items(option, targets, built, gaps)
            # A static library's PRIVATE link items still reach the final link (CMake's $<LINK_ONLY:...>).
            dependency_scopes = (
                ("PUBLIC", "INTERFACE", "PRIVATE") if dependency.kind == "STATIC_LIBRARY" else ("PUBLIC", "INTERFACE")
            )
            brought += _library_items(
                dependency, dependency.link_libraries, dependency_scopes, targets, built, gaps, external, (*path, name)
            )
            continue
        if "::" in name or "$<" in name:
            gaps.append(Gap(name, f"{owner.name} links it, but the model defines no such target", origin))
            continue
        if name.startswith("-"):
            items.append(LinkItem("option", name, entry.scope, origin))
            continue
        items.append(LinkItem("system", name, entry.scope, origin))
    return items + brought


def _unique_gaps(gaps: list[Gap]) -> list[Gap]:
    seen: set[tuple[str, str]] = set()
    unique = []
    for gap in gaps:
        if (gap.name, gap.reason) not in seen:
            seen.add((gap.name, gap.reason))
            unique.append(gap)
    return unique
