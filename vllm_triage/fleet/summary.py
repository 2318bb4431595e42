"""The fleet summary: which failures, how often, since when, where (nodes, drivers, images), and
whether upstream knows them. One polars pass over the `runs` table; rendering is the templates'.

Times: a run is "seen" at its start (bundle.toml `started`, else the container's start, else the
bundle's mtime — `started_source` says which), or at its scan when none is known.
"""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # polars is imported where it is used (start-up time)
    import polars as pl

from vllm_triage.analysis import known_issues
from vllm_triage.core.errors import InputError
from vllm_triage.fleet.store import read_tables

SUMMARY_SCHEMA = "vllm-triage.fleet-summary/1"
# --by name → runs column.
GROUPINGS = {
    "signature": "signature_hash",
    "phase": "phase",
    "category": "category",
    "driver": "host_driver",
    "image": "image_ref",
    "node": "node",
}
MAX_LISTED = 8  # nodes/drivers/images named per signature; the count says how many more


def parse_since(text: str | None) -> datetime | None:
    """YYYY-MM-DD or an ISO 8601 time; a date means its midnight UTC."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(text.strip()), datetime.min.time())
        except ValueError as exc:
            raise InputError(
                "bad-date", f"--since {text!r} is not a date", "use YYYY-MM-DD or an ISO 8601 time"
            ) from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def summarise(
    out_dir: str, by: str = "signature", since: datetime | None = None, top: int = 50
) -> dict[str, Any]:
    import polars as pl

    if by not in GROUPINGS:
        raise InputError("bad-grouping", f"--by {by!r} is not one of {', '.join(GROUPINGS)}")
    runs = read_tables(out_dir)["runs"].with_columns(seen=pl.coalesce("started_at", "scanned_at"))
    failed = runs.filter(pl.col("failed").fill_null(False))
    signatures = _signatures(failed)
    result: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA,
        "out_dir": str(out_dir),
        "by": by,
        "totals": _totals(runs),
        "signatures": signatures[:top],
        "signature_count": len(signatures),
        "groups": signatures[:top] if by == "signature" else _groups(runs, GROUPINGS[by]),
        "since": since.isoformat() if since else None,
        "new_signatures": [s for s in signatures if since and s["first_seen"] and s["first_seen"] >= since]
        if since
        else [],
        "unreadable": runs.filter(pl.col("status") == "error")
        .select("source_path", "error_id", "error_message")
        .sort("source_path")
        .to_dicts(),
    }
    return result


def _totals(runs: pl.DataFrame) -> dict[str, Any]:
    import polars as pl

    counts = dict(runs.group_by("verdict").len().iter_rows())
    return {
        "runs": runs.height,
        "failed": counts.get("failed", 0),
        "hang": counts.get("hang", 0),
        "ok": counts.get("ok", 0),
        "unreadable": counts.get("unreadable", 0),
        "nodes": runs.select(pl.col("node").drop_nulls().n_unique()).item(),
        "first_seen": runs["seen"].min(),
        "last_seen": runs["seen"].max(),
    }


def _signatures(failed: pl.DataFrame) -> list[dict[str, Any]]:
    """One entry per normalised signature: counts, first/last seen, where it appears."""
    import polars as pl

    if failed.height == 0:
        return []
    grouped = (
        failed.group_by("signature_hash")
        .agg(
            pl.col("signature").first(),
            pl.col("category").first(),
            pl.col("message").first(),
            pl.col("phase").mode().first().alias("phase"),
            pl.len().alias("runs"),
            pl.col("seen").min().alias("first_seen"),
            pl.col("seen").max().alias("last_seen"),
            *[
                pl.col(column).drop_nulls().unique().sort().alias(alias)
                for column, alias in (
                    ("node", "nodes"),
                    ("host_driver", "drivers"),
                    ("image_ref", "images"),
                    ("vllm_version", "vllm_versions"),
                    ("gpu_model", "gpu_models"),
                )
            ],
            pl.col("source_path").first().alias("example_path"),
        )
        .sort(["runs", "first_seen"], descending=[True, False])
    )
    out = []
    for row in grouped.to_dicts():
        row["known_issue"] = _known_issue(row)
        out.append(row)
    return out


def _known_issue(row: dict[str, Any]) -> dict[str, Any] | None:
    """The catalogue's best match for a signature, judged against the versions it was seen on:
    reported if at least one of those runs does not already contain the fix (or the version is
    unknown), with how many runs it applies to."""
    versions = row["vllm_versions"] or [None]
    first_error = {"message": row["message"], "category": row["category"]}
    best: dict[str, Any] | None = None
    applies = 0
    for version in versions:
        found = known_issues.best_match(first_error, version)
        if found and (best is None or found["score"] > best["score"]):
            best = found
        applies += bool(found)
    if best is not None:
        best = {**best, "versions_matched": applies, "versions_seen": len(versions)}
    return best


def _groups(runs: pl.DataFrame, column: str) -> list[dict[str, Any]]:
    import polars as pl

    groups: list[dict[str, Any]] = (
        runs.with_columns(pl.col(column).fill_null("(unknown)").alias("key"))
        .group_by("key")
        .agg(
            pl.len().alias("runs"),
            pl.col("failed").fill_null(False).sum().alias("failed"),
            (pl.col("verdict") == "ok").sum().alias("ok"),
            pl.col("signature_hash").drop_nulls().n_unique().alias("signatures"),
            pl.col("signature").drop_nulls().mode().first().alias("top_signature"),
            pl.col("seen").min().alias("first_seen"),
            pl.col("seen").max().alias("last_seen"),
        )
        .sort(["failed", "runs", "key"], descending=[True, True, False])
        .to_dicts()
    )
    return groups
