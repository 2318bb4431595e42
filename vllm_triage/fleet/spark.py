"""`scan --engine spark`: the scan's two maps (content hash, then `bundle_rows`) run as Spark jobs.

Only the maps move. Discovery, the stat-key and content-hash skips and the manifest stay in
vllm_triage/fleet/scan.py, so a Spark scan and a local one of the same bundles skip the same
bundles and write the same rows. Each Spark partition analyses its bundles with the same
`bundle_rows` and writes its own part files (`part-<scan>-<partition>.parquet`) with the same
`scan.write_rows` (pyarrow, the explicit `fleet/1` schema and its metadata — not Spark's
DataFrame writer, which would retype timestamps and drop the schema key); the driver receives
only (path, run id, status) per bundle and the file names, so rows never cross the driver.

Executors therefore need the bundles and OUT on a filesystem mounted at the same path (always
true in local mode) and vllm-triage installed. pyspark is an optional extra
(`pip install 'vllm-triage[spark]'`), imported only here, only for `--engine spark`; Spark needs a
Java runtime (17+ for pyspark 4).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from vllm_triage.core.errors import ExitCode, TriageError
from vllm_triage.fleet.bundle_row import BundleRows

# Partitions per core for the analysis map: enough that a slow partition does not leave the
# other cores idle at the end, few enough that part files stay large.
PARTITIONS_PER_CORE = 4


class SparkUnavailable(TriageError):
    exit_code = ExitCode.INPUT
    problem_id = "spark-unavailable"


def check_available() -> None:
    """pyspark importable and, unless a Spark gateway already runs (spark-submit, an active
    session), a `java` to start one. Raises SparkUnavailable (exit 4) saying how to install it."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable(
            "--engine spark needs pyspark, which is not installed",
            "pip install 'vllm-triage[spark]' (and a Java runtime: apt-get install default-jre-headless)",
        ) from None
    if _gateway_running():
        return
    if _java() is None:
        raise SparkUnavailable(
            "--engine spark needs a Java runtime (17 or later): no `java` on PATH and no JAVA_HOME",
            "apt-get install default-jre-headless, or set JAVA_HOME",
        )


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() else None
    return shutil.which("java")


def _gateway_running() -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None or "PYSPARK_GATEWAY_PORT" in os.environ


class SparkEngine:
    """A Spark session for one scan, started on first use (a re-scan with nothing to do starts no
    JVM). An active session (a notebook, spark-submit) is used as it is and left running; one
    started here runs `local[jobs]` unless the Spark configuration names a master, and is stopped
    at the end."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._spark: Any = None
        self._owned = False

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._spark is not None and self._owned:
            self._spark.stop()
        self._spark = None

    @property
    def parallelism(self) -> int:
        return self._context().defaultParallelism if self._spark is not None else self.jobs

    def _context(self) -> Any:
        if self._spark is None:
            self._spark, self._owned = _session(self.jobs)
        return self._spark.sparkContext

    def map(self, fn: Callable, items: list, chunksize: int = 1) -> Iterable:
        """fn over items, results in order (scan._map's interface; chunksize is Spark's to choose)."""
        if not items:
            return []
        context = self._context()
        slices = min(len(items), PARTITIONS_PER_CORE * context.defaultParallelism)
        results: list[Any] = context.parallelize(items, slices).map(fn).collect()
        return results

    def analyse(
        self,
        tasks: list[tuple],
        out: Path,
        batch_runs: int,
        redact: Callable[[BundleRows], BundleRows] | None = None,
    ) -> Iterator[tuple[list, list[str]]]:
        """Per partition: ([(path, run id, status)…], part files written). Each partition holds at
        most `batch_runs` bundles, the local scan's batch bound. `redact`: as scan.scan's, applied
        on the executor before the rows are written (it must pickle: a module-level function)."""
        if not tasks:
            return iter(())
        context = self._context()
        slices = max(
            math.ceil(len(tasks) / batch_runs),
            min(len(tasks), PARTITIONS_PER_CORE * context.defaultParallelism),
        )
        scan_id = tasks[0][3]
        write = partial(_partition, out=str(out), scan_id=scan_id, redact=redact)
        return iter(context.parallelize(tasks, slices).mapPartitionsWithIndex(write).collect())


def _session(jobs: int) -> tuple[Any, bool]:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    conf = SparkConf()  # picks up spark-submit's settings (master, executors) when launched by it
    # Executors' Python must be this one (with vllm-triage importable), not the `python3` on PATH;
    # read when the context starts, so set before.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from vllm_triage.fleet.scan import default_jobs

    threads = str(max(1, default_jobs() // max(1, jobs)))
    builder = (
        SparkSession.builder.appName("vllm-triage scan")
        .config("spark.ui.enabled", "false")  # no port 4040 on a CLI run
        .config("spark.ui.showConsoleProgress", "false")
        # One polars thread pool per Python worker, sized to its share (see scan._worker_threads).
        .config("spark.executorEnv.POLARS_MAX_THREADS", os.environ.get("POLARS_MAX_THREADS", threads))
    )
    if not conf.contains("spark.master"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local mode: no network, no warning about it
        builder = (
            builder.master(f"local[{jobs}]")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    # In local mode the Python workers inherit this process's environment, not executorEnv.
    saved = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = saved or threads
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: a missing or too old Java, no memory…
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkUnavailable(
            f"Spark did not start: {first}", "check `java -version` (17 or later)"
        ) from exc
    finally:
        if saved is None:
            os.environ.pop("POLARS_MAX_THREADS", None)
    # Errors only from here on. The JVM's first three lines on stderr (incubator modules, "Setting
    # default log level") come before any setting a Python driver can make takes effect.
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def _partition(
    index: int,
    tasks: Iterable[tuple],
    out: str,
    scan_id: str,
    redact: Callable[[BundleRows], BundleRows] | None = None,
) -> Iterator[tuple[list, list[str]]]:
    """On an executor: analyse this partition's bundles and write its part files. The rules are
    compiled once per partition, as a pool worker compiles them once per process."""
    from vllm_triage.fleet.bundle_row import bundle_rows
    from vllm_triage.fleet.scan import write_rows
    from vllm_triage.pipeline import load_rules

    tasks = list(tasks)
    if not tasks:
        return
    compiled: dict[tuple[str, ...], Any] = {}
    results: list[BundleRows] = []
    for ref, rule_dirs, run_id, _scan, scanned_at in tasks:
        if rule_dirs not in compiled:
            compiled[rule_dirs] = load_rules(list(rule_dirs))
        rows = bundle_rows(
            ref,
            rule_dirs,
            run_id=run_id,
            scan_id=scan_id,
            scanned_at=scanned_at,
            compiled=compiled[rule_dirs],
        )
        results.append(redact(rows) if redact else rows)
    files = write_rows(Path(out), scan_id, index, results)
    yield (
        [(task[0].path, r.run["run_id"], r.run["status"]) for task, r in zip(tasks, results, strict=True)],
        files,
    )
