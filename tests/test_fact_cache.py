"""The one fact cache: a review memo over a bounded, content-addressed store shared by threads
and processes; facts derived while a blob was missing are never kept."""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import pickle
import random
from pathlib import Path

from bot.diff import ChangeSet
from bot.render.json import render_json
from bot.store.disk import DiskStore
from bot.store.evaluations import EvaluationCache
from bot.store.memo import FactCache, reviewing
from bot.tree import FileTree, memory_tree
from fixtures.cases import CASES, build_case_repository
from pr_check.review import review_repository, review_trees


def _comparable(report) -> list:
    """A report's findings as plain data (timings and cache statistics left out)."""
    return render_json(report)["findings"]


def test_the_store_keeps_values_by_key_and_survives_a_new_instance(tmp_path):
    DiskStore(tmp_path).put("a", {"x": (1, 2)})
    again = DiskStore(tmp_path)
    cache = FactCache(again)
    assert cache.fact("n", "k", lambda: "computed") == "computed"
    assert again.get("a") == {"x": (1, 2)}
    assert FactCache(DiskStore(tmp_path)).fact("n", "k", lambda: "other", persist=True) == "other"
    assert FactCache(DiskStore(tmp_path)).fact("n", "k", lambda: "third", persist=True) == "other"


def test_the_store_stays_under_its_bound_and_evicts_the_least_recently_used(tmp_path):
    bound = 200_000
    store = DiskStore(tmp_path, bound=bound)
    kept = random.Random(-1).randbytes(10_000)  # random bytes: compression does not shrink them
    store.put("kept", kept)
    for index in range(100):
        store.put(f"filler-{index}", random.Random(index).randbytes(10_000))
        store.get("kept")  # used all along: the last to go
        assert store.info().bytes <= bound
    info = store.info()
    assert info.bound == bound and 0 < info.entries < 100
    assert store.get("kept") == kept
    assert FactCache(store).load("x", "y") is None
    store.clean()
    assert store.info().entries == 0 and store.info().bytes == 0


def test_a_large_repetitive_value_is_stored_compressed_and_read_back_equal(tmp_path):
    """Pickled graphs repeat their strings: the store keeps them in a fraction of their size."""
    value = {f"//backends/cuda/runtime:target_{i}": ("cuda", "//extension/tensor:tensor", i) for i in range(2_000)}
    store = DiskStore(tmp_path, bound=1 << 20)
    store.put("graph", value)
    assert store.info().bytes < len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) / 4
    assert DiskStore(tmp_path, bound=1 << 20).get("graph") == value
    store.put("small", "v" * 100)  # under a disk block: stored as it is
    assert DiskStore(tmp_path).get("small") == "v" * 100


def test_info_counts_entries_and_bytes(tmp_path):
    store = DiskStore(tmp_path, bound=1 << 20)
    for index in range(5):
        store.put(str(index), "v" * 100)
    info = store.info()
    assert (info.entries, info.bound) == (5, 1 << 20)
    assert info.bytes >= 5 * 100


def test_threads_writing_the_same_keys_never_collide(tmp_path):
    store = DiskStore(tmp_path, bound=1 << 20)

    def write(worker: int) -> None:
        for round_ in range(200):
            store.put(f"key-{round_ % 7}", (worker, round_, "x" * 1000))
            value = store.get(f"key-{round_ % 7}")
            assert value is not None and len(value) == 3

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))
    assert store.info().entries == 7
    assert not list(tmp_path.rglob("*.tmp"))


def _missing_then_present_tree(files: dict[str, str], hidden: str, present: bool) -> FileTree:
    """A tree whose blob for `hidden` the object store does not have (yet)."""
    full = memory_tree(files)
    entries = {path: full.entry(path) for path in full.paths()}
    hidden_blob = full.blob_id(hidden)

    def read(blobs):
        found = {}
        for blob in blobs:
            data = full.read_text_by_blob(blob)
            found[blob] = None if (blob == hidden_blob and not present) or data is None else data.encode()
        return found

    return FileTree(entries, read, revision="partial")


BUCKCONFIG = "[repositories]\n  root = .\n"


def test_a_review_after_the_missing_blob_arrives_sees_it(tmp_path):
    files = {
        ".buckconfig": BUCKCONFIG,
        "lib/defs.bzl": "def lib(name):\n    native.cxx_library(name = name, srcs = [name + '.cpp'])\n",
        "lib/BUCK": 'load(":defs.bzl", "lib")\nlib("core")\n',
        "lib/core.cpp": "int core() { return 0; }\n",
    }
    empty = memory_tree({})

    def oss_targets(present: bool) -> tuple[set[str], int]:
        cache = EvaluationCache(tmp_path)
        tree = _missing_then_present_tree(files, "lib/defs.bzl", present)
        with reviewing(cache.facts):
            from bot.snapshot import BuildModel

            graph = BuildModel(tree, cache=cache).cell("oss")
        return set(graph.targets), len(graph.errors)

    assert oss_targets(present=False) == (set(), 1)  # the load fails while the blob is missing
    assert oss_targets(present=True) == ({"//lib:core"}, 0)
    # And the review with the blob present was stored: a third review reads it back.
    assert oss_targets(present=True) == ({"//lib:core"}, 0)
    assert (
        review_trees(empty, memory_tree(files), ChangeSet(()), checks=(), cache=EvaluationCache(tmp_path)).findings
        == ()
    )


