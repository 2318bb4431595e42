r"""nvidia-smi -q -x: the same facts as -q, from the XML log, read with a real XML parser.

The parser is the standard library's expat (the one under `xml.etree`), driven directly because
every fact carries the line it was read at and ElementTree does not keep lines. Entity
declarations are refused before anything is expanded (a `<!DOCTYPE` with an internal subset is
how an entity-expansion bomb arrives; nvidia-smi writes only `<!DOCTYPE nvidia_smi_log SYSTEM
"nvsmi_device_vN.dtd">`), and external DTDs and entities are never fetched.

A paste may be cut (the log ends mid-element) or a piece from the middle (no `<nvidia_smi_log>`,
an unmatched `</gpu>`): what was read before the parser stopped is kept, and the stop is noted.

>>> from vllm_triage.parsers.nvidia_smi import parse
>>> cut = '<gpu id="00000000:41:00.0">\n<product_name>NVIDIA L4</product_name>\n<fb_memory_usage>\n'
>>> parse(cut, "q.xml", "host").facts["host.gpu_models"].value
['NVIDIA L4']
>>> bomb = '<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
>>> parse(bomb, "q.xml", "host").facts
{}
"""

from __future__ import annotations

import re
from xml.parsers import expat

from vllm_triage.parsers.base import PasteLine
from vllm_triage.parsers.nvidia_smi.common import Out, int_or_none
from vllm_triage.parsers.nvidia_smi.query import QueryGpu, emit, memory

ROOT = "nvidia_smi_log"
_FRAGMENT_ROOT = "vllm_triage_fragment"
# Tags only nvidia-smi's XML log has: two of them in a text make it an -q -x fragment.
FRAGMENT_TAGS = re.compile(
    r"<(?:nvidia_smi_log|gpu id=\"|product_name>|product_architecture>|fb_memory_usage>|bar1_memory_usage>"
    r"|driver_version>|kmd_version>|cuda_version>|cuda_umd_version>|attached_gpus>|minor_number>"
    r"|mig_mode>|current_mig>|process_info>|vbios_version>|persistence_mode>)"
)
_HEAD = {
    "driver_version": "Driver Version",
    "kmd_version": "KMD Version",
    "cuda_version": "CUDA Version",
    "cuda_umd_version": "CUDA UMD Version",
    "attached_gpus": "Attached GPUs",
}
_GPU_LEAVES = {"product_name", "uuid", "minor_number", "vbios_version", "product_brand"}
_PROCESS = {"pid": "pid", "type": "type", "process_name": "name", "used_memory": "used"}


class EntityRefused(Exception):
    """The document declares entities: it is not nvidia-smi output, and expanding them is unsafe."""


class _Reader:
    def __init__(self, numbers: list[int]) -> None:
        self.numbers = numbers  # parser line (1-based) → line of the original file
        self.head: dict[str, tuple[str, int]] = {}
        self.gpus: list[QueryGpu] = []
        self.stack: list[str] = []
        self.text: list[str] = []
        self.line = 0

    def at(self, parser_line: int) -> int:
        return self.numbers[min(max(parser_line, 1), len(self.numbers)) - 1]

    def start(self, tag: str, attrs: dict[str, str], parser_line: int) -> None:
        number = self.at(parser_line)
        if tag == "gpu":
            self.gpus.append(QueryGpu(number))
        elif tag == "fb_memory_usage":
            self._gpu(number)
        elif tag == "processes" and (self.gpus or self.stack[-1:] == [_FRAGMENT_ROOT]):
            gpu = self._gpu(number)
            gpu.processes, gpu.processes_line = [], number
        elif tag == "process_info" and self.gpus and self.gpus[-1].processes is not None:
            self.gpus[-1].processes.append({"line": number})
        self.stack.append(tag)
        self.text, self.line = [], number

    def end(self, tag: str) -> None:
        value = "".join(self.text).strip()
        self.text = []
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        parent = self.stack[-1] if self.stack else None
        self._leaf(parent, tag, value, self.line)

    def _gpu(self, number: int) -> QueryGpu:
        """The open GPU; a fragment with no `<gpu>` element gets an implicit one."""
        if not self.gpus:
            self.gpus.append(QueryGpu(number, implicit=True))
        return self.gpus[-1]

    def _leaf(self, parent: str | None, tag: str, value: str, number: int) -> None:
        if parent in (ROOT, _FRAGMENT_ROOT) and tag in _HEAD:
            self.head.setdefault(_HEAD[tag], (value, number))
        elif parent in ("gpu", _FRAGMENT_ROOT) and tag in _GPU_LEAVES:
            repeated = (
                bool(self.gpus) and self.gpus[-1].implicit and tag == "product_name" and self.gpus[-1].name
            )
            if parent == _FRAGMENT_ROOT and (not self.gpus or repeated):
                self.gpus.append(QueryGpu(number, implicit=True))
            if tag == "product_name":
                self.gpus[-1].name = value
            elif tag == "uuid":
                self.gpus[-1].uuid = value
        elif not self.gpus:
            return
        elif parent == "mig_mode" and tag == "current_mig":
            self.gpus[-1].mig_mode, self.gpus[-1].mig_line = value, number
        elif parent == "fb_memory_usage" and tag in ("total", "used"):
            memory(self.gpus[-1], tag, value, number)
        elif parent == "process_info" and tag in _PROCESS and self.gpus[-1].processes:
            entry = self.gpus[-1].processes[-1]
            entry[_PROCESS[tag]] = int_or_none(value) if tag == "pid" else value


def read(lines: list[PasteLine], out: Out) -> None:
    # the XML starts at its first tag; a prompt or a table printed before it is no part of it
    start = next((at for at, line in enumerate(lines) if line.text.lstrip().startswith("<")), None)
    if start is None:
        return
    body = lines[start:]
    text = "\n".join(line.text for line in body)
    numbers = [line.number for line in body]
    fragment = not re.search(r"<" + ROOT + r"\b", text)
    if fragment:
        # several top-level elements: give them one root, on the first line so numbers stay put
        text = f"<{_FRAGMENT_ROOT}>" + re.sub(r"<\?xml[^>]*\?>", "", text, count=1) + f"</{_FRAGMENT_ROOT}>"
    reader = _Reader(numbers)
    stopped = _run(text, reader)
    if stopped == "entities":
        out.note(
            "-q -x: the document declares entities (an internal DTD subset); nvidia-smi never does, "
            "so it was not read"
        )
        return
    if stopped:
        out.note(f"-q -x: the XML stops being well-formed at line {stopped}; what came before was read")
    if fragment:
        out.note("-q -x: a fragment without <nvidia_smi_log>: its elements were read")
    emit(reader.head, reader.gpus, out, "-q -x")


def _run(text: str, reader: _Reader) -> str | int | None:
    """Feed the text to expat; None when it parsed whole, else 'entities' or the line it stopped at."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def doctype(name: str, system_id: str | None, public_id: str | None, internal_subset: int) -> None:
        if internal_subset:
            raise EntityRefused(name)

    def entity(*_: object) -> None:
        raise EntityRefused("entity")

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.ExternalEntityRefHandler = lambda *_: 1  # never fetched: accepted as empty
    parser.StartElementHandler = lambda tag, attrs: reader.start(tag, attrs, parser.CurrentLineNumber)
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = lambda data: reader.text.append(data)  # reader.text is replaced per element
    try:
        parser.Parse(text, True)
    except EntityRefused:
        return "entities"
    except expat.ExpatError as exc:
        return reader.at(exc.lineno)
    return None
