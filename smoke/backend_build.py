"""Building a BuildPlan with the machine's compilers, as CMake's generated build would.

Objects compile in parallel (ccache in front when installed), static libraries are archived with `ar`,
shared libraries and the host are linked by the C++ compiler with CMake's link-line order: link options
first, then the objects, then the libraries, each archive named whole or not as the plan says.

The checkout is reached through `<build>/src/executorch`, a link to it: ExecuTorch's sources include
`<executorch/...>`, so the directory holding the checkout must be on the include path under that name.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from smoke.build_plan import BuildPlan, CompileStep, LinkItem, TargetPlan
from smoke.commands import CommandResult, run_command
from smoke.object_cache import ObjectCache

CSRC = Path(__file__).with_name("csrc")
COMPILE_TIMEOUT_S = 900
LINK_TIMEOUT_S = 300
# gcc: "path:line:col: error: msg"; nvcc's front end: "path(line): error: msg".
GCC_ERROR = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<message>.*)$")
NVCC_ERROR = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+)\):\s*(?:catastrophic )?error:\s*(?P<message>.*)$")
TARGET_FILE = re.compile(r"\$<TARGET(?:_LINKER)?_FILE:([^>]+)>")


@dataclass(frozen=True, slots=True)
class Toolset:
    """The compilers the build uses; None where missing."""

    cxx: str | None
    cc: str | None
    nvcc: str | None
    ccache: str | None
    cuda_include: str | None  # the toolkit's include and lib directories, as nvcc reports them
    cuda_lib: str | None
    cuda_arch: str | None = None  # e.g. "native" or "sm_90"; None: nvcc's default
    jobs: int = 0  # 0: one per CPU
    flatc: str | None = None  # the executorch wheel's flatc (schema_gen.find_flatc); None: not found


@dataclass(frozen=True, slots=True)
class CompileError:
    path: str  # repository path where it lies in the checkout, else as the compiler wrote it
    line: int
    message: str
    target: str
    source: str

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "target": self.target,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class BuildOutcome:
    """What was built: outputs by target name, every command run, the compile errors found."""

    outputs: dict
    steps: tuple[CommandResult, ...]
    errors: tuple[CompileError, ...]
    failed_step: CommandResult | None
    seconds: float
    # Sources left out because a header they include is missing from this machine (not from the
    # checkout): a CUDA toolkit without cuRAND, say. Said in the report; never counted against a PR.
    machine_gaps: tuple[str, ...] = ()
    # Sources left out because they include a header generated at build time by a custom command the
    # smoke build does not run (BuildPlan.generated), said with the target that lists it.
    not_generated: tuple[str, ...] = ()
    from_cache: int = 0  # objects the object cache served instead of a compile

    @property
    def ok(self) -> bool:
        return self.failed_step is None


def find_toolset(cuda_arch: str | None = None, jobs: int = 0) -> Toolset:
    """The compilers on PATH ($CXX/$CC first), nvcc and its toolkit, and ccache when installed."""
    from smoke.machine import find_toolchain
    from smoke.schema_gen import find_flatc

    toolchain = find_toolchain()
    include, library = toolkit_directories(toolchain.nvcc) if toolchain.nvcc else (None, None)
    return Toolset(
        toolchain.cxx,
        toolchain.cc,
        toolchain.nvcc,
        shutil.which("ccache"),
        include,
        library,
        cuda_arch,
        jobs,
        find_flatc(),
    )


def toolkit_directories(nvcc: str) -> tuple[str | None, str | None]:
    """The CUDA toolkit's include and lib directories from `nvcc -dryrun`, as FindCUDAToolkit reads them
    (nvcc is often a wrapper script or a link, so its own location says little)."""
    result = run_command([nvcc, "-dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull], timeout=60)
    text = result.stderr + result.stdout
    include = re.search(r'INCLUDES="?-I"?([^"\s]+)', text)
    libraries = [path for path in re.findall(r'"-L([^"]+)"', text) if not path.rstrip("/").endswith("stubs")]
    return (
        os.path.normpath(include.group(1)) if include else None,
        os.path.normpath(libraries[0]) if libraries else None,
    )


class Layout:
    """Where sources are read and outputs are written."""

    def __init__(self, checkout: Path, build_dir: Path) -> None:
        self.checkout = checkout.resolve()
        self.build_dir = build_dir.resolve()
        self.source_parent = self.build_dir / "src"
        self.source_root = self.source_parent / "executorch"
        self.binary_root = self.build_dir / "cmake-binary"
        self.objects = self.build_dir / "objects"
        self.libraries = self.build_dir / "lib"

    def prepare(self) -> None:
        for directory in (self.source_parent, self.binary_root / "include", self.objects, self.libraries):
            directory.mkdir(parents=True, exist_ok=True)
        if self.source_root.is_symlink() or self.source_root.exists():
            if self.source_root.resolve() == self.checkout:
                return
            self.source_root.unlink()
        self.source_root.symlink_to(self.checkout, target_is_directory=True)

    def source(self, path: str) -> Path:
        if path.startswith("@smoke/"):
            return CSRC / path.removeprefix("@smoke/")
        return self.source_root / path

    def repo_path(self, written: str) -> str:
        """A compiler's path back to a repository path when it lies in the checkout."""
        candidate = Path(written)
        if not candidate.is_absolute():
            candidate = self.build_dir / candidate
        text = os.path.normpath(str(candidate))
        for root in (str(self.source_root), str(self.checkout)):
            if text.startswith(root + os.sep):
                return text[len(root) + 1 :]
        resolved = os.path.realpath(text)
        if resolved.startswith(str(self.checkout) + os.sep):
            return resolved[len(str(self.checkout)) + 1 :]
        return written


