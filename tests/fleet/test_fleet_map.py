"""The distributed path in miniature: bundle_rows mapped over bundle paths by an executor (what a
Spark or Ray job does per partition), rows assembled with the same schema, written and read back.
It must give the same rows as `scan`. Spark itself runs in test_fleet_spark.py (when pyspark and
Java are there); this one needs neither, and covers what a hand-written map (Ray) relies on."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import polars as pl
import pyarrow.parquet as pq

from vllm_triage.fleet.bundle_row import bundle_rows
from vllm_triage.fleet.bundles import discover
from vllm_triage.fleet.schema import TABLES, to_table
from vllm_triage.fleet.store import read_tables


def test_map_over_paths_gives_the_same_rows_as_scan(scanned_fleet, tmp_path):
    paths = [ref.path for ref in discover([str(scanned_fleet.root)])][:8]
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(bundle_rows, paths))
    out = tmp_path / "mapped"
    for table in TABLES:
        rows = [row for result in results for row in result.rows(table)]
        (out / table).mkdir(parents=True)
        pq.write_table(to_table(table, rows), out / table / "part-0.parquet")

    mapped = pl.read_parquet(str(out / "runs" / "*.parquet"))
    scanned = read_tables(scanned_fleet.out)["runs"].filter(pl.col("source_path").is_in(paths))
    volatile = ["scan_id", "scanned_at"]
    assert mapped.drop(volatile).sort("run_id").equals(scanned.drop(volatile).sort("run_id"))
    mapped_knobs = pl.read_parquet(str(out / "knobs" / "*.parquet")).drop("scan_id")
    scanned_knobs = read_tables(scanned_fleet.out)["knobs"].filter(
        pl.col("run_id").is_in(mapped["run_id"].to_list())
    )
    assert mapped_knobs.sort("run_id", "kind", "name").equals(
        scanned_knobs.drop("scan_id").sort("run_id", "kind", "name")
    )
