"""Scan many bundles into the fleet directory: discover, skip what was seen, analyse the rest on
every core, append Parquet parts, record everything in the manifest.

Skipping happens at two levels, cheapest first:
1. stat key (names, sizes, mtimes — no read) equal to the last scan's → unchanged, not opened;
2. content hash already in the manifest → the same run under another path (copied, renamed,
   touched): recorded, not analysed again.
Only then is a bundle analysed. A bundle that fails is a run with status "error"; the scan goes on.

Two engines map the same per-bundle function (`bundle_rows`) and write the same part files:
`local` (this process, or a pool of spawned processes) and `spark` (vllm_triage/fleet/spark.py:
executors write their partition's parts; this process keeps the manifest). Everything else —
discovery, the skip rules, the manifest — is this module's, whatever the engine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_triage import __version__
from vllm_triage.core.errors import InputError
from vllm_triage.fleet import store
from vllm_triage.fleet.bundle_row import BundleRows, bundle_rows
from vllm_triage.fleet.bundles import BundleRef, content_hash, discover, stat_key
from vllm_triage.fleet.schema import SCHEMA_VERSION, TABLES

if TYPE_CHECKING:
    from vllm_triage.engine.matcher import CompiledRules

ENGINES = ("local", "spark")
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
    engine: str = "local"
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
    engine: str = "local",
    redact: Callable[[BundleRows], BundleRows] | None = None,
) -> ScanStats:
    """Scan `paths` into `out_dir`. `on_total(n)` is told how many bundles need work (for a
    progress bar) before `progress(k)` calls start. `engine` is "local" or "spark" (`jobs` is then
    the local[N] parallelism, unless spark-submit or an active session says where to run).
    `redact(rows)`: what each bundle's rows become before they are written (the command passes the
    bundle redaction's; this layer does not import it)."""
    started = time.perf_counter()
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if engine == "spark":
        from vllm_triage.fleet import spark as spark_engine

        spark_engine.check_available()  # before anything is written: exit 4 with the install line
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("out-unwritable", f"cannot create --out {out}: {exc.strerror or exc}") from exc
    jobs = jobs or default_jobs()
    compiled = _preflight(rule_dirs)
    lock = store.acquire_lock(out)
    try:
        manifest = store.load_manifest(out)
        scanned_at = datetime.now(timezone.utc)
        stats = ScanStats(scan_id=store.new_scan_id(scanned_at), out_dir=str(out), jobs=jobs, engine=engine)
        refs = discover(paths)
        stats.bundles = len(refs)
        changed, keys = _changed(refs, manifest, force, stats)
        if on_total:
            on_total(len(changed))
        book = _Book(out, manifest, keys, stats)
        if engine == "spark":
            with spark_engine.SparkEngine(jobs) as runner:
                to_analyse = _new_content(changed, keys, manifest, force, stats, runner, progress)
                tasks = _tasks(to_analyse, rule_dirs, stats.scan_id, scanned_at)
                for outcomes, files in runner.analyse(tasks, out, batch_runs, redact):
                    for path, run_id, status in outcomes:
                        book.record(path, run_id, status)
                    book.checkpoint(files)
                    if progress:
                        progress(len(outcomes))
                stats.jobs = runner.parallelism
        else:
            with _executor(jobs, len(changed), rule_dirs, compiled) as pool:
                to_analyse = _new_content(changed, keys, manifest, force, stats, pool, progress)
                tasks = _tasks(to_analyse, rule_dirs, stats.scan_id, scanned_at)
                _analyse(tasks, book, pool, progress, batch_runs, redact)
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
        _WORKER_RULES.clear()
        lock.unlink(missing_ok=True)


def _preflight(rule_dirs: tuple[str, ...]) -> CompiledRules:
    """Rules and catalogue must load before any bundle is analysed: a broken rule file would
    otherwise be recorded as a thousand failed runs, and those would be skipped as unchanged by
    the next scan. Raises RuleError (exit 4). Returns the compiled rules (for jobs=1)."""
    from vllm_triage.analysis import known_issues
    from vllm_triage.pipeline import load_rules

    compiled = load_rules(list(rule_dirs))
    known_issues.load(tuple(rule_dirs))
    return compiled


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


def _new_content(
    changed: list[BundleRef],
    keys: dict[str, Any],
    manifest: dict[str, Any],
    force: bool,
    stats: Any,
    pool: Any,
    progress: Progress | None,
) -> list[tuple[BundleRef, str | None]]:
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


class _Book:
    """The manifest and the counts, kept by this process whatever the engine: what each analysed
    bundle became, and a save after every batch of parts so a killed scan keeps what it wrote."""

    def __init__(self, out: Path, manifest: dict, keys: dict[str, str], stats: ScanStats) -> None:
        self.out, self.manifest, self.keys, self.stats = out, manifest, keys, stats

    def record(self, path: str, run_id: str, status: str) -> None:
        self.stats.analysed += 1
        if status != "ok":
            self.stats.unreadable += 1
        self.manifest["paths"][path] = {"stat": self.keys[path], "run_id": run_id}
        self.manifest["runs"][run_id] = {"scan_id": self.stats.scan_id, "status": status, "path": path}

    def checkpoint(self, files: list[str]) -> None:
        self.stats.files.extend(files)
        store.save_manifest(self.out, self.manifest)


