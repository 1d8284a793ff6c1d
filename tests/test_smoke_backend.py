"""The smoke job's compile stage: planned from the CMake model, built with the real g++ and nvcc.

The plan is checked on the miniature tree fixtures/smoke_backend_mini (and edited copies of it); the
build, exports, duplicates and host stages run on it with the machine's compilers. The real tree's
CUDA shims are compiled only with PR_CHECK_SLOW=1 and a fetched mirror (several minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from smoke.backend_build import find_toolset
from smoke.backend_compare import added_lines, backend_summary, compare
from smoke.backend_run import BackendOptions, backend_stages
from smoke.backend_stages import run_backend
from smoke.build_plan import HOST_NAME, model_of_directory, plan_build, plan_directory, plan_from_json
from smoke.machine import find_toolchain, inspect_machine
from smoke.regressions import REGRESSIONS, extract, tree_diff

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "fixtures" / "smoke_backend_mini"
TOOLS = find_toolset()
needs_compilers = pytest.mark.skipif(
    TOOLS.cxx is None or TOOLS.nvcc is None or TOOLS.cuda_include is None, reason="needs g++ and nvcc with its toolkit"
)
SHIMS = "backends/cuda/CMakeLists.txt"
WHOLE = "PRIVATE cuda_platform -Wl,--whole-archive aoti_common_shims_slim\n          -Wl,--no-whole-archive"


def _copy(tmp_path: Path, edits: dict[str, tuple[str, str]] | None = None) -> Path:
    """The miniature under tmp_path/executorch, with (old, new) text edits per file."""
    tree = tmp_path / "executorch"
    shutil.copytree(MINI, tree)
    for path, (old, new) in (edits or {}).items():
        text = (tree / path).read_text()
        assert old in text, f"{path} lost the text this test edits"
        (tree / path).write_text(text.replace(old, new, 1))
    return tree


def _plan(tree: Path):
    return plan_build(model_of_directory(tree))


# -- planning (pure: the model of a tree in, targets and flags out) -------------------------------------


def test_plan_builds_the_backend_and_what_it_links_in_dependency_order():
    plan = _plan(MINI)
    names = [target.name for target in plan.targets]
    assert set(names) == {
        "extension_cuda",
        "aoti_common_shims_slim",
        "executorch_core",
        "cuda_platform",
        "aoti_cuda_shims",
        "aoti_cuda_backend",
    }
    assert names.index("aoti_common_shims_slim") < names.index("aoti_cuda_shims") < names.index("aoti_cuda_backend")
    assert names.index("executorch_core") < names.index("cuda_platform")
    assert plan.target("aoti_cuda_shims").output_name == "libaoti_cuda_shims.so"
    assert plan.target("aoti_cuda_backend").output_name == "libaoti_cuda_backend.a"


def test_plan_takes_languages_definitions_and_includes_with_their_scopes():
    shims = _plan(MINI).target("aoti_cuda_shims")
    steps = {step.source: step for step in shims.compile_steps}
    assert steps["backends/cuda/runtime/shims/fill.cu"].language == "CUDA"
    memory = steps["backends/cuda/runtime/shims/memory.cpp"]
    assert memory.language == "CXX" and memory.position_independent  # SHARED: CMake's PIC default
    definitions = {flag.value: flag.origin for flag in memory.definitions}
    assert definitions["CUDA_AVAILABLE=1"] == (SHIMS, 10)  # its own PRIVATE definition, with its line
    assert "SLIM_MINI_TENSOR=1" in definitions  # slimtensor's INTERFACE, through aoti_common_shims_slim
    # The CXX-only options of aoti_common_shims_slim (PUBLIC) reach the .cpp, not the .cu.
    assert "-fexceptions" in [flag.value for flag in memory.options]
    assert "-fexceptions" not in [flag.value for flag in steps["backends/cuda/runtime/shims/fill.cu"].options]
    roots = {(flag.root, flag.value) for flag in memory.include_directories}
    assert ("source-parent", "") in roots and ("cuda-toolkit", "include") in roots


def test_plan_links_the_archive_whole_only_where_the_model_says_so():
    plan = _plan(MINI)
    links = {item.value: item for item in plan.target("aoti_cuda_shims").link_items}
    assert links["aoti_common_shims_slim"].whole_archive and links["aoti_common_shims_slim"].scope == "PRIVATE"
    assert not links["cuda_platform"].whole_archive
    assert links["-Wl,--export-dynamic"].kind == "option"
    assert links["CUDA::cudart"].kind == "toolkit"
    assert any(entry.startswith("CUDA::cudart") for entry in plan.external)


def test_private_whole_archive_does_not_reach_the_host_but_public_does(tmp_path):
    private_host = _plan(MINI).host
    assert private_host.name == HOST_NAME
    assert not any(item.value == "aoti_common_shims_slim" for item in private_host.link_items)
    public = _copy(tmp_path, {SHIMS: (WHOLE, WHOLE.replace("PRIVATE cuda_platform", "PRIVATE cuda_platform\n PUBLIC"))})
    host = _plan(public).host
    assert [item.whole_archive for item in host.link_items if item.value == "aoti_common_shims_slim"] == [True]


def test_plan_names_what_the_model_cannot_evaluate(tmp_path):
    tree = _copy(
        tmp_path, {SHIMS: ("PUBLIC CUDA::cudart extension_cuda", "PUBLIC CUDA::cudart Vendor::blas extension_cuda")}
    )
    gaps = {gap.name: gap for gap in _plan(tree).gaps}
    assert "the model defines no such target" in gaps["Vendor::blas"].reason
    assert gaps["Vendor::blas"].origin == (SHIMS, 16)
    assert "executorch_core" not in gaps


def test_the_core_runtime_is_built_from_the_lists_in_build_variables():
    plan = _plan(MINI)
    core = plan.target("executorch_core")
    # The sources come from build_variables.bzl through execute_process, in the order its sorted() gives.
    assert [step.source for step in core.compile_steps] == ["runtime/executor/program.cpp", "runtime/platform/log.cpp"]
    assert [(gap.name, gap.origin) for gap in plan.generated] == [
        ("schema/include/executorch/schema/mini_program_generated.h", ("CMakeLists.txt", 15))
    ]


def test_each_archive_is_linked_after_everything_that_needs_it():
    items = [item.value for item in _plan(MINI).target("aoti_cuda_shims").link_items]
    # cuda_platform needs executorch_core (PRIVATE, so only at the final link): the core comes after both
    # cuda_platform and the whole archive, as CMake orders the line.
    assert items.index("cuda_platform") < items.index("aoti_common_shims_slim") < items.index("executorch_core")
    assert items.count("executorch_core") == 1


def test_plan_without_the_whole_archive_pair_has_no_whole_archive(tmp_path):
    tree = _copy(tmp_path, {SHIMS: (WHOLE, "PRIVATE cuda_platform aoti_common_shims_slim")})
    items = _plan(tree).target("aoti_cuda_shims").link_items
    assert [item.whole_archive for item in items if item.value == "aoti_common_shims_slim"] == [False]


def test_plan_survives_json():
    plan = _plan(MINI)
    assert plan_from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_added_lines_reads_hunks():
    diff = "--- a/x.cu\n+++ b/x.cu\n@@ -1,2 +1,3 @@\n a\n+b\n c\n@@ -10,0 +11,1 @@\n+d\n"
    assert added_lines(diff) == {"x.cu": frozenset({2, 11})}


# -- building the miniature with the machine's compilers --------------------------------------------------


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    if TOOLS.cxx is None or TOOLS.nvcc is None or TOOLS.cuda_include is None:
        pytest.skip("needs g++ and nvcc with its toolkit")
    root = tmp_path_factory.mktemp("clean")
    tree = _copy(root)
    return run_backend(_plan(tree), tree, root / "build", TOOLS)


@needs_compilers
def test_the_miniature_compiles_links_and_exports_its_shims(clean_run):
    assert clean_run.compile.status == "passed", clean_run.compile.reason
    assert clean_run.exported == {
        "aoti_torch_dtype_float32",
        "aoti_torch_device_type_cuda",
        "aoti_torch_get_numel",
        "aoti_torch_cuda_allocate",
        "aoti_torch_cuda_fill",
    }
    assert clean_run.exports.status == "passed"
    assert clean_run.duplicates.status == "passed", clean_run.duplicates.reason
    assert clean_run.host.status == "passed", clean_run.host.reason
    # The one source needing a generated header is left out by name, and not as a compile error.
    assert [entry.split(" ")[0] for entry in clean_run.build.not_generated] == ["runtime/executor/program.cpp"]
    assert "mini_program_generated.h" in clean_run.compile.reason


def _fake_program(tmp_path: Path) -> dict[str, dict]:
    """An exported program as prepare_programs gives it, whose wrapper is shaped like an AOTInductor wrapper
    only in what it needs from the process: one shim that the whole archive provides."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "wrapper.c"
    source.write_text(
        "extern int aoti_torch_dtype_float32(void);\nint wrapper_dtype(void) { return aoti_torch_dtype_float32(); }\n"
    )
    library = tmp_path / "wrapper.so"
    assert os.system(f"{TOOLS.cc or 'cc'} -shared -fPIC {source} -o {library}") == 0
    return {"sort": {"program": {"wrapper": str(library), "needed_symbols": ["aoti_torch_dtype_float32"]}}}


