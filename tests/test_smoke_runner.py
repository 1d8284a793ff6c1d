"""The GPU smoke runner, with the real compilers and the real dynamic loader; no mocks.

Without a GPU the link contract is still proven at dlopen time (the nvcc-built library loads without a
driver); the tests marked `gpu` need a working `nvidia-smi` and are skipped cleanly otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smoke.canary import SHIM_PREFIX, CanaryWrapper, child_environment, describe_child_failure
from smoke.cli import WORKFLOW_TEMPLATE, main
from smoke.commands import CommandResult, run_command
from smoke.config import HostConfig, SmokeConfigError, read_host_config
from smoke.cxx_runtime import candidate_compilers, choose_compiler, libstdcxx_linkage, probe_compiler
from smoke.elf_symbols import read_dynamic_symbols, read_dynamic_symbols_with_binutils, read_static_symbols
from smoke.host_under_test import LOADER_SOURCE, check_host, link_loader_command, symbol_probe_source
from smoke.link_contract import LINK_WAYS, SHIM_SYMBOL, LinkWay, build_contract, prove_link_contract, try_combination
from smoke.machine import Toolchain, find_toolchain
from smoke.report import StageResult, overall_status

REPO = Path(__file__).resolve().parents[1]
TOOLCHAIN = find_toolchain()
GOOD_WAY = LinkWay(whole_archive=True, export_dynamic=True)
BAD_WAYS = [way for way in LINK_WAYS if not way.expected_to_load]
STAGE_NAMES = ["doctor", "link-contract", "canary", "host-under-test"]


def _nvidia_smi_works() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAS_GPU = _nvidia_smi_works()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no working nvidia-smi")
without_gpu = pytest.mark.skipif(HAS_GPU, reason="checks behaviour on a machine without a GPU")
needs_compilers = pytest.mark.skipif(TOOLCHAIN.cc is None, reason="no C compiler")
needs_cxx = pytest.mark.skipif(TOOLCHAIN.cxx is None, reason="no C++ compiler")


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    if TOOLCHAIN.cc is None:
        pytest.skip("no C compiler")
    build = build_contract(tmp_path_factory.mktemp("contract"), TOOLCHAIN)
    assert build.ok, build.steps[-1].to_json()
    return build


def _host(contract, way: LinkWay) -> Path:
    return dict(contract.hosts)[way]


def _contract_as_canary(contract) -> CanaryWrapper:
    """The contract library plays the canary: a real .so that needs shims from its host."""
    undefined = read_dynamic_symbols(contract.library).undefined
    return CanaryWrapper(contract.library, tuple(sorted(s for s in undefined if s.startswith(SHIM_PREFIX))))


# --- the link contract --------------------------------------------------------------------------------


def test_contract_sources_compile_into_an_archive_a_library_and_four_hosts(contract):
    assert contract.kernel == ("cuda" if TOOLCHAIN.nvcc else "cpu-stand-in")
    assert contract.library.is_file()
    assert [way for way, _ in contract.hosts] == list(LINK_WAYS)
    assert all(host.is_file() for _, host in contract.hosts)
    assert read_dynamic_symbols(contract.library).undefined >= {SHIM_SYMBOL}


@pytest.mark.parametrize("way", BAD_WAYS, ids=lambda way: way.label)
def test_host_missing_a_flag_fails_at_dlopen_with_the_undefined_shim(contract, way):
    combination = try_combination(way, _host(contract, way), contract.library, run_kernel=False)
    assert combination.loaded is False
    assert combination.ran is None
    assert combination.message == f"{contract.library}: undefined symbol: {SHIM_SYMBOL}"
    assert combination.exit_code == 10
    assert combination.as_expected


def test_host_with_both_flags_loads_the_library(contract):
    combination = try_combination(GOOD_WAY, _host(contract, GOOD_WAY), contract.library, run_kernel=False)
    assert (combination.loaded, combination.ran, combination.message) == (True, None, "loaded; kernel run skipped")
    assert combination.as_expected


@pytest.mark.parametrize(
    ("way", "exported", "in_binary"),
    [
        (LinkWay(False, False), False, False),
        (LinkWay(False, True), False, False),  # the linker dropped the unreferenced member
        (LinkWay(True, False), False, True),  # in the binary, not in its dynamic symbol table
        (LinkWay(True, True), True, True),
    ],
    ids=lambda value: value.label if isinstance(value, LinkWay) else str(value),
)
def test_symbol_tables_show_why_each_host_loads_or_not(contract, way, exported, in_binary):
    host = _host(contract, way)
    assert (SHIM_SYMBOL in read_dynamic_symbols(host).defined) is exported
    assert (SHIM_SYMBOL in read_static_symbols(host)) is in_binary


def test_nm_fallback_reads_the_same_dynamic_symbols_as_pyelftools(contract):
    for path in (contract.library, _host(contract, GOOD_WAY)):
        with_pyelftools = read_dynamic_symbols(path)
        with_nm = read_dynamic_symbols_with_binutils(path)
        assert with_nm.reader == "nm"
        assert with_nm.needed_libraries == with_pyelftools.needed_libraries
        shims = lambda names: sorted(n for n in names if n.startswith(SHIM_PREFIX))  # noqa: E731
        assert shims(with_nm.undefined) == shims(with_pyelftools.undefined)
        assert shims(with_nm.defined) == shims(with_pyelftools.defined)


@without_gpu
@needs_compilers
def test_link_contract_stage_passes_without_a_gpu_and_skips_only_the_kernel_run(tmp_path):
    outcome = prove_link_contract(tmp_path, TOOLCHAIN, gpu_present=False)
    assert outcome.status == "passed", outcome.reason
    assert outcome.reason.endswith("kernel run skipped: no GPU") or "no nvcc" in outcome.reason
    by_way = {(c["whole_archive"], c["export_dynamic"]): c for c in outcome.details["combinations"]}
    assert {way: c["loaded"] for way, c in by_way.items()} == {
        (False, False): False,
        (False, True): False,
        (True, False): False,
        (True, True): True,
    }
    assert by_way[(True, True)]["ran"] is None


@needs_compilers
def test_without_nvcc_the_load_contract_is_still_proven_with_a_cpu_stand_in(tmp_path):
    outcome = prove_link_contract(tmp_path, Toolchain(TOOLCHAIN.cc, TOOLCHAIN.cxx, nvcc=None), gpu_present=HAS_GPU)
    assert outcome.status == "passed", outcome.reason
    assert outcome.details["kernel"] == "cpu-stand-in"
    assert outcome.reason.endswith("kernel not built: no nvcc (CPU stand-in library)")
    assert [c["loaded"] for c in outcome.details["combinations"]] == [False, False, False, True]
    assert [c["ran"] for c in outcome.details["combinations"]] == [None] * 4


# --- the host under test ------------------------------------------------------------------------------


def test_host_that_exports_every_needed_shim_passes_and_loads_the_canary(contract, tmp_path):
    config = HostConfig(
        repo=tmp_path, build_command=None, host=_host(contract, GOOD_WAY), load_args=("--load-only", "{library}")
    )
    outcome = check_host(config, _contract_as_canary(contract), canary_reason="")
    assert (outcome.status, outcome.reason) == ("passed", "host exports every symbol the canary needs and loaded it")
    assert outcome.details["load"]["stdout"] == "loaded\n"


def test_host_that_does_not_export_a_needed_shim_fails_naming_it(contract, tmp_path):
    host = _host(contract, LinkWay(whole_archive=True, export_dynamic=False))
    config = HostConfig(repo=tmp_path, build_command=None, host=host, load_args=None)
    outcome = check_host(config, _contract_as_canary(contract), canary_reason="")
    assert outcome.status == "failed"
    assert outcome.details["missing_symbols"] == [SHIM_SYMBOL]


def test_host_from_the_repository_config_is_built_by_its_command(contract, tmp_path):
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/pr-check.toml").write_text(
        f'[smoke]\nhost_build = "cp {_host(contract, GOOD_WAY)} built-host"\nhost = "built-host"\n'
    )
    config = read_host_config(tmp_path)
    outcome = check_host(config, _contract_as_canary(contract), canary_reason="")
    assert outcome.status == "passed"
    assert outcome.reason.startswith("exports checked, load not configured")
    assert outcome.details["build"]["returncode"] == 0


def test_failing_host_build_fails_the_stage(contract, tmp_path):
    config = HostConfig(repo=tmp_path, build_command="echo broken >&2; exit 3", host=tmp_path / "host", load_args=None)
    outcome = check_host(config, _contract_as_canary(contract), canary_reason="")
    assert outcome.status == "failed"
    assert outcome.details["build"]["stderr"] == "broken\n"


def test_host_stage_is_skipped_without_a_host_or_without_a_canary(contract, tmp_path):
    no_host = check_host(HostConfig(tmp_path, None, None, None), _contract_as_canary(contract), "")
    no_canary = check_host(HostConfig(tmp_path, None, _host(contract, GOOD_WAY), None), None, "PyTorch missing")
    assert no_host.status == no_canary.status == "skipped"
    assert no_canary.reason == "no canary wrapper to check the host against (PyTorch missing)"


def test_command_line_overrides_the_config_file(tmp_path):
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/pr-check.toml").write_text('[smoke]\nhost = "from-file"\nhost_load_args = ["-x"]\n')
    config = read_host_config(tmp_path, build_command="make", host="from-flag", load_args="--smoke-load {library}")
    assert config == HostConfig(tmp_path, "make", tmp_path / "from-flag", ("--smoke-load", "{library}"))


def test_unknown_smoke_config_key_is_a_usage_error(tmp_path, capsys):
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/pr-check.toml").write_text('[smoke]\nhots = "typo"\n')
    with pytest.raises(SmokeConfigError, match=r"unknown key smoke\.hots"):
        read_host_config(tmp_path)
    assert main(["run", "--repo", str(tmp_path), "--report", str(tmp_path / "r.json")]) == 2
    assert "hots" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


# --- the host's shim archive, proven by loading through csrc/load_canary.c ------------------------------


def _archive_config(contract, tmp_path) -> HostConfig:
    return HostConfig(repo=tmp_path, build_command=None, host=None, load_args=None, archive=contract.archive)


def test_loader_linked_with_the_shim_archive_loads_the_probe_and_the_canary(contract, tmp_path):
    outcome = check_host(
        _archive_config(contract, tmp_path),
        _contract_as_canary(contract),
        canary_reason="",
        cc=TOOLCHAIN.cc,
        work_dir=tmp_path / "loader",
    )
    assert (outcome.status, outcome.reason) == (
        "passed",
        (
            "a loader linked with libaoti_shim.a exports all 1 needed symbols and loaded "
            "the symbol probe and the canary's wrapper"
        ),
    )
    archive = outcome.details["archive"]
    assert archive["messages"] == [f"loaded: {tmp_path / 'loader/libsymbol_probe.so'}", f"loaded: {contract.library}"]
    assert archive["missing_symbols"] == []
    assert SHIM_SYMBOL in read_dynamic_symbols(tmp_path / "loader/load_canary").defined


def test_shim_the_archive_lacks_fails_with_the_loaders_exact_message(contract, tmp_path):
    wrapper = CanaryWrapper(contract.library, (SHIM_SYMBOL, "aoti_torch_cuda_mm_out"))
    outcome = check_host(
        _archive_config(contract, tmp_path), wrapper, canary_reason="", cc=TOOLCHAIN.cc, work_dir=tmp_path / "loader"
    )
    probe = tmp_path / "loader/libsymbol_probe.so"
    assert outcome.status == "failed"
    assert outcome.reason == (
        f"a loader linked with libaoti_shim.a could not load: {probe}: undefined symbol: aoti_torch_cuda_mm_out"
    )
    assert outcome.details["archive"]["missing_symbols"] == ["aoti_torch_cuda_mm_out"]
    # The canary library itself needs only the shim the archive has, so it still loads.
    assert outcome.details["archive"]["messages"][1] == f"loaded: {contract.library}"


def test_a_wrapper_linked_against_libtorch_is_not_loaded_only_probed(contract, tmp_path):
    wrapper = CanaryWrapper(contract.library, (SHIM_SYMBOL,), needed_libraries=("libtorch.so", "libc.so.6"))
    outcome = check_host(
        _archive_config(contract, tmp_path), wrapper, canary_reason="", cc=TOOLCHAIN.cc, work_dir=tmp_path / "loader"
    )
    assert outcome.status == "passed"
    assert outcome.reason.endswith(
        "loaded the symbol probe (the wrapper itself links libtorch, so loading it would prove nothing)"
    )
    assert outcome.details["archive"]["wrapper_loaded_too"] is False
    assert len(outcome.details["archive"]["messages"]) == 1


def test_archive_and_executable_are_both_checked_and_either_fails_the_stage(contract, tmp_path):
    config = HostConfig(tmp_path, None, _host(contract, LinkWay(True, False)), None, archive=contract.archive)
    outcome = check_host(
        config, _contract_as_canary(contract), canary_reason="", cc=TOOLCHAIN.cc, work_dir=tmp_path / "loader"
    )
    assert outcome.status == "failed"
    assert outcome.reason.startswith("host does not export 1 of the 1 symbols the canary needs: ")
    assert "; a loader linked with libaoti_shim.a exports all 1 needed symbols" in outcome.reason


def test_missing_archive_or_compiler_fails_rather_than_passing(contract, tmp_path):
    missing = HostConfig(tmp_path, None, None, None, archive=tmp_path / "libnothing.a")
    no_file = check_host(missing, _contract_as_canary(contract), "", cc=TOOLCHAIN.cc, work_dir=tmp_path / "l")
    no_cc = check_host(_archive_config(contract, tmp_path), _contract_as_canary(contract), "", cc=None)
    assert (no_file.status, no_file.reason) == ("failed", f"host archive not found: {tmp_path / 'libnothing.a'}")
    assert (no_cc.status, no_cc.reason) == (
        "failed",
        "host_archive is configured but no C compiler was found to link the loader",
    )


@pytest.mark.parametrize(
    ("with_archive", "expected"),
    [(True, "loaded: {library}"), (False, "dlopen failed: {library}: undefined symbol: {symbol}")],
)
def test_load_canary_reports_what_dlopen_said(contract, tmp_path, with_archive, expected):
    """The harness itself: a self-made library needing one shim, loaded with and without the archive."""
    library = tmp_path / "libneeds_shim.so"
    source = tmp_path / "needs_shim.c"
    source.write_text(symbol_probe_source((SHIM_SYMBOL,)))
    loader_object = tmp_path / "load_canary.o"
    commands = [
        [TOOLCHAIN.cc, "-shared", "-fPIC", str(source), "-o", str(library)],
        [TOOLCHAIN.cc, "-c", str(LOADER_SOURCE), "-o", str(loader_object)],
    ]
    if with_archive:
        commands.append(link_loader_command(TOOLCHAIN.cc, loader_object, contract.archive, (), tmp_path / "loader"))
    else:
        commands.append(
            [TOOLCHAIN.cc, str(loader_object), "-Wl,--export-dynamic", "-ldl", "-o", str(tmp_path / "loader")]
        )
    for command in commands:
        assert run_command(command, timeout=60).ok, command
    result = run_command([str(tmp_path / "loader"), str(library)], timeout=60)
    assert result.stdout == expected.format(library=library, symbol=SHIM_SYMBOL) + "\n"
    assert result.returncode == (0 if with_archive else 10)


def test_symbol_probe_references_every_symbol_once():
    source = symbol_probe_source(("aoti_torch_a", "aoti_torch_b"))
    assert source.count("extern void aoti_torch_a(void);") == source.count("    aoti_torch_a,") == 1
    assert "aoti_torch_b," in source and source.rstrip().endswith("0,\n};")


def test_archive_flags_and_config_keys_reach_the_host_config(tmp_path):
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/pr-check.toml").write_text(
        '[smoke]\nhost_archive = "out/libshims.a"\nhost_link_args = ["-lcudart"]\n'
    )
    from_file = read_host_config(tmp_path)
    from_flags = read_host_config(tmp_path, archive="other.a", link_args="-lfoo -lbar")
    assert (from_file.archive, from_file.link_args, from_file.host) == (
        tmp_path / "out/libshims.a",
        ("-lcudart",),
        None,
    )
    assert (from_flags.archive, from_flags.link_args) == (tmp_path / "other.a", ("-lfoo", "-lbar"))
    (tmp_path / ".github/pr-check.toml").write_text('[smoke]\nhost_link_args = "-lcudart"\n')
    with pytest.raises(SmokeConfigError, match="host_link_args must be a list of strings"):
        read_host_config(tmp_path)


# --- the canary's compiler: one that links libstdc++ dynamically ---------------------------------------


def _static_runtime_compiler(tmp_path: Path) -> Path:
    """A wrapper script like /opt/gcc/bin/g++ on the H200 machine: it links libstdc++ statically."""
    script = tmp_path / "static-g++"
    script.write_text(f'#!/bin/sh\nexec {TOOLCHAIN.cxx} -static-libstdc++ "$@"\n')
    script.chmod(0o755)
    return script


@needs_cxx
def test_a_compiler_that_links_libstdcxx_statically_is_skipped_for_one_that_does_not(tmp_path):
    static = str(_static_runtime_compiler(tmp_path))
    choice = choose_compiler((static, TOOLCHAIN.cxx), tmp_path / "probe")
    assert [probe.linkage for probe in choice.probes] == ["static", "shared"]
    assert choice.path == TOOLCHAIN.cxx
    assert choice.reason == (
        f"{TOOLCHAIN.cxx} links libstdc++ dynamically; skipped {static}: "
        "links libstdc++ statically into shared libraries"
    )
    only_static = choose_compiler((static,), tmp_path / "probe-2")
    assert only_static.path is None
    assert only_static.reason.startswith("no C++ compiler links libstdc++ dynamically")


@needs_compilers
def test_linkage_of_a_c_library_is_none_and_a_broken_compiler_is_an_error(contract, tmp_path):
    assert libstdcxx_linkage(read_dynamic_symbols(_host(contract, GOOD_WAY))) == "none"
    source = tmp_path / "x.cpp"
    source.write_text("int main() {}\n")
    broken = probe_compiler("/bin/false", source, tmp_path / "x.so")
    assert (broken.linkage, broken.error) == (None, "cannot build a shared library: exit 1")


def test_candidate_compilers_put_cxx_first_and_drop_duplicates(tmp_path, monkeypatch):
    static = _static_runtime_compiler(tmp_path)
    monkeypatch.setenv("CXX", str(static))
    candidates = candidate_compilers(str(static))
    assert candidates[0] == str(static)
    assert len(candidates) == len({os.path.realpath(path) for path in candidates})


def test_canary_children_get_the_chosen_compiler_and_a_fresh_cache(tmp_path, monkeypatch):
    from smoke.cxx_runtime import CompilerChoice

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/stale/cache")
    monkeypatch.setenv("CXX", "/opt/gcc/bin/g++")
    environment = child_environment(CompilerChoice("/usr/bin/g++", ()), tmp_path)
    assert (environment["CXX"], environment["TORCHINDUCTOR_CACHE_DIR"]) == (
        "/usr/bin/g++",
        str(tmp_path / "inductor-cache"),
    )
    unchanged = child_environment(CompilerChoice(None, ()), tmp_path)
    assert unchanged["CXX"] == "/opt/gcc/bin/g++"


FAKE_CANARY_CHILD = """
import json, os, subprocess, sys, zipfile
from pathlib import Path
command, out = sys.argv[1], Path(sys.argv[2])
if command == "compile":
    source = out / "wrapper.cpp"
    source.write_text('#include <locale>\\nextern "C" int aoti_torch_dtype_float32(void);\\n'
                      'int f() { return std::locale().name().size() + aoti_torch_dtype_float32(); }\\n')
    subprocess.check_call([os.environ["CXX"], "-shared", "-fPIC", str(source), "-o", str(out / "w.wrapper.so")])
    with zipfile.ZipFile(out / "canary.pt2", "w") as archive:
        archive.write(out / "w.wrapper.so", "canary/data/aotinductor/model/w.wrapper.so")
    print(json.dumps({"torch_version": "stand-in", "package": str(out / "canary.pt2"), "cxx": os.environ["CXX"]}))
