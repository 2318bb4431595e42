"""Which nvidia-smi forms a text holds, and whether it belongs to another parser instead.

The front never refuses a fragment of a known form: a piece of a table, a -q section pasted from
the middle, a headerless csv row is recognised by what its lines are, not by a header it may lack.
"""

from __future__ import annotations

import re

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi import csv_query, errors, gpu_list, table, topo, version
from vllm_triage.parsers.nvidia_smi.common import BUS_ID

# Sub-kinds in the order their facts are trusted when one file holds several forms.
SUBKINDS = ("table", "query", "xml", "csv", "list", "topo", "version", "proc_version", "error")

# the banner, the GPU count, or a GPU section header (bus id alone on its line: the top may be cut)
_QUERY_MARK = re.compile(
    r"^=+\s*NVSMI LOG\s*=+\s*$|^Attached GPUs\s*:\s*\d+|^GPU\s+" + BUS_ID.pattern + r"\s*$"
)
_XML_MARK = re.compile(r"<nvidia_smi_log\b")

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


def foreign(lines: list[PasteLine]) -> str | None:
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


def detect(lines: list[PasteLine]) -> list[str]:
    """Every sub-kind present in the lines, in SUBKINDS order."""
    texts = [line.text for line in lines]
    found: set[str] = set()
    for text in texts:
        if text.lstrip().startswith(("|", "+")):  # a table row is nothing else: skip the other tests
            if "table" not in found and (table.BANNER.match(text) or table.MARKS.search(text)):
                found.add("table")
        elif table.MARKS.search(text):
            found.add("table")
        elif gpu_list.LIST_GPU.match(text) and "(UUID:" in text or gpu_list.LIST_MIG.match(text):
            found.add("list")
        elif _QUERY_MARK.match(text):
            found.add("query")
        elif _XML_MARK.search(text):
            found.add("xml")
        elif topo.TOPO_ROW.match(text):
            found.add("topo")
        elif version.VERSION_LINE.match(text) and not text.startswith("CUDA"):
            found.add("version")
        elif version.PROC_VERSION.match(text):
            found.add("proc_version")
        elif errors.ANY_ERROR.search(text):
            found.add("error")
    if csv_query.csv_blocks(lines, csv_query.query_commands(lines)):
        found.add("csv")
    return [kind for kind in SUBKINDS if kind in found]
