"""nvidia-smi output, in every form a person pastes, read into fingerprint facts.

Forms (`looks_like` returns the sub-kind; `ParseResult.kind` is `nvidia_smi.<sub-kind>`):

==============  ==========================================================================
``table``       plain ``nvidia-smi``: pre-530 79-column layout, 530/531/535 87-column, 545–575
                (``|----`` under the banner), 580+ (``+----+``); Windows TCC/WDDM; the MIG devices
                and Processes tables when present
``list``        ``nvidia-smi -L``, with indented ``MIG 3g.40gb  Device 0: (UUID: MIG-…)`` children
``query``       ``nvidia-smi -q`` and its ``-d MEMORY``-style subsets
``xml``         ``nvidia-smi -q -x``
``csv``         ``--query-gpu=… --format=csv[,noheader][,nounits]`` (also ``-l`` loop mode) and
                ``--query-compute-apps=…``
``topo``        ``nvidia-smi topo -m``
``version``     ``nvidia-smi --version``
``proc_version`` ``/proc/driver/nvidia/version``
``error``       what nvidia-smi prints instead of output when it cannot work
==============  ==========================================================================

Facts (every name prefixed by the scope: ``host``, ``container`` or ``gpu``): ``driver_version``,
``cuda_version`` (what the driver supports), ``gpu_count``, ``gpu_models``, ``gpu_memory_used_mib`` and
``gpu_memory_total_mib`` (table and csv forms; ``None`` where a value was cut off), ``gpu_processes``
(compute processes: types C, C+G, M+C), ``gpu_process_list``, ``mig_enabled``, ``gpu_uuids``,
``mig_devices``, ``gpu_compute_caps``, ``topology``, ``nvml_version``, ``driver_kernel_module``.
List facts point at the line of their first entry; a count points at the line it was read from
or, when it is counted, at the first counted row.

A file may hold several forms (a capture script's ``$ nvidia-smi``, ``$ nvidia-smi -L``, …): each
form present is read and the results are merged, the richest form first. What cannot be read
(output cut by ``head``, a terminal or a paste limit) is left out and said in ``notes``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from vllm_triage.parsers.base import ParseResult, PasteLine, Problem, clean_paste
from vllm_triage.provenance import Provenance

# Sub-kinds in the order their facts are trusted when one file holds several forms.
SUBKINDS = ("table", "query", "xml", "csv", "list", "topo", "version", "proc_version", "error")

_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
_BUS_ID = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]")

# ---------------------------------------------------------------------------------------------
# Recognition
# ---------------------------------------------------------------------------------------------

_TABLE_BANNER = re.compile(r"^\s*\|\s*NVIDIA-SMI\s+\d")
_TABLE_MARKS = re.compile(
    r"^\s*\|\s*(?:Processes:|MIG devices:)"
    r"|Pwr:Usage/Cap|Persistence-M|TCC/WDDM|\bPID\s+Type\s+Process name"
)
_LIST_GPU = re.compile(r"^GPU (\d+): (.*)$")
_LIST_MIG = re.compile(r"^\s*MIG\s+(\S+)\s+Device\s+(\d+):\s*\(UUID:\s*([^)\s]+)\)?")
# the banner, the GPU count, or a GPU section header (bus id alone on its line: the top may be cut)
_QUERY_MARK = re.compile(
    r"^=+\s*NVSMI LOG\s*=+\s*$|^Attached GPUs\s*:\s*\d+|^GPU\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\s*$"
)
_XML_MARK = re.compile(r"<nvidia_smi_log\b")
_TOPO_ROW = re.compile(r"^\s*(GPU\d+|NIC\d+|mlx\d+_\d+)\s+(?=X(?![A-Za-z])|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC)")
_VERSION_LINE = re.compile(r"^(NVIDIA-SMI|NVML|DRIVER|CUDA) [Vv]ersion\s*:\s*(\S+)")
_PROC_VERSION = re.compile(r"^NVRM version:\s*(.*)$")

# Text that other roles own. nvidia-smi is sniffed first, so it must leave them alone:
# collect_env embeds a topology matrix, "GPU 0: NVIDIA H200" lines and "Nvidia driver version:".
_COLLECT_ENV_MARKS = (
    "Collecting environment information",
    "PyTorch version:",
    "Nvidia driver version:",
    "GPU models and configuration:",
    "GPU Topology:",
    "CUDA used to build PyTorch",
    "Versions of relevant libraries",
    "vLLM Version:",
)
_LOG_LINE = re.compile(
    r"(?:^|\s)(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:\d\d-\d\d|\d{4}-\d\d-\d\d) \d\d:\d\d:\d\d"
    r"|Traceback \(most recent call last\)"
    r"|\((?:APIServer|EngineCore\w*|VllmWorker\w*|Worker\w*|RayWorker\w*)[^)]*pid=\d+"
    r"|^\w+(?:Error|Exception): "
)


_SNIFF_CHARS = 256 * 1024


def looks_like(text: str) -> str | None:
    """The nvidia-smi sub-kind of `text`, or None when it is not nvidia-smi output."""
    try:
        # the head is enough to recognise a form; a multi-GB log must not be scanned to the end
        head = text[:_SNIFF_CHARS]
        if _foreign(clean_paste(head)) is not None:
            return None
        kinds = _detect(_lines(head))
        return kinds[0] if kinds else None
    except Exception:  # a sniffer must never take a run down
        return None


def _lines(text: str) -> list[PasteLine]:
    """Paste debris removed, but prompt lines kept: `$ nvidia-smi --query-gpu=…` names the csv columns."""
    return clean_paste(text, keep_prompts=True)


def _foreign(lines: list[PasteLine]) -> str | None:
    """Why this text belongs to another parser (JSON, collect_env, a vLLM log), or None."""
    first = next((line.text.strip() for line in lines if line.text.strip()), "")
    if first.startswith(("{", "[")):
        return "JSON"
    joined = "\n".join(line.text for line in lines)
    if any(mark in joined for mark in _COLLECT_ENV_MARKS):
        return "collect_env output"
    if sum(1 for line in lines if _LOG_LINE.search(line.text)) >= 3:
        return "a vLLM/Python log"
    return None


def _detect(lines: list[PasteLine]) -> list[str]:
    """Every sub-kind present in the lines, in SUBKINDS order."""
    texts = [line.text for line in lines]
    found: set[str] = set()
    for text in texts:
        if text.lstrip().startswith(("|", "+")):  # a table row is nothing else: skip the other tests
            if "table" not in found and (_TABLE_BANNER.match(text) or _TABLE_MARKS.search(text)):
                found.add("table")
        elif _TABLE_MARKS.search(text):
            found.add("table")
        elif _LIST_GPU.match(text) and "(UUID:" in text or _LIST_MIG.match(text):
            found.add("list")
        elif _QUERY_MARK.match(text):
            found.add("query")
        elif _XML_MARK.search(text):
            found.add("xml")
        elif _TOPO_ROW.match(text):
            found.add("topo")
        elif _VERSION_LINE.match(text) and not text.startswith("CUDA"):
            found.add("version")
        elif _PROC_VERSION.match(text):
            found.add("proc_version")
        elif _ANY_ERROR.search(text):
            found.add("error")
    if _csv_blocks(lines, _query_commands(lines)):
        found.add("csv")
    return [kind for kind in SUBKINDS if kind in found]


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


@dataclass
class _Out:
    """One form's findings; every fact name gets the scope prefix here, nowhere else."""

    result: ParseResult
    file: str
    scope: str

    def fact(self, name: str, value: Any, line: int | None, note: str | None = None) -> None:
        self.result.fact(f"{self.scope}.{name}", value, self.file, line, note)

    def has(self, name: str) -> bool:
        return f"{self.scope}.{name}" in self.result.facts

    def note(self, text: str) -> None:
        self.result.notes.append(text)

    def problem(self, id_: str, severity: str, message: str, line: int | None, advice: str = "") -> None:
        self.result.problems.append(Problem(id_, severity, message, [Provenance(self.file, line)], advice))