Task = tuple  # (BundleRef, rule_dirs, run_id | None, scan_id, scanned_at): small, pickled per bundle


def _tasks(
    todo: list[tuple[BundleRef, str | None]], rule_dirs: tuple[str, ...], scan_id: str, scanned_at: datetime
) -> list[Task]:
    return [(ref, tuple(rule_dirs), run_id, scan_id, scanned_at) for ref, run_id in todo]


def write_rows(out: Path, scan_id: str, part: int, results: list[BundleRows]) -> list[str]:
    """One batch of bundles' rows → one part file per table (none for a table with no rows).
    The only writer of part files, for both engines."""
    names = []
    for table in TABLES:
        name = store.write_part(out, table, scan_id, part, [row for r in results for row in r.rows(table)])
        if name:
            names.append(name)
    return names


def _analyse(
    tasks: list[Task],
    book: _Book,
    pool: Any,
    progress: Progress | None,
    batch_runs: int,
    redact: Callable[[BundleRows], BundleRows] | None = None,
) -> None:
    batch: list[BundleRows] = []
    part = 0
    for task, analysed in zip(tasks, _map(pool, _rows_one, tasks), strict=True):
        rows = redact(analysed) if redact else analysed
        book.record(task[0].path, rows.run["run_id"], rows.run["status"])
        batch.append(rows)
        if progress:
            progress(1)
        if len(batch) >= batch_runs:
            book.checkpoint(write_rows(book.out, book.stats.scan_id, part, batch))
            batch, part = [], part + 1
    if batch:
        book.checkpoint(write_rows(book.out, book.stats.scan_id, part, batch))


# Module-level functions so a spawned worker process can import them by name.
def _hash_one(ref: BundleRef) -> tuple[str, int] | None:
    try:
        return content_hash(ref)
    except OSError:
        return None


# The rules compiled once per process (≈ 8 ms a bundle otherwise, a quarter of a small bundle's
# cost), keyed by the --rules directories; filled by the worker initialiser, or by scan() itself
# for jobs=1, and emptied when that scan ends so a later scan sees edited rule files.
_WORKER_RULES: dict[tuple[str, ...], CompiledRules] = {}


def _init_worker(rule_dirs: tuple[str, ...]) -> None:
    """Runs once in each pool process before its first task: imports, rules, the known-issue
    catalogue, so no bundle pays for them."""
    from vllm_triage.analysis import known_issues
    from vllm_triage.pipeline import load_rules

    _WORKER_RULES[rule_dirs] = load_rules(list(rule_dirs))
    known_issues.load(rule_dirs)


def _rows_one(task: Task) -> BundleRows:
    ref, rule_dirs, run_id, scan_id, scanned_at = task
    return bundle_rows(
        ref,
        rule_dirs,
        run_id=run_id,
        scan_id=scan_id,
        scanned_at=scanned_at,
        compiled=_WORKER_RULES.get(rule_dirs),
    )


class _Inline:
    """jobs=1: run in this process (no pickling, debuggable, and tests can count calls)."""

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], chunksize: int = 1) -> Iterator[Any]:
        return map(fn, items)


@contextmanager
def _executor(
    jobs: int, work: int, rule_dirs: tuple[str, ...], compiled: CompiledRules
) -> Iterator[Executor | _Inline]:
    if jobs <= 1 or work <= 1:
        _WORKER_RULES[tuple(rule_dirs)] = compiled
        yield _Inline()
        return
    import multiprocessing

    # spawn, not fork: polars' thread pool is already running in this process, and a forked
    # child can inherit its locks held (polars warns about exactly this).
    with (
        _worker_threads(jobs),
        ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(tuple(rule_dirs),),
        ) as pool,
    ):
        yield pool


@contextmanager
def _worker_threads(jobs: int) -> Iterator[None]:
    """Each worker's polars thread pool sized to its share of the cores. By default every worker
    starts one thread per core, so J workers run J × cores threads that spin and switch on the
    many small frames of a bundle: measured 5–30 % more CPU per bundle (docs/fleet.md). Spawned
    workers copy the environment when they start, so it is set for the pool's lifetime only, and
    a value the user set is kept."""
    if "POLARS_MAX_THREADS" in os.environ:
        yield
        return
    os.environ["POLARS_MAX_THREADS"] = str(max(1, default_jobs() // jobs))
    try:
        yield
    finally:
        os.environ.pop("POLARS_MAX_THREADS", None)


def _map(pool: Executor | _Inline, fn: Callable, items: list) -> Iterable:
    # Small chunks keep both cores busy to the end; bigger ones cut pickling overhead on many
    # tiny bundles.
    chunksize = max(1, min(16, len(items) // (8 * max(1, getattr(pool, "_max_workers", 1)))))
    return pool.map(fn, items, chunksize=chunksize)
