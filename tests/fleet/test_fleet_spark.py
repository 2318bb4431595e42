"""`scan --engine spark` (Spark local mode) writes the same fleet/1 tables as the local scan.

200 bundles (199 from the fleet factory and one truncated archive) are scanned twice into two
directories, by the local process pool and by Spark `local[2]`; every table must hold the same
rows, apart from the two columns that name the scan itself (`scan_id`, `scanned_at`). Then a
re-scan through Spark must skip what the local scan skips. Skipped, with the reason, when pyspark
or a Java runtime is missing (`pip install '.[spark]'`, `apt-get install default-jre-headless`).

Spark's start-up (a JVM, then one Python worker per core) costs ≈ 5 s on an idle 2-core machine
and 25 s on a loaded one; the module starts one session and every scan here uses it.
"""

from __future__ import annotations

import shutil
import sys

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from fleet_factory import make_fleet, write_corrupt_archive

from vllm_triage.cli import cli
from vllm_triage.fleet import spark as spark_mod
from vllm_triage.fleet.scan import scan
from vllm_triage.fleet.schema import SCHEMA_VERSION, SCHEMAS, TABLES
from vllm_triage.fleet.store import load_manifest

BUNDLES = 200
# Columns that say which scan wrote a row, by nature different between two scans.
RUN_SPECIFIC = ["scan_id", "scanned_at"]


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install '.[spark]')"
    if spark_mod._java() is None:
        return "no Java runtime for Spark (apt-get install default-jre-headless)"
    return None


needs_spark = pytest.mark.skipif(_spark_missing() is not None, reason=_spark_missing() or "")


@pytest.fixture(scope="module")
def spark_session():
    """One local[2] session for the module (an active session is used by `scan` as it is)."""
    session, _ = spark_mod._session(2)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def two_scans(tmp_path_factory, spark_session):
    root = tmp_path_factory.mktemp("spark-fleet")
    make_fleet(root, BUNDLES - 1)
    write_corrupt_archive(root / "gpu-a01" / "interrupted-copy.tar.gz")
    local_out, spark_out = tmp_path_factory.mktemp("local-out"), tmp_path_factory.mktemp("spark-out")
    local = scan([str(root)], str(local_out), jobs=2)
    spark = scan([str(root)], str(spark_out), jobs=2, engine="spark", batch_runs=40)
    return root, local_out, spark_out, local, spark


def _table(out, table: str) -> pl.DataFrame:
    frame = pl.read_parquet(str(out / table / "*.parquet"))
    frame = frame.drop([c for c in RUN_SPECIFIC if c in frame.columns])
    return frame.sort(frame.columns, nulls_last=True)


@needs_spark
def test_spark_scan_writes_the_same_rows_as_the_local_scan(two_scans):
    _, local_out, spark_out, local, spark = two_scans
    assert (spark.engine, spark.bundles, spark.analysed, spark.unreadable) == ("spark", BUNDLES, BUNDLES, 1)
    assert (local.analysed, local.unreadable) == (BUNDLES, 1)
    for table in TABLES:
        mine, theirs = _table(spark_out, table), _table(local_out, table)
        assert mine.height == theirs.height > 0, table
        assert mine.equals(theirs), table
    runs = _table(spark_out, "runs")
    assert runs.height == BUNDLES
    assert set(runs["verdict"]) == {"ok", "failed", "hang", "unreadable"}
    # batch_runs=40 bounds a partition as it bounds a local batch: ≥ 5 parts per table
    assert len(list((spark_out / "runs").glob("part-*.parquet"))) >= BUNDLES // 40


@needs_spark
def test_spark_parts_carry_the_versioned_schema(two_scans):
    _, _, spark_out, _, spark = two_scans
    assert len(spark.files) >= 3
    for name in spark.files:
        table = name.split("/")[0]
        schema = pq.read_schema(spark_out / name)
        assert schema.metadata[b"vllm-triage.schema"].decode() == SCHEMA_VERSION
        assert schema.remove_metadata().equals(SCHEMAS[table].remove_metadata()), name
    assert not list(spark_out.rglob("*.tmp"))


@needs_spark
def test_spark_manifest_matches_the_local_one(two_scans):
    _, local_out, spark_out, _, _ = two_scans
    local, spark = load_manifest(local_out), load_manifest(spark_out)
    assert spark["paths"] == local["paths"]
    assert {k: v["status"] for k, v in spark["runs"].items()} == {
        k: v["status"] for k, v in local["runs"].items()
    }


@needs_spark
def test_spark_rescan_skips_unchanged_and_copied_bundles(two_scans, tmp_path):
    root, _, spark_out, _, _ = two_scans
    out = tmp_path / "out"
    shutil.copytree(spark_out, out)
    parts_before = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}
    unchanged = scan([str(root)], str(out), jobs=2, engine="spark")
    assert (unchanged.unchanged, unchanged.analysed, unchanged.duplicates, unchanged.files) == (
        BUNDLES,
        0,
        0,
        [],
    )
    copy = root / "gpu-z99" / "copied-run"
    shutil.copytree(next(p for p in (root / "gpu-b02").iterdir() if p.is_dir()), copy)
    [new] = make_fleet(tmp_path / "new", 1)
    shutil.copytree(new.path, root / "gpu-z99" / "new-run")
    try:
        again = scan([str(root)], str(out), jobs=2, engine="spark")
    finally:
        shutil.rmtree(root / "gpu-z99")
    assert (again.unchanged, again.duplicates, again.analysed) == (BUNDLES, 1, 1)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet") if p in parts_before} == parts_before
    assert len(load_manifest(out)["scans"]) == 3


def test_engine_spark_without_pyspark_exits_4_with_the_install_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # `import pyspark` raises ImportError
    (tmp_path / "b").mkdir()
    result = CliRunner().invoke(
        cli, ["scan", str(tmp_path / "b"), "-o", str(tmp_path / "out"), "--engine", "spark"]
    )
    assert result.exit_code == 4
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "spark-unavailable" in lines[0]
    assert "pip install 'vllm-triage[spark]'" in lines[0]
    assert not (tmp_path / "out").exists()  # nothing written before the check


@pytest.mark.skipif(
    _spark_missing() == "pyspark is not installed (pip install '.[spark]')", reason="no pyspark"
)
def test_engine_spark_without_java_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_mod, "_gateway_running", lambda: False)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(spark_mod.SparkUnavailable) as raised:
        scan([str(tmp_path)], str(tmp_path / "out"), engine="spark")
    assert raised.value.exit_code == 4
    assert "default-jre-headless" in raised.value.one_line()