def build(
    plan: BuildPlan, layout: Layout, tools: Toolset, with_host: bool = True, cache: ObjectCache | None = None
) -> BuildOutcome:
    """Compile every target's objects at once (served from the cache where it holds them), then archive
    and link in dependency order."""
    import time

    started = time.monotonic()
    layout.prepare()
    hosts = [host for host in (plan.host, plan.runtime_host) if host is not None] if with_host else []
    targets = list(plan.targets) + hosts
    jobs = [(target, step) for target in targets for step in target.compile_steps]
    commands = [compile_command(step, layout, tools) for _, step in jobs]
    served: list[bool] = []

    def compile_one(index: int) -> CommandResult:
        command, step = commands[index], jobs[index][1]
        source, output = layout.source(step.source), object_path(step, layout)
        if cache is not None and cache.fetch(command, source, output, layout.build_dir, layout.checkout):
            served.append(True)
            return CommandResult("(from the object cache) " + shlex.join(command), 0, "", "", 0.0)
        extra = cache.dependency_words(output) if cache is not None else []
        result = run_command([*command[:-2], *extra, *command[-2:]], timeout=COMPILE_TIMEOUT_S, cwd=layout.build_dir)
        if cache is not None and result.ok:
            cache.store(command, source, output, layout.build_dir, layout.checkout)
        return result

    workers = tools.jobs or os.cpu_count() or 2
    # The slowest compiles first (nvcc's), so that they do not start last and stretch the critical path.
    order = sorted(range(len(jobs)), key=lambda index: jobs[index][1].language != "CUDA")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        finished = dict(zip(order, pool.map(compile_one, order), strict=True))
    results = [finished[index] for index in range(len(jobs))]
    errors: list[CompileError] = []
    machine_gaps: list[str] = []
    not_generated: list[str] = []
    left_out: set[tuple[str, str]] = set()
    failed = None
    for (target, step), result in zip(jobs, results, strict=True):
        found = parse_errors(result, target.name, step.source, layout)
        generated = generated_missing_header(found, plan)
        if generated:
            not_generated.append(
                f"{step.source} ({target.name}): includes {generated[0]}, {generated[1]}; left out of the build"
            )
            left_out.add((target.name, step.source))
            continue
        header = machine_missing_header(found, layout)
        if header:
            machine_gaps.append(f"{step.source} ({target.name}): this machine has no {header}; left out of the build")
            left_out.add((target.name, step.source))
            continue
        errors += found
        if not result.ok and failed is None:
            failed = result
    steps = list(results)
    outputs: dict[str, str] = {}
    if failed is None:
        for target in targets:
            kept = tuple(step for step in target.compile_steps if (target.name, step.source) not in left_out)
            absent = [
                item for item in target.link_items if item.kind == "toolkit" and not toolkit_has(tools, item.library)
            ]
            for item in absent:
                gap = f"{item.value} ({target.name}): this machine's CUDA toolkit has no lib{item.library}; not linked"
                if gap not in machine_gaps:
                    machine_gaps.append(gap)
            links = tuple(item for item in target.link_items if item not in absent)
            target = replace(target, compile_steps=kept, link_items=links)
            command = link_command(target, layout, tools)
            result = run_command(command, timeout=LINK_TIMEOUT_S, cwd=layout.build_dir)
            steps.append(result)
            if not result.ok:
                failed = result
                break
            outputs[target.name] = str(output_path(target, layout))
    return BuildOutcome(
        outputs,
        tuple(steps),
        tuple(errors),
        failed,
        time.monotonic() - started,
        tuple(machine_gaps),
        tuple(not_generated),
        len(served),
    )


