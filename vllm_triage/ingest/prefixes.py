"""The one grammar of line prefixes: what transports and vLLM put in front of a log message.

A line that reached us went through, from the inside out: vLLM's logger (`INFO 11-04 15:23:28
[core.py:718] `, or uvicorn / torch c10d / glog / ISO-dated or ` | `-separated Python logging),
torch's `[rankN]: `, vLLM's process prefix (`(EngineCore_DP0 pid=263) `, stacked when a child
inherits a wrapped stdout), maybe a terminal-UI box (`│ … │`), then the transports: CRI
(`<RFC 3339> stdout F `), `docker logs -t` / `kubectl --timestamps` (RFC 3339), `kubectl --prefix`
(`[pod/name/container] `), compose (`service-1  | `), a log shipper's tag (`[vllm]: `), journald
(`Sep 22 23:46:41 host unit[pid]: ` or `-o short-iso`), ANSI colour anywhere, and a JSON envelope
around all of it.

The patterns below are written once and used twice: vectorised by `vllm_triage.logframe` (polars,
Rust regex: no look-around, no back-references) and line by line by `split_line` (Python `re`) for
the callers that hold one line at a time (the log-config reader, error signatures, role
sniffing). A test keeps the two readings equal on every prefix form.

vLLM's logger prefix by version (vllm/logger.py):
  ≤ v0.7.3   `%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s`
  v0.8–0.10  `%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s`
  v0.11+     `… [%(fileinfo)s:%(lineno)d] …` (a shortened relative path at DEBUG)
with `VLLM_LOGGING_PREFIX` (v0.6.4+) verbatim before the level, and `%m-%d %H:%M:%S` dates. A
custom `--logging-config` / `VLLM_LOGGING_CONFIG_PATH` format may add the year and milliseconds
(`INFO 2025-11-04 15:23:28,123 …`) or drop the location: both are read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# ------------------------------------------------------------------------------------- patterns

# ANSI escapes: CSI (colours, cursor moves), OSC (titles, hyperlinks, ended by BEL or ST) and the
# two-byte charset / keypad selections terminals emit.
ANSI = r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])"

# journald: `Sep 22 23:46:41 host vllm[361682]: ` (the month may be localized: `сен`, `Okt`).
JOURNALD = (
    r"^(?P<jts>(?:[A-Z][a-z]{2}|\S{2,12})\s{1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?) \S+ [\w.@/-]+(?:\[\d+\])?: "
    r"(?P<rest>.*)$"
)
# Docker Desktop's log view prefixes local time with no zone. Without a zone the stamp could be an
# ISO logger's own (`2024-05-01 10:00:00,123 - vllm - ERROR - …`), so it is a transport only in
# front of a vLLM or uvicorn line — the level is kept in `rest` (polars' regex has no lookahead).
# A wrapper that runs the server as a child and relays its stdout through its own logger
# (`%(asctime)s - %(name)s - %(levelname)s - %(message)s`: olmocr's pipeline, allenai/olmocr#260,
# #267, #373) puts that logger's prefix, its level always its own INFO, in front of each vLLM line:
# `2025-06-27 12:57:45,345 - __main__ - INFO - ERROR 06-27 12:57:45 [core.py:515] …`. The vLLM
# line inside is the record (its level is vLLM's); the relay's time is the transport's. The
# wrapper's own lines (`… - __main__ - WARNING - Attempt 18: …`) stay its logger's.
LOCAL_TS = (
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?) "
    r"(?:- [\w.]+ - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - )?"
    # the process prefix is bounded: open repeats around `pid=` backtrack quadratically in Python
    r"(?P<rest>(?:\((?:[A-Za-z_][\w .=-]{0,64} )?pid=[^()\s]{1,16}(?:, ip=[^()\s]{1,64})?\) )?"
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: \d\d-\d\d |:\s).*)$"
)
# A launcher that relays the server's output through its own print puts a short head of its
# own before each vLLM record: its clock and a name tag (`[06:51:09]    [vllm] (EngineCore pid=289)
# ERROR …`, a notebook's runner), a job step (`step0: INFO 05-01 …`), a tag without the shipper's
# colon (`[vllm] INFO …`). Whatever the head holds, what follows it is a vLLM record by its own
# shape: a process prefix, or a level with vLLM's date and time. At most three space-separated
# words, none with a parenthesis, and only in front of such a record (polars' regex has no
# lookahead: the record is kept in `rest`); a line that already opens with a record, a level word
# a terminal-UI box row (its border is BOX's) or a known transport is left to them (RELAY_NOT).
_RECORD_HEAD = (
    r"\((?:[A-Za-z_][\w .=-]{0,64} )?pid=[^()\s]{1,16}(?:, ip=[^()\s]{1,64})?\) "
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d"
)
RELAY = r"^[^\s()]{1,32}(?:[ \t]+[^\s()]{1,32}){0,2}?[ \t]+(?P<rest>(?:" + _RECORD_HEAD + r").*)$"
RELAY_NOT = r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL|TRACE)\b|^\[rank\d|^\[[IWEF]\d|^Traceback|^\s*[│┃║]"
# `journalctl -o short-iso[-precise]` starts with `2025-10-02T14:03:11+0300` (an offset without a
# colon, which docker and kubectl never print); the host and `ident[pid]: ` follow it.
JOURNALD_ISO_TS = r"T\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d{4}$"
JOURNALD_HOST_IDENT = r"^\S+ [\w.@/-]+(?:\[\d+\])?: (?P<rest>.*)$"
# A log line quoted as Markdown inline code in an issue (`` `ERROR 05-08 … [serving_chat.py:198] …` ``):
# the backticks are the paste's, not the log's. One backtick each side, the line inside whole
# (which may end in a backtick of its own: `` `RuntimeError: … with `/models/x`` ``); a fence
# (```) is not a code span.
CODE_SPAN = r"^`([^`].*)`[ \t]*$"

# `grep -n` (or `grep -C`) output: the line number and `:` (a match) or `-` (a context line) before
# the line as it was. Taken only in front of what opens a vLLM line (a process prefix, a torch rank,
# a level word, an RFC 3339 time, a traceback's lines), so a message that starts with a number and
# a colon keeps it; the head is kept in `rest` (polars' regex has no lookahead).
GREP_LINE = (
    r"^(?P<n>\d{1,9})[:-](?P<rest>(?:\(|\[rank\d|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ :]"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:|Traceback \(most recent|\s+File \").*)$"
)
# The container transports, all optional, in the order they stack (journald separately).
TRANSPORT = (
    r"^(?:>\s?)?"  # a quoted paste
    r"(?:\[(?P<tag>[A-Za-z][\w.-]*)\]: )?"  # a log shipper's source tag: `[vllm]: `
    # a log viewer's export (Dozzle, Portainer with timestamps): local time, then ` | `
    r"(?:(?P<vts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?) \| )?"
    # a launch script's own bracketed time before what it runs prints: `[2026-01-26 16:56:13]    `
    r"(?:\[(?P<bts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]\s+)?"
    # docker compose: `vllm-openai-1  | `; podman-compose brackets the name: `[vllm]     | `
    r"(?:\[?(?P<svc>[A-Za-z0-9][\w.-]*)\]?\s*\|(?:\s|$))?"
    r"(?:\[pod/[^\]\s]+\]\s)?"  # kubectl logs --prefix: `[pod/name/container] `
    r"(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)\s)?"  # docker -t, kubectl
    r"(?:(?P<cri>stdout|stderr) (?P<tagcri>[FP]) )?"  # CRI log files: stream and full/partial tag
    r"(?P<rest>.*)$"
)
# torch's rank prefix `[rank0]: ` is not a shipper's tag.
RANK_TAG = r"^rank\d+$"
# A terminal-UI box (rich panels, k9s / TUI panes): `│ text │`.
BOX_START = r"^\s*[│┃║]"
BOX = r"^\s*[│┃║]\s?(?P<inner>.*?)\s*[│┃║]?\s*$"
# vLLM's process prefix, every generation: `(VllmWorkerProcess pid=N)`, `(VllmWorker rank=N pid=N)`,
# `(Worker_PP1_TP3 pid=N)`, `(EngineCore_DP0 pid=N)`, `(APIServer pid=N)`, Ray's
# `(RayWorkerWrapper pid=N, ip=A)` / `(pid=N, ip=A)` with its dedup suffix.
# A reporter who hides the pid writes `pid=...` / `pid=xxx`: the prefix is still one (pid unknown).
PROCESS = (
    r"^\((?:(?P<proc>[A-Za-z_][\w .=:-]*?) )?pid=(?:(?P<pid>\d+)|(?P<hidden>\.{2,}|…|[xX*#]+))"
    r"(?:, ip=(?P<ip>[^)\s]+))?\)"
    r"(?: \[repeated \d+x across cluster\])?\s?(?P<rest>.*)$"
)
PROCESS_STACK = 3  # stacked prefixes peeled at most (vLLM before PR #36822 stacked two)
RANK = r"^\[rank(?P<rank>\d+)\]:\s?(?P<rest>.*)$"
# The rank a process name carries: `rank=3`, `TP0`, `Worker_PP1_TP3`.
PROCESS_RANK = r"(?:rank=|TP|_TP)(\d+)"
LEVELS = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
# The time is optional when the bracketed location is there (a format without `%(asctime)s`):
# `INFO [core.py:718] …`; a bare `INFO word` is never taken for a logger prefix, but `INFO ... `
# is (a reporter's ellipsis for the date and location it cut).
# The last form, a bare `[model_runner.py:904] ` with no level or time, is what is left of the
# prefix when a reporter trims a pasted log by hand; only a Python file's location qualifies.
VLLM_LOGGER = (
    rf"^(?:(?:\S+ )?(?P<level>{LEVELS}) (?:(?P<date>\d\d-\d\d|\d{{4}}-\d\d-\d\d) "
    r"(?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)? (?:\[?(?P<src>[^\s\]]+?:\d+)\] ?)?"
    r"|\[(?P<bsrc>[^\s\]]+?:\d+)\] ?|(?:\.{3}|…) )"
    r"|\[(?P<lsrc>[\w./-]+\.py:\d+)\] )(?P<msg>.*)$"
)
UVICORN = r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG|TRACE):\s+(?P<msg>.*)$"
# torch c10d / glog: severity letter, then `MMDD hh:mm:ss.ffffff` (the month unpadded in c10d:
# `E808` is August 8th); older torch prints no date at all.
C10D = (
    r"^\[(?P<sev>[IWEF])(?:(?P<md>\d{3,4}) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)?)? (?P<src>[\w.]+:\d+)\] ?"
    r"(?P<msg>.*)$"
)
GLOG = (
    r"^(?P<sev>[IWEF])(?P<md>\d{4}) (?P<time>\d\d:\d\d:\d\d)(?:\.\d+)?\s+\d+ (?P<src>\S+:\d+)\] ?(?P<msg>.*)$"
)
# The location may follow a pid and be bracketed: `%(asctime)s %(levelname)s %(process)d
# [%(filename)s:%(lineno)d] [- ]%(message)s` is a common dictConfig / basicConfig format (in many
# projects' logging setups, and a --logging-config of V0 servers); the pid is skipped.
# KServe's model servers (huggingfaceserver runs vLLM in-process) log `%(asctime)s.%(msecs)03d
# %(process)s %(name)s %(levelname)s [%(filename)s:%(funcName)s():%(lineno)s]`:
# `2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: …`
# (kserve#3769, #4515, #5056); the pid and logger name are skipped, the function kept in the source.
ISO_LOGGER = (
    r"^(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)?\s+(?:-\s+)?"
    r"(?:[\w.]+\s+-\s+|\d+\s+[\w.]+\s+)?"
    rf"(?P<level>{LEVELS})\s+(?:-\s+)?"
    r"(?:(?:\d+\s+)?\[?(?P<src>[\w./-]+(?::[\w<>.]+\(\))?:\d+)\]?(?:\s+|$)(?:-{1,2}\s+)?)?(?P<msg>.*)$"
)
# Python loggers that put ` | ` between their fields, the time first: FastChat's
# `%(asctime)s | %(levelname)s | %(name)s | %(message)s` (its vllm_worker in front of V0 engines:
# `2023-12-27 11:25:36 | ERROR | stderr | …`, vllm#2281; the same format string is common in
# basicConfig setups) and loguru's default `{time} | {level: <8} | {name}:{function}:{line} - `.
# Read before the transports: a log viewer's ` | ` after a time would otherwise take the stamp and
# a compose service the level. Loguru's `module:function:line` is no file location: not a source.
PIPE_LOGGER = (
    r"^(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[.,]\d+)? \| "
    rf"(?P<level>{LEVELS}) *\| (?:[\w.<>-]+:[\w.<>-]+:\d+ - |[\w.-]+ \| )?(?P<msg>.*)$"
)
# Rust's `tracing` fmt layer, after its RFC 3339 time (taken as the transport stamp): the level
# padded to five (`  INFO`, ` WARN`), the target, `: `. NVIDIA Dynamo re-emits vLLM's Python
# records through it with `module.function` as the target: `2026-01-08T05:13:48.113127Z ERROR
# core.run_engine_core: EngineCore failed to start.` (ai-dynamo/dynamo#1408, vllm#32584, Dynamo's
# committed vllm logs). The target must be a dotted or `::` path, so a bare `ERROR word: …` line
# of text is not taken for one.
TRACING_LOGGER = (
    r"^ ?(?P<level>TRACE|DEBUG|INFO|WARN|ERROR) +(?P<target>[A-Za-z_]\w*(?:(?:\.|::)\w+)+): (?P<msg>.*)$"
)
# Intel Gaudi's hl_logger (Synapse, the graph compiler, PT_BRIDGE), printed beside vLLM's own on
# HPU: `[19:08:34.165045][PT_BRIDGE       ][error][tid:44F8A] … Graph compile failed. synStatus=…`
# (HabanaAI/vllm-fork#484, and a committed Gaudi run log's `[SYN_RECIPE    ][error][tid:1F6C4]
# compileGraph: Can not compile graph`; the same synStatus 26 failure is reported in vllm-fork
# #213–#215, #232 and vllm-gaudi#1734). Its level is lower case; its time has no date.
HL_LOGGER = (
    r"^\[\d\d:\d\d:\d\d\.\d+\]\[[A-Z][A-Z0-9_]*\s*\]"
    r"\[(?P<level>trace|debug|info|warning|warn|error|critical) ?\]\[tid:[0-9A-Fa-f]+\] ?(?P<msg>.*)$"
)
# Their level words (upper-cased) in the names vLLM prints.
LEVEL_WORDS = {
    "TRACE": "DEBUG",
    "DEBUG": "DEBUG",
    "INFO": "INFO",
    "WARN": "WARNING",
    "WARNING": "WARNING",
    "ERROR": "ERROR",
    "CRITICAL": "CRITICAL",
}
SEVERITY = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
RAY_REPEAT = r"\s*\[repeated \d+x across cluster\]\s*$"
# tqdm redraws one bar with `\r`: what a terminal shows is the last piece.
LAST_REDRAW = r"([^\r]*)$"

# Unanchored heads of the vLLM-specific prefixes, for sniffing whether a text is a log at all.
LOGGER_HEAD = rf"(?:{LEVELS}) (?:\d\d-\d\d|\d{{4}}-\d\d-\d\d) \d\d:\d\d:\d\d"
PROCESS_HEAD = r"\((?:APIServer|ApiServer|EngineCore\w*|VllmWorker\w*|Worker\w*|RayWorker\w*|pid=\d+)[^)]*\)"
RANK_HEAD = r"\[rank\d+\]:"
UVICORN_HEAD = r"(?:INFO|WARNING|ERROR):\s{2,}"

# JSON-lines envelopes: docker's json-file `log`, structured loggers' `message` / `msg`.
JSON_BODY_KEYS = ("log", "message", "msg")
# docker json-file: time; Vector / Fluent Bit / Loki exports: timestamp, @timestamp, ts.
JSON_TIME_KEYS = ("time", "timestamp", "@timestamp", "ts")
# vLLM's own JSON logging (python-json-logger via VLLM_LOGGING_CONFIG_PATH, or the built-in
# `--logging-config.formatter json`): Python LogRecord attributes. They are read only from a record
# that has `levelname` (a LogRecord's own name): a shipper's `level` is its guess, not the logger's.
JSON_RECORD_KEY = "levelname"
JSON_PROCESS_KEYS = ("vllm_process_name", "processName")
JSON_PID_KEYS = ("vllm_pid", "process")
# Python's name for the process vLLM never prefixes (the API server / V0 engine): its text lines
# carry no process prefix, so its JSON records carry none either and both read as one stream.
MAIN_PROCESS = "MainProcess"


def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


ANSI_RE = re.compile(ANSI)
_CODE_SPAN_RE = _compiled(CODE_SPAN)
_GREP_LINE_RE = _compiled(GREP_LINE)
_TRANSPORT_RE = _compiled(TRANSPORT)
_LOCAL_TS_RE = _compiled(LOCAL_TS)
_JOURNALD_RE = _compiled(JOURNALD)
_RELAY_RE = _compiled(RELAY)
_RELAY_NOT_RE = _compiled(RELAY_NOT)
_JOURNALD_ISO_TS_RE = _compiled(JOURNALD_ISO_TS)
_JOURNALD_HOST_IDENT_RE = _compiled(JOURNALD_HOST_IDENT)
_PROCESS_RE = _compiled(PROCESS)
_RANK_RE = _compiled(RANK)
_PROCESS_RANK_RE = _compiled(PROCESS_RANK)
_VLLM_RE = _compiled(VLLM_LOGGER)
_UVICORN_RE = _compiled(UVICORN)
_C10D_RE = _compiled(C10D)
_GLOG_RE = _compiled(GLOG)
_ISO_RE = _compiled(ISO_LOGGER)
_PIPE_RE = _compiled(PIPE_LOGGER)
_TRACING_RE = _compiled(TRACING_LOGGER)
_HL_RE = _compiled(HL_LOGGER)
# RAY_REPEAT's leading `\s*` is tried at every whitespace run by `re.sub`, quadratic on a line of
# spaces (a 160 KB line took seconds): the Python path anchors on the bracket and strips before it.
_RAY_REPEAT_TAIL_RE = _compiled(r"\[repeated \d+x across cluster\]\s*$")


_BOX_BORDERS = "│┃║"


def strip_box(text: str) -> str:
    """What BOX keeps of a terminal-UI box row (`│ text │` → `text`), cut with str methods: in
    Python's backtracking `re`, BOX's lazy inner before `\\s*[│┃║]?\\s*$` retried every split of a
    run of blanks that more text follows (`│a`, 2,000 spaces, `b` took 9 s; the LogFrame's Rust
    regex is linear and keeps BOX)."""
    body = text.lstrip()
    if not body or body[0] not in _BOX_BORDERS:
        return text
    body = body[1:]
    if body[:1].isspace():
        body = body[1:]
    body = body.rstrip()
    if body and body[-1] in _BOX_BORDERS:
        body = body[:-1].rstrip()
    return body


def strip_ansi(text: str) -> str:
    """`text` without colour codes or other terminal escapes."""
    return ANSI_RE.sub("", text) if "\x1b" in text else text


def month_day(md: str) -> str:
    """`808` / `1203` (glog's MMDD, month unpadded in c10d) → `08-08` / `12-03`, like vLLM's own."""
    md = md.zfill(4)
    return f"{md[:2]}-{md[2:]}"


# ------------------------------------------------------------------------------- one line at a time


@dataclass(frozen=True)
class Parts:
    """One line split by the grammar: the LogFrame's columns for it."""

    message: str
    transport_ts: str | None = None
    vllm_ts: str | None = None
    level: str | None = None
    process: str | None = None
    rank: int | None = None
    pid: int | None = None
    source: str | None = None
    logger: str | None = None  # which logger prefix was read: vllm, c10d, glog, iso, pipe, uvicorn
    service: str | None = None  # the compose service (container) in front of the line


def split_line(line: str, json_lines: bool = False) -> Parts:
    """Every prefix of `line` taken off, in the order the LogFrame takes them. A JSON log record is
    unwrapped when the file is JSON lines (`json_lines`) or the line opens with `{"`."""
    text = line.rstrip("\r\n") if line.endswith(("\r", "\n")) else line
    text = text[:-2] if text.endswith("^M") else text  # a carriage return shown as `^M`
    envelope: dict[str, object] = {}
    if (json_lines and text.startswith("{")) or text.startswith('{"'):
        text, envelope = _unwrap_json(text)
    text = strip_ansi(text)
    text, transport_ts, service = _strip_transport(text)
    if transport_ts is None:
        transport_ts = _str_or_none(envelope.get("ts"))
    text = strip_box(text)
    process, pid, ip = None, None, None
    for _ in range(PROCESS_STACK):
        peeled = _PROCESS_RE.match(text)
        if not peeled:
            break
        pid_text = peeled.group("pid")
        process, ip = peeled.group("proc") or "pid", peeled.group("ip")
        pid = int(pid_text) if pid_text is not None else None
        text = peeled.group("rest")
    if process is not None and ip is not None:
        process = f"{process}@{ip}"
    if "\r" in text:
        # What LAST_REDRAW extracts, without `re.search`: it tries every start and each scans to
        # the next `\r`, quadratic on a long piece before one (70 KB of tabs took over 10 s).
        text = text.rstrip("\r").rsplit("\r", 1)[-1]
    rank = None
    ranked = _RANK_RE.match(text)
    if ranked:
        rank, text = int(ranked.group("rank")), ranked.group("rest")
    elif process is not None:
        from_name = _PROCESS_RANK_RE.search(process)
        rank = int(from_name.group(1)) if from_name else None
    logger, level, vllm_ts, source, message = _split_logger(text)
    if envelope:
        level = level or _str_or_none(envelope.get("level"))
        vllm_ts = vllm_ts or _str_or_none(envelope.get("vllm_ts"))
        source = source or _str_or_none(envelope.get("source"))
        if process is None and envelope.get("process") is not None:
            process, pid = _str_or_none(envelope.get("process")), _int_or_none(envelope.get("pid"))
    return Parts(message, transport_ts, vllm_ts, level, process, rank, pid, source, logger, service)


def strip_prefixes(line: str) -> str:
    """The message of `line`: what is left once every transport, process and logger prefix is off."""
    return split_line(line).message


def source_file(parts: Parts) -> str | None:
    """`core.py` of a `core.py:718` source (the logger's file, as vLLM prints it)."""
    return parts.source.rsplit(":", 1)[0] if parts.source else None


def strip_transport(text: str, relay: bool = True) -> tuple[str, str | None]:
    """(rest, transport time) of a line whose ANSI codes are off: container and journald prefixes
    removed, the vLLM process and logger prefixes left on. `relay=False` leaves a relaying
    launcher's head (RELAY) on: the gutter learner must see it to learn it as a tag."""
    rest, ts, _ = _strip_transport(text, relay)
    return rest, ts


def _strip_transport(text: str, relay: bool = True) -> tuple[str, str | None, str | None]:
    """strip_transport's (rest, transport time) and the compose service the line came from."""
    span = _CODE_SPAN_RE.match(text)
    if span is not None:
        text = span.group(1)
    grep = _GREP_LINE_RE.match(text)
    if grep is not None:
        text = grep.group("rest")
    rest, ts, service = text, None, None
    if not _PIPE_RE.match(text):  # a ` | ` logger's own time and level are no transport
        parts = _TRANSPORT_RE.match(text)
        assert parts is not None  # every group is optional: the pattern matches any line
        tag = parts.group("tag")
        rest, service = parts.group("rest"), parts.group("svc")
        if tag is not None and re.match(RANK_TAG, tag):
            rest = f"[{tag}]: {rest}"
        ts = parts.group("ts").strip() if parts.group("ts") else (parts.group("vts") or parts.group("bts"))
    if ts is None:
        local = _LOCAL_TS_RE.match(rest)
        if local:
            ts, rest = local.group("ts"), local.group("rest")
    if ts is not None and _JOURNALD_ISO_TS_RE.search(ts):
        host_ident = _JOURNALD_HOST_IDENT_RE.match(rest)
        if host_ident:
            rest = host_ident.group("rest")
    journald = _JOURNALD_RE.match(rest)
    if journald:
        return journald.group("rest"), ts or journald.group("jts"), service
    if relay and ts is None and service is None and not _RELAY_NOT_RE.match(rest):
        relayed = _RELAY_RE.match(rest)
        if relayed:
            rest = relayed.group("rest")
    return rest, ts, service


_LOGGERS = (("vllm", _VLLM_RE), ("c10d", _C10D_RE), ("glog", _GLOG_RE), ("iso", _ISO_RE))


def _split_logger(text: str) -> tuple[str | None, str | None, str | None, str | None, str]:
    """(logger, level, logger time, source, message) of a line whose outer prefixes are off."""
    for name, pattern in _LOGGERS:
        found = pattern.match(text)
        if not found:
            continue
        groups = found.groupdict()
        if "sev" in groups:
            level = SEVERITY[groups["sev"]]
            stamp = f"{month_day(groups['md'])} {groups['time']}" if groups["md"] else None
        else:
            level = groups["level"]
            stamp = f"{groups['date']} {groups['time']}" if groups["date"] else None
        source = groups["src"] or groups.get("bsrc") or groups.get("lsrc")
        return name, level, stamp, source, _drop_ray_repeat(groups["msg"])
    piped = _PIPE_RE.match(text)
    if piped:
        stamp = f"{piped.group('date')} {piped.group('time')}"
        return "pipe", piped.group("level"), stamp, None, _drop_ray_repeat(piped.group("msg"))
    uvicorn = _UVICORN_RE.match(text)
    if uvicorn:
        return "uvicorn", uvicorn.group("level"), None, None, _drop_ray_repeat(uvicorn.group("msg"))
    traced = _TRACING_RE.match(text)
    if traced:
        level = LEVEL_WORDS[traced.group("level")]
        return "tracing", level, None, None, _drop_ray_repeat(traced.group("msg"))
    habana = _HL_RE.match(text)
    if habana:
        level = LEVEL_WORDS[habana.group("level").upper()]
        return "hl", level, None, None, _drop_ray_repeat(habana.group("msg"))
    return None, None, None, None, _drop_ray_repeat(text)


def has_ray_repeat(text: str) -> bool:
    """`text` ends in Ray's dedup summary `[repeated 3x across cluster]`: a copy of other
    processes' lines, printed late."""
    return "[repeated " in text and _RAY_REPEAT_TAIL_RE.search(text) is not None


def _drop_ray_repeat(message: str) -> str:
    """`message` without Ray's `[repeated 3x across cluster]` tail (what RAY_REPEAT removes), linear."""
    if "[repeated " not in message:
        return message
    tail = _RAY_REPEAT_TAIL_RE.search(message)
    return message[: tail.start()].rstrip() if tail else message


def _unwrap_json(text: str) -> tuple[str, dict[str, object]]:
    """The body of a JSON-lines record and the LogRecord fields it carries (see `json_fields`)."""
    try:
        record = json.loads(text)
    except ValueError:
        return text, {}
    if not isinstance(record, dict) or not any(isinstance(record.get(k), str) for k in JSON_BODY_KEYS):
        return text, {}  # a JSON value printed on a line of its own, not a log record
    return json_fields(record)


def json_fields(record: dict[str, object]) -> tuple[str, dict[str, object]]:
    """(body, fields) of one JSON log record: body from `log`/`message`/`msg`; fields `ts`, `level`,
    `vllm_ts`, `source`, `process`, `pid` from the keys vLLM's JSON formatters and shippers use."""
    body = next((record[k] for k in JSON_BODY_KEYS if isinstance(record.get(k), str)), "")
    fields: dict[str, object] = {}
    fields["ts"] = next((record[k] for k in JSON_TIME_KEYS if record.get(k) is not None), None)
    if JSON_RECORD_KEY not in record:
        return str(body).rstrip("\r\n"), fields
    fields["level"] = normalise_level(record[JSON_RECORD_KEY])
    asctime = record.get("asctime")
    if isinstance(asctime, str):
        fields["vllm_ts"] = asctime_stamp(asctime)
    if record.get("filename") is not None and record.get("lineno") is not None:
        fields["source"] = f"{record['filename']}:{record['lineno']}"
    process = next((record[k] for k in JSON_PROCESS_KEYS if record.get(k) is not None), None)
    if process != MAIN_PROCESS:
        fields["process"] = process
        fields["pid"] = next((record[k] for k in JSON_PID_KEYS if record.get(k) is not None), None)
    return str(body).rstrip("\r\n"), fields


_ASCTIME = re.compile(r"^(?:\d{4}-)?(\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")


def asctime_stamp(asctime: str) -> str | None:
    """`2025-11-04 15:23:28,123` (logging's default asctime) → `11-04 15:23:28`, vLLM's own form."""
    found = _ASCTIME.match(asctime)
    return f"{found.group(1)} {found.group(2)}" if found else None


def normalise_level(level: object) -> str | None:
    """`info` / `Warning` / `WARN` / `FATAL` → the level names vLLM prints."""
    if not isinstance(level, str):
        return None
    upper = level.upper()
    upper = {"WARN": "WARNING", "FATAL": "CRITICAL", "ERR": "ERROR"}.get(upper, upper)
    return upper if upper in LEVELS.split("|") else None


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: object) -> int | None:
    try:
        number: int = int(value)  # type: ignore[call-overload]
        return number
    except (TypeError, ValueError):
        return None
