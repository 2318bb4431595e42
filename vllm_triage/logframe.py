"""The LogFrame: a polars DataFrame with one row per input line, prefixes split into columns.

Columns: file, line (1-based), raw (the input line verbatim, line terminator removed),
transport_ts (docker/kubectl/journald/JSON time), vllm_ts (vLLM's own `mm-dd hh:mm:ss`),
level, process, rank, pid, source (`file.py:NN` of the emitting logger), message (what is left
once every prefix is stripped: the text rules match against), service (the compose service).

Every step is a vectorised polars expression (Rust regex, linear time). Prefixes are stripped in
the order they are applied by the transports: JSON-lines envelope → ANSI colour → compose /
kubectl / RFC 3339 / CRI / journald prefixes → terminal-UI box → vLLM process prefixes (stacked,
innermost kept) → tqdm `\\r` redraws → torch `[rankN]:` → logger prefix (vLLM, uvicorn, torch
c10d, ISO-dated and ` | `-separated Python logging). The patterns are the one grammar of
`vllm_triage.ingest.prefixes` (which reads single lines the same way); a record of vLLM's own
JSON logging fills the same columns from its LogRecord fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import polars as pl

from vllm_triage.ingest import prefixes as g

SCHEMA = {
    "file": pl.String,
    "line": pl.Int64,
    "raw": pl.String,
    "transport_ts": pl.String,
    "vllm_ts": pl.String,
    "level": pl.String,
    "process": pl.String,
    "rank": pl.Int64,
    "pid": pl.Int64,
    "source": pl.String,
    "message": pl.String,
    "service": pl.String,  # the docker compose service in front of the line (one server of several)
}


def _without_line_end(raw: pl.Series) -> pl.Series:
    """Lines without their carriage return: the byte, or the `^M` that `cat -v`, vim and some
    log viewers print for it and that a paste keeps as two characters (vllm#11366)."""
    raw = raw.str.strip_chars_end("\r")
    if raw.str.ends_with("^M").any():
        raw = raw.str.strip_suffix("^M")
    return raw


def parse_lines(
    raw: pl.Series, file: str, first_line: int | pl.Series, json_lines: bool = False
) -> pl.DataFrame:
    """Build LogFrame rows for `raw` lines. `first_line` is the 1-based number of raw[0], or a
    Series of explicit line numbers when `raw` is a subset of a chunk."""
    frame = pl.DataFrame({"raw": _without_line_end(raw)})
    if isinstance(first_line, pl.Series):
        frame = frame.with_columns(line=first_line.cast(pl.Int64))
    else:
        frame = frame.with_columns(line=pl.int_range(first_line, first_line + frame.height, dtype=pl.Int64))
    if json_lines or frame.is_empty():
        return _parse_general(frame, file, json_lines)
    if frame.height <= SMALL_ROWS and not frame.get_column("raw").str.contains(r"(?:\r|\^M)$").any():
        # (split_line takes a line end off once more: a line that still ends in one after
        # _without_line_end, `x^M\r^M`, is left to the general parse, which keeps it)
        return _parse_small(frame, file)
    plain = frame.get_column("raw").str.contains(PLAIN_VLLM_LINE)
    if not plain.any():
        return _parse_general(frame, file, json_lines)
    if plain.all():
        return _parse_plain(frame, file)
    # Both kinds: each parsed its way, then put back in input order.
    frame = frame.with_columns(_row=pl.int_range(pl.len(), dtype=pl.UInt32))
    parts = [
        _parse_plain(frame.filter(plain).drop("_row"), file).with_columns(
            _row=frame.get_column("_row").filter(plain)
        ),
        _parse_general(frame.filter(~plain).drop("_row"), file, json_lines).with_columns(
            _row=frame.get_column("_row").filter(~plain)
        ),
    ]
    return pl.concat(parts, how="vertical").sort("_row").drop("_row")


# The line nearly every line a big log's scan parses has: vLLM's process prefix, then its logger
# prefix, nothing around them. For such a line every step of the general parse but two is a no-op
# (checked by tests/ingest/test_plain_lines.py against the general parse): no transport, grep,
# journald or box prefix can match a line that starts `(Name pid=N) LEVEL mm-dd hh:mm:ss `, the
# second and third process passes find no `(`, no rank prefix follows, and the vLLM logger pattern
# matches (so it wins every coalesce of _split_logger). No ANSI escape or `\r` (those steps are
# not no-ops). The general parse runs some 15 regex passes per row; this runs three.
PLAIN_VLLM_LINE = (
    r"^\([A-Za-z_]\w*(?: rank=\d+)? pid=\d{1,9}\) "
    rf"(?:{g.LEVELS}) \d\d-\d\d \d\d:\d\d:\d\d [^\r\x1b]*$"
)
_PLAIN_PROCESS = r"^\((?P<proc>[A-Za-z_]\w*(?: rank=\d+)?) pid=(?P<pid>\d+)\) (?P<rest>.*)$"


# Below this many lines the general parse's ~15 vectorised passes cost more in polars' per-call
# overhead (a few ms per pass, whatever the height) than reading each line with the same grammar
# in Python: a fleet's bundles and most pasted logs are this small. tests/ingest/test_small_logs.py
# keeps the two readings equal.
SMALL_ROWS = 1024


def _parse_small(frame: pl.DataFrame, file: str) -> pl.DataFrame:
    """parse_lines of a few lines, each read by prefixes.split_line (the same columns and values)."""
    parts = [g.split_line(line) for line in frame.get_column("raw").to_list()]
    columns = {
        "file": [file] * len(parts),
        "line": frame.get_column("line"),
        "raw": frame.get_column("raw"),
        **{name: [getattr(part, name) for part in parts] for name in _SPLIT_COLUMNS},
    }
    return pl.DataFrame(columns, schema=SCHEMA)


# The columns split_line fills (the others are the row's own: file, line, raw).
_SPLIT_COLUMNS = tuple(name for name in SCHEMA if name not in ("file", "line", "raw"))


def _parse_plain(frame: pl.DataFrame, file: str) -> pl.DataFrame:
    """parse_lines of lines that all match PLAIN_VLLM_LINE (the same columns, values and order)."""
    p = pl.col("raw").str.extract_groups(_PLAIN_PROCESS)
    frame = frame.with_columns(
        process=p.struct.field("proc"),
        pid=p.struct.field("pid").cast(pl.Int64),
        _t=p.struct.field("rest"),
    )
    v = pl.col("_t").str.extract_groups(g.VLLM_LOGGER)
    none = pl.lit(None, dtype=pl.String)
    return frame.with_columns(
        transport_ts=none,
        vllm_ts=v.struct.field("date") + pl.lit(" ") + v.struct.field("time"),
        level=v.struct.field("level"),
        rank=pl.col("process").str.extract(g.PROCESS_RANK, 1).cast(pl.Int64),
        source=v.struct.field("src"),
        message=v.struct.field("msg").str.replace(g.RAY_REPEAT, ""),
        service=none,
        file=pl.lit(file, dtype=pl.String),
    ).select(list(SCHEMA))


def _parse_general(frame: pl.DataFrame, file: str, json_lines: bool) -> pl.DataFrame:
    frame = _unwrap_json(frame, json_lines)
    t = pl.col("_t")
    frame = frame.with_columns(
        _t=pl.when(t.str.contains("\x1b", literal=True)).then(t.str.replace_all(g.ANSI, "")).otherwise(t)
    )
    frame = _strip_transport(frame)
    frame = _strip_box(frame)
    frame = _strip_processes(frame)
    # tqdm redraws a bar with `\r`: what a terminal shows is the last piece. Transport and
    # process prefixes are written once, at the start of the line (vLLM's stdout wrapper adds
    # its prefix only after a `\n`), so they are taken off before the redraws are collapsed.
    frame = frame.with_columns(
        _t=pl.when(t.str.contains("\r", literal=True))
        .then(t.str.strip_chars_end("\r").str.extract(g.LAST_REDRAW, 1))
        .otherwise(t)
    )
    frame = _strip_rank(frame)
    frame = _split_logger(frame)
    frame = _fill_from_record(frame)
    return frame.with_columns(file=pl.lit(file, dtype=pl.String)).select(list(SCHEMA))


_RECORD_COLUMNS = ("_j_level", "_j_vllm_ts", "_j_source", "_j_process", "_j_pid")


def _unwrap_json(frame: pl.DataFrame, json_lines: bool) -> pl.DataFrame:
    """`_t` (the text to strip), `_envelope_ts`, and the LogRecord fields of vLLM's own JSON
    logging (`_j_*`), for the lines that are JSON records (`json_lines`: the file is JSON lines)."""
    raw = pl.col("raw")
    none = pl.lit(None, dtype=pl.String)
    # vLLM's JSON logging writes LogRecords to stdout while raw tracebacks and progress bars stay
    # text: a record is unwrapped wherever it is, in a JSON-lines file or in a mixed one.
    if not json_lines and not frame.get_column("raw").str.starts_with('{"').any():
        return frame.with_columns(_t=raw, _envelope_ts=none, **{c: none for c in _RECORD_COLUMNS})

    def field(key: str) -> pl.Expr:
        return raw.str.json_path_match(f"$['{key}']")

    is_json = raw.str.starts_with("{")
    body = pl.coalesce(*(field(key) for key in g.JSON_BODY_KEYS))
    is_record = is_json & field(g.JSON_RECORD_KEY).is_not_null()
    process = pl.coalesce(*(field(key) for key in g.JSON_PROCESS_KEYS))
    named = is_record & (process != g.MAIN_PROCESS)
    level = field(g.JSON_RECORD_KEY).str.to_uppercase().replace({"WARN": "WARNING", "FATAL": "CRITICAL"})
    asctime = field("asctime").str.extract_groups(r"^(?:\d{4}-)?(?P<md>\d\d-\d\d)[ T](?P<hms>\d\d:\d\d:\d\d)")
    return frame.with_columns(
        _t=pl.when(is_json & body.is_not_null()).then(body.str.strip_chars_end("\r\n")).otherwise(raw),
        _envelope_ts=pl.when(is_json).then(pl.coalesce(*(field(key) for key in g.JSON_TIME_KEYS))),
        _j_level=pl.when(is_record & level.is_in(g.LEVELS.split("|"))).then(level),
        _j_vllm_ts=pl.when(is_record).then(
            asctime.struct.field("md") + pl.lit(" ") + asctime.struct.field("hms")
        ),
        _j_source=pl.when(is_record).then(field("filename") + pl.lit(":") + field("lineno")),
        _j_process=pl.when(named).then(process),
        _j_pid=pl.when(named).then(pl.coalesce(*(field(key) for key in g.JSON_PID_KEYS))),
    )


def _fill_from_record(frame: pl.DataFrame) -> pl.DataFrame:
    """A JSON record's message carries no prefix: its LogRecord fields fill the columns."""
    has_process = pl.col("process").is_null() & pl.col("_j_process").is_not_null()
    return frame.with_columns(
        level=pl.coalesce("level", "_j_level"),
        vllm_ts=pl.coalesce("vllm_ts", "_j_vllm_ts"),
        source=pl.coalesce("source", "_j_source"),
        process=pl.when(has_process).then(pl.col("_j_process")).otherwise(pl.col("process")),
        pid=pl.when(has_process).then(pl.col("_j_pid").cast(pl.Int64, strict=False)).otherwise(pl.col("pid")),
    ).drop(*_RECORD_COLUMNS)


def _strip_transport(frame: pl.DataFrame) -> pl.DataFrame:
    frame = frame.with_columns(_t=pl.col("_t").str.replace(g.CODE_SPAN, "$1"))
    t = pl.col("_t")
    grep_rest = t.str.extract(g.GREP_LINE, 2)
    frame = frame.with_columns(_t=pl.coalesce(grep_rest, t))
    parts = t.str.extract_groups(g.TRANSPORT)
    # A ` | ` logger's line (FastChat, loguru) keeps its time and level for _split_logger.
    frame = frame.with_columns(_p=parts, _pipe=t.str.contains(g.PIPE_LOGGER))
    tag = pl.col("_p").struct.field("tag")
    transport_rest = (
        # `[rank0]: ` is torch's rank prefix, not a shipper's tag: leave it for _strip_rank.
        pl.when(tag.str.contains(g.RANK_TAG))
        .then(pl.lit("[") + tag + pl.lit("]: ") + pl.col("_p").struct.field("rest"))
        .otherwise(pl.col("_p").struct.field("rest"))
    )
    frame = frame.with_columns(
        _t=pl.when(pl.col("_pipe")).then(t).otherwise(transport_rest),
        _ts=pl.when(pl.col("_pipe"))
        .then(pl.lit(None, dtype=pl.String))
        .otherwise(
            pl.coalesce(
                pl.col("_p").struct.field("ts").str.strip_chars(),
                pl.col("_p").struct.field("vts"),
                pl.col("_p").struct.field("bts"),
            )
        ),
        service=pl.when(pl.col("_pipe"))
        .then(pl.lit(None, dtype=pl.String))
        .otherwise(pl.col("_p").struct.field("svc")),
    ).drop("_p", "_pipe")
    local = pl.col("_t").str.extract_groups(g.LOCAL_TS)
    frame = frame.with_columns(_l=local)
    has_local = pl.col("_ts").is_null() & pl.col("_l").struct.field("rest").is_not_null()
    frame = frame.with_columns(
        _t=pl.when(has_local).then(pl.col("_l").struct.field("rest")).otherwise(pl.col("_t")),
        _ts=pl.when(has_local).then(pl.col("_l").struct.field("ts")).otherwise(pl.col("_ts")),
    ).drop("_l")
    iso_journald = pl.col("_ts").str.contains(g.JOURNALD_ISO_TS)
    host_ident_rest = pl.col("_t").str.extract(g.JOURNALD_HOST_IDENT, 1)
    frame = frame.with_columns(
        _t=pl.when(iso_journald & host_ident_rest.is_not_null()).then(host_ident_rest).otherwise(pl.col("_t"))
    )
    journald = pl.col("_t").str.extract_groups(g.JOURNALD)
    frame = frame.with_columns(_j=journald)
    has_j = pl.col("_j").struct.field("rest").is_not_null()
    relay_rest = pl.col("_t").str.extract(g.RELAY, 1)
    has_relay = (
        ~has_j
        & pl.col("_ts").is_null()
        & pl.col("service").is_null()
        & ~pl.col("_t").str.contains(g.RELAY_NOT)
        & relay_rest.is_not_null()
    )
    return frame.with_columns(
        _t=pl.when(has_j)
        .then(pl.col("_j").struct.field("rest"))
        .when(has_relay)
        .then(relay_rest)
        .otherwise(pl.col("_t")),
        transport_ts=pl.coalesce(
            pl.col("_ts"), pl.when(has_j).then(pl.col("_j").struct.field("jts")), pl.col("_envelope_ts")
        ),
    ).drop("_j", "_ts", "_envelope_ts")


def _strip_box(frame: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("_t")
    boxed = t.str.contains(g.BOX_START)
    return frame.with_columns(_t=pl.when(boxed).then(t.str.extract(g.BOX, 1)).otherwise(t))


def _strip_processes(frame: pl.DataFrame) -> pl.DataFrame:
    frame = frame.with_columns(
        process=pl.lit(None, dtype=pl.String),
        pid=pl.lit(None, dtype=pl.Int64),
        _ip=pl.lit(None, dtype=pl.String),
    )
    # Stacked prefixes (`(APIServer pid=1) (EngineCore_0 pid=2) …`): keep the innermost.
    for _ in range(g.PROCESS_STACK):
        parts = pl.col("_t").str.extract_groups(g.PROCESS)
        frame = frame.with_columns(_p=parts)
        matched = pl.col("_p").struct.field("rest").is_not_null()
        frame = frame.with_columns(
            process=pl.when(matched)
            .then(pl.coalesce(pl.col("_p").struct.field("proc"), pl.lit("pid")))
            .otherwise(pl.col("process")),
            pid=pl.when(matched)
            .then(pl.col("_p").struct.field("pid").cast(pl.Int64))
            .otherwise(pl.col("pid")),
            _ip=pl.when(matched).then(pl.col("_p").struct.field("ip")).otherwise(pl.col("_ip")),
            _t=pl.when(matched).then(pl.col("_p").struct.field("rest")).otherwise(pl.col("_t")),
        ).drop("_p")
    return frame.with_columns(
        process=pl.when(pl.col("_ip").is_not_null())
        .then(pl.col("process") + pl.lit("@") + pl.col("_ip"))
        .otherwise(pl.col("process"))
    ).drop("_ip")


def _strip_rank(frame: pl.DataFrame) -> pl.DataFrame:
    parts = pl.col("_t").str.extract_groups(g.RANK)
    frame = frame.with_columns(_p=parts)
    matched = pl.col("_p").struct.field("rank").is_not_null()
    rank_from_process = pl.col("process").str.extract(g.PROCESS_RANK, 1).cast(pl.Int64)
    return frame.with_columns(
        rank=pl.when(matched)
        .then(pl.col("_p").struct.field("rank").cast(pl.Int64))
        .otherwise(rank_from_process),
        _t=pl.when(matched).then(pl.col("_p").struct.field("rest")).otherwise(pl.col("_t")),
    ).drop("_p")


def _split_logger(frame: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("_t")
    frame = frame.with_columns(
        _v=t.str.extract_groups(g.VLLM_LOGGER),
        _u=t.str.extract_groups(g.UVICORN),
        _c=t.str.extract_groups(g.C10D),
        _i=t.str.extract_groups(g.ISO_LOGGER),
        _g=t.str.extract_groups(g.GLOG),
        _pl=t.str.extract_groups(g.PIPE_LOGGER),
        _tr=t.str.extract_groups(g.TRACING_LOGGER),
        _hl=t.str.extract_groups(g.HL_LOGGER),
    )
    v, u, c, i, gl, pi, tr, hl = (pl.col(x) for x in ("_v", "_u", "_c", "_i", "_g", "_pl", "_tr", "_hl"))
    tracing_level, hl_level = (
        parts.struct.field("level")
        .str.to_uppercase()
        .replace_strict(g.LEVEL_WORDS, default=None, return_dtype=pl.String)
        for parts in (tr, hl)
    )
    c10d_level = c.struct.field("sev").replace_strict(g.SEVERITY, default=None, return_dtype=pl.String)
    glog_level = gl.struct.field("sev").replace_strict(g.SEVERITY, default=None, return_dtype=pl.String)
    message = pl.coalesce(
        v.struct.field("msg"),
        c.struct.field("msg"),
        gl.struct.field("msg"),
        i.struct.field("msg"),
        pi.struct.field("msg"),
        u.struct.field("msg"),
        tr.struct.field("msg"),
        hl.struct.field("msg"),
        t,
    ).str.replace(g.RAY_REPEAT, "")
    return frame.with_columns(
        level=pl.coalesce(
            v.struct.field("level"),
            c10d_level,
            glog_level,
            i.struct.field("level"),
            pi.struct.field("level"),
            u.struct.field("level"),
            tracing_level,
            hl_level,
        ),
        vllm_ts=pl.coalesce(
            v.struct.field("date") + pl.lit(" ") + v.struct.field("time"),
            _month_day(c) + pl.lit(" ") + c.struct.field("time"),
            _month_day(gl) + pl.lit(" ") + gl.struct.field("time"),
            i.struct.field("date") + pl.lit(" ") + i.struct.field("time"),
            pi.struct.field("date") + pl.lit(" ") + pi.struct.field("time"),
        ),
        source=pl.coalesce(
            v.struct.field("src"),
            v.struct.field("bsrc"),
            v.struct.field("lsrc"),
            c.struct.field("src"),
            gl.struct.field("src"),
            i.struct.field("src"),
        ),
        message=message,
    ).drop("_v", "_u", "_c", "_i", "_g", "_pl", "_tr", "_hl", "_t")


def _month_day(parts: pl.Expr) -> pl.Expr:
    """`808` / `1203` (glog's MMDD, month unpadded in c10d) → `08-08` / `12-03`, like vLLM's own."""
    md = parts.struct.field("md").str.zfill(4)
    return md.str.slice(0, 2) + pl.lit("-") + md.str.slice(2, 2)


def iter_frames(batches: Iterable[pl.Series], file: str, json_lines: bool = False) -> Iterator[pl.DataFrame]:
    """Full LogFrames, one per batch of raw lines, so memory stays bounded by the batch size."""
    next_line = 1
    for raw in batches:
        yield parse_lines(raw, file, next_line, json_lines)
        next_line += raw.len()
