"""The build plan's values (targets, compile steps, link items, gaps, each with the CMake line it came
from) and their JSON form: standard-library only, so that a machine without the CMake model runs a plan
written where the model runs (`smoke plan`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

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