def parse(text: str, file: str, scope: str = "gpu") -> ParseResult:
    """Read every nvidia-smi form found in `text` into facts named `{scope}.…`. Never raises."""
    try:
        return _parse(text, file, scope)
    except Exception as exc:  # odd input must give a note, never a traceback in a triage run
        result = ParseResult(kind="nvidia_smi.unknown")
        result.notes.append(f"nvidia-smi parser could not read {file}: {type(exc).__name__}: {exc}")
        return result


def _parse(text: str, file: str, scope: str) -> ParseResult:
    lines = _lines(text)
    kinds = _detect(lines)
    foreign = _foreign(clean_paste(text))
    if not kinds or foreign == "JSON":  # JSON quoting nvidia-smi text is still JSON (an inspect, a request)
        result = ParseResult(kind="nvidia_smi.unknown")
        why = f" (it looks like {foreign})" if foreign else ""
        result.notes.append(f"{file}: no nvidia-smi output recognised{why}")
        return result
    result = ParseResult(kind=f"nvidia_smi.{kinds[0]}")
    if foreign:
        result.notes.append(f"{file} looks like {foreign}; only its nvidia-smi parts were read")
    parts = []
    for kind in kinds:
        part = ParseResult(kind=f"nvidia_smi.{kind}")
        _READERS[kind](lines, _Out(part, file, scope))
        result.merge(part)
        parts.append(part)
    _prefer_full_names(result, parts, f"{scope}.gpu_models")
    return result


def _prefer_full_names(result: ParseResult, parts: list[ParseResult], name: str) -> None:
    """The 79-column table shortens names ('NVIDIA A100-SXM...'); -L or -q in the same paste has them whole."""
    kept = result.facts.get(name)
    if kept is None or not any(isinstance(model, str) and model.endswith("...") for model in kept.value):
        return
    for part in parts:
        other = part.facts.get(name)
        if (
            other
            and len(other.value) == len(kept.value)
            and not any(str(m).endswith("...") for m in other.value)
        ):
            result.facts[name] = other
            return


def _first_line(items: Iterable[Any]) -> int | None:
    return next((item.line for item in items), None)


def _mig_from_modes(out: _Out, modes: list[tuple[str | None, int | None]], where: str) -> None:
    """mig_enabled from per-GPU MIG modes: any Enabled wins; all readable ones Disabled → False."""
    enabled = [line for mode, line in modes if mode and mode.lower() == "enabled"]
    disabled = [line for mode, line in modes if mode and mode.lower() == "disabled"]
    if enabled:
        out.fact("mig_enabled", True, enabled[0])
    elif disabled:
        unread = sum(1 for mode, _ in modes if not mode)
        note = f"MIG mode unreadable for {unread} GPU(s)" if unread else None
        out.fact("mig_enabled", False, disabled[0], note)
        if unread:
            out.note(f"{where}: MIG mode unreadable for {unread} GPU(s); the others show Disabled")


def _int_or_none(value: str | None) -> int | None:
    """143771 from '143771 MiB', '143771MiB' or '143771'; None for N/A, [Not Supported], cut values."""
    if value is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*(?:MiB)?\s*", value)
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------------------------------------
# table: the default nvidia-smi screen
# ---------------------------------------------------------------------------------------------

_BORDER = re.compile(r"^[+|](?=.*[-=]{3})[-=+|\s]*$")
_SMI_VERSION = re.compile(r"NVIDIA-SMI\s+(\d[\w.-]*)")
_DRIVER_IN_BANNER = re.compile(r"Driver Version:\s*(\d[\w.-]*)")
_CUDA_IN_BANNER = re.compile(r"CUDA Version:\s*(\S+)")
_GPU_CELL = re.compile(r"^\s*(\d+)\s+(\S.*?)\s*$")
_PERSISTENCE = re.compile(r"^(.*?)\s+(On|Off|TCC|WDDM|N/A)$")
_MEMORY_CELL = re.compile(r"(\d+)\s*MiB\s*/\s*(?:(\d+)\s*MiB)?")
_PROCESS_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+)?(?P<pid>\d+)\s+"
    r"(?P<type>[CGM](?:\+[CGM])*)\s+(?P<name>.*?)\s*(?:(?P<mem>\d+\s*MiB|N/A|\d*\.\.\.)\s*)?(?:\|\s*)?$"
)
_MIG_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_GPU_ERROR_CELL = re.compile(r"ERR!|Unknown Error|GPU is lost")


@dataclass
class _TableGpu:
    index: int
    name: str
    line: int
    name_cut: bool = False
    used: int | None = None
    total: int | None = None
    memory_line: int | None = None
    memory_seen: bool = False
    mig_mode: str | None = None
    mig_line: int | None = None
    closed: bool = False
    error_line: int | None = None  # first row showing ERR! / Unknown Error


@dataclass
class _TableProcess:
    gpu: int
    gi: str | None
    ci: str | None
    pid: int
    type: str
    name: str
    used_mib: int | None
    line: int
    memory_cut: bool


@dataclass
class _Snapshot:
    """One printed screen: `nvidia-smi -l` or a pasted series holds several."""

    banner: PasteLine | None = None
    gpus: list[_TableGpu] = field(default_factory=list)
    section: str = "gpus"  # gpus | mig | processes
    process_state: str = "absent"  # absent | header | rows | closed
    processes: list[_TableProcess] = field(default_factory=list)
    no_processes_line: int | None = None
    mig_state: str = "absent"
    mig_devices: list[dict[str, Any]] = field(default_factory=list)
    mig_devices_line: int | None = None

    @property
    def gpu_table_closed(self) -> bool:
        return bool(self.gpus) and self.gpus[-1].closed

    @property
    def complete(self) -> bool:
        return (not self.gpus or self.gpu_table_closed) and self.process_state in ("absent", "closed")