@needs_compilers
def test_the_host_loads_the_prs_exported_wrapper_through_the_shims_it_links(tmp_path, clean_run):
    from smoke.backend_load import load_programs

    outputs = clean_run.build.outputs
    outcome = load_programs(
        _fake_program(tmp_path), Path(outputs[HOST_NAME]), Path(outputs["aoti_cuda_shims"]), clean_run.exported
    )
    assert outcome.status == "passed", outcome.reason
    assert outcome.details["runs"]["sort"]["missing"] == []


@needs_compilers
def test_without_the_whole_archive_the_wrapper_does_not_load_in_the_host(tmp_path):
    from smoke.backend_load import load_programs

    tree = _copy(tmp_path, {SHIMS: (WHOLE, "PRIVATE cuda_platform aoti_common_shims_slim")})
    run = run_backend(_plan(tree), tree, tmp_path / "build", TOOLS)
    assert run.host.status == "passed", run.host.reason
    outcome = load_programs(
        _fake_program(tmp_path),
        Path(run.build.outputs[HOST_NAME]),
        Path(run.build.outputs["aoti_cuda_shims"]),
        run.exported,
    )
    assert outcome.status == "failed"
    assert "undefined symbol: aoti_torch_dtype_float32" in outcome.reason, outcome.reason
    assert outcome.details["runs"]["sort"]["missing"] == ["aoti_torch_dtype_float32"]


