"""nvidia-smi (the default screen): banner, GPU rows, MIG devices and Processes tables.

Layouts: pre-530 79 columns, 530/531/535 87 columns, 545–575 (`|----` under the banner), 580+
(`+----+`), 610+ (`KMD Version` / `CUDA UMD Version` in the banner); Windows TCC/WDDM.
A paste may hold several screens (`nvidia-smi -l`): the last complete one is read.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> banner = "| NVIDIA-SMI 610.43.02     KMD Version: 610.43.02     CUDA UMD Version: 13.3     |"
>>> facts = parse(banner, "smi.txt", "host").facts
>>> facts["host.driver_version"].value, facts["host.cuda_version"].value
('610.43.02', '13.3')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import (
    BUS_ID,
    GPU_NAME,
    VERSION,
    Out,
    first_line,
    int_or_none,
    mig_from_modes,
    unavailable,
)

# The banner row; a person may copy its text without the box (`NVIDIA-SMI 595.58.03  Driver Version: …`).
BANNER = re.compile(r"^\s*(?:\|\s*NVIDIA-SMI\s+\d|NVIDIA-SMI\s+\d[\w.-]*\s+(?:Driver|KMD) Version:)")
MARKS = re.compile(
    r"^\s*\|\s*(?:Processes:|MIG devices:)"
    r"|Pwr:Usage/Cap|Persistence-M|TCC/WDDM|\bPID\s+Type\s+Process name"
)

_BORDER = re.compile(r"^[+|](?=.*[-=]{3})[-=+|\s]*$")
_SMI_VERSION = re.compile(r"NVIDIA-SMI\s+(\d[\w.-]*)")
# 610+ drivers name the kernel-mode driver `KMD Version` and the CUDA the user-mode driver
# supports `CUDA UMD Version`; the values mean what `Driver Version` / `CUDA Version` meant.
_DRIVER_IN_BANNER = re.compile(r"(?:Driver|KMD) Version:\s*(\d[\w.-]*)")
_CUDA_IN_BANNER = re.compile(r"CUDA (?:UMD )?Version:\s*(\S+)")
_GPU_CELL = re.compile(r"^\s*(\d+)\s+(\S(?:.*\S)?)\s*$")  # greedy: linear on whitespace runs
_PERSISTENCE = re.compile(r"^(.*?)\s+(On|Off|TCC|WDDM|N/A)$")
_MEMORY_CELL = re.compile(r"(\d+)\s*MiB\s*/\s*(?:(\d+)\s*MiB)?")
# The row up to the process type; name and memory are split off the rest by _name_and_memory.
# (One pattern with a lazy name before an optional memory cell backtracked quadratically over a
# long run of spaces: a 56 KB row took 18 s in the fuzz campaign.)
_PROCESS_ROW = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?:(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+)?(?P<pid>\d+)\s+"
    r"(?P<type>[CGM](?:\+[CGM])*)(?:\s+|$)"
)
_MEMORY_TAIL = re.compile(r"(\d+\s*MiB|N/A|\d*\.\.\.)$")
_MEMORY_TAIL_CHARS = 64  # the memory cell is short: only the end of the row can hold it
_MIG_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
# Rows that are nvidia-smi's even when pasted alone, with no banner or headers: a GPU row with its
# bus-id cell, a 'used / total' memory cell, a process row ending in its memory.
# Jetson's integrated GPU has no PCI bus and no display flag: `|   0  Orin (nvgpu)   N/A  | N/A   N/A |`
# (JetPack 6's 540.x driver), as unified-memory boards print `Not Supported` for memory.
GPU_ROW = re.compile(r"^\s*\|\s*\d+\s+\S.*?\|\s*(?:" + BUS_ID.pattern + r"|N/A)\s+(?:On|Off|N/A)\s*\|")
MEMORY_ROW = re.compile(r"^\s*\|[^|]*\|\s*\d+MiB\s*/\s*\d+MiB\s*\|")
PROCESS_ROW_ALONE = re.compile(
    r"^\s*\|\s*\d+\s+(?:(?:\d+|N/A)\s+(?:\d+|N/A)\s+)?\d+\s+(?:C|G|C\+G|M|M\+C)\s+\S.*?\s(?:\d+MiB|N/A)\s*\|$"
)
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
    memory_reason: str | None = None  # what the cell says instead of numbers: 'Not Supported', 'N/A'
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
    processes_closed_line: int | None = None  # the border that closes the Processes table
    mig_state: str = "absent"
    mig_devices: list[dict[str, Any]] = field(default_factory=list)
    mig_devices_line: int | None = None
    header_seen: bool = False  # the column header rows above the GPUs (a fragment may start below them)

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


def read(lines: list[PasteLine], out: Out) -> None:
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
        if BANNER.match(text):
            if (
                snapshots[-1].banner is not None
                or snapshots[-1].gpus
                or snapshots[-1].process_state != "absent"
            ):
                snapshots.append(_Snapshot())
            snapshots[-1].banner = line
            continue
        _table_line(snapshots[-1], line, text)
    # a screen may be pasted as its MIG devices table alone: that table is nvidia-smi's as much as the rest
    return [
        snap
        for snap in snapshots
        if snap.banner or snap.gpus or snap.process_state != "absent" or snap.mig_state != "absent"
    ]


def _choose_snapshot(snapshots: list[_Snapshot], out: Out) -> _Snapshot:
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
    if not snap.gpus and re.search(r"Persistence-M|Bus-Id|TCC/WDDM", text):
        snap.header_seen = True
    if snap.section == "gpus" and snap.process_state == "absent" and PROCESS_ROW_ALONE.match(text):
        snap.section, snap.process_state = "processes", "rows"  # process rows pasted without their header
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
    # An integrated GPU (Jetson) shows N/A where the bus id is: its name says it is a GPU row.
    busless = (
        len(cells) >= 2
        and cells[1].strip().startswith("N/A")
        and bool(gpu_cell and GPU_NAME.match(gpu_cell.group(2)))
    )
    if gpu_cell and (len(cells) >= 2 and BUS_ID.search(cells[1]) or busless or cut_early):
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
        elif len(cells) >= 2:
            gpu.memory_reason = unavailable(cells[1])
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
        snap.processes_closed_line = line.number
        return
    if "No running processes found" in text:
        snap.no_processes_line = line.number
        return
    row = _PROCESS_ROW.match(text)
    if not row:
        return
    name, memory = _name_and_memory(text[row.end() :])
    snap.processes.append(
        _TableProcess(
            gpu=int(row.group("gpu")),
            gi=row.group("gi"),
            ci=row.group("ci"),
            pid=int(row.group("pid")),
            type=row.group("type"),
            name=name,
            used_mib=int_or_none(memory.replace(" ", "") if memory else None),
            line=line.number,
            memory_cut=bool(memory and memory.endswith("...")) or not text.endswith("|"),
        )
    )


def _name_and_memory(rest: str) -> tuple[str, str | None]:
    """The process name and the memory cell (`22390MiB`, `N/A`, a cut `12...`) of the rest of a
    process row, read from its end: the table's closing `|` and padding first."""
    rest = rest.rstrip()
    if rest.endswith("|"):
        rest = rest[:-1].rstrip()
    offset = max(len(rest) - _MEMORY_TAIL_CHARS, 0)
    tail = _MEMORY_TAIL.search(rest, offset)
    if tail is None:
        return rest.strip(), None
    return rest[: tail.start()].strip(), tail.group(1)


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


