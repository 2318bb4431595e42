"""Scan many bundles into the fleet directory: discover, skip what was seen, analyse the rest on
every core, append Parquet parts, record everything in the manifest.

Skipping happens at two levels, cheapest first:
1. stat key (names, sizes, mtimes — no read) equal to the last scan's → unchanged, not opened;
2. content hash already in the manifest → the same run under another path (copied, renamed,
   touched): recorded, not analysed again.
Only then is a bundle analysed. A bundle that fails is a run with status "error"; the scan goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from vllm_triage import __version__
from vllm_triage.errors import InputError
from vllm_triage.fleet import store
from vllm_triage.fleet.bundle_row import BundleRows, bundle_rows
from vllm_triage.fleet.bundles import BundleRef, content_hash, discover, stat_key
from vllm_triage.fleet.schema import SCHEMA_VERSION, TABLES

# Runs per Parquet part: bounds the rows held in memory, and how much a killed scan loses.
BATCH_RUNS = 2000

Progress = Callable[[int], None]  # called with the number of bundles just finished


@dataclass
class ScanStats:
    scan_id: str
    out_dir: str
    bundles: int = 0  # found under the paths
    unchanged: int = 0  # skipped: same stat key as the last scan
    duplicates: int = 0  # skipped: content already scanned (under this or another path)
    analysed: int = 0
    unreadable: int = 0  # analysed, but the bundle could not be read or parsed (status "error")
    jobs: int = 1
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION, **asdict(self)}


def default_jobs() -> int:
    """Every core this process may use (sched_getaffinity respects cgroup/taskset limits)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def scan(
    paths: list[str],
    out_dir: str,
    jobs: int | None = None,
    rule_dirs: tuple[str, ...] = (),
    force: bool = False,
    progress: Progress | None = None,
    on_total: Callable[[int], None] | None = None,
    batch_runs: int = BATCH_RUNS,
) -> ScanStats:
    """Scan `paths` into `out_dir`. `on_total(n)` is told how many bundles need work (for a
    progress bar) before `progress(k)` calls start."""
    started = time.perf_counter()
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("out-unwritable", f"cannot create --out {out}: {exc.strerror or exc}") from exc
    jobs = jobs or default_jobs()
    _preflight(rule_dirs)
    lock = store.acquire_lock(out)
    try:
        manifest = store.load_manifest(out)
        scanned_at = datetime.now(timezone.utc)
        stats = ScanStats(scan_id=store.new_scan_id(scanned_at), out_dir=str(out), jobs=jobs)
        refs = discover(paths)
        stats.bundles = len(refs)
        changed, keys = _changed(refs, manifest, force, stats)
        if on_total:
            on_total(len(changed))
        with _executor(jobs, len(changed)) as pool:
            to_analyse = _new_content(changed, keys, manifest, force, stats, pool, progress)
            _analyse(
                to_analyse, keys, manifest, stats, pool, progress, out, rule_dirs, scanned_at, batch_runs
            )
        stats.seconds = round(time.perf_counter() - started, 3)
        manifest["scans"].append(
            {
                "scan_id": stats.scan_id,
                "at": scanned_at.isoformat(),
                "tool_version": __version__,
                "paths": [str(Path(p).resolve()) for p in paths],
                "force": force,
                **{k: v for k, v in asdict(stats).items() if k not in ("scan_id", "out_dir")},
            }
        )
        store.save_manifest(out, manifest)
        return stats
    finally:
        lock.unlink(missing_ok=True)


def _preflight(rule_dirs: tuple[str, ...]) -> None:
    """Rules and catalogue must load before any bundle is analysed: a broken rule file would
    otherwise be recorded as a thousand failed runs, and those would be skipped as unchanged by
    the next scan. Raises RuleError (exit 4)."""
    from vllm_triage.fleet import known_issues
    from vllm_triage.pipeline import load_rules

    load_rules(list(rule_dirs))
    known_issues.load(tuple(rule_dirs))


