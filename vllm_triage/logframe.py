"""The LogFrame: a polars DataFrame with one row per input line, prefixes split into columns.

Columns: file, line (1-based), raw (the input line verbatim, line terminator removed),
transport_ts (docker/kubectl/journald/JSON time), vllm_ts (vLLM's own `mm-dd hh:mm:ss`),
level, process, rank, pid, source (`file.py:NN` of the emitting logger), message (what is left
once every prefix is stripped: the text rules match against).

Every step is a vectorised polars expression (Rust regex, linear time). Prefixes are stripped in
the order they are applied by the transports: JSON-lines envelope → ANSI colour → compose /
kubectl / RFC 3339 / CRI / journald prefixes → terminal-UI box → vLLM process prefixes (stacked,
innermost kept) → tqdm `\\r` redraws → torch `[rankN]:` → logger prefix (vLLM, uvicorn, torch
c10d, ISO-dated Python logging).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import polars as pl

ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"

# journald: `Sep 22 23:46:41 host vllm[361682]: ` (the month may be localized).
_JOURNALD = r"^(?P<jts>(?:[A-Z][a-z]{2}|\S{2,12})\s{1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?) \S+ [\w.@/-]+(?:\[\d+\])?: (?P<rest>.*)$"
# `journalctl -o short-iso[-precise]` starts with `2025-10-02T14:03:11+0300` (an offset without a
# colon, which docker and kubectl never print); the host and `ident[pid]: ` follow it.
_JOURNALD_ISO_TS = r"T\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d{4}$"
_JOURNALD_HOST_IDENT = r"^\S+ [\w.@/-]+(?:\[\d+\])?: (?P<rest>.*)$"
# Transport prefixes, all optional, matched once at the start of the line (journald separately).
_TRANSPORT = (
    r"^(?:>\s?)?"
    r"(?:\[(?P<tag>[A-Za-z][\w.-]*)\]: )?"  # a log shipper's source tag: `[vllm]: `
    r"(?:[A-Za-z0-9][\w.-]*\s*\|(?:\s|$))?"
    r"(?:\[pod/[^\]\s]+\]\s)?"
    r"(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)\s)?"
    r"(?:(?:stdout|stderr) [FP] )?"
    r"(?P<rest>.*)$"
)
_BOX = r"^\s*[│┃║]\s?(?P<inner>.*?)\s*[│┃║]?\s*$"
_PROCESS = (
    r"^\((?:(?P<proc>[A-Za-z_][\w .=:-]*?) )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)\s]+))?\)"
    r"(?: \[repeated \d+x across cluster\])?\s?(?P<rest>.*)$"
)
_RANK = r"^\[rank(?P<rank>\d+)\]:\s?(?P<rest>.*)$"
_VLLM = (
    r"^(?:\S+ )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<date>\d\d-\d\d|\d{4}-\d\d-\d\d) "
    r"(?P<time>\d\d:\d\d:\d\d(?:\.\d+)?) \[?(?P<src>[^\s\]]+?:\d+)\] ?(?P<msg>.*)$"
)
_UVICORN = r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG|TRACE):\s+(?P<msg>.*)$"
# torch c10d / glog: severity letter, then `MMDD hh:mm:ss.ffffff` (the month unpadded in c10d:
# `E808` is August 8th); older torch prints no date at all.
_C10D = r"^\[(?P<sev>[IWEF])(?:(?P<md>\d{3,4}) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)?)? (?P<src>[\w.]+:\d+)\] ?(?P<msg>.*)$"
_GLOG = (
    r"^(?P<sev>[IWEF])(?P<md>\d{4}) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)?\s+\d+ (?P<src>\S+:\d+)\] ?(?P<msg>.*)$"
)
_ISO = (
    r"^(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)?\s+(?:-\s+)?(?:[\w.]+\s+-\s+)?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?:-\s+)?(?:(?P<src>[\w./-]+:\d+)\s+(?:--\s+)?)?(?P<msg>.*)$"
)
_ENVELOPE_TIME_PATHS = ("$.time", "$.timestamp", "$['@timestamp']", "$.ts")
_RAY_REPEAT = r"\s*\[repeated \d+x across cluster\]\s*$"

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
}


def parse_lines(
    raw: pl.Series, file: str, first_line: int | pl.Series, json_lines: bool = False
) -> pl.DataFrame:
    """Build LogFrame rows for `raw` lines. `first_line` is the 1-based number of raw[0], or a
    Series of explicit line numbers when `raw` is a subset of a chunk."""
    frame = pl.DataFrame({"raw": raw.str.strip_chars_end("\r")})
    if isinstance(first_line, pl.Series):
        frame = frame.with_columns(line=first_line.cast(pl.Int64))
    else:
        frame = frame.with_columns(line=pl.int_range(first_line, first_line + frame.height, dtype=pl.Int64))
    text = pl.col("raw")
    envelope_ts = pl.lit(None, dtype=pl.String)
    if json_lines:
        is_json = text.str.starts_with("{")
        body = pl.coalesce(
            text.str.json_path_match("$.log"),
            text.str.json_path_match("$.message"),
            text.str.json_path_match("$.msg"),
        )
        text = pl.when(is_json & body.is_not_null()).then(body.str.strip_chars_end("\r\n")).otherwise(text)
        # docker json-file: time; Vector / Fluent Bit / Loki exports: timestamp, @timestamp, ts.
        raw = pl.col("raw")
        envelope_ts = pl.when(is_json).then(
            pl.coalesce(*(raw.str.json_path_match(path) for path in _ENVELOPE_TIME_PATHS))
        )
    frame = frame.with_columns(_t=text, _envelope_ts=envelope_ts)
    t = pl.col("_t")
    frame = frame.with_columns(
        _t=pl.when(t.str.contains("\x1b", literal=True)).then(t.str.replace_all(ANSI, "")).otherwise(t)
    )
    frame = _strip_transport(frame)
    frame = _strip_box(frame)
    frame = _strip_processes(frame)
    # tqdm redraws a bar with `\r`: what a terminal shows is the last piece. Transport and
    # process prefixes are written once, at the start of the line (vLLM's stdout wrapper adds
    # its prefix only after a `\n`), so they are taken off before the redraws are collapsed.
    frame = frame.with_columns(
        _t=pl.when(t.str.contains("\r", literal=True))
        .then(t.str.strip_chars_end("\r").str.extract(r"([^\r]*)$", 1))
        .otherwise(t)
    )
    frame = _strip_rank(frame)
    frame = _split_logger(frame)
    return frame.with_columns(file=pl.lit(file, dtype=pl.String)).select(list(SCHEMA))


def _strip_transport(frame: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("_t")
    parts = t.str.extract_groups(_TRANSPORT)
    frame = frame.with_columns(_p=parts)
    tag = pl.col("_p").struct.field("tag")
    frame = frame.with_columns(
        # `[rank0]: ` is torch's rank prefix, not a shipper's tag: leave it for _strip_rank.
        _t=pl.when(tag.str.contains(r"^rank\d+$"))
        .then(pl.lit("[") + tag + pl.lit("]: ") + pl.col("_p").struct.field("rest"))
        .otherwise(pl.col("_p").struct.field("rest")),
        _ts=pl.col("_p").struct.field("ts").str.strip_chars(),
    ).drop("_p")
    iso_journald = pl.col("_ts").str.contains(_JOURNALD_ISO_TS)
    host_ident_rest = pl.col("_t").str.extract(_JOURNALD_HOST_IDENT, 1)
    frame = frame.with_columns(
        _t=pl.when(iso_journald & host_ident_rest.is_not_null()).then(host_ident_rest).otherwise(pl.col("_t"))
    )
    journald = pl.col("_t").str.extract_groups(_JOURNALD)
    frame = frame.with_columns(_j=journald)
    has_j = pl.col("_j").struct.field("rest").is_not_null()
    return frame.with_columns(
        _t=pl.when(has_j).then(pl.col("_j").struct.field("rest")).otherwise(pl.col("_t")),
        transport_ts=pl.coalesce(
            pl.col("_ts"), pl.when(has_j).then(pl.col("_j").struct.field("jts")), pl.col("_envelope_ts")
        ),
    ).drop("_j", "_ts", "_envelope_ts")


def _strip_box(frame: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("_t")
    boxed = t.str.contains(r"^\s*[│┃║]")
    return frame.with_columns(_t=pl.when(boxed).then(t.str.extract(_BOX, 1)).otherwise(t))


def _strip_processes(frame: pl.DataFrame) -> pl.DataFrame:
    frame = frame.with_columns(
        process=pl.lit(None, dtype=pl.String),
        pid=pl.lit(None, dtype=pl.Int64),
        _ip=pl.lit(None, dtype=pl.String),
    )
    # Stacked prefixes (`(APIServer pid=1) (EngineCore_0 pid=2) …`): keep the innermost.
    for _ in range(3):
        parts = pl.col("_t").str.extract_groups(_PROCESS)
        frame = frame.with_columns(_p=parts)
        matched = pl.col("_p").struct.field("pid").is_not_null()
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
    parts = pl.col("_t").str.extract_groups(_RANK)
    frame = frame.with_columns(_p=parts)
    matched = pl.col("_p").struct.field("rank").is_not_null()
    rank_from_process = pl.col("process").str.extract(r"(?:rank=|TP|_TP)(\d+)", 1).cast(pl.Int64)
    return frame.with_columns(
        rank=pl.when(matched)
        .then(pl.col("_p").struct.field("rank").cast(pl.Int64))
        .otherwise(rank_from_process),
        _t=pl.when(matched).then(pl.col("_p").struct.field("rest")).otherwise(pl.col("_t")),
    ).drop("_p")


_C10D_LEVEL = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}


def _split_logger(frame: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("_t")
    frame = frame.with_columns(
        _v=t.str.extract_groups(_VLLM),
        _u=t.str.extract_groups(_UVICORN),
        _c=t.str.extract_groups(_C10D),
        _i=t.str.extract_groups(_ISO),
        _g=t.str.extract_groups(_GLOG),
    )
    v, u, c, i, g = (pl.col(x) for x in ("_v", "_u", "_c", "_i", "_g"))
    c10d_level = c.struct.field("sev").replace_strict(_C10D_LEVEL, default=None, return_dtype=pl.String)
    glog_level = g.struct.field("sev").replace_strict(_C10D_LEVEL, default=None, return_dtype=pl.String)
    message = pl.coalesce(
        v.struct.field("msg"),
        c.struct.field("msg"),
        g.struct.field("msg"),
        i.struct.field("msg"),
        u.struct.field("msg"),
        t,
    ).str.replace(_RAY_REPEAT, "")
    return frame.with_columns(
        level=pl.coalesce(
            v.struct.field("level"), c10d_level, glog_level, i.struct.field("level"), u.struct.field("level")
        ),
        vllm_ts=pl.coalesce(
            v.struct.field("date") + pl.lit(" ") + v.struct.field("time"),
            i.struct.field("date") + pl.lit(" ") + i.struct.field("time"),
            _month_day(c) + pl.lit(" ") + c.struct.field("time"),
            _month_day(g) + pl.lit(" ") + g.struct.field("time"),
        ),
        source=pl.coalesce(
            v.struct.field("src"), c.struct.field("src"), g.struct.field("src"), i.struct.field("src")
        ),
        message=message,
    ).drop("_v", "_u", "_c", "_i", "_g", "_t")


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


def read_logframes(stream: BinaryIO, file: str, encoding: str = "utf-8") -> Iterator[pl.DataFrame]:
    """The LogFrame of a whole log, chunk by chunk (see vllm_triage.ingest.decode.iter_line_batches)."""
    from vllm_triage.ingest.decode import iter_line_batches

    yield from iter_frames(iter_line_batches(stream, encoding), file)
