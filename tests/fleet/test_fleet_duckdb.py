"""The DuckDB example in docs/fleet.md, run as written against a scanned fleet: it must parse, read
the part files where they are, and count what polars counts from the same tables."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from vllm_triage.fleet.store import read_tables

duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (pip install '.[test]')")
DOC = Path(__file__).resolve().parents[2] / "docs" / "fleet.md"


def _doc_query(out: Path) -> str:
    [query] = re.findall(r"```sql\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert "'OUT/runs/*.parquet'" in query
    return query.replace("'OUT/", f"'{out}/").strip().rstrip(";")


def test_the_documented_duckdb_query_counts_what_polars_counts(scanned_fleet):
    rows = duckdb.sql(_doc_query(scanned_fleet.out)).fetchall()
    runs = read_tables(scanned_fleet.out)["runs"].filter(pl.col("failed"))
    expected = (
        runs.group_by("category", "vllm_version")
        .agg(pl.len().alias("runs"), pl.col("node").n_unique().alias("nodes"), pl.col("started_at").min())
        .sort(["runs", "category", "vllm_version"], descending=[True, False, False])
        .head(5)
    )
    assert len(rows) == 5
    assert [(c, v, n, nodes, first) for c, v, n, nodes, first, _ in rows] == list(expected.iter_rows())
    # the known-issue column is the catalogue's match, suppressed where the version has the fix
    by_key = {(c, v): ref for c, v, _, _, _, ref in rows}
    for (category, version), ref in by_key.items():
        refs = set(
            runs.filter((pl.col("category") == category) & (pl.col("vllm_version") == version))[
                "known_issue_ref"
            ]
        )
        assert ref in refs