def _changed(
    refs: list[BundleRef], manifest: dict, force: bool, stats: ScanStats
) -> tuple[list[BundleRef], dict[str, str]]:
    changed, keys = [], {}
    for ref in refs:
        try:
            keys[ref.path] = stat_key(ref)
        except OSError:
            keys[ref.path] = ""  # unreadable: let the analysis record why
        seen = manifest["paths"].get(ref.path)
        if (
            not force
            and seen
            and keys[ref.path]
            and seen.get("stat") == keys[ref.path]
            and seen.get("run_id") in manifest["runs"]
        ):
            stats.unchanged += 1
            continue
        changed.append(ref)
    return changed, keys


def _new_content(changed, keys, manifest, force, stats, pool, progress) -> list[tuple[BundleRef, str | None]]:
    """Hash the changed bundles (in parallel: hashing reads every byte) and drop known content."""
    todo: list[tuple[BundleRef, str | None]] = []
    this_scan: set[str] = set()
    for ref, hashed in zip(changed, _map(pool, _hash_one, changed), strict=True):
        run_id = hashed[0] if hashed else None
        if run_id and ((not force and run_id in manifest["runs"]) or run_id in this_scan):
            stats.duplicates += 1
            manifest["paths"][ref.path] = {"stat": keys[ref.path], "run_id": run_id}
            if progress:
                progress(1)
            continue
        if run_id:
            this_scan.add(run_id)
        todo.append((ref, run_id))
    return todo


def _analyse(todo, keys, manifest, stats, pool, progress, out, rule_dirs, scanned_at, batch_runs) -> None:
    batch: dict[str, list[dict[str, Any]]] = {table: [] for table in TABLES}
    part = 0

    def flush() -> None:
        nonlocal part
        if not batch["runs"]:
            return
        for table in TABLES:
            name = store.write_part(out, table, stats.scan_id, part, batch[table])
            if name:
                stats.files.append(name)
            batch[table] = []
        part += 1
        # The manifest follows every flush, so a killed scan keeps what it wrote.
        store.save_manifest(out, manifest)

    tasks = [(ref, tuple(rule_dirs), run_id, stats.scan_id, scanned_at) for ref, run_id in todo]
    for (ref, _, _, _, _), rows in zip(tasks, _map(pool, _rows_one, tasks), strict=True):
        run = rows.run
        stats.analysed += 1
        if run["status"] != "ok":
            stats.unreadable += 1
        for table in TABLES:
            batch[table].extend(rows.rows(table))
        manifest["paths"][ref.path] = {"stat": keys[ref.path], "run_id": run["run_id"]}
        manifest["runs"][run["run_id"]] = {
            "scan_id": stats.scan_id,
            "status": run["status"],
            "path": ref.path,
        }
        if progress:
            progress(1)
        if len(batch["runs"]) >= batch_runs:
            flush()
    flush()


# Module-level functions so a spawned worker process can import them by name.
def _hash_one(ref: BundleRef) -> tuple[str, int] | None:
    try:
        return content_hash(ref)
    except OSError:
        return None


def _rows_one(task: tuple) -> BundleRows:
    ref, rule_dirs, run_id, scan_id, scanned_at = task
    return bundle_rows(ref, rule_dirs, run_id=run_id, scan_id=scan_id, scanned_at=scanned_at)


class _Inline:
    """jobs=1: run in this process (no pickling, debuggable, and tests can count calls)."""

    def map(self, fn, items, chunksize: int = 1) -> Iterator:
        return map(fn, items)

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *exc) -> None:
        return None


def _executor(jobs: int, work: int) -> Executor | _Inline:
    if jobs <= 1 or work <= 1:
        return _Inline()
    import multiprocessing

    # spawn, not fork: polars' thread pool is already running in this process, and a forked
    # child can inherit its locks held (polars warns about exactly this).
    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))


def _map(pool: Executor | _Inline, fn: Callable, items: list) -> Iterable:
    # Small chunks keep both cores busy to the end; bigger ones cut pickling overhead on many
    # tiny bundles.
    chunksize = max(1, min(16, len(items) // (8 * max(1, getattr(pool, "_max_workers", 1)))))
    return pool.map(fn, items, chunksize=chunksize)
