"""scan: a fleet of bundles → Parquet, read back with polars; re-scans skip what did not change."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from fleet_factory import FLEET_SIZE, make_fleet

from vllm_triage.fleet import scan as scan_mod
from vllm_triage.fleet.bundle_row import bundle_rows
from vllm_triage.fleet.schema import SCHEMA_VERSION, SCHEMAS
from vllm_triage.fleet.store import load_manifest, read_tables


def test_every_bundle_is_one_run_and_the_corrupt_one_is_recorded(scanned_fleet):
    stats = scanned_fleet.stats
    assert stats.bundles == FLEET_SIZE + 1
    assert stats.analysed == FLEET_SIZE + 1
    assert stats.unreadable == 1
    runs = read_tables(scanned_fleet.out)["runs"]
    assert runs.height == FLEET_SIZE + 1
    broken = runs.filter(pl.col("status") == "error").row(0, named=True)
    assert broken["source_path"] == str(scanned_fleet.corrupt)
    assert broken["error_id"] == "corrupt-archive"
    assert broken["verdict"] == "unreadable"
    assert "corrupt-archive" in broken["error_message"]


def test_each_run_has_the_phase_and_category_its_scenario_produces(scanned_fleet):
    runs = read_tables(scanned_fleet.out)["runs"].filter(pl.col("status") == "ok")
    specs = scanned_fleet.by_label()
    assert set(runs["label"]) == set(specs)
    for row in runs.iter_rows(named=True):
        spec = specs[row["label"]]
        assert (row["phase"], row["category"]) == (spec.scenario.phase, spec.scenario.category), row["label"]
        assert row["node"] == spec.node
        assert row["started_at"] == spec.started
        assert row["started_source"] == "manifest"
        assert row["vllm_version"] == spec.version
        assert row["image_ref"] == spec.image
        assert row["host_driver"] == spec.driver
        assert row["gpu_model"] == spec.gpu and row["gpu_count"] == 2
        assert row["failed"] is (spec.scenario.category is not None)
        if row["failed"]:
            assert row["signature"].startswith(f"{spec.scenario.category} | ")
            assert len(row["signature_hash"]) == 16
            assert row["first_error_file"] == "vllm.log" or row["first_error_file"].endswith("/vllm.log")


def test_the_fleet_spans_phases_drivers_images_and_nodes(scanned_fleet):
    runs = read_tables(scanned_fleet.out)["runs"]
    assert runs["phase"].drop_nulls().n_unique() >= 6
    assert runs["host_driver"].drop_nulls().n_unique() == 4
    assert runs["node"].drop_nulls().n_unique() == 5
    assert runs["image_ref"].drop_nulls().n_unique() >= 5
    assert runs.filter(pl.col("image_digest").is_not_null()).height > 0
    assert set(runs["verdict"]) == {"ok", "failed", "hang", "unreadable"}


def test_same_failure_on_other_nodes_and_versions_has_one_signature(scanned_fleet):
    runs = read_tables(scanned_fleet.out)["runs"]
    kv = runs.filter(pl.col("category") == "max_seq_len_exceeds_kv_cache")
    assert kv.height >= 6
    assert kv["signature_hash"].n_unique() == 1
    assert kv["node"].n_unique() > 1 and kv["vllm_version"].n_unique() > 1


def test_findings_and_knobs_point_at_their_runs(scanned_fleet):
    tables = read_tables(scanned_fleet.out)
    run_ids = set(tables["runs"]["run_id"])
    findings, knobs = tables["findings"], tables["knobs"]
    assert set(findings["run_id"]) <= run_ids and set(knobs["run_id"]) <= run_ids
    assert findings.filter(pl.col("severity") == "error").height > 0
    root_cause = findings.filter(pl.col("finding_id").str.starts_with("root-cause"))
    assert root_cause["evidence_file"].drop_nulls().str.ends_with("vllm.log").all()
    assert (root_cause["evidence_line"] > 0).all()
    # long format: one row per knob or fact, with provenance
    driver = knobs.filter(pl.col("name") == "host.driver_version")
    assert driver.height == FLEET_SIZE
    assert set(driver["source_file"].str.replace(r"^.*/", "")) == {"nvidia-smi-host.txt"}
    assert set(knobs["kind"]) == {"knob", "fact"}
    args = knobs.filter(pl.col("name") == "arg.tensor_parallel_size")
    assert args.height > 0 and set(args["value"]) == {"2"}


def test_parquet_files_carry_the_schema_version_and_types(scanned_fleet):
    for table, schema in SCHEMAS.items():
        files = sorted((scanned_fleet.out / table).glob("*.parquet"))
        assert files, table
        read = pq.read_schema(files[0])
        assert read.metadata[b"vllm-triage.schema"].decode() == SCHEMA_VERSION
        assert read.remove_metadata().equals(schema.remove_metadata()), table


def test_rescan_reads_no_unchanged_bundle(scanned_fleet, tmp_path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(scanned_fleet.out, out)
    parts_before = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}
    calls = {"rows": 0, "hash": 0}
    real_rows, real_hash = scan_mod.bundle_rows, scan_mod.content_hash

    def counting_rows(*args, **kwargs):
        calls["rows"] += 1
        return real_rows(*args, **kwargs)

    def counting_hash(*args, **kwargs):
        calls["hash"] += 1
        return real_hash(*args, **kwargs)

    monkeypatch.setattr(scan_mod, "bundle_rows", counting_rows)
    monkeypatch.setattr(scan_mod, "content_hash", counting_hash)
    stats = scan_mod.scan([str(scanned_fleet.root)], str(out), jobs=1)  # jobs=1: in this process, countable
    assert (stats.unchanged, stats.analysed, stats.duplicates) == (FLEET_SIZE + 1, 0, 0)
    assert calls == {"rows": 0, "hash": 0}  # not parsed, not even read
    assert stats.files == []
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")} == parts_before
    assert len(load_manifest(out)["scans"]) == 2


def test_new_and_changed_bundles_are_appended_without_rewriting(scanned_fleet, tmp_path):
    root, out = tmp_path / "fleet", tmp_path / "out"
    shutil.copytree(scanned_fleet.root, root)
    shutil.copytree(scanned_fleet.out, out)
    # the scanned paths are recorded absolute: re-point the copy's manifest at the copy
    manifest_text = (out / "manifest.json").read_text().replace(str(scanned_fleet.root), str(root))
    (out / "manifest.json").write_text(manifest_text)
    parts_before = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}

    changed = next(s for s in scanned_fleet.specs if not s.path.name.endswith(".tar.gz"))
    log = root / changed.path.relative_to(scanned_fleet.root) / "vllm.log"
    log.write_text(log.read_text() + "(APIServer pid=1) INFO:     Shutting down\n")
    added = make_fleet(tmp_path / "new", 3)
    for spec in added:
        target = root / "new" / spec.path.relative_to(tmp_path / "new")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(spec.path), target)
    copied = root / "copies" / scanned_fleet.specs[1].label
    shutil.copytree(scanned_fleet.specs[1].path, copied)  # same content elsewhere: the same run

    stats = scan_mod.scan([str(root)], str(out), jobs=1)
    assert stats.analysed == 1 + 3
    assert stats.duplicates == 1
    assert stats.unchanged == FLEET_SIZE + 1 - 1
    assert {p: p.stat().st_mtime_ns for p in parts_before} == parts_before  # old parts untouched
    assert len(list((out / "runs").glob("*.parquet"))) == 2
    runs = read_tables(out)["runs"]
    assert runs.height == FLEET_SIZE + 1 + 1 + 3  # the changed bundle is a new run; its old run stays
    assert runs.filter(pl.col("label") == changed.label).height == 2


def test_force_reanalyses_and_readers_keep_the_latest(scanned_fleet, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(scanned_fleet.out, out)
    one = scanned_fleet.specs[2].path
    stats = scan_mod.scan([str(one)], str(out), jobs=1, force=True)
    assert stats.analysed == 1
    tables = read_tables(out)
    assert tables["runs"].height == FLEET_SIZE + 1  # deduplicated on run_id
    latest = tables["runs"].filter(pl.col("source_path") == str(one))
    assert latest["scan_id"].to_list() == [stats.scan_id]
    assert set(tables["knobs"].filter(pl.col("run_id") == latest["run_id"][0])["scan_id"]) == {stats.scan_id}


def test_bundle_rows_is_pure_and_deterministic(scanned_fleet):
    spec = scanned_fleet.specs[1]
    first, second = bundle_rows(str(spec.path)), bundle_rows(str(spec.path))
    volatile = {"scanned_at"}
    assert {k: v for k, v in first.run.items() if k not in volatile} == {
        k: v for k, v in second.run.items() if k not in volatile
    }
    assert first.findings == second.findings and first.knobs == second.knobs
    assert (
        first.run["run_id"]
        == read_tables(scanned_fleet.out)["runs"].filter(pl.col("label") == spec.label)["run_id"][0]
    )


def test_a_bundle_that_raises_unexpectedly_is_one_failed_run(tmp_path, monkeypatch):
    import vllm_triage.pipeline

    bundle = make_fleet(tmp_path, 1, archive_every=0)[0].path

    def boom(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(vllm_triage.pipeline, "triage", boom)
    rows = bundle_rows(str(bundle))
    assert rows.run["status"] == "error" and rows.run["error_id"] == "internal-error"
    assert "ZeroDivisionError: a bug" in rows.run["error_message"]
    assert rows.run["run_id"] and rows.findings == [] and rows.knobs == []


def test_a_second_scan_of_the_same_dir_is_refused_while_one_runs(tmp_path):
    from vllm_triage.fleet.store import LOCK, FleetLocked

    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(str(__import__("os").getpid()))  # this live process holds it
    with pytest.raises(FleetLocked):
        scan_mod.scan([str(tmp_path)], str(out), jobs=1)


def test_a_stale_lock_of_a_dead_scan_is_taken_over(tmp_path):
    from vllm_triage.fleet.store import LOCK

    src = make_fleet(tmp_path / "src", 2, archive_every=0)
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text("999999999")
    stats = scan_mod.scan([str(s.path) for s in src], str(out), jobs=1)
    assert stats.analysed == 2 and not (out / LOCK).exists()


def test_missing_path_is_an_input_error(tmp_path):
    from vllm_triage.core.errors import InputError

    with pytest.raises(InputError) as raised:
        scan_mod.scan([str(tmp_path / "nope")], str(tmp_path / "out"), jobs=1)
    assert raised.value.problem_id == "missing-path"
    assert not Path(tmp_path / "out" / ".scan.lock").exists()