def _emit_banner(snap: _Snapshot, out: Out) -> None:
    banner = snap.banner
    if banner is None:
        if snap.gpus or snap.process_state != "absent":
            out.note("the table's banner (NVIDIA-SMI / Driver Version / CUDA Version) is not in the paste")
        return
    text = banner.text.rstrip()
    cut = text.lstrip().startswith("|") and not text.endswith("|")  # a boxless copy ends where it ends
    # a value running to the end of a cut line may itself be cut ('580.1' of '580.159.04')
    driver = _DRIVER_IN_BANNER.search(text)
    driver = driver if driver and not (cut and driver.end() == len(text)) else None
    cuda = _CUDA_IN_BANNER.search(text)
    cuda = cuda if cuda and not (cut and cuda.end() == len(text)) else None
    smi = _SMI_VERSION.search(text)
    if driver:
        out.fact("driver_version", driver.group(1), banner.number)
    if cuda and VERSION.match(cuda.group(1)):
        out.fact("cuda_version", cuda.group(1), banner.number)
    if not driver:
        out.note(f"line {banner.number}: the banner is cut before 'Driver Version'")
    if not cuda or not VERSION.match(cuda.group(1)):
        out.note(
            f"line {banner.number}: "
            + ("the banner is cut before 'CUDA Version'" if cut else "the banner shows no CUDA Version")
        )
    if smi and driver and smi.group(1) != driver.group(1):
        out.note(f"nvidia-smi {smi.group(1)} runs against driver {driver.group(1)} (different versions)")


