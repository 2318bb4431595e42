"""nvidia-smi output, in every form a person pastes, read into fingerprint facts.

Forms (`looks_like` returns the sub-kind; `ParseResult.kind` is `nvidia_smi.<sub-kind>`), one module each:

================  ===============  ====================================================================
sub-kind          module           output
================  ===============  ====================================================================
``table``         ``table``        plain ``nvidia-smi`` (every layout from the 79-column pre-530 one to
                                   the 610+ ``KMD Version`` banner; Windows TCC/WDDM; MIG and Processes)
``list``          ``gpu_list``     ``nvidia-smi -L``, with indented ``MIG … Device n: (UUID: MIG-…)``
``query``         ``query``        ``nvidia-smi -q`` and its ``-d MEMORY``-style subsets, or a piece of it
``xml``           ``xml_log``      ``nvidia-smi -q -x``
``csv``           ``csv_query``    ``--query-gpu=… --format=csv[,noheader][,nounits]`` (also ``-l``
                                   loop mode) and ``--query-compute-apps=…``
``topo``          ``topo``         ``nvidia-smi topo -m``
``version``       ``version``      ``nvidia-smi --version``
``proc_version``  ``version``      ``/proc/driver/nvidia/version``
``error``         ``errors``       what nvidia-smi prints instead of output when it cannot work
================  ===============  ====================================================================

Facts (every name prefixed by the scope: ``host``, ``container`` or ``gpu``): ``driver_version``,
``cuda_version`` (what the driver supports), ``gpu_count``, ``gpu_models``, ``gpu_memory_used_mib`` and
``gpu_memory_total_mib`` (``None`` where a value was cut off or nvidia-smi printed none),
``gpu_processes`` (compute processes: types C, C+G, M+C), ``gpu_process_list``, ``mig_enabled``,
``gpu_uuids``, ``mig_devices``, ``gpu_compute_caps``, ``topology``, ``nvml_version``,
``driver_kernel_module``. List facts point at the line of their first entry; a count points at the
line it was read from or, when it is counted, at the first counted row.

A file may hold several forms (a capture script's ``$ nvidia-smi``, ``$ nvidia-smi -L``, …): each
form present is read and the results are merged, the richest form first. What cannot be read
(output cut by ``head``, a terminal or a paste limit) is left out and said in ``notes``.

A fragment of a known form is never refused (``sniff.py``): table rows without the banner, a -q
section pasted from the middle, headerless csv, a cut or root-less XML log are read for what they
hold, and a count a fragment cannot prove (``gpu_count``) is left out. Values nvidia-smi could not
give (``Not Supported`` on GB10 / Jetson unified memory, ``N/A``, ``[N/A]``) are None or left out,
with the reason in a note, never guessed. 610+ drivers' ``KMD Version`` / ``CUDA UMD Version`` are
the driver and CUDA versions.
"""

from __future__ import annotations

from collections.abc import Callable

from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult, PasteLine, clean_paste
from vllm_triage.parsers.nvidia_smi import csv_query, errors, gpu_list, query, table, topo, version, xml_log
from vllm_triage.parsers.nvidia_smi.common import Out, lines_of
from vllm_triage.parsers.nvidia_smi.sniff import SUBKINDS, detect, foreign
from vllm_triage.parsers.registry import parser

__all__ = ["SUBKINDS", "looks_like", "parse"]

_SNIFF_CHARS = 256 * 1024

_READERS: dict[str, Callable[[list[PasteLine], Out], None]] = {
    "table": table.read,
    "list": gpu_list.read,
    "query": query.read,
    "xml": xml_log.read,
    "csv": csv_query.read,
    "topo": topo.read,
    "version": version.read,
    "proc_version": version.read_proc,
    "error": errors.read,
}


def looks_like(text: str) -> str | None:
    """The nvidia-smi sub-kind of `text`, or None when it is not nvidia-smi output."""
    try:
        # the head is enough to recognise a form; a multi-GB log must not be scanned to the end
        head = text[:_SNIFF_CHARS]
        if foreign(clean_paste(head)) is not None:
            return None
        kinds = detect(lines_of(head))
        return kinds[0] if kinds else None
    except Exception:  # a sniffer must never take a run down
        return None


@parser(Role.NVIDIA_SMI, looks_like=looks_like, sniff=10, scoped=True)
def parse(text: str, file: str, scope: str = "gpu") -> ParseResult:
    """Read every nvidia-smi form found in `text` into facts named `{scope}.…`. Never raises."""
    try:
        return _parse(text, file, scope)
    except Exception as exc:  # odd input must give a note, never a traceback in a triage run
        result = ParseResult(kind="nvidia_smi.unknown")
        result.notes.append(f"nvidia-smi parser could not read {file}: {type(exc).__name__}: {exc}")
        return result


def _parse(text: str, file: str, scope: str) -> ParseResult:
    lines = lines_of(text)
    kinds = detect(lines)
    why_not = foreign(clean_paste(text))
    if not kinds or why_not == "JSON":  # JSON quoting nvidia-smi text is still JSON (an inspect, a request)
        result = ParseResult(kind="nvidia_smi.unknown")
        why = f" (it looks like {why_not})" if why_not else ""
        result.notes.append(f"{file}: no nvidia-smi output recognised{why}")
        return result
    result = ParseResult(kind=f"nvidia_smi.{kinds[0]}")
    if why_not:
        result.notes.append(f"{file} looks like {why_not}; only its nvidia-smi parts were read")
    parts = []
    for kind in kinds:
        part = ParseResult(kind=f"nvidia_smi.{kind}")
        _READERS[kind](lines, Out(part, file, scope))
        result.merge(part)
        parts.append(part)
    _prefer_full_names(result, parts, f"{scope}.gpu_models")
    return result


def _prefer_full_names(result: ParseResult, parts: list[ParseResult], name: str) -> None:
    """The 79-column table shortens names ('NVIDIA A100-SXM...'); -L or -q in the same paste has
    them whole."""
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