def toolkit_has(tools: Toolset, library: str) -> bool:
    """Whether the toolkit's lib directory holds lib<library> (a stock toolkit may lack cuRAND, say)."""
    if tools.cuda_lib is None:
        return False
    directory = Path(tools.cuda_lib)
    return any(directory.glob(f"lib{library}.so*")) or (directory / f"lib{library}.a").exists()


MISSING_HEADER = re.compile(r"^(?P<header>\S+): No such file or directory$")


def generated_missing_header(errors: list[CompileError], plan: BuildPlan) -> tuple[str, str] | None:
    """(header, what generates it) when a compile failed only for want of files the plan says are generated."""
    headers = [match.group("header") for error in errors if (match := MISSING_HEADER.match(error.message))]
    if not errors or len(headers) != len(errors):
        return None
    found = None
    for header in headers:
        file = next((gap for gap in plan.generated if gap.name == header or gap.name.endswith("/" + header)), None)
        if file is None:
            return None
        where = f" at {file.origin[0]}:{file.origin[1]}" if file.origin else ""
        found = found or (header, f"{file.reason.replace(';', where + ',', 1)}")
    return found


def machine_missing_header(errors: list[CompileError], layout: Layout) -> str | None:
    """The header, when a compile failed only because the machine lacks a header the checkout lacks too."""
    headers = [match.group("header") for error in errors if (match := MISSING_HEADER.match(error.message))]
    if not errors or len(headers) != len(errors):
        return None
    for header in headers:
        if (layout.source_root / header).exists() or any(layout.checkout.rglob(Path(header).name)):
            return None
    return headers[0]


def object_path(step: CompileStep, layout: Layout) -> Path:
    name = step.source.replace("@smoke/", "smoke/").replace("/", "__")
    return layout.objects / step.target / f"{name}.o"


def output_path(target: TargetPlan, layout: Layout) -> Path:
    if target.kind == "EXECUTABLE":
        return layout.build_dir / target.output_name
    return layout.libraries / target.output_name


def include_path(flag, layout: Layout, tools: Toolset) -> str | None:
    if flag.root == "source":
        return str(layout.source_root / flag.value) if flag.value else str(layout.source_root)
    if flag.root == "source-parent":
        return str(layout.source_parent)
    if flag.root == "binary":
        return str(layout.binary_root / flag.value)
    if flag.root == "cuda-toolkit":
        return tools.cuda_include
    return flag.value