def test_one_blob_a_partial_clone_lacks_spoils_only_its_own_file_facts(tmp_path):
    # ExecuTorch's mirror lacks its large tokenizer files: the macro table of every other file
    # is still kept, and the next review reads it back, computing again only the missing one.
    from bot.facts import macro_table
    from bot.snapshot import BuildModel

    files = {
        "a/gate.h": "#ifdef ET_USE_THREADPOOL\n#endif\n",
        "a/BUCK": 'cxx_library(name = "a", exported_preprocessor_flags = ["-DET_USE_THREADPOOL"])\n',
        "weights/tokenizer.json": '{"vocab": "ET_USE_THREADPOOL"}\n',
    }
    scanned: list[str] = []
    scan_file = macro_table.scan_file

    def counting(path, data):
        scanned.append(path)
        return scan_file(path, data)

    def table() -> dict:
        tree = _missing_then_present_tree(files, "weights/tokenizer.json", present=False)
        with reviewing(FactCache(DiskStore(tmp_path))):
            return dict(macro_table.file_macros(BuildModel(tree)))

    macro_table.scan_file = counting
    try:
        first = table()
        assert sorted(scanned) == sorted(files)
        scanned.clear()
        assert table() == first
    finally:
        macro_table.scan_file = scan_file
    assert scanned == ["weights/tokenizer.json"]
    assert first["a/gate.h"].tested == (("ET_USE_THREADPOOL", 1),)
    assert first["weights/tokenizer.json"].mentioned == ()


FIXTURE_CASES = sorted(CASES)[:4]


def _review_case(arguments: tuple[str, str, str, str]) -> list:
    repo, base, head, cache_dir = arguments
    return _comparable(review_repository(repo, base, head, cache_dir=Path(cache_dir)))


def test_eight_threads_and_two_processes_share_one_cache_directory(tmp_path):
    jobs = []
    for case in FIXTURE_CASES:
        repo, base, head = build_case_repository(case, tmp_path / case)
        jobs.append((str(repo), base, head))
    serial = {job: _review_case((*job, str(tmp_path / "serial-cache"))) for job in jobs}
    assert all(not any(f["rule"] == "internal-error" for f in found) for found in serial.values())
    shared = str(tmp_path / "shared-cache")
    work = [(*job, shared) for job in jobs * 4]
    context = multiprocessing.get_context("spawn")
    with (
        concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as processes,
        concurrent.futures.ThreadPoolExecutor(8) as threads,
    ):
        in_processes = [processes.submit(_review_case, item) for item in work]
        in_threads = [threads.submit(_review_case, item) for item in work]
        results = [(item, future.result()) for item, future in zip(work * 2, in_processes + in_threads, strict=True)]
    for (repo, base, head, _cache), found in results:
        assert found == serial[(repo, base, head)]
    assert not list(Path(shared).rglob("*.tmp"))


def test_the_macro_table_of_a_partial_clone_keeps_every_readable_file(tmp_path):
    # ExecuTorch's mirror lacks its LFS tokenizer.json blobs, which the macro table reads as build
    # files: the other files' macros must still be kept, or every review rescans the whole tree.
    from bot.facts import macro_table
    from bot.snapshot import BuildModel

    files = {
        "lib/reduce.h": "#ifdef ET_USE_THREADPOOL\nint f();\n#endif\n",
        "lib/BUCK": 'cxx_library(name = "reduce", exported_preprocessor_flags = ["-DET_USE_THREADPOOL"])\n',
        "weights/tokenizer.json": '{"added_tokens": []}\n',
    }

    def table(hidden: tuple[str, ...]):
        full = memory_tree(files)
        gone = {full.blob_id(path) for path in hidden}

        def read(blobs):
            return {b: None if b in gone else (full.read_text_by_blob(b) or "").encode() for b in blobs}

        tree = FileTree({path: full.entry(path) for path in full.paths()}, read, revision="partial")
        with reviewing(EvaluationCache(tmp_path).facts):
            return macro_table.file_macros(BuildModel(tree, cache=EvaluationCache(tmp_path)))

    first = table(hidden=("weights/tokenizer.json",))
    # The unreadable file reads as empty (and its entry is not kept); the others give their macros.
    assert first["weights/tokenizer.json"] == macro_table.scan_file("weights/tokenizer.json", b"")
    assert first["lib/reduce.h"] != macro_table.scan_file("lib/reduce.h", b"")
    assert first["lib/BUCK"] != macro_table.scan_file("lib/BUCK", b"")
    # A later review reads the kept facts back: even with reduce.h's blob gone too, its macros are known.
    assert table(hidden=("weights/tokenizer.json", "lib/reduce.h")) == first


def _digest_text(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest() * 4


def _stored_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*.pickle"))


def test_a_batch_differing_in_one_key_reads_the_shared_shards_and_writes_only_the_changed_one(tmp_path):
    # A new tree shares almost every file with the last one: its per-file facts must come from the
    # stored shards of that tree, and the store must grow by what changed, not by the whole batch.
    computed: list[str] = []

    def scan(missing: list[str]) -> dict[str, str]:
        computed.extend(missing)
        return {key: _digest_text(key) for key in missing}  # about as large as a file's facts, and as random

    keys = [f"src/file{number}.cpp" for number in range(4000)]
    first = FactCache(DiskStore(tmp_path)).many("per-file", keys, scan, persist=True)
    first_bytes = _stored_bytes(tmp_path)
    computed.clear()
    changed = [*keys[:-1], "src/renamed.cpp"]
    second = FactCache(DiskStore(tmp_path)).many("per-file", changed, scan, persist=True)
    assert computed == ["src/renamed.cpp"]
    assert second == {**{key: first[key] for key in keys[:-1]}, "src/renamed.cpp": _digest_text("src/renamed.cpp")}
    # The new key's own entry and its shard (about one in 32 of the keys): not the 4,000 again.
    assert _stored_bytes(tmp_path) - first_bytes < first_bytes / 8
    computed.clear()
    assert FactCache(DiskStore(tmp_path)).many("per-file", changed, scan, persist=True) == second
    assert computed == []