def _unwrap(lines: list[PasteLine]) -> list[PasteLine]:
    """Join table rows a narrow terminal wrapped onto a second line (the rest ends with '|' or '+').

    A wrap splits at the terminal width, so the two parts are joined as they are, without a space.
    """
    out: list[PasteLine] = []
    for line in lines:
        text = line.text.strip()
        if (
            out
            and text.endswith(("|", "+"))
            and not text.startswith(("|", "+"))
            and out[-1].text.lstrip().startswith(("|", "+"))
            and not out[-1].text.endswith(("|", "+"))
        ):
            out[-1] = PasteLine(out[-1].number, out[-1].text + line.text)
            continue
        out.append(line)
    return out


def _cells(text: str) -> list[str]:
    """The cells of a table row: '| a | b |' → [' a ', ' b ']; a cut row keeps its partial last cell."""
    body = text.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return body.split("|")


def _read_table(lines: list[PasteLine], out: _Out) -> None:
    snapshots = _table_snapshots(_unwrap(lines))
    chosen = _choose_snapshot(snapshots, out)
    _emit_banner(chosen, out)
    _emit_gpus(chosen, out)
    _emit_mig(chosen, out)
    _emit_processes(chosen, out)
    for gpu in chosen.gpus:
        if gpu.error_line is None:
            continue
        out.problem(
            "nvidia-smi-gpu-error",
            "error",
            f"nvidia-smi shows ERR!/Unknown Error for GPU {gpu.index}",
            gpu.error_line,
            "ERR!/Unknown Error in the table usually means the GPU fell off the bus or hit an Xid: "
            "check `dmesg | grep -i -e NVRM -e Xid`; a reset or reboot is needed before any vLLM trial.",
        )


def _table_snapshots(lines: list[PasteLine]) -> list[_Snapshot]:
    snapshots = [_Snapshot()]
    for line in lines:
        text = line.text.strip()
        if _TABLE_BANNER.match(text):
            if (
                snapshots[-1].banner is not None
                or snapshots[-1].gpus
                or snapshots[-1].process_state != "absent"
            ):
                snapshots.append(_Snapshot())
            snapshots[-1].banner = line
            continue
        _table_line(snapshots[-1], line, text)
    return [snap for snap in snapshots if snap.banner or snap.gpus or snap.process_state != "absent"]


def _choose_snapshot(snapshots: list[_Snapshot], out: _Out) -> _Snapshot:
    """The last complete screen; the last one when none is complete (read what is there)."""
    if not snapshots:
        return _Snapshot()
    if len(snapshots) == 1:
        return snapshots[0]
    complete = [snap for snap in snapshots if snap.complete and snap.gpus]
    chosen = complete[-1] if complete else snapshots[-1]
    where = chosen.banner.number if chosen.banner else "?"
    out.note(f"{len(snapshots)} nvidia-smi screens in one paste; read the last complete one (line {where})")
    return chosen


def _table_line(snap: _Snapshot, line: PasteLine, text: str) -> None:
    if re.match(r"^\|\s*Processes:", text):
        snap.section, snap.process_state = "processes", "header"
        return
    if re.match(r"^\|\s*MIG devices:", text):
        snap.section, snap.mig_state = "mig", "header"
        return
    if snap.section == "processes":
        _process_line(snap, line, text)
    elif snap.section == "mig":
        _mig_line(snap, line, text)
    elif text.startswith(("|", "+")):
        _gpu_line(snap, line, text)


def _gpu_line(snap: _Snapshot, line: PasteLine, text: str) -> None:
    if _BORDER.match(text):
        if snap.gpus and snap.gpus[-1].memory_seen:
            snap.gpus[-1].closed = True
        return
    cells = _cells(text)
    row_complete = text.endswith("|")
    gpu_cell = _GPU_CELL.match(cells[0])
    # A GPU's first row: its index and name, then the bus id (unless the row was cut before it).
    # A whole one-cell row is a process row that lost its section header, never a GPU.
    cut_early = not row_complete and len(cells) <= 2
    if gpu_cell and (len(cells) >= 2 and _BUS_ID.search(cells[1]) or cut_early):
        persistence = _PERSISTENCE.match(gpu_cell.group(2)) if len(cells) >= 2 else None
        name = persistence.group(1) if persistence else gpu_cell.group(2)
        gpu = _TableGpu(int(gpu_cell.group(1)), name.strip(), line.number, name_cut=len(cells) == 1)
        snap.gpus.append(gpu)
        _note_error_cells(gpu, line, text)
        return
    if not snap.gpus or snap.gpus[-1].closed:
        return
    gpu = snap.gpus[-1]
    _note_error_cells(gpu, line, text)
    if not gpu.memory_seen:
        # the second row: Fan Temp Perf Pwr | Memory-Usage | GPU-Util Compute M.
        gpu.memory_seen, gpu.memory_line = True, line.number
        memory = _MEMORY_CELL.search(cells[1]) if len(cells) >= 2 else None
        if memory:
            gpu.used = int(memory.group(1))
            gpu.total = int(memory.group(2)) if memory.group(2) else None
        return
    if len(cells) >= 3 and not cells[0].strip() and row_complete:
        mode = cells[-1].strip()
        if mode in ("Enabled", "Disabled", "N/A"):
            gpu.mig_mode, gpu.mig_line = mode, line.number


def _note_error_cells(gpu: _TableGpu, line: PasteLine, text: str) -> None:
    if gpu.error_line is None and _GPU_ERROR_CELL.search(text):
        gpu.error_line = line.number


def _process_line(snap: _Snapshot, line: PasteLine, text: str) -> None:
    if text.startswith("|=") and snap.process_state == "header":
        snap.process_state = "rows"
        return
    if snap.process_state != "rows":
        return
    if _BORDER.match(text):
        snap.process_state = "closed"
        return
    if "No running processes found" in text:
        snap.no_processes_line = line.number
        return
    row = _PROCESS_ROW.match(text)
    if not row:
        return
    memory = row.group("mem")
    snap.processes.append(
        _TableProcess(
            gpu=int(row.group("gpu")),
            gi=row.group("gi"),
            ci=row.group("ci"),
            pid=int(row.group("pid")),
            type=row.group("type"),
            name=row.group("name"),
            used_mib=_int_or_none(memory.replace(" ", "") if memory else None),
            line=line.number,
            memory_cut=bool(memory and memory.endswith("...")) or not text.endswith("|"),
        )
    )


def _mig_line(snap: _Snapshot, line: PasteLine, text: str) -> None:
    if text.startswith("|=") and snap.mig_state == "header":
        snap.mig_state = "rows"
        return
    if snap.mig_state != "rows":
        return
    if "No MIG devices found" in text:
        snap.mig_devices_line = line.number
        return
    row = _MIG_ROW.match(text)
    if row:
        gpu, gi, ci, dev, used, total = (int(value) for value in row.groups())
        snap.mig_devices.append(
            {"gpu": gpu, "gi": gi, "ci": ci, "mig_dev": dev, "used_mib": used, "total_mib": total}
        )
        snap.mig_devices_line = snap.mig_devices_line or line.number


