"""One schema for `.github/pr-check.toml`: both readers accept every key it lists, refuse every other
key alike, read every key they own (no dead keys), and the README's reference is generated from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Config, parse_config
from bot.config_schema import KEYS, REVIEW, SMOKE_JOB
from bot.errors import ConfigError
from pr_check.generated import regenerate_readme, section_text
from smoke.config import SmokeConfigError, read_host_config

ROOT = Path(__file__).resolve().parents[1]

# A value other than the default for every key, written by hand in TOML; a new key needs one here.
SAMPLE = {
    ("rules", "disable"): '["test-missing"]',
    ("rules", "severity"): '{ "test-missing" = "major" }',
    ("review", "fail_level"): '"minor"',
    ("review", "inline_level"): '"minor"',
    ("buck", "cpu_only_cells"): '["xplat", "fbcode"]',
    ("buck", "cuda_constraint"): '"//constraints:cuda"',
    ("buck", "cuda_external_deps"): '["cuda"]',
    (
        "buck",
        "platforms",
    ): '{ xplat = [{ name = "jetson", constraints = ["ovr_config//os:linux", "ovr_config//cuda:has_cuda"] }] }',
    ("cmake", "profiles"): '["msvc"]',
    ("smoke", "cuda_paths"): '["gpu/"]',
    ("smoke", "host_build"): '"make host"',
    ("smoke", "host"): '"out/host"',
    ("smoke", "host_load_args"): '["--load", "{library}"]',
    ("smoke", "host_archive"): '"out/libshims.a"',
    ("smoke", "host_link_args"): '["-lcudart"]',
}
# The named-table keys are exercised through a profile of the repository's own.
PROFILE = (
    '[cmake]\nprofiles = ["jetson"]\n[cmake.profile.jetson]\ncompiler_id = "GNU"\nplatform = "Linux"\n'
    'cuda = true\nvariables = { CMAKE_SYSTEM_PROCESSOR = "aarch64" }\nprelude = ["tools/cmake/preset/default.cmake"]\n'
)


def _toml(pairs: dict[tuple[str, str], str]) -> str:
    tables: dict[str, list[str]] = {}
    for (table, name), value in pairs.items():
        tables.setdefault(table, []).append(f"{name} = {value}")
    return "".join(f"[{table}]\n" + "\n".join(lines) + "\n" for table, lines in tables.items())


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".github").mkdir(exist_ok=True)
    (tmp_path / ".github" / "pr-check.toml").write_text(text)
    return tmp_path


def test_every_top_level_key_has_a_sample():
    top = {(key.table, key.name) for key in KEYS if "." not in key.table and key.name != "profile"}
    assert top == set(SAMPLE)


def test_both_readers_accept_every_key_of_the_schema(tmp_path):
    text = _toml(SAMPLE) + PROFILE.replace('[cmake]\nprofiles = ["jetson"]\n', "")
    text = text.replace('profiles = ["msvc"]', 'profiles = ["jetson"]')
    config = parse_config(text)
    assert (
        config.cmake_profiles == ("jetson",)
        and config.cmake_defined["jetson"].variables["CMAKE_SYSTEM_PROCESSOR"] == "aarch64"
    )
    host = read_host_config(_write(tmp_path, text))
    assert host.archive == tmp_path / "out/libshims.a" and host.link_args == ("-lcudart",)


@pytest.mark.parametrize(
    "text, error",
    [
        (
            '[smoke]\nworkflow = "gpu-smoke.yml"\n',
            "unknown key smoke.workflow",
        ),  # dead: the App's setting is PR_CHECK_SMOKE_WORKFLOW
        ("[smoke]\ntimeout_minutes = 30\n", "unknown key smoke.timeout_minutes"),  # dead: PR_CHECK_SMOKE_TIMEOUT_S
        ('[rules]\nsilence = ["x"]\n', "unknown key rules.silence"),
        ('[buck]\ncells = ["xplat"]\n', "unknown key buck.cells"),
        ('[cmake.profile.a]\ncompiler = "Clang"\n', "unknown key cmake.profile.a.compiler"),
        ("[typo]\nx = 1\n", "unknown section [typo]"),
        ('[smoke]\nhost_link_args = "-lcudart"\n', "smoke.host_link_args must be a list of strings"),
        ("[review]\nfail_level = 1\n", "review.fail_level must be a string"),
    ],
)
def test_both_readers_refuse_the_same_keys_with_the_same_words(tmp_path, text, error):
    with pytest.raises(ConfigError) as review_error:
        parse_config(text)
    with pytest.raises(SmokeConfigError) as smoke_error:
        read_host_config(_write(tmp_path, text))
    assert error in str(review_error.value) and error in str(smoke_error.value)


@pytest.mark.parametrize("place", sorted(SAMPLE), ids=lambda place: ".".join(place))
def test_every_key_is_read_by_its_reader(tmp_path, place):
    """No dead keys: setting a key changes what its reader returns."""
    [key] = [key for key in KEYS if (key.table, key.name) == place]
    text = _toml({place: SAMPLE[place]})
    if key.reader == REVIEW:
        assert parse_config(text) != Config()
    else:
        assert key.reader == SMOKE_JOB
        assert read_host_config(_write(tmp_path, text)) != read_host_config(tmp_path / "elsewhere")


def test_the_readme_reference_is_generated_from_the_schema():
    readme = (ROOT / "README.md").read_text()
    assert section_text(readme, "config-reference"), "README: the config-reference markers"
    assert regenerate_readme(readme) == readme, "README is stale: run `make generated`"
    reference = section_text(readme, "config-reference")
    assert "| `[smoke]` `host_archive` | string | none | smoke job |" in reference
    assert "| `[smoke]` `cuda_paths` | list of strings |" in reference
    assert "workflow" not in reference
