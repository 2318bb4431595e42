"""The fleet directory: Parquet parts per table, a manifest of what was scanned, a lock.

Layout (docs/fleet.md):

    OUT/manifest.json                 what every scan saw: bundle paths → stat key and run id
    OUT/runs/part-<scan>-<n>.parquet  one file per scan batch per table; never rewritten
    OUT/findings/part-<scan>-<n>.parquet
    OUT/knobs/part-<scan>-<n>.parquet

A later scan only adds part files and rewrites the manifest (atomically), so readers can glob a
table's folder at any time. A part file appears under its final name only once complete.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllm_triage.core.errors import ExitCode, InputError, TriageError
from vllm_triage.fleet.schema import SCHEMA_VERSION, TABLES, to_table

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "vllm-triage.fleet-manifest/1"
LOCK = ".scan.lock"


class FleetLocked(TriageError):
    exit_code = ExitCode.INPUT
    problem_id = "fleet-dir-locked"


def new_scan_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def empty_manifest() -> dict[str, Any]:
    return {"schema": MANIFEST_SCHEMA, "table_schema": SCHEMA_VERSION, "scans": [], "paths": {}, "runs": {}}


def load_manifest(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    if not path.exists():
        return empty_manifest()
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError("bad-fleet-manifest", f"{path} cannot be read ({exc})") from exc
    if manifest.get("schema") != MANIFEST_SCHEMA:
        raise InputError(
            "bad-fleet-manifest", f"{path} is not a vllm-triage fleet manifest ({manifest.get('schema')!r})"
        )
    return manifest


def save_manifest(out: Path, manifest: dict[str, Any]) -> None:
    tmp = out / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str), encoding="utf-8")
    os.replace(tmp, out / MANIFEST)


def acquire_lock(out: Path) -> Path:
    """One scan at a time per directory: two would each think a bundle is new."""
    lock = out / LOCK
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if _stale(lock):
                lock.unlink(missing_ok=True)
                continue
            raise FleetLocked(
                f"{out} is being written by another scan ({lock})",
                "wait for it, or remove the lock if that scan died",
            ) from None
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return lock
    raise FleetLocked(f"cannot take {lock}")


def _stale(lock: Path) -> bool:
    try:
        pid = int(lock.read_text().strip() or 0)
    except (OSError, ValueError):
        return True
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)  # signal 0: does the process exist (on this machine)?
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def write_part(out: Path, table: str, scan_id: str, part: int, rows: list[dict[str, Any]]) -> str | None:
    """Write one batch of a table; returns the file name relative to OUT (None when no rows)."""
    import pyarrow.parquet as pq

    if not rows:
        return None
    folder = out / table
    folder.mkdir(parents=True, exist_ok=True)
    name = f"part-{scan_id}-{part:04d}.parquet"
    # The temporary name is the writer's own: a retried or speculative Spark task may write the
    # same part at the same time, and each must rename a complete file of its own.
    tmp = folder / f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    pq.write_table(to_table(table, rows), tmp, compression="zstd")
    os.replace(tmp, folder / name)
    return f"{table}/{name}"


def read_tables(out: str | Path) -> dict[str, Any]:
    """The three tables as polars DataFrames, each run once: when a bundle was re-analysed
    (`scan --force`), its latest scan wins, and findings/knobs follow that choice."""
    import polars as pl

    from vllm_triage.fleet.schema import SCHEMAS

    out = Path(out)
    if not (out / MANIFEST).exists() and not (out / "runs").is_dir():
        raise InputError(
            "not-a-fleet-dir", f"{out} holds no fleet scan", "run `vllm-triage scan PATH… -o DIR` first"
        )
    frames: dict[str, Any] = {}
    for table in TABLES:
        files = sorted((out / table).glob("*.parquet")) if (out / table).is_dir() else []
        if files:
            frames[table] = pl.read_parquet([str(f) for f in files])
        else:
            frames[table] = pl.from_arrow(SCHEMAS[table].empty_table())
    runs = frames["runs"].sort("scanned_at").unique(subset=["run_id"], keep="last", maintain_order=True)
    kept = runs.select("run_id", "scan_id")
    frames["runs"] = runs
    for table in ("findings", "knobs"):
        frames[table] = frames[table].join(kept, on=["run_id", "scan_id"], how="semi")
    return frames