def _emit_banner(snap: _Snapshot, out: _Out) -> None:
    banner = snap.banner
    if banner is None:
        if snap.gpus or snap.process_state != "absent":
            out.note("the table's banner (NVIDIA-SMI / Driver Version / CUDA Version) is not in the paste")
        return
    text = banner.text.rstrip()
    cut = not text.endswith("|")
    # a value running to the end of a cut line may itself be cut ('580.1' of '580.159.04')
    driver = _DRIVER_IN_BANNER.search(text)
    driver = driver if driver and not (cut and driver.end() == len(text)) else None
    cuda = _CUDA_IN_BANNER.search(text)
    cuda = cuda if cuda and not (cut and cuda.end() == len(text)) else None
    smi = _SMI_VERSION.search(text)
    if driver:
        out.fact("driver_version", driver.group(1), banner.number)
    if cuda and _VERSION.match(cuda.group(1)):
        out.fact("cuda_version", cuda.group(1), banner.number)
    if not driver:
        out.note(f"line {banner.number}: the banner is cut before 'Driver Version'")
    if not cuda or not _VERSION.match(cuda.group(1)):
        out.note(
            f"line {banner.number}: "
            + ("the banner is cut before 'CUDA Version'" if cut else "the banner shows no CUDA Version")
        )
    if smi and driver and smi.group(1) != driver.group(1):
        out.note(f"nvidia-smi {smi.group(1)} runs against driver {driver.group(1)} (different versions)")


def _emit_gpus(snap: _Snapshot, out: _Out) -> None:
    gpus = snap.gpus
    if not gpus:
        return
    first = gpus[0].line
    if snap.gpu_table_closed:
        out.fact("gpu_count", len(gpus), first)
    else:
        out.note(
            f"output cut inside GPU {gpus[-1].index}'s rows (line {gpus[-1].line}): gpu_count left out, "
            f"lists cover the {len(gpus)} GPU(s) shown"
        )
    # a GPU in error prints ERR! where its name belongs: that is no model name
    models = [None if _GPU_ERROR_CELL.fullmatch(gpu.name) else gpu.name for gpu in gpus]
    out.fact("gpu_models", models, first, "None: name unreadable (ERR!)" if None in models else None)
    for gpu in gpus:
        if gpu.name_cut:
            out.note(f"line {gpu.line}: GPU {gpu.index}'s row is cut; its name may be incomplete")
        elif gpu.name.endswith("..."):
            out.note(f"line {gpu.line}: nvidia-smi shortened GPU {gpu.index}'s name to {gpu.name!r}")
    _emit_memory(gpus, out)
    _mig_from_modes(out, [(gpu.mig_mode, gpu.mig_line) for gpu in gpus], "table")


def _emit_memory(gpus: list[_TableGpu], out: _Out) -> None:
    used = [gpu.used for gpu in gpus]
    total = [gpu.total for gpu in gpus]
    line = next((gpu.memory_line for gpu in gpus if gpu.memory_line), gpus[0].line)
    for name, values in (("gpu_memory_used_mib", used), ("gpu_memory_total_mib", total)):
        if all(value is None for value in values):
            out.note(f"the Memory-Usage column is not readable: {name} left out")
            continue
        missing = [gpu.index for gpu, value in zip(gpus, values, strict=True) if value is None]
        note = f"unreadable for GPU(s) {missing}" if missing else None
        out.fact(name, values, line, note)
        if missing:
            out.note(f"{name}: unreadable (cut off or ERR!) for GPU(s) {missing}: None in the list")


def _emit_mig(snap: _Snapshot, out: _Out) -> None:
    if snap.mig_state == "absent":
        return
    if snap.mig_devices_line is None:
        out.note("the MIG devices table is cut before its rows")
        return
    out.fact("mig_devices", snap.mig_devices, snap.mig_devices_line)
    if snap.mig_devices and not out.has("mig_enabled"):
        out.fact("mig_enabled", True, snap.mig_devices_line)


def _emit_processes(snap: _Snapshot, out: _Out) -> None:
    if snap.process_state == "absent":
        return
    if snap.process_state == "header":
        out.note("the Processes table is cut inside its header: gpu_processes left out")
        return
    processes = snap.processes
    if not processes:
        if snap.no_processes_line is not None:
            out.fact("gpu_processes", 0, snap.no_processes_line)
            out.fact("gpu_process_list", [], snap.no_processes_line)
        else:
            out.note("the Processes table is cut before its first row: gpu_processes left out")
        return
    compute = [proc for proc in processes if "C" in proc.type]
    notes = []
    if len(compute) < len(processes):
        notes.append(f"{len(processes) - len(compute)} graphics-only process(es) not counted")
    if snap.process_state != "closed":
        notes.append("table cut: at least this many")
        out.note(f"the Processes table is cut after {len(processes)} row(s); more may be missing")
    out.fact(
        "gpu_processes", len(compute), _first_line(compute) or processes[0].line, "; ".join(notes) or None
    )
    out.fact(
        "gpu_process_list",
        [
            {
                "gpu": proc.gpu,
                "pid": proc.pid,
                "name": proc.name,
                "used_mib": proc.used_mib,
                "type": proc.type,
            }
            for proc in processes
        ],
        processes[0].line,
    )
    cut = [proc.line for proc in processes if proc.memory_cut]
    if cut:
        out.note(f"the GPU Memory column of the Processes table is cut on line(s) {cut}: used_mib is None")
    # GI/CI ids on a process row exist only on a MIG-enabled GPU
    mig_row = next((proc for proc in processes if proc.gi and proc.gi.isdigit()), None)
    if mig_row and not out.has("mig_enabled"):
        out.fact("mig_enabled", True, mig_row.line)


# ---------------------------------------------------------------------------------------------
# list: nvidia-smi -L
# ---------------------------------------------------------------------------------------------

_LIST_NAME = re.compile(r"^(.*?)\s*\(UUID:\s*([^)\s]+)\)?\s*$")


def _read_list(lines: list[PasteLine], out: _Out) -> None:
    gpus: list[tuple[str, str | None, int]] = []
    mig: list[dict[str, Any]] = []
    mig_line: int | None = None
    for line in lines:
        gpu = _LIST_GPU.match(line.text.strip())
        if gpu:
            named = _LIST_NAME.match(gpu.group(2))
            if named:
                gpus.append((named.group(1), named.group(2), line.number))
            else:
                gpus.append((gpu.group(2).strip(), None, line.number))
                out.note(f"line {line.number}: no UUID on this -L line; it may be cut")
            continue
        child = _LIST_MIG.match(line.text)
        if child and gpus:
            mig.append(
                {
                    "gpu": len(gpus) - 1,
                    "profile": child.group(1),
                    "device": int(child.group(2)),
                    "uuid": child.group(3),
                }
            )
            mig_line = mig_line or line.number
    if not gpus:
        return
    first = gpus[0][2]
    out.fact("gpu_count", len(gpus), first)
    out.fact("gpu_models", [name for name, _, _ in gpus], first)
    uuids = [uuid for _, uuid, _ in gpus]
    if any(uuids):
        out.fact("gpu_uuids", uuids, first)
    # MIG children prove MIG is on; their absence proves nothing (MIG on, no instances created).
    if mig:
        out.fact("mig_enabled", True, mig_line)
        out.fact("mig_devices", mig, mig_line)


# ---------------------------------------------------------------------------------------------
# query: nvidia-smi -q
# ---------------------------------------------------------------------------------------------