@needs_compilers
def test_dropping_whole_archive_loses_the_archive_shims_by_name(tmp_path, clean_run):
    tree = _copy(tmp_path, {SHIMS: (WHOLE, "PRIVATE cuda_platform aoti_common_shims_slim")})
    run = run_backend(_plan(tree), tree, tmp_path / "build", TOOLS)
    assert run.exports.status == "failed"
    assert "libaoti_common_shims_slim.a" in run.exports.reason and "not linked whole" in run.exports.reason
    new = compare(backend_summary(clean_run), backend_summary(run))
    lost = [item for item in new if item.kind == "symbol-lost"]
    assert len(lost) == 1 and "aoti_torch_dtype_float32" in lost[0].message


@needs_compilers
def test_a_shim_made_static_is_reported_lost(tmp_path, clean_run):
    tree = _copy(
        tmp_path,
        {
            "backends/aoti/common_shims_slim.cpp": (
                "int32_t aoti_torch_device_type_cuda(void) { return 1; }",
                '}\nstatic int32_t aoti_torch_device_type_cuda_hidden(void) { return 1; }\nextern "C" {',
            )
        },
    )
    header = tree / "backends/aoti/common_shims_slim.h"
    header.write_text(header.read_text().replace("int32_t aoti_torch_device_type_cuda(void);\n", ""))
    run = run_backend(_plan(tree), tree, tmp_path / "build", TOOLS)
    assert run.compile.status == "passed", run.compile.reason
    new = compare(backend_summary(clean_run), backend_summary(run))
    assert [(item.kind, "aoti_torch_device_type_cuda" in item.message) for item in new] == [("symbol-lost", True)]