def compile_command(step: CompileStep, layout: Layout, tools: Toolset) -> list[str]:
    """The compiler invocation CMake's generated build would run for one source."""
    output = object_path(step, layout)
    output.parent.mkdir(parents=True, exist_ok=True)
    definitions = [f"-D{flag.value}" for flag in step.definitions]
    includes = [f"-I{path}" for flag in step.include_directories if (path := include_path(flag, layout, tools))]
    options = [flag.value for flag in step.options]
    launcher = [tools.ccache] if tools.ccache else []
    if step.language == "CUDA":
        pic = ["-Xcompiler=-fPIC"] if step.position_independent else []
        arch = [f"-arch={tools.cuda_arch}"] if tools.cuda_arch else []
        compiler = tools.nvcc or "nvcc"
        return [
            *launcher,
            compiler,
            *definitions,
            *includes,
            *arch,
            *pic,
            *options,
            "-c",
            str(layout.source(step.source)),
            "-o",
            str(output),
        ]
    compiler = (tools.cc if step.language == "C" else tools.cxx) or ("cc" if step.language == "C" else "c++")
    pic = ["-fPIC"] if step.position_independent else []
    return [
        *launcher,
        compiler,
        *definitions,
        *includes,
        *pic,
        *options,
        "-c",
        str(layout.source(step.source)),
        "-o",
        str(output),
    ]


def link_command(target: TargetPlan, layout: Layout, tools: Toolset) -> list[str]:
    """ar for a static library; otherwise the C++ compiler as linker, options before objects."""
    objects = [str(object_path(step, layout)) for step in target.compile_steps]
    output = output_path(target, layout)
    if target.kind == "STATIC_LIBRARY":
        output.unlink(missing_ok=True)  # `ar` adds to an existing archive; a rebuild must not keep old members
        return [shutil.which("ar") or "ar", "qcs", str(output), *objects]
    options: list[str] = []
    libraries: list[str] = []
    for item in target.link_items:
        if item.kind == "option":
            options += linker_words(item.value, layout)
        else:
            libraries += library_words(item, layout, tools)
    shared = ["-shared", f"-Wl,-soname,{target.output_name}"] if target.kind != "EXECUTABLE" else []
    # Where the built shared libraries are found at run time, as CMake's build-tree RPATH does.
    rpath = [f"-Wl,-rpath,{layout.libraries}"]
    if tools.cuda_lib:
        rpath.append(f"-Wl,-rpath,{tools.cuda_lib}")
    return [tools.cxx or "c++", *shared, *options, *objects, "-o", str(output), *libraries, *rpath]


def linker_words(value: str, layout: Layout) -> list[str]:
    """A link option as the compiler driver takes it: SHELL: split, LINKER: as -Wl, targets as files."""
    value = TARGET_FILE.sub(lambda match: str(layout.libraries / _library_file(match.group(1), layout)), value)
    if value.startswith("SHELL:"):
        return [word for part in value.removeprefix("SHELL:").split() for word in linker_words(part, layout)]
    if value.startswith("LINKER:"):
        return [f"-Wl,{value.removeprefix('LINKER:')}"]
    return [value]


def _library_file(name: str, layout: Layout) -> str:
    for candidate in (f"lib{name}.a", f"lib{name}.so"):
        if (layout.libraries / candidate).exists():
            return candidate
    return f"lib{name}.a"


def library_words(item: LinkItem, layout: Layout, tools: Toolset) -> list[str]:
    if item.kind in ("target-archive", "target-shared"):
        path = str(layout.libraries / _library_file(item.value, layout))
        return ["-Wl,--whole-archive", path, "-Wl,--no-whole-archive"] if item.whole_archive else [path]
    if item.kind == "toolkit":
        return ([f"-L{tools.cuda_lib}"] if tools.cuda_lib else []) + [f"-l{item.library}"]
    return [f"-l{item.value}"]


def parse_errors(result: CommandResult, target: str, source: str, layout: Layout) -> list[CompileError]:
    """The `error:` lines of a failed compile, placed in the checkout where they lie."""
    if result.ok:
        return []
    errors = []
    for line in (result.stderr + "\n" + result.stdout).splitlines():
        match = GCC_ERROR.match(line.strip()) or NVCC_ERROR.match(line.strip())
        if match:
            errors.append(
                CompileError(
                    layout.repo_path(match.group("path")),
                    int(match.group("line")),
                    match.group("message").strip(),
                    target,
                    source,
                )
            )
    if not errors:
        tail = (result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}").splitlines()[-1:]
        errors.append(CompileError(source, 0, tail[0] if tail else "failed", target, source))
    return errors