_Q_GPU = re.compile(r"^GPU\s+(" + _BUS_ID.pattern + r")\s*$")
_Q_KEY = re.compile(r"^(\s*)([^:]*?\S)\s*:\s?(.*?)\s*$")


@dataclass
class _QueryGpu:
    line: int
    name: str | None = None
    uuid: str | None = None
    mig_mode: str | None = None
    mig_line: int | None = None
    processes: list[dict[str, Any]] | None = None
    processes_line: int | None = None


def _read_query(lines: list[PasteLine], out: _Out) -> None:
    head: dict[str, tuple[str, int]] = {}
    gpus: list[_QueryGpu] = []
    # Indentation says which section a key belongs to; when a paste lost it, the last header does.
    indented = any(line.text.startswith((" ", "\t")) and ":" in line.text for line in lines)
    stack: list[tuple[int, str]] = []
    for line in lines:
        text = line.text.rstrip()
        if not text.strip() or text.lstrip().startswith(("|", "+", "=", "<")):
            continue
        if _Q_GPU.match(text.strip()):
            gpus.append(_QueryGpu(line.number))
            stack = []
            continue
        indent = len(text) - len(text.lstrip())
        while stack and indented and stack[-1][0] >= indent:
            stack.pop()
        key = _Q_KEY.match(text)
        if not key:
            stack = stack if indented else []
            stack.append((indent, text.strip()))
            continue
        parent = stack[-1][1] if stack else None
        name, value = key.group(2).strip(), key.group(3)
        if not gpus:
            head.setdefault(name, (value, line.number))
        else:
            _query_key(gpus[-1], parent, name, value, line.number)
    _emit_query(head, gpus, out, "-q")


def _query_key(gpu: _QueryGpu, parent: str | None, name: str, value: str, number: int) -> None:
    if name == "Product Name":
        gpu.name = value
    elif name == "GPU UUID":
        gpu.uuid = value
    elif parent == "MIG Mode" and name == "Current":
        gpu.mig_mode, gpu.mig_line = value, number
    elif name == "Processes":  # "Processes : None" (the header form has no value and no colon)
        gpu.processes, gpu.processes_line = ([] if value in ("None", "") else None), number
    elif parent == "Processes" and name == "Process ID":
        if gpu.processes is None:
            gpu.processes = []
        gpu.processes_line = gpu.processes_line or number
        gpu.processes.append({"pid": _int_or_none(value), "line": number})
    elif parent == "Processes" and gpu.processes:
        gpu.processes[-1][{"Type": "type", "Name": "name", "Used GPU Memory": "used"}.get(name, name)] = value


def _emit_query(head: dict[str, tuple[str, int]], gpus: list[_QueryGpu], out: _Out, form: str) -> None:
    for key, fact in (("Driver Version", "driver_version"), ("CUDA Version", "cuda_version")):
        if key in head and _VERSION.match(head[key][0]):
            out.fact(fact, head[key][0], head[key][1])
    attached = head.get("Attached GPUs")
    count = _int_or_none(attached[0]) if attached else None
    if attached and count is not None:
        out.fact("gpu_count", count, attached[1])
    elif gpus:
        out.note(f"{form}: 'Attached GPUs' is not in the paste: gpu_count left out")
    if not gpus:
        return
    if count is not None and len(gpus) < count:
        out.note(f"{form}: {len(gpus)} of {count} attached GPUs are described (cut output or -i filter)")
    names = _prefix([gpu.name for gpu in gpus])
    if names:
        partial = (
            f"{len(names)} of {count or len(gpus)} GPUs described"
            if len(names) < (count or len(gpus))
            else None
        )
        out.fact("gpu_models", names, gpus[0].line, partial)
    uuids = _prefix([gpu.uuid for gpu in gpus])
    if uuids:
        out.fact("gpu_uuids", uuids, gpus[0].line)
    _mig_from_modes(out, [(gpu.mig_mode, gpu.mig_line) for gpu in gpus if gpu.mig_mode], form)
    _emit_query_processes(gpus, out, form)


def _prefix(values: list[str | None]) -> list[str]:
    """The values up to the first missing one: a cut paste loses the last GPUs, not the first."""
    out: list[str] = []
    for value in values:
        if value is None:
            break
        out.append(value)
    return out


def _emit_query_processes(gpus: list[_QueryGpu], out: _Out, form: str) -> None:
    known = [gpu for gpu in gpus if gpu.processes is not None]
    if not known:
        return
    listed = [
        {
            "gpu": index,
            "pid": proc.get("pid"),
            "name": proc.get("name"),
            "used_mib": _int_or_none(proc.get("used")),
            "type": proc.get("type"),
        }
        for index, gpu in enumerate(gpus)
        for proc in gpu.processes or []
    ]
    compute = [proc for proc in listed if "C" in (proc["type"] or "C")]
    note = None
    if len(known) < len(gpus):
        note = f"Processes read for {len(known)} of {len(gpus)} GPUs"
        out.note(f"{form}: {note}")
    first = next((gpu.processes_line for gpu in known if gpu.processes), known[0].processes_line)
    out.fact("gpu_processes", len(compute), first, note)
    out.fact("gpu_process_list", listed, first)


# ---------------------------------------------------------------------------------------------
# xml: nvidia-smi -q -x
# ---------------------------------------------------------------------------------------------

_XML_TAG = re.compile(r"<(/?)([A-Za-z_][\w.-]*)([^>]*)>([^<]*)")


def _read_xml(lines: list[PasteLine], out: _Out) -> None:
    joined = "\n".join(line.text for line in lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line.text) + 1)
    head: dict[str, tuple[str, int]] = {}
    gpus: list[_QueryGpu] = []
    stack: list[list[Any]] = []  # [tag, text, line, has_child]
    for match in _XML_TAG.finditer(joined):
        closing, tag, attrs, text = match.groups()
        number = lines[bisect.bisect_right(starts, match.start()) - 1].number
        if not closing:
            if stack:
                stack[-1][3] = True
            if tag == "gpu":
                gpus.append(_QueryGpu(number))
            elif tag == "processes" and gpus:
                gpus[-1].processes, gpus[-1].processes_line = [], number
            elif tag == "process_info" and gpus and gpus[-1].processes is not None:
                gpus[-1].processes.append({"line": number})
            if attrs.rstrip().endswith("/"):
                continue
            stack.append([tag, text.strip(), number, False])
            continue
        while stack and stack[-1][0] != tag:
            stack.pop()
        if not stack:
            continue
        _, value, at, has_child = stack.pop()
        if not has_child:
            _xml_leaf(head, gpus, stack[-1][0] if stack else None, tag, value, at)
    _emit_query(head, gpus, out, "-q -x")


_XML_HEAD = {
    "driver_version": "Driver Version",
    "cuda_version": "CUDA Version",
    "attached_gpus": "Attached GPUs",
}
_XML_PROCESS = {"pid": "pid", "type": "type", "process_name": "name", "used_memory": "used"}