@needs_compilers
def test_a_cuda_syntax_error_is_placed_at_its_line_in_the_diff(tmp_path, clean_run):
    path = "backends/cuda/runtime/shims/fill.cu"
    tree = _copy(tmp_path, {path: ("__global__ void", "int broken = ;\n__global__ void")})
    run = run_backend(_plan(tree), tree, tmp_path / "build", TOOLS)
    assert run.compile.status == "failed"
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -2,0 +3,1 @@\n+int broken = ;\n"
    new = compare(backend_summary(clean_run), backend_summary(run), diff)
    errors = [item for item in new if item.kind == "compile-error"]
    assert errors and errors[0].path == path and errors[0].line == 3 and errors[0].in_diff


@needs_compilers
def test_public_whole_archive_duplicates_the_shims_in_the_host(tmp_path, clean_run):
    tree = _copy(tmp_path, {SHIMS: (WHOLE, WHOLE.replace("PRIVATE cuda_platform", "PRIVATE cuda_platform\n PUBLIC"))})
    run = run_backend(_plan(tree), tree, tmp_path / "build", TOOLS)
    assert run.duplicates.status == "failed", run.duplicates.reason
    assert "aoti_torch_dtype_float32" in run.duplicated
    assert HOST_NAME in run.duplicates.reason and "aoti_cuda_shims" in run.duplicates.reason
    new = compare(backend_summary(clean_run), backend_summary(run))
    assert any(item.kind == "duplicate-definition" for item in new)


@needs_compilers
def test_without_a_gpu_load_run_is_skipped_not_failed(tmp_path):
    facts = inspect_machine(find_toolchain())
    if facts.has_gpu:
        pytest.skip("checks the machine without a GPU")
    tree = _copy(tmp_path)
    stages, block = backend_stages(BackendOptions(head=tree, base=tree), facts, TOOLS, tmp_path / "build")
    statuses = {stage.name: stage.status for stage in stages}
    # Nothing new in the build stages is not a pass of what no program ran: neutral, with the reason.
    assert statuses["load"] == "skipped" and statuses["new-at-head"] == "skipped"
    assert "could not run at head: no GPU" in next(stage.reason for stage in stages if stage.name == "new-at-head")
    assert block["new_at_head"] == []


# -- the real tree (slow) -------------------------------------------------------------------------------

slow = pytest.mark.skipif(
    os.environ.get("PR_CHECK_SLOW") != "1",
    reason="set PR_CHECK_SLOW=1 (with the mirror fetched): compiles the real CUDA shims",
)


