"""The on-disk cache of parsed rule files and pattern literals: reused, keyed by content, never
in the way (unwritable, corrupt, shared with other users)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from vllm_triage.core import cache
from vllm_triage.engine.rules import load


@pytest.fixture
def cache_at(tmp_path, monkeypatch):
    def use(path: Path) -> Path:
        monkeypatch.setenv("VLLM_TRIAGE_CACHE_DIR", str(path))
        monkeypatch.delenv("VLLM_TRIAGE_NO_CACHE", raising=False)
        cache._CHECKED.clear()
        return path

    yield use
    cache._CHECKED.clear()


def test_a_parsed_file_is_stored_and_read_back(tmp_path, cache_at) -> None:
    directory = cache_at(tmp_path / "cache")
    toml = tmp_path / "data.toml"
    toml.write_text('[[rule]]\nid = "a"\npattern = "x"\n', encoding="utf-8")
    first = cache.load_toml(toml)
    entries = list(directory.glob("toml-*.pickle"))
    assert len(entries) == 1
    assert cache.load_toml(toml) == first == {"rule": [{"id": "a", "pattern": "x"}]}
    # An edited file is another key: the old entry is never read for it.
    toml.write_text('[[rule]]\nid = "b"\npattern = "x"\n', encoding="utf-8")
    assert cache.load_toml(toml)["rule"][0]["id"] == "b"
    assert len(list(directory.glob("toml-*.pickle"))) == 2


def test_the_cached_value_is_what_is_returned(tmp_path, cache_at) -> None:
    # Proof that the second read comes from the cache: a planted entry under the file's key wins.
    directory = cache_at(tmp_path / "cache")
    toml = tmp_path / "data.toml"
    toml.write_text("x = 1\n", encoding="utf-8")
    cache.load_toml(toml)
    (entry,) = directory.glob("toml-*.pickle")
    entry.write_bytes(pickle.dumps({"x": 2}))
    assert cache.load_toml(toml) == {"x": 2}


def test_a_corrupt_entry_is_recomputed(tmp_path, cache_at) -> None:
    directory = cache_at(tmp_path / "cache")
    toml = tmp_path / "data.toml"
    toml.write_text("x = 1\n", encoding="utf-8")
    cache.load_toml(toml)
    (entry,) = directory.glob("toml-*.pickle")
    entry.write_bytes(b"\x80\x05 not a pickle")
    assert cache.load_toml(toml) == {"x": 1}
    assert pickle.loads(entry.read_bytes()) == {"x": 1}  # and stored again, whole


def test_an_unusable_directory_means_no_cache_not_an_error(tmp_path, cache_at) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    cache_at(blocker / "cache")  # cannot be made: its parent is a file
    toml = tmp_path / "data.toml"
    toml.write_text("x = 1\n", encoding="utf-8")
    assert cache.cache_dir() is None
    assert cache.load_toml(toml) == {"x": 1}
    assert load().rules  # the rules load all the same


def test_a_directory_others_can_write_is_not_used(tmp_path, cache_at) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    cache_at(shared)
    assert cache.cache_dir() is None


def test_turned_off_by_the_environment(tmp_path, cache_at, monkeypatch) -> None:
    cache_at(tmp_path / "cache")
    monkeypatch.setenv("VLLM_TRIAGE_NO_CACHE", "1")
    assert cache.cache_dir() is None


def test_bad_toml_still_fails_the_same_way(tmp_path, cache_at) -> None:
    import tomllib

    cache_at(tmp_path / "cache")
    toml = tmp_path / "bad.toml"
    toml.write_text("x = = 1\n", encoding="utf-8")
    with pytest.raises(tomllib.TOMLDecodeError):
        cache.load_toml(toml)
    assert not list((tmp_path / "cache").glob("toml-*.pickle"))


def test_rules_and_their_literals_come_back_equal_from_the_cache(tmp_path, cache_at) -> None:
    from vllm_triage.engine import literals
    from vllm_triage.engine.matcher import compile_rules

    cache_at(tmp_path / "cache")
    literals._PRIMED.clear()
    cold = compile_rules(load())
    gate = cold.gate(frozenset())
    assert list((tmp_path / "cache").glob("literals-*.pickle"))
    literals._PRIMED.clear()
    warm = compile_rules(load())
    assert warm.gate(frozenset()) == gate
    assert [r.pattern for r in warm.ruleset.rules] == [r.pattern for r in cold.ruleset.rules]


def _gate_hits(database, data: bytes) -> list[int]:
    from vllm_triage.engine import blocks

    hits: list[int] = []
    database.scan(
        data, match_event_handler=lambda pid, *_: hits.append(pid), scratch=blocks.scratch_for(database)
    )
    return hits


def test_the_hyperscan_gate_is_built_once_and_loaded_after(tmp_path, cache_at) -> None:
    pytest.importorskip("hyperscan")
    from vllm_triage.engine import blocks

    directory = cache_at(tmp_path / "cache")
    line = b"ERROR 05-01 10:00:01 [core.py:1] RuntimeError: CUDA error: out of memory\n"
    built = blocks.compile_gate(("CUDA error",), ("out of memory",), False)
    entries = list(directory.glob("hyperscan-gate-*.pickle"))
    assert len(entries) == 1
    loaded = blocks.compile_gate(("CUDA error",), ("out of memory",), False)
    assert _gate_hits(loaded, line) == _gate_hits(built, line) != []
    assert _gate_hits(loaded, b"INFO 05-01 10:00:00 [api_server.py:1] Started server process\n") == []
    # Another gate is another entry; a corrupt entry (another CPU's database) is rebuilt here.
    blocks.compile_gate(("Engine core initialization failed",), (), True)
    assert len(list(directory.glob("hyperscan-gate-*.pickle"))) == 2
    entries[0].write_bytes(pickle.dumps(b"not a hyperscan database"))
    rebuilt = blocks.compile_gate(("CUDA error",), ("out of memory",), False)
    assert _gate_hits(rebuilt, line) == _gate_hits(built, line)