def _xml_leaf(
    head: dict, gpus: list[_QueryGpu], parent: str | None, tag: str, value: str, number: int
) -> None:
    if parent == "nvidia_smi_log" and tag in _XML_HEAD:
        head.setdefault(_XML_HEAD[tag], (value, number))
    elif not gpus:
        return
    elif parent == "gpu" and tag == "product_name":
        gpus[-1].name = value
    elif parent == "gpu" and tag == "uuid":
        gpus[-1].uuid = value
    elif parent == "mig_mode" and tag == "current_mig":
        gpus[-1].mig_mode, gpus[-1].mig_line = value, number
    elif parent == "process_info" and tag in _XML_PROCESS and gpus[-1].processes:
        entry = gpus[-1].processes[-1]
        entry[_XML_PROCESS[tag]] = _int_or_none(value) if tag == "pid" else value


# ---------------------------------------------------------------------------------------------
# csv: --query-gpu / --query-compute-apps
# ---------------------------------------------------------------------------------------------

_QUERY_COMMAND = re.compile(r"--query-(gpu|compute-apps)[= ]([\w.,]+)")
_FIELD_LIKE = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*(?:\s*\[[^\]]*\])?$")
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")
_ALIASES = {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "used_memory": "used_gpu_memory"}
_APP_FIELDS = {"pid", "process_name", "used_gpu_memory", "gpu_uuid"}
_GPU_FIELDS = frozenset(
    """index name uuid pci.bus_id driver_version memory.total memory.used memory.free memory.reserved
    mig.mode.current mig.mode.pending compute_cap persistence_mode count timestamp temperature.gpu
    utilization.gpu utilization.memory power.draw power.limit pstate serial vbios_version fan.speed
    compute_mode clocks.sm clocks.mem ecc.mode.current driver_model.current pcie.link.gen.current
    pcie.link.width.current""".split()  # noqa: SIM905 (a word list reads better than 31 quoted items)
)


@dataclass
class _CsvBlock:
    fields: list[str]
    query: str  # gpu | compute-apps
    header_line: int | None
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    dropped: int = 0


def _field(token: str) -> str:
    name = _UNIT.sub("", token).strip().lower()
    return _ALIASES.get(name, name)


def _query_commands(lines: list[PasteLine]) -> list[tuple[str, list[str], str, int]]:
    """(query, fields, command text, line) for each --query-… command shown in the paste."""
    found = []
    for line in lines:
        match = _QUERY_COMMAND.search(line.text)
        if match:
            fields = [_field(token) for token in match.group(2).split(",") if token]
            found.append((match.group(1), fields, line.text, line.number))
    return found


def _csv_header(text: str) -> list[str] | None:
    """The field names of a csv header line; two known names at least, so 'name, count' prose is no header."""
    tokens = [token.strip() for token in text.split(",")]
    if len(tokens) < 2 or not all(_FIELD_LIKE.match(token) for token in tokens):
        return None
    fields = [_field(token) for token in tokens]
    if sum(1 for name in fields if name in _GPU_FIELDS or name in _APP_FIELDS) < 2:
        return None
    return fields


def _csv_blocks(lines: list[PasteLine], commands: list[tuple[str, list[str], str, int]]) -> list[_CsvBlock]:
    by_line = {number: (query, fields) for query, fields, _, number in commands}
    blocks: list[_CsvBlock] = []
    current: _CsvBlock | None = None
    for line in lines:
        text = line.text.strip()
        if line.number in by_line:
            query, fields = by_line[line.number]
            current = _CsvBlock(fields, query, None)
            blocks.append(current)
            continue
        if "nvidia-smi" in text:
            current = None  # another command: its output is no csv row
            continue
        if not text:
            continue
        header = _csv_header(text)
        if header:
            query = "compute-apps" if "pid" in header else "gpu"
            current = _CsvBlock(header, query, line.number)
            blocks.append(current)
            continue
        if current is None:
            continue
        if text == "No running processes found" and current.query == "compute-apps":
            continue
        values = [value.strip() for value in text.split(",")]
        if len(values) == len(current.fields):
            current.rows.append((line.number, values))
            continue
        if current.rows and 2 <= len(values) < len(current.fields):
            current.dropped += 1  # a row cut by head or a paste limit
        current = None  # whatever follows is another output
    blocks = [
        block for block in blocks if (block.rows or block.header_line is not None) and _plausible(block)
    ]
    return blocks or _headless_block(lines)


def _plausible(block: _CsvBlock) -> bool:
    """A header of plain words ('name, count') needs nvidia-smi values below it to count as one."""
    if block.header_line is None or any(re.search(r"[._\[]", name) for name in block.fields):
        return True
    values = [value for _, row in block.rows for value in row]
    return any(_GPU_NAME.match(value) or _GPU_UUID.match(value) for value in values)


_GPU_NAME = re.compile(r"^(?:NVIDIA|Tesla|Quadro|GeForce|TITAN|GRID)\b")
_GPU_UUID = re.compile(r"^GPU-[0-9a-fA-F-]{8,}$")


def _headless_block(lines: list[PasteLine]) -> list[_CsvBlock]:
    """`--format=csv,noheader` pasted without its command: name the columns that say what they are.

    Only unambiguous columns are named (a GPU name, a GPU UUID, a driver version, an index 0..n-1);
    memory columns stay unnamed because used, free and total look alike. A GPU-name column is
    required, so --query-compute-apps rows (process names) are never taken for GPUs.
    """
    rows: list[tuple[int, list[str]]] = []
    for line in lines:
        text = line.text.strip()
        values = [value.strip() for value in text.split(",")]
        if len(values) < 2 or "nvidia-smi" in text or text.startswith(("|", "+")):
            if rows:
                break
            continue
        if rows and len(values) != len(rows[0][1]):
            break
        rows.append((line.number, values))
    if not rows:
        return []
    columns = list(zip(*(values for _, values in rows), strict=True))
    fields = [_guess_field(position, column) for position, column in enumerate(columns)]
    # a GPU-name column and one more telling column, so prose that starts with "NVIDIA" is no csv
    telling = any(name in ("uuid", "driver_version", "index") for name in fields) or any(
        re.fullmatch(r"\d+ MiB", value) for _, values in rows for value in values
    )
    if "name" not in fields or not telling:
        return []
    return [_CsvBlock(fields, "gpu", None, rows)]


def _guess_field(position: int, column: tuple[str, ...]) -> str:
    if all(_GPU_NAME.match(value) for value in column):
        return "name"
    if all(_GPU_UUID.match(value) for value in column):
        return "uuid"
    if all(re.fullmatch(r"\d{3}\.\d+(?:\.\d+)?", value) for value in column):
        return "driver_version"
    if position == 0 and list(column) == [str(number) for number in range(len(column))]:
        return "index"
    return f"column{position}"


def _samples(block: _CsvBlock) -> list[list[tuple[int, list[str]]]]:
    """Loop mode (-l) repeats the GPUs; a repeated index/uuid (or a new timestamp) starts a sample."""
    key_field = next((name for name in ("index", "uuid", "pci.bus_id", "pid") if name in block.fields), None)
    samples: list[list[tuple[int, list[str]]]] = [[]]
    seen: set[str] = set()
    for number, values in block.rows:
        key = values[block.fields.index(key_field)] if key_field else None
        if key is not None and key in seen and key_field != "pid":
            samples.append([])
            seen = set()
        if key is not None:
            seen.add(key)
        samples[-1].append((number, values))
    return samples