@slow
@needs_compilers
def test_the_real_tree_compiles_and_catches_the_three_regressions(tmp_path, executorch_mirror):
    clean = extract(executorch_mirror, "refs/heads/main", tmp_path / "clean")
    base = run_backend(plan_directory(clean), clean, tmp_path / "clean-build", TOOLS)
    assert base.compile.status == "passed", base.compile.reason
    assert len(base.exported) >= 40 and base.exports.status == "passed"
    # The core runtime comes from build_variables.bzl; only the sources needing flatc's header are left out.
    assert base.host.status == "passed" and base.duplicates.status == "passed", (
        base.host.reason,
        base.duplicates.reason,
    )
    assert all("program_generated.h" in entry for entry in base.build.not_generated) and base.build.not_generated
    for name, regress in REGRESSIONS.items():
        if name in ("sort-wrong-index", "empty-strided-check", "int4mm-group", "stream-guard-device", "sdpa-scale"):
            continue  # they compile, link and load: only running a program on a GPU shows them
        tree = extract(executorch_mirror, "refs/heads/main", tmp_path / name)
        regression = regress(tree)
        run = run_backend(plan_directory(tree), tree, tmp_path / f"{name}-build", TOOLS)
        new = compare(backend_summary(base), backend_summary(run))
        assert new, f"{name}: nothing new at head"
        if name == "no-whole-archive":
            from smoke.backend_load import load_programs

            loaded = load_programs(
                _fake_program(tmp_path / name),
                Path(run.build.outputs[HOST_NAME]),
                Path(run.build.outputs["aoti_cuda_shims"]),
                run.exported,
            )
            assert "undefined symbol: aoti_torch_dtype_float32" in loaded.reason, loaded.reason
        if name == "cu-syntax-error":
            assert (new[0].kind, new[0].path, new[0].line) == ("compile-error", regression.path, regression.line)
        elif name == "tensor-attribute":
            # The cause, with both files, at the CMake line that joined the source; no lost symbols after it.
            diff = tree_diff(clean, tree)
            new = compare(backend_summary(base), backend_summary(run), diff, tree)
            assert [(item.kind, item.path, item.line) for item in new] == [
                ("link-error", regression.path, regression.line)
            ], new
            assert "multiple definition of `aoti_torch_get_device_type`" in new[0].message
            assert "common_shims_slim.cpp" in new[0].message and "tensor_attribute.cpp" in new[0].message
        else:
            assert new[0].kind == "symbol-lost", new


# -- the command line ---------------------------------------------------------------------------------


def test_plan_command_writes_a_plan_the_run_can_use(tmp_path):
    from smoke.cli import main

    out = tmp_path / "plan.json"
    assert main(["plan", "--tree", str(MINI), "--out", str(out)]) == 0
    assert plan_from_json(json.loads(out.read_text())) == _plan(MINI)


@needs_compilers
def test_run_with_a_tree_reports_the_backend_stages(tmp_path):
    from smoke.cli import main

    tree = _copy(tmp_path)
    report_path = tmp_path / "report.json"
    code = main(
        [
            "run",
            "--backend-only",
            "--tree",
            str(tree),
            "--base-tree",
            str(tree),
            "--build-dir",
            str(tmp_path / "build"),
            "--report",
            str(report_path),
        ]
    )
    report = json.loads(report_path.read_text())
    statuses = {stage["name"]: stage["status"] for stage in report["stages"]}
    assert statuses["compile"] == statuses["exports"] == statuses["backend-host"] == "passed"
    assert report["backend"]["new_at_head"] == []
    if report["machine"].get("has_gpu") is False or statuses.get("program-run") == "skipped":
        # Without a GPU no program ran: neutral (77), never passed.
        assert statuses["new-at-head"] == "skipped" and report["status"] == "skipped" and code == 77
    else:
        assert statuses["new-at-head"] == "passed" and code == (0 if report["status"] == "passed" else 1)


@needs_compilers
def test_moving_the_pair_back_to_private_is_reported_fixed(tmp_path, clean_run):
    tree = _copy(tmp_path, {SHIMS: (WHOLE, WHOLE.replace("PRIVATE cuda_platform", "PRIVATE cuda_platform\n PUBLIC"))})
    public = run_backend(_plan(tree), tree, tmp_path / "build", TOOLS)
    from smoke.backend_compare import fixed_at_head

    fixed = fixed_at_head(backend_summary(public), backend_summary(clean_run))
    assert len(fixed) == 1 and fixed[0].startswith("duplicates: failed at base")
