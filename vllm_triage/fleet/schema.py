"""The fleet's Parquet schema (`vllm-triage.fleet/1`): three tables, one explicit Arrow schema each.

Explicit schemas (not inferred from rows) so that every batch file of a table has the same column
types even when a batch has only nulls in a column, and so that Spark, DuckDB and polars can read
`runs/*.parquet` as one dataset. Documented column by column in docs/fleet.md; a change that
renames, removes or retypes a column bumps SCHEMA_VERSION, adding a nullable column does not.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

SCHEMA_VERSION = "vllm-triage.fleet/1"
TABLES = ("runs", "findings", "knobs")
_TS = pa.timestamp("us", tz="UTC")

RUNS = pa.schema(
    [
        ("run_id", pa.string()),  # content hash of the bundle: the run's identity
        ("scan_id", pa.string()),
        ("scanned_at", _TS),
        ("tool_version", pa.string()),
        ("source_path", pa.string()),
        ("bundle_kind", pa.string()),  # folder | archive | file
        ("bundle_bytes", pa.int64()),
        ("status", pa.string()),  # ok | error (the bundle could not be analysed)
        ("error_id", pa.string()),
        ("error_message", pa.string()),
        ("label", pa.string()),
        ("node", pa.string()),
        ("started_at", _TS),
        ("started_source", pa.string()),  # manifest | container | mtime
        ("model", pa.string()),
        ("vllm_version", pa.string()),
        ("torch_version", pa.string()),
        ("cuda_build", pa.string()),
        ("host_driver", pa.string()),
        ("container_driver", pa.string()),
        ("image_ref", pa.string()),
        ("image_digest", pa.string()),
        ("gpu_model", pa.string()),
        ("gpu_count", pa.int32()),
        ("verdict", pa.string()),  # ok | failed | hang | unreadable
        ("failed", pa.bool_()),
        ("phase", pa.string()),
        ("phase_reason", pa.string()),
        ("ready", pa.bool_()),
        ("last_milestone", pa.string()),
        ("first_missing_milestone", pa.string()),
        ("category", pa.string()),
        ("rule", pa.string()),
        ("first_error_file", pa.string()),
        ("first_error_line", pa.int32()),
        ("first_error_process", pa.string()),
        ("first_error_text", pa.string()),
        ("message", pa.string()),  # normalised first-error message
        ("signature", pa.string()),  # "category | message"
        ("signature_hash", pa.string()),
        ("consequences", pa.int32()),
        ("errors", pa.int32()),  # findings of severity error
        ("warnings", pa.int32()),
        ("known_issue_id", pa.string()),
        ("known_issue_ref", pa.string()),
        ("known_issue_score", pa.float32()),
        ("known_issue_fixed_in", pa.string()),
        ("fingerprint_error", pa.string()),  # the environment could not be read; the triage stands
    ]
)

FINDINGS = pa.schema(
    [
        ("run_id", pa.string()),
        ("scan_id", pa.string()),
        ("finding_id", pa.string()),
        ("severity", pa.string()),  # error | warning | info
        ("message", pa.string()),
        ("advice", pa.string()),
        ("evidence_file", pa.string()),  # the first piece of evidence
        ("evidence_line", pa.int32()),
        ("evidence_count", pa.int32()),
    ]
)

KNOBS = pa.schema(
    [
        ("run_id", pa.string()),
        ("scan_id", pa.string()),
        ("kind", pa.string()),  # knob | fact
        ("name", pa.string()),  # flat dotted name: arg.max_model_len, host.driver_version, env.X …
        ("value", pa.string()),  # strings as they are, everything else as JSON
        ("value_type", pa.string()),  # str | int | float | bool | list | dict | null
        ("source_file", pa.string()),
        ("source_line", pa.int32()),
        ("note", pa.string()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {"runs": RUNS, "findings": FINDINGS, "knobs": KNOBS}


def to_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts; missing keys are null) as an Arrow table of the named table's schema."""
    schema = SCHEMAS[name]
    columns = {field.name: [row.get(field.name) for row in rows] for field in schema}
    return pa.Table.from_pydict(columns, schema=schema).replace_schema_metadata(
        {"vllm-triage.schema": SCHEMA_VERSION, "vllm-triage.table": name}
    )