elif os.environ.get("FAKE_CANARY_CRASH"):
    print("canary: loading the package", file=sys.stderr, flush=True)
    os.kill(os.getpid(), 11)
else:
    print(json.dumps({"matches_eager": True, "max_abs_diff": 0.0}))
"""


@pytest.fixture
def stand_in_canary(tmp_path, monkeypatch):
    """The canary stage with a child that builds a small C++ 'wrapper' instead of running PyTorch."""
    import smoke.canary as canary
    from smoke.machine import MachineFacts, Tool, TorchFacts

    script = tmp_path / "fake_canary.py"
    script.write_text(FAKE_CANARY_CHILD)
    monkeypatch.setattr(canary, "CANARY_SCRIPT", script)
    facts = MachineFacts(
        (),
        None,
        None,
        None,
        Tool(None, None),
        Tool(None, None),
        Tool(TOOLCHAIN.cxx, None),
        TorchFacts(True, "stand-in", cuda_available=True),
        "",
        None,
        "",
    )
    return lambda: canary.compile_canary(tmp_path / "build", facts, timeout=120)


@needs_cxx
def test_canary_stage_builds_with_a_shared_libstdcxx_compiler_even_when_cxx_links_it_statically(
    stand_in_canary, tmp_path, monkeypatch
):
    monkeypatch.setenv("CXX", str(_static_runtime_compiler(tmp_path)))
    outcome = stand_in_canary()
    assert outcome.stage.status == "passed", outcome.stage.reason
    assert outcome.stage.details["compiler"]["probes"][0]["linkage"] == "static"
    assert outcome.stage.details["cxx"] == outcome.stage.details["compiler"]["path"] != os.environ["CXX"]
    assert outcome.stage.details["wrapper_libstdcxx"] == outcome.wrapper.libstdcxx == "shared"
    assert outcome.wrapper.needed_symbols == (SHIM_SYMBOL,)


@needs_cxx
def test_a_crash_of_a_wrapper_with_its_own_libstdcxx_is_explained(stand_in_canary, tmp_path, monkeypatch):
    import smoke.canary as canary

    static = str(_static_runtime_compiler(tmp_path))
    monkeypatch.setattr(canary, "candidate_compilers", lambda preferred: (static,))
    monkeypatch.setenv("CXX", static)
    monkeypatch.setenv("FAKE_CANARY_CRASH", "1")
    outcome = stand_in_canary()
    assert outcome.stage.status == "failed"
    assert outcome.wrapper is not None and outcome.wrapper.libstdcxx == "static"
    assert outcome.stage.reason == (
        "compiled (wrapper needs 1 aoti_torch_* symbols), but aoti_load_package and run failed: killed by signal 11 "
        f"while loading the package: no output; the wrapper carries its own libstdc++ ({static} links it "
        f"statically), a second C++ runtime in the process; no C++ compiler links libstdc++ dynamically into "
        f"shared libraries (tried: {static} (static))"
    )


# --- the canary's failure reasons (the canary itself needs PyTorch with CUDA) ---------------------------


def test_a_crashed_canary_is_described_by_its_phase_and_fatal_error():
    # The stderr of the measured H200 run, shortened: aoti_load_package crashed in PyTorch 2.11.
    stderr = (
        "canary: loading the package\nFatal Python error: Segmentation fault\n\n"
        'Current thread 0x00007f (most recent call first):\n  File "_package.py", line 1045 in _load_aoti\n\n'
        "Extension modules: numpy._core._multiarray_umath, torch._C (total: 2)\n"
    )
    crashed = CommandResult("python canary_model.py run out", -11, "", stderr, 30.0)
    assert describe_child_failure(crashed) == (
        "killed by signal 11 while loading the package: Fatal Python error: Segmentation fault"
    )


def test_a_canary_exception_is_described_by_its_last_line():
    stderr = "canary: exporting and compiling\nTraceback (most recent call last):\nRuntimeError: no nvcc\n"
    failed = CommandResult("python canary_model.py compile out", 1, "", stderr, 3.0)
    assert describe_child_failure(failed) == "exit 1 while exporting and compiling: RuntimeError: no nvcc"


# --- the report and exit codes ------------------------------------------------------------------------


def _stage(status: str) -> StageResult:
    return StageResult("s", status, "", 0.0, {})


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (("skipped", "skipped"), "skipped"),
        (("skipped", "passed"), "passed"),
        (("passed", "failed", "skipped"), "failed"),
    ],
)
def test_overall_status(statuses, expected):
    assert overall_status(tuple(_stage(status) for status in statuses)) == expected


def _run_cli(tmp_path: Path, *arguments: str, path: str | None = None) -> tuple[int, dict]:
    """Run `python -m smoke` as the workflow would; path replaces PATH to take tools away."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if path is not None:
        env.update(PATH=path, CUDA_HOME=str(tmp_path / "no-cuda"))
        env.pop("CC", None)
    report = tmp_path / "report.json"
    completed = subprocess.run(
        [sys.executable, "-m", "smoke", *arguments, "--report", str(report)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return completed.returncode, json.loads(report.read_text())


@without_gpu
@needs_compilers
def test_run_without_gpu_writes_the_report_and_never_fails_for_want_of_a_gpu(tmp_path):
    returncode, report = _run_cli(tmp_path, "run", "--correlation-id", "abc-123")
    assert returncode == 0
    assert set(report) == {"version", "status", "correlation_id", "machine", "stages", "link_contract", "canary"}
    assert (report["version"], report["status"], report["correlation_id"]) == (1, "passed", "abc-123")
    assert report["machine"]["has_gpu"] is False
    assert [stage["name"] for stage in report["stages"]] == STAGE_NAMES
    for stage in report["stages"]:
        assert set(stage) == {"name", "status", "reason", "seconds", "details"}
        assert isinstance(stage["seconds"], float) and stage["reason"]
    statuses = {stage["name"]: stage["status"] for stage in report["stages"]}
    assert statuses == {
        "doctor": "skipped",
        "link-contract": "passed",
        "canary": "skipped",
        "host-under-test": "skipped",
    }
    combinations = report["link_contract"]["combinations"]
    assert [(c["whole_archive"], c["export_dynamic"], c["loaded"], c["ran"]) for c in combinations] == [
        (False, False, False, None),
        (False, True, False, None),
        (True, False, False, None),
        (True, True, True, None),
    ]
    assert all(c["message"].endswith(f"undefined symbol: {SHIM_SYMBOL}") for c in combinations[:3])
    assert report["canary"]["needed_symbols"] == []


@without_gpu
def test_run_with_nothing_available_skips_everything_and_exits_77(tmp_path):
    returncode, report = _run_cli(tmp_path, "run", path=str(tmp_path))
    assert returncode == 77
    assert report["status"] == "skipped"
    assert [stage["status"] for stage in report["stages"]] == ["skipped"] * 4
    assert report["stages"][1]["reason"] == "no C compiler found (set CC, or install gcc)"


@without_gpu
def test_require_gpu_turns_a_missing_gpu_into_a_failure(tmp_path):
    # No subcommand: `run` is the default.
    returncode, report = _run_cli(tmp_path, "--require-gpu", path=str(tmp_path))
    assert returncode == 1
    assert report["status"] == "failed"
    assert report["stages"][0]["status"] == "failed"
    assert report["stages"][0]["reason"].startswith("no NVIDIA GPU")


def test_doctor_json_parses_and_names_the_toolchain(capsys):
    assert main(["doctor", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["has_gpu"] is HAS_GPU
    assert facts["nvcc"]["path"] == TOOLCHAIN.nvcc
    assert facts["cc"]["path"] == TOOLCHAIN.cc
    assert set(facts["torch"]) >= {"importable", "version", "cuda_available"}


def test_doctor_text_has_one_line_per_fact(capsys):
    assert main(["doctor"]) == 0
    labels = [line.split(":", 1)[0] for line in capsys.readouterr().out.splitlines()]
    assert labels[-7:] == ["driver", "nvcc", "C", "C++", "PyTorch", "Python", "pyelftools"]


# --- the workflow template ----------------------------------------------------------------------------


def test_workflow_command_prints_the_template_file_with_the_pr_check_it_installs(capsys):
    commit = "f" * 40
    assert main(["workflow", "--git-url", "https://git.example/pr-check", "--commit", commit]) == 0
    expected = WORKFLOW_TEMPLATE.read_text().replace("@PR_CHECK_GIT_URL@", "https://git.example/pr-check")
    assert capsys.readouterr().out == expected.replace("@PR_CHECK_COMMIT@", commit)


def test_workflow_template_dispatches_with_the_inputs_and_names_runs_and_reports_by_correlation_id():
    text = WORKFLOW_TEMPLATE.read_text()
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        workflow = yaml.safe_load(text)
        trigger = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
        assert set(trigger["workflow_dispatch"]["inputs"]) == {"pr", "head_sha", "correlation_id"}
        job = workflow["jobs"]["smoke"]
        assert job["runs-on"] == ["self-hosted", "linux", "gpu"]
        assert "${{ inputs.correlation_id }}" in workflow["run-name"]
        steps = {step["name"]: step for step in job["steps"]}
        assert steps["Check out the commit under test"]["with"]["ref"] == "${{ inputs.head_sha }}"
        assert steps["Upload the report"]["with"]["name"] == "smoke-report-${{ inputs.correlation_id }}"
    assert "\non:\n  workflow_dispatch:\n    inputs:\n" in text
    for name in ("pr", "head_sha", "correlation_id"):
        assert f"\n      {name}:\n" in text
    assert "    runs-on: [self-hosted, linux, gpu]\n" in text
    assert next(line for line in text.splitlines() if line.startswith("run-name:")).count("inputs.correlation_id") == 1
    assert "          ref: ${{ inputs.head_sha }}\n" in text
    assert "smoke run\n          --report smoke-report.json\n" in text
    assert "uses: actions/upload-artifact@v4" in text
    assert "          name: smoke-report-${{ inputs.correlation_id }}\n" in text
    assert "\t" not in text


# --- on a GPU -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory):
    """One full run on the GPU, build outputs kept so later tests can use the compiled canary."""
    if not HAS_GPU:
        pytest.skip("no working nvidia-smi")
    work = tmp_path_factory.mktemp("gpu-run")
    returncode = main(
        ["run", "--report", str(work / "report.json"), "--build-dir", str(work / "build"), "--require-gpu"]
    )
    return returncode, json.loads((work / "report.json").read_text())


@pytest.mark.gpu
@needs_gpu
def test_good_host_runs_the_kernel_on_the_gpu(contract):
    if contract.kernel != "cuda":
        pytest.skip("no nvcc")
    combination = try_combination(GOOD_WAY, _host(contract, GOOD_WAY), contract.library, run_kernel=True)
    assert combination.loaded and combination.ran is True
    assert combination.message == "ran: kernel returned 12 for aoti_torch_dtype_float32() = 6 (expected 12)"


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("way", BAD_WAYS, ids=lambda way: way.label)
def test_bad_hosts_fail_at_dlopen_on_a_gpu_too(contract, way):
    combination = try_combination(way, _host(contract, way), contract.library, run_kernel=True)
    assert (combination.loaded, combination.ran) == (False, None)
    assert combination.message == f"{contract.library}: undefined symbol: {SHIM_SYMBOL}"


@pytest.mark.gpu
@needs_gpu
def test_full_run_on_the_gpu_proves_the_contract_and_compiles_the_canary(gpu_report):
    returncode, report = gpu_report
    statuses = {stage["name"]: stage["status"] for stage in report["stages"]}
    assert statuses["doctor"] == statuses["link-contract"] == "passed", report["stages"][:2]
    assert report["link_contract"]["combinations"][3]["ran"] is True
    if not report["machine"]["torch"]["cuda_available"]:
        pytest.skip("PyTorch with CUDA is not importable here")
    assert statuses["canary"] == "passed", report["stages"][2]["reason"]
    assert report["canary"]["matches_eager"] is True
    assert report["canary"]["max_abs_diff"] <= report["canary"]["tolerance"]["atol"]
    # A wrapper carrying its own libstdc++ crashed aoti_load_package on the H200 (see cxx_runtime.py).
    assert report["canary"]["wrapper_libstdcxx"] == "shared"
    needed = report["canary"]["needed_symbols"]
    assert SHIM_SYMBOL in needed and all(name.startswith(SHIM_PREFIX) for name in needed)
    assert returncode == 0 and report["status"] == "passed"


@pytest.mark.gpu
@needs_gpu
def test_contract_host_lacks_most_shims_a_real_canary_needs(gpu_report, contract, tmp_path):
    _, report = gpu_report
    if report["canary"]["wrapper"] is None:
        pytest.skip("no canary wrapper: " + report["stages"][2]["reason"])
    wrapper = CanaryWrapper(Path(report["canary"]["wrapper"]), tuple(report["canary"]["needed_symbols"]))
    config = HostConfig(repo=tmp_path, build_command=None, host=_host(contract, GOOD_WAY), load_args=None)
    outcome = check_host(config, wrapper, canary_reason="")
    assert outcome.status == "failed"
    assert SHIM_SYMBOL not in outcome.details["missing_symbols"]
    assert set(outcome.details["missing_symbols"]) == set(wrapper.needed_symbols) - {
        "aoti_torch_dtype_float32",
        "aoti_torch_dtype_int64",
        "aoti_torch_device_type_cuda",
    }
