"""Which nvidia-smi forms a text holds, and whether it belongs to another parser instead.

The front never refuses a fragment of a known form: a piece of a table, a -q section pasted from
the middle, a headerless csv row is recognised by what its lines are, not by a header it may lack.
"""

from __future__ import annotations

import re

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi import csv_query, errors, gpu_list, query, table, topo, version, xml_log
from vllm_triage.parsers.nvidia_smi.common import BUS_ID

# Sub-kinds in the order their facts are trusted when one file holds several forms.
SUBKINDS = ("table", "query", "xml", "csv", "list", "topo", "version", "proc_version", "error")

# the banner, the GPU count, or a GPU section header (bus id alone on its line: the top may be cut)
_QUERY_MARK = re.compile(
    r"^=+\s*NVSMI LOG\s*=+\s*$|^Attached GPUs\s*:\s*\d+|^GPU\s+" + BUS_ID.pattern + r"\s*$"
)
# A -q line: a key nvidia-smi pads to its value column, or a section header alone on its line.
_QUERY_KEY = re.compile(r"^\s*([A-Z][\w./ -]{0,60}?\w)(\s+):\s")

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


# JSON opens with an object, or an array of values. A '[' followed by a word is no JSON but the
# bracketed shell prompt of RHEL/CentOS/Fedora (`[user@host ~]$ nvidia-smi`), nor is a number run
# into a word: HAMi's vGPU hook library prints `[4pdvGPU Warn(28:…:util.c:135)]: NVML error …`,
# `[4pdvGPU Warn(…)]: new_uuid=GPU-…` or `[4pdvGPU Msg(…)]: Initializing…` before the output of
# whatever it is loaded into (Project-HAMi/HAMi#248's nvidia-smi, its README's `kubectl exec …
# nvidia-smi`, a vLLM collect_env on a HAMi A100 node).
_JSON_START = re.compile(
    r"^(?:\{|\[\s*(?:[{\[\"\]]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*(?:[,\]]|$)|-?$|true\b|false\b|null\b|$))"
)


# bash's xtrace (`set -x`) line: PS4's `+` once per level of indirection, then a space. A CI trace
# shows nvidia-smi's output inside it when a script captures it (`+ DRIVER='No devices were
# found'`, as in CI jobs on GPU runners that lost their devices: pytorch/pytorch#167118, the
# no-device checks of gpustack/gpustack#783 and beasteers/singuconda#6). A table border starts
# with `+-` / `+=`, never with `+ `.
_XTRACE = re.compile(r"^\s*\++ \S")


def foreign(lines: list[PasteLine]) -> str | None:
    """Why this text belongs to another parser (JSON, collect_env, a vLLM log), or None."""
    first = next((line.text.strip() for line in lines if line.text.strip()), "")
    if _JSON_START.match(first):
        return "JSON"
    joined = "\n".join(line.text for line in lines)
    if any(mark in joined for mark in _COLLECT_ENV_MARKS):
        return "collect_env output"
    if sum(1 for line in lines if _LOG_LINE.search(line.text)) >= 3:
        return "a vLLM/Python log"
    return None


def detect(lines: list[PasteLine]) -> list[str]:
    """Every sub-kind present in the lines, in SUBKINDS order."""
    texts = [line.text for line in lines]
    found: set[str] = set()
    query_lines = [0, 0]  # lines that are -q keys or sections; of them, keys padded by 2+ spaces
    for text in texts:
        if text.lstrip().startswith(("|", "+")) and not _XTRACE.match(text):
            # a table row is nothing else: skip the other tests
            if "table" not in found and _table_row(text):
                found.add("table")
        elif table.MARKS.search(text) or table.BANNER.match(text):
            found.add("table")
        elif gpu_list.LIST_GPU.match(text) and "(UUID:" in text or gpu_list.LIST_MIG.match(text):
            found.add("list")
        elif _QUERY_MARK.match(text):
            found.add("query")
        elif _query_line(text, query_lines):
            pass
        elif topo.TOPO_ROW.match(text):
            found.add("topo")
        elif version.VERSION_LINE.match(text) and not text.startswith("CUDA"):
            found.add("version")
        elif version.PROC_VERSION.match(text):
            found.add("proc_version")
        elif errors.ANY_ERROR.search(text):
            found.add("error")
    if query_lines[0] >= 2 or query_lines[1] >= 1:
        found.add("query")  # a piece of -q pasted from the middle: two known keys, or one aligned one
    if len(xml_log.FRAGMENT_TAGS.findall("\n".join(texts))) >= 2:
        found.add("xml")
    if csv_query.csv_blocks(lines, csv_query.query_commands(lines)):
        found.add("csv")
    return [kind for kind in SUBKINDS if kind in found]


def _query_line(text: str, counts: list[int]) -> bool:
    """Count a known -q key or section header into counts ([known, aligned]); True when it was one."""
    stripped = text.strip()
    if version.VERSION_LINE.match(stripped):
        return False  # `CUDA Version : 13.0` is in --version output too: it proves no -q
    key = _QUERY_KEY.match(text)
    if key and (key.group(1) in query.GPU_KEYS or key.group(1) in query.HEAD_KEYS):
        counts[0] += 1
        counts[1] += len(key.group(2)) >= 2
        return True
    if stripped in query.SECTIONS and len(stripped.split()) >= 2:  # 'PCI' or 'Processes' alone prove little
        counts[0] += 1
        return True
    return False


def _table_row(text: str) -> bool:
    """A row of the default screen: the banner, a header, or a GPU / memory / process row of a fragment."""
    return bool(
        table.BANNER.match(text)
        or table.MARKS.search(text)
        or table.GPU_ROW.match(text)
        or table.MEMORY_ROW.match(text)
        or table.PROCESS_ROW_ALONE.match(text)
    )
