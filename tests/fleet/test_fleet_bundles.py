"""What a scan counts as one run, and how a run is identified."""

from __future__ import annotations

import os
import shutil

from fleet_factory import make_fleet

from vllm_triage.fleet.bundles import BundleRef, content_hash, discover, stat_key


def _kinds(refs, root):
    return sorted((os.path.relpath(r.path, root), r.kind) for r in refs)


def test_bundles_folders_archives_and_loose_logs(tmp_path):
    make_fleet(tmp_path / "fleet", 8)  # index 6 is written as a .tar.gz
    loose = tmp_path / "fleet" / "pasted"
    loose.mkdir()
    (loose / "run-a.log").write_text("INFO 10-01 08:00:00 [api_server.py:1] vLLM API server version 0.10.2\n")
    (loose / "run-b.log").write_text("INFO 10-01 09:00:00 [api_server.py:1] vLLM API server version 0.10.2\n")
    single = tmp_path / "fleet" / "one-run"
    single.mkdir()
    (single / "server.txt").write_text(
        "(APIServer pid=1) INFO 10-01 08:00:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    )
    (single / "notes.md").write_text("what I did\n")
    (tmp_path / "fleet" / "empty").mkdir()

    kinds = _kinds(discover([str(tmp_path / "fleet")]), tmp_path / "fleet")
    assert ("pasted/run-a.log", "file") in kinds and (
        "pasted/run-b.log",
        "file",
    ) in kinds  # logs only: one run each
    assert ("one-run", "folder") in kinds  # a log sniffed by content, plus notes: one bundle
    assert sum(1 for _, kind in kinds if kind == "archive") == 1
    assert sum(1 for _, kind in kinds if kind == "folder") == 8  # 7 bundle.toml folders + one-run
    assert len(kinds) == 11


def test_a_path_given_twice_is_one_bundle(tmp_path):
    spec = make_fleet(tmp_path, 1, archive_every=0)[0]
    assert len(discover([str(spec.path), str(spec.path.parent)])) == 1


def test_identity_follows_content_not_place(tmp_path):
    spec = make_fleet(tmp_path / "a", 1, archive_every=0)[0]
    copy = tmp_path / "b" / "copy"
    shutil.copytree(spec.path, copy)
    original, copied = BundleRef(str(spec.path), "folder"), BundleRef(str(copy), "folder")
    assert content_hash(original) == content_hash(copied)
    before = stat_key(copied)
    (copy / "vllm.log").write_text((copy / "vllm.log").read_text() + "more\n")
    assert content_hash(original) != content_hash(copied)
    assert stat_key(copied) != before
    (copy / ".DS_Store").write_bytes(b"junk")  # never part of a bundle
    assert content_hash(copied) == content_hash(BundleRef(str(copy), "folder"))