def _read_csv(lines: list[PasteLine], out: _Out) -> None:
    commands = _query_commands(lines)
    blocks = _csv_blocks(lines, commands)
    for query in ("gpu", "compute-apps"):
        chosen = [block for block in blocks if block.query == query]
        if not chosen:
            continue
        samples = [(block, sample) for block in chosen for sample in _samples(block)]
        block, rows = _last_complete(samples, query, out)
        if query == "gpu":
            selected = any(
                re.search(r"\s(?:-i|--id[= ])", command) for kind, _, command, _ in commands if kind == "gpu"
            )
            _emit_csv_gpus(block, rows, out, selected)
        else:
            _emit_csv_apps(block, rows, out)


def _last_complete(
    samples: list[tuple[_CsvBlock, list[tuple[int, list[str]]]]], query: str, out: _Out
) -> tuple[_CsvBlock, list[tuple[int, list[str]]]]:
    """The last sample with every GPU in it; a sample cut by head or Ctrl-C is shorter or ends in a cut row."""
    full = max(len(rows) for _, rows in samples)
    block, rows = samples[-1]
    if query == "gpu" and len(samples) > 1:
        last = len(samples) - 1
        complete = [
            (b, r) for at, (b, r) in enumerate(samples) if len(r) == full and not (at == last and b.dropped)
        ]
        block, rows = complete[-1] if complete else samples[-1]
        at = rows[0][0] if rows else block.header_line
        out.note(f"--query-gpu loop output: {len(samples)} samples; read the last complete one (line {at})")
    elif block.dropped:
        out.note(f"--query-{query}: {block.dropped} row(s) cut short were skipped")
    return block, rows


def _column(block: _CsvBlock, rows: list[tuple[int, list[str]]], name: str) -> list[str] | None:
    if name not in block.fields:
        return None
    position = block.fields.index(name)
    return [values[position] for _, values in rows]


def _emit_csv_gpus(block: _CsvBlock, rows: list[tuple[int, list[str]]], out: _Out, selected: bool) -> None:
    if not rows:
        return
    first = rows[0][0]
    count = _column(block, rows, "count")
    if count and _int_or_none(count[0]) is not None:
        out.fact("gpu_count", _int_or_none(count[0]), first)
    elif selected:
        out.note("--query-gpu ran with -i: only the selected GPUs are listed, gpu_count left out")
    else:
        out.fact("gpu_count", len(rows), first)
    driver = _column(block, rows, "driver_version")
    if driver and _VERSION.match(driver[0]):
        out.fact("driver_version", driver[0], first)
    for column, fact in (("name", "gpu_models"), ("uuid", "gpu_uuids"), ("compute_cap", "gpu_compute_caps")):
        values = _column(block, rows, column)
        if values:
            out.fact(fact, values, first)
    for column, fact in (("memory.used", "gpu_memory_used_mib"), ("memory.total", "gpu_memory_total_mib")):
        values = _column(block, rows, column)
        if values:
            numbers = [_int_or_none(value) for value in values]
            out.fact(
                fact, numbers, first, "None where nvidia-smi printed no number" if None in numbers else None
            )
    modes = _column(block, rows, "mig.mode.current")
    if modes:
        _mig_from_modes(
            out, [(mode.strip("[]"), number) for mode, (number, _) in zip(modes, rows, strict=True)], "csv"
        )
    if block.header_line is None:
        named = [name for name in block.fields if not name.startswith("column")]
        if len(named) == len(block.fields):
            out.note("--query-gpu output without a header: columns taken from the command line")
        else:
            out.note(f"--query-gpu output without a header or command: only {', '.join(named)} recognised")


def _emit_csv_apps(block: _CsvBlock, rows: list[tuple[int, list[str]]], out: _Out) -> None:
    line = rows[0][0] if rows else block.header_line
    out.fact("gpu_processes", len(rows), line)
    pids = _column(block, rows, "pid") or [""] * len(rows)
    names = _column(block, rows, "process_name") or [None] * len(rows)
    used = _column(block, rows, "used_gpu_memory") or [None] * len(rows)
    uuids = _column(block, rows, "gpu_uuid") or [None] * len(rows)
    out.fact(
        "gpu_process_list",
        [
            {
                "gpu": None,
                "gpu_uuid": uuid,
                "pid": _int_or_none(pid),
                "name": name,
                "used_mib": _int_or_none(mib),
            }
            for pid, name, mib, uuid in zip(pids, names, used, uuids, strict=True)
        ],
        line,
    )


# ---------------------------------------------------------------------------------------------
# topo: nvidia-smi topo -m
# ---------------------------------------------------------------------------------------------

_TOPO_DEVICE = re.compile(r"GPU\d+|NIC\d+|mlx\d+_\d+")
_TOPO_LINK = re.compile(r"X(?![A-Za-z])|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC")


def _read_topo(lines: list[PasteLine], out: _Out) -> None:
    header: tuple[list[str], int] | None = None
    rows: dict[str, tuple[list[str], int]] = {}
    for line in lines:
        text = line.text
        row = _TOPO_ROW.match(text)
        if row:
            rows.setdefault(row.group(1), (_TOPO_LINK.findall(text[row.end() :]), line.number))
        elif header is None and not rows and re.search(r"\bGPU0\b|GPU0(?=GPU|NIC|\s|$)", text):
            # tabs lost in a paste can glue names together ('NIC8NIC9'): findall still splits them
            header = (_TOPO_DEVICE.findall(text.split("CPU Affinity")[0]), line.number)
    if header:
        devices, at = header
    elif rows:
        devices, at = list(rows), next(iter(rows.values()))[1]
        out.note("topo -m: the header row is not in the paste; devices taken from the row labels")
    else:
        return
    gpus = [device for device in devices if device.startswith("GPU")]
    out.fact("gpu_count", len(gpus), at)
    links = {
        gpu: {device: link for device, link in zip(devices, rows[gpu][0], strict=False) if device != gpu}
        for gpu in gpus
        if gpu in rows
    }
    missing = [gpu for gpu in gpus if gpu not in rows or len(rows[gpu][0]) < len(devices)]
    if missing:
        out.note(f"topo -m: rows cut or missing for {', '.join(missing)}")
    topology = {
        "devices": devices,
        "links": links,
        "interconnect": _interconnect(links, gpus),
        "nics": sum(1 for device in devices if not device.startswith("GPU")),
    }
    out.fact("topology", topology, at)


def _interconnect(links: dict[str, dict[str, str]], gpus: list[str]) -> str:
    """nvlink when every GPU pair is NV#, pcie when none is, mixed otherwise; single for one GPU."""
    pairs = [link for gpu, row in links.items() for peer, link in row.items() if peer in gpus and peer != gpu]
    if len(gpus) <= 1:
        return "single"
    if not pairs:
        return "unknown"
    nvlink = sum(1 for link in pairs if link.startswith("NV"))
    return "nvlink" if nvlink == len(pairs) else "pcie" if nvlink == 0 else "mixed"