def _emit_gpus(snap: _Snapshot, out: Out) -> None:
    gpus = snap.gpus
    if not gpus:
        return
    first = gpus[0].line
    whole = (snap.header_seen or snap.banner is not None) and gpus[0].index == 0
    if snap.gpu_table_closed and not whole:
        out.note(
            f"GPU rows pasted without the table's header (first GPU {gpus[0].index}): gpu_count left out, "
            "the paste may hold only some of the GPUs"
        )
    elif snap.gpu_table_closed:
        out.fact("gpu_count", len(gpus), first)
    else:
        out.note(
            f"output cut inside GPU {gpus[-1].index}'s rows (line {gpus[-1].line}): gpu_count left out, "
            f"lists cover the {len(gpus)} GPU(s) shown"
        )
    # Lists are by GPU index: rows of GPUs 4 and 5 alone are entries 4 and 5, the ones before None.
    indexes = [gpu.index for gpu in gpus]
    pad = indexes[0] if not whole and indexes == list(range(indexes[0], indexes[0] + len(gpus))) else 0
    pad = pad if pad <= 64 else 0
    # a GPU in error prints ERR! where its name belongs: that is no model name; nor is what is left
    # of a name when the paste ends inside its cell (`|   1  NVID`): the paste cannot prove it
    models = [None if _GPU_ERROR_CELL.fullmatch(gpu.name) or gpu.name_cut else gpu.name for gpu in gpus]
    note = None
    if any(gpu.name_cut for gpu in gpus):
        note = "None: the row is cut inside the name"
    elif None in models:
        note = "None: name unreadable (ERR!)"
    if pad:
        note = f"GPUs 0-{pad - 1} are not in the paste: None in their places"
    out.fact("gpu_models", [None] * pad + models, first, note)
    for gpu in gpus:
        if gpu.name_cut:
            out.note(f"line {gpu.line}: GPU {gpu.index}'s row is cut inside its name: None in gpu_models")
        elif gpu.name.endswith("..."):
            out.note(f"line {gpu.line}: nvidia-smi shortened GPU {gpu.index}'s name to {gpu.name!r}")
    _emit_memory(gpus, out, pad)
    mig_from_modes(out, [(gpu.mig_mode, gpu.mig_line) for gpu in gpus], "table")


def _emit_memory(gpus: list[_TableGpu], out: Out, pad: int = 0) -> None:
    used = [gpu.used for gpu in gpus]
    total = [gpu.total for gpu in gpus]
    line = next((gpu.memory_line for gpu in gpus if gpu.memory_line), gpus[0].line)
    reported = [gpu for gpu in gpus if gpu.memory_reason]
    if reported:
        # unified memory (GB10 / DGX Spark, Jetson) has no framebuffer for NVML to report
        shown = ", ".join(f"GPU {gpu.index}: {gpu.memory_reason}" for gpu in reported)
        what = "memory facts left out" if len(reported) == len(gpus) else "None in its place in the lists"
        out.note(f"Memory-Usage shows no figure ({shown}): unified memory or no NVML support; {what}")
    for name, values in (("gpu_memory_used_mib", used), ("gpu_memory_total_mib", total)):
        if all(value is None for value in values):
            if not reported:
                out.note(f"the Memory-Usage column is not readable: {name} left out")
            continue
        missing = [gpu.index for gpu, value in zip(gpus, values, strict=True) if value is None]
        note = f"unreadable for GPU(s) {missing}" if missing else None
        if pad:
            note = f"GPUs 0-{pad - 1} are not in the paste: None in their places"
        out.fact(name, [None] * pad + values, line, note)
        if missing and len(reported) < len(missing):
            out.note(f"{name}: unreadable (cut off or ERR!) for GPU(s) {missing}: None in the list")


def _emit_mig(snap: _Snapshot, out: Out) -> None:
    if snap.mig_state == "absent":
        return
    if snap.mig_devices_line is None:
        out.note("the MIG devices table is cut before its rows")
        return
    out.fact("mig_devices", snap.mig_devices, snap.mig_devices_line)
    if snap.mig_devices and not out.has("mig_enabled"):
        out.fact("mig_enabled", True, snap.mig_devices_line)


def _emit_processes(snap: _Snapshot, out: Out) -> None:
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
        elif snap.process_state == "closed" and snap.processes_closed_line is not None:
            # Header, `|===|` rule and closing border with no row between: nvidia-smi listed none.
            # (Some releases print no "No running processes found" line; inside a container the
            # list holds only processes of the container's own PID namespace.)
            note = "the Processes table is empty: no process visible where nvidia-smi ran"
            out.fact("gpu_processes", 0, snap.processes_closed_line, note)
            out.fact("gpu_process_list", [], snap.processes_closed_line, note)
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
        "gpu_processes", len(compute), first_line(compute) or processes[0].line, "; ".join(notes) or None
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