# ---------------------------------------------------------------------------------------------
# version: nvidia-smi --version, /proc/driver/nvidia/version
# ---------------------------------------------------------------------------------------------


def _read_version(lines: list[PasteLine], out: _Out) -> None:
    names = {"DRIVER": "driver_version", "CUDA": "cuda_version", "NVML": "nvml_version"}
    for line in lines:
        match = _VERSION_LINE.match(line.text.strip())
        if match and match.group(1) in names and _VERSION.match(match.group(2)):
            out.fact(names[match.group(1)], match.group(2), line.number)


_NVRM = re.compile(r"Kernel Module(?:\s+for\s+\w+)?\s+(\d+\.\d+(?:\.\d+)?)")


def _read_proc_version(lines: list[PasteLine], out: _Out) -> None:
    for line in lines:
        match = _PROC_VERSION.match(line.text.strip())
        if not match:
            continue
        version = _NVRM.search(match.group(1))
        if version:
            out.fact("driver_version", version.group(1), line.number, "loaded kernel module")
            # Blackwell and newer GPUs need the open kernel module; say which one is loaded.
            module = "open" if "Open Kernel Module" in match.group(1) else "proprietary"
            out.fact("driver_kernel_module", module, line.number)
        return


# ---------------------------------------------------------------------------------------------
# error: what nvidia-smi prints when it cannot work
# ---------------------------------------------------------------------------------------------

_NVML_LIBRARY = re.compile(r"NVML library version:\s*(\d+\.\d+(?:\.\d+)?)")

# (pattern, id, severity, message, advice)
_ERRORS: list[tuple[re.Pattern[str], str, str, str, str]] = [
    (
        re.compile(r"No devices were found"),
        "nvidia-smi-no-devices",
        "error",
        "nvidia-smi found no GPU: no devices were found",
        "In a container: check --gpus / --runtime=nvidia / NVIDIA_VISIBLE_DEVICES before anything else. "
        "On a host: the driver is loaded but no GPU initialised; check `dmesg | grep -i NVRM` "
        "(unsupported GPU for this driver, e.g. Blackwell needs the open kernel module; Xid; fallen off the bus).",
    ),
    (
        # a terminal may wrap the long message; pastes from rich text turn ' into ’
        re.compile(
            r"NVIDIA-SMI has failed because it couldn.t|couldn.t communicate with the NVIDIA driver", re.I
        ),
        "nvidia-smi-driver-unreachable",
        "error",
        "nvidia-smi couldn't communicate with the NVIDIA driver: the kernel module is not loaded",
        "Check `lsmod | grep nvidia` and `dmesg`; after a kernel update the module must be rebuilt (DKMS) "
        "or the matching driver reinstalled. In a container this means no driver was injected (GPU runtime).",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*Driver/library version mismatch", re.IGNORECASE),
        "nvidia-smi-nvml-mismatch",
        "error",
        "NVML driver/library version mismatch: the loaded kernel module differs from the user-space driver",
        "The driver packages were upgraded but the old kernel module is still loaded: reboot (or unload and "
        "reload the nvidia modules). Compare /proc/driver/nvidia/version with the library version.",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*Unknown Error", re.IGNORECASE),
        "nvidia-smi-nvml-unknown-error",
        "error",
        "Failed to initialize NVML: unknown error",
        "Inside a container this usually means it lost access to /dev/nvidia* (e.g. after `systemctl "
        "daemon-reload` with the systemd cgroup driver): restart the container; on a host check dmesg.",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*Insufficient Permissions", re.IGNORECASE),
        "nvidia-smi-nvml-insufficient-permissions",
        "error",
        "Failed to initialize NVML: insufficient permissions on the GPU device files",
        "Check the permissions of /dev/nvidia* and the user's groups, or the container's device access.",
    ),
    (
        re.compile(r"couldn.t find libnvidia-ml\.so", re.IGNORECASE),
        "nvidia-smi-nvml-library-missing",
        "error",
        "nvidia-smi couldn't find libnvidia-ml.so: the driver's user-space libraries are missing",
        "In a container: the GPU runtime did not mount the driver libraries (NVIDIA_DRIVER_CAPABILITIES "
        "must include utility). On a host: reinstall the driver.",
    ),
    (
        re.compile(r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)?:?\s*(.*)$"),
        "nvidia-smi-gpu-unreachable",
        "error",
        "nvidia-smi cannot reach a GPU",
        "A GPU is lost or in error (see dmesg for Xid); it needs a reset or a reboot.",
    ),
    (
        re.compile(
            r"nvidia-smi: command not found|'nvidia-smi' is not recognized|"
            r"\"nvidia-smi\": executable file not found|nvidia-smi: not found"
        ),
        "nvidia-smi-not-found",
        "warning",
        "nvidia-smi is not installed or not on PATH here",
        "In a container the GPU runtime mounts nvidia-smi only with the utility capability "
        "(NVIDIA_DRIVER_CAPABILITIES=compute,utility) and only when the GPU runtime is used at all.",
    ),
    (
        re.compile(r"Failed to initialize NVML:\s*(?!Driver/library|Unknown Error|Insufficient)(.+)$"),
        "nvidia-smi-nvml-init-failed",
        "error",
        "Failed to initialize NVML",
        "nvidia-smi could not initialise NVML; the message says why.",
    ),
]


# one pass over every line when recognising, instead of one per error pattern
_ANY_ERROR = re.compile("|".join(f"(?:{pattern.pattern})" for pattern, *_ in _ERRORS), re.IGNORECASE)


def _read_errors(lines: list[PasteLine], out: _Out) -> None:
    library = next((m for m in (_NVML_LIBRARY.search(line.text) for line in lines) if m), None)
    library_line = next((line.number for line in lines if _NVML_LIBRARY.search(line.text)), None)
    seen: set[str] = set()
    for line in lines:
        for pattern, id_, severity, message, advice in _ERRORS:
            match = pattern.search(line.text)
            if not match or id_ in seen:
                continue
            seen.add(id_)
            text = message
            if id_ == "nvidia-smi-nvml-mismatch" and library:
                text += (
                    f" (NVML library version {library.group(1)}; the kernel module's version is not shown)"
                )
            elif id_ in ("nvidia-smi-gpu-unreachable", "nvidia-smi-nvml-init-failed"):
                text += f": {line.text.strip()}"
            out.problem(id_, severity, text, line.number, advice)
            break
    if library and library_line is not None:
        # the user-space library's version, not the loaded driver's: so never driver_version
        out.fact("nvml_version", library.group(1), library_line)


_READERS: dict[str, Callable[[list[PasteLine], _Out], None]] = {
    "table": _read_table,
    "list": _read_list,
    "query": _read_query,
    "xml": _read_xml,
    "csv": _read_csv,
    "topo": _read_topo,
    "version": _read_version,
    "proc_version": _read_proc_version,
    "error": _read_errors,
}
