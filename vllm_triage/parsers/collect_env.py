"""`collect_env` output: vLLM's (`vllm collect-env`, `python -m vllm.collect_env`, the old repo-root
`collect_env.py`) and PyTorch's (`python -m torch.utils.collect_env`).

Two layouts exist (reference: vllm-anatomy.md §6):

* flat, PyTorch-style (torch, vLLM ≤ v0.9.0)::

      PyTorch version: 2.5.1+cu124
      CUDA used to build PyTorch: 12.4
      GPU models and configuration:
      GPU 0: NVIDIA H100 80GB HBM3
      Nvidia driver version: 550.54.15
      CPU:
      <lscpu, possibly localized>
      Versions of relevant libraries:
      [pip3] torch==2.5.1
      vLLM Version: 0.7.3
      GPU Topology: …
      NCCL_CUMEM_ENABLE=0            (env vars, no header, v0.6.4+)

* sectioned (vLLM v0.9.1+): `====` banners around a title, keys padded to a fixed width::

      ==============================
             PyTorch Info
      ==============================
      PyTorch version              : 2.8.0+cu128

Only known keys are read, so the noise real pastes carry (a `<frozen runpy>` RuntimeWarning, an
`INFO … Automatically detected platform` line, shell prompts, localized lscpu keys) is ignored.
The GPU view (driver, models, count) is what the environment that ran collect_env saw; the caller
says whose view that is with `scope` (`gpu` when unknown, `container` or `host` from a manifest).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_triage.core.roles import Role
from vllm_triage.parsers.base import ParseResult, PasteLine, clean_paste
from vllm_triage.parsers.registry import parser

KIND_SECTIONED = "collect_env.sectioned"
KIND_FLAT = "collect_env.flat"
KIND_TORCH = "collect_env.torch"
KIND_PLACEHOLDER = "collect_env.placeholder"
KIND_UNKNOWN = "collect_env.unknown"

# Keys whose value we read; matched after collapsing the layout's padding.
_KEY_TORCH = "PyTorch version"
_KEY_CUDA_BUILD = "CUDA used to build PyTorch"
_KEY_OS = "OS"
_KEY_PYTHON = "Python version"
_KEY_CUDA_AVAILABLE = "Is CUDA available"
_KEY_CUDA_RUNTIME = "CUDA runtime version"
_KEY_GPU_MODELS = "GPU models and configuration"
_KEY_DRIVER = "Nvidia driver version"
_KEY_VLLM = "vLLM Version"
_KEY_TOPOLOGY = "GPU Topology"
_KEY_BUILD_FLAGS = "vLLM Build Flags"
_KNOWN_KEYS = {
    _KEY_TORCH,
    _KEY_CUDA_BUILD,
    _KEY_OS,
    _KEY_PYTHON,
    _KEY_CUDA_AVAILABLE,
    _KEY_CUDA_RUNTIME,
    _KEY_GPU_MODELS,
    _KEY_DRIVER,
    _KEY_VLLM,
    _KEY_TOPOLOGY,
    _KEY_BUILD_FLAGS,
    # read only to recognise the format (looks_like) and the flat layout's vLLM part
    "Is debug build",
    "ROCM used to build PyTorch",
    "Python platform",
    "Libc version",
    "GCC version",
    "CUDA_MODULE_LOADING set to",
    "cuDNN version",
    "HIP runtime version",
    "MIOpen runtime version",
    "Is XNNPACK available",
    "ROCM Version",
    "Neuron SDK Version",
}
# What collect_env prints when it has nothing: the value is absent, not a version.
_MISSING = {"", "none", "n/a", "could not collect", "no cuda", "not set", "no relevant packages"}

# The key ends on a non-space: a key class holding spaces next to `\s*` split every run of
# spaces both ways, quadratic on a line that then has no colon (fuzz: 180 KB took 50 s).
_KEY_VALUE = re.compile(
    r"^(?P<key>[A-Za-z](?:[A-Za-z0-9 _/().-]*?[A-Za-z0-9_/().-])?)\s*:(?:\s(?P<value>.*)|$)"
)
_BANNER = re.compile(r"^\s*={10,}\s*$")
# The model is what follows `GPU N: `, its `(UUID: …)` and trailing blanks cut in Python: a lazy
# model before optional blanks and `$` backtracked quadratically over a long run of spaces that a
# non-blank ends (fuzz seed 13: a 14 KB line took over 10 s).
_GPU_LINE = re.compile(r"^\s*GPU (?P<index>\d+): (?P<rest>.*)$")
_UUID_TAIL = "(UUID: "
_MIG_LINE = re.compile(r"^\s+MIG \S+")
_PACKAGE = re.compile(
    r"^\[(?P<tool>pip\d*|uv|conda)\]\s+(?P<spec>\S(?:.*\S)?)\s*$"
)  # greedy: linear on whitespace runs
_ENV_LINE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_VERSION_NUMBER = re.compile(r"\d+(?:\.\d+)+")
_DRIVER_VERSION = re.compile(r"^\d+(?:\.\d+)+$")
# The bug-report template text left in place of the output ("Your output of `python
# collect_env.py` here"): the collect_env section of the report is missing.
_PLACEHOLDER = re.compile(
    r"^\s*(?:your|the)\s+output\s+of\s+`?\s*(?:python3?\s+)?(?:-m\s+)?"
    r"(?:vllm[ .]collect[-_]env|collect_env(?:\.py)?|torch\.utils\.collect_env)\s*`?\s*(?:here)?\s*\.?\s*$",
    re.IGNORECASE,
)
_LOG_LINE = re.compile(r"^\s*(?:\(\w+ pid=\d+\)\s*)?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d ")
_TORCH_COMMAND = re.compile(r"torch\.utils\.collect_env")
# pip wheels of the CUDA toolkit pieces: already summarised by torch's CUDA build; only NCCL
# is kept because vLLM's collectives depend on its exact version.
_CUDA_LIBRARY_WHEEL = re.compile(r"^nvidia-(?!nccl)")

# Sections of the sectioned layout, by banner title.
_SECTION_CPU = "cpu info"
_SECTION_ENV = "environment variables"
_SECTION_LIBRARIES = "versions of relevant libraries"


@dataclass
class _Reading:
    """What one pass over the lines collected, before it becomes facts."""

    values: dict[str, tuple[str, int]] = field(default_factory=dict)
    gpu_models: list[tuple[str, int]] = field(default_factory=list)
    packages: list[tuple[str, str, int]] = field(default_factory=list)
    env: dict[str, tuple[str, int]] = field(default_factory=dict)
    env_conflicts: list[str] = field(default_factory=list)
    topology: list[tuple[str, int]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    sectioned: bool = False
    saw_libraries: bool = False
    placeholder_line: int | None = None
    last_section: str = ""


# Keys in collect_env's own wording: one of them is enough to recognise a fragment of it.
_TELLING_KEYS = {
    _KEY_VLLM,
    _KEY_BUILD_FLAGS,
    _KEY_TOPOLOGY,
    _KEY_CUDA_BUILD,
    _KEY_GPU_MODELS,
    _KEY_DRIVER,
    "Is debug build",
    "ROCM used to build PyTorch",
    "CUDA_MODULE_LOADING set to",
    "Is XNNPACK available",
}
# Banner titles of the sectioned layout (vLLM v0.9.1+), in the order vLLM prints them.
_SECTION_TITLES = (
    "system info",
    "pytorch info",
    "python environment",
    "cuda / gpu info",
    "cpu info",
    "versions of relevant libraries",
    "vllm info",
    "environment variables",
)


def looks_like(text: str) -> bool:
    """True for collect_env output (either layout, complete, cut or a piece of it) or the placeholder.

    A piece is recognised by what only collect_env prints: one of its own keys (`vLLM Version:`,
    `vLLM Build Flags:`, `GPU Topology:`, `CUDA used to build PyTorch:` …), a `====` banner around
    one of its section titles, the `Versions of relevant libraries` heading, or two `[pip3] name==v`
    lines; otherwise three known keys.
    """
    if not text:
        return False
    if "Collecting environment information" in text:
        return True
    hits = 0
    packages = 0
    lines = clean_paste(text[:200_000])
    # An issue body whose only collect_env content is the placeholder is claimed, unless it is
    # really a vLLM log with the template around it.
    log_lines = sum(1 for line in lines if _LOG_LINE.match(line.text))
    for index, line in enumerate(lines):
        if _PLACEHOLDER.match(line.text) and log_lines < 3:
            return True
        if line.text.strip().startswith("Versions of relevant libraries"):
            return True
        title = _banner_title(lines, index)
        if title is not None and title.lower() in _SECTION_TITLES:
            return True
        if _PACKAGE.match(line.text.strip()):
            packages += 1
            if packages >= 2:
                return True
            continue
        match = _KEY_VALUE.match(line.text.lstrip())
        key = _normalise_key(match.group("key")) if match else None
        if key in _TELLING_KEYS:
            return True
        if key in _KNOWN_KEYS:
            hits += 1
            if hits >= 3:
                return True
    return False


@parser(Role.COLLECT_ENV, looks_like=looks_like, sniff=20, scoped=True)
def parse(text: str, file: str = "<collect_env>", scope: str = "gpu") -> ParseResult:
    """Read a collect_env paste into facts (and `env.*` knobs); never raises."""
    result = ParseResult(kind=KIND_UNKNOWN)
    try:
        _parse_into(result, text or "", file, scope)
    except Exception as error:  # the parser contract: odd input becomes a note, never a traceback
        result.notes.append(f"collect_env output could not be read completely ({type(error).__name__})")
    return result


def _parse_into(result: ParseResult, text: str, file: str, scope: str) -> None:
    lines = clean_paste(text)
    reading = _read(lines)
    result.kind = _kind(reading, text)
    if result.kind == KIND_PLACEHOLDER:
        result.notes.append(
            f"line {reading.placeholder_line}: the bug-report template placeholder stands where the "
            "collect_env output should be; the collect_env section is missing"
        )
        return
    if result.kind == KIND_UNKNOWN:
        result.notes.append("no collect_env keys found: not collect_env output")
        return
    _emit_versions(result, reading, file)
    _emit_gpu_view(result, reading, file, scope)
    _emit_packages(result, reading, file)
    _emit_env(result, reading, file)
    _emit_topology(result, reading, file, scope)
    _note_missing_parts(result, reading)


# ---------------------------------------------------------------------------------------------
# One pass over the lines


def _read(lines: list[PasteLine]) -> _Reading:
    reading = _Reading()
    section = ""  # current section: banner title (sectioned) or "cpu"/"libraries"/"vllm" (flat)
    index = 0
    while index < len(lines):
        line = lines[index]
        if index and line.number != lines[index - 1].number + 1 and _env_allowed(reading, section):
            # clean_paste dropped a fence or a prompt: the output ended there, and what follows
            # (often the launch command, `CUDA_VISIBLE_DEVICES=0 vllm serve …`) is not its env.
            section = "after"
        title = _banner_title(lines, index)
        if title is not None:
            reading.sectioned = True
            section = title.lower()
            reading.sections.append(section)
            reading.last_section = title
            index += 3
            continue
        if _BANNER.match(line.text):  # a lone banner (the paste cut right after it)
            index += 1
            continue
        index = _read_line(reading, lines, index, section)
        section = _flat_section(reading, line.text, section)
    return reading


def _banner_title(lines: list[PasteLine], index: int) -> str | None:
    """The title when lines[index] opens a `====` / title / `====` banner."""
    if not _BANNER.match(lines[index].text):
        return None
    if index + 1 >= len(lines) or _BANNER.match(lines[index + 1].text):
        return None
    title = lines[index + 1].text.strip()
    if not title:
        return None
    closing = index + 2 < len(lines) and _BANNER.match(lines[index + 2].text)
    # A paste cut right after the title still names the section.
    return title if closing or index + 2 >= len(lines) else None


def _flat_section(reading: _Reading, text: str, section: str) -> str:
    """Track the flat layout's implicit sections (CPU dump, library list, trailing env vars)."""
    if reading.sectioned:
        return section
    stripped = text.strip()
    if stripped == "CPU:" and section != "cpu":
        reading.last_section = "cpu"
        return "cpu"
    if stripped.startswith("Versions of relevant libraries"):
        reading.saw_libraries = True
        reading.last_section = "libraries"
        return "libraries"
    if section == "cpu":
        return section
    key = _KEY_VALUE.match(stripped)
    if key and _normalise_key(key.group("key")) in (_KEY_VLLM, _KEY_TOPOLOGY, "ROCM Version"):
        reading.last_section = "vllm"
        return "vllm"
    return section


def _read_line(reading: _Reading, lines: list[PasteLine], index: int, section: str) -> int:
    """Read lines[index] (and any continuation lines it owns); return the next index to read."""
    line = lines[index]
    text = line.text
    if _PLACEHOLDER.match(text):
        reading.placeholder_line = reading.placeholder_line or line.number
        return index + 1
    if section in (_SECTION_CPU, "cpu"):
        return index + 1  # lscpu / wmic output, often localized: nothing we need
    if section == _SECTION_LIBRARIES or section == "libraries":
        reading.saw_libraries = True
    package = _PACKAGE.match(text.strip())
    if package:
        reading.packages.append((package.group("tool"), package.group("spec"), line.number))
        return index + 1
    if _env_allowed(reading, section):
        env = _ENV_LINE.match(text.strip())
        if env:
            _add_env(reading, env.group("name"), env.group("value"), line.number)
            return index + 1
    # An output pasted inside an indented block (`<details>`, a list item) keeps its keys.
    match = _KEY_VALUE.match(text.lstrip())
    if not match:
        return index + 1
    key = _normalise_key(match.group("key"))
    value = (match.group("value") or "").strip()
    if key == _KEY_GPU_MODELS:
        return _read_gpu_models(reading, lines, index, value)
    if key == _KEY_TOPOLOGY:
        return _read_topology(reading, lines, index, value)
    if key in _KNOWN_KEYS:
        reading.values.setdefault(key, (value, line.number))
    return index + 1


def _env_allowed(reading: _Reading, section: str) -> bool:
    """Environment lines only where collect_env prints them, so a launch command pasted after
    the output (`CUDA_VISIBLE_DEVICES=0 vllm serve …`) is not read as an environment variable."""
    if reading.sectioned:
        return section == _SECTION_ENV
    return section == "vllm"


def _add_env(reading: _Reading, name: str, value: str, number: int) -> None:
    # vLLM prints a variable twice when it is both a vLLM variable and matches a reported
    # prefix (CUDA_VISIBLE_DEVICES); the first occurrence is kept.
    if name in reading.env:
        if reading.env[name][0] != value:
            reading.env_conflicts.append(name)
        return
    reading.env[name] = (value, number)


def _gpu_model(text: str) -> str | None:
    """The model of a `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)` line, or None."""
    gpu = _GPU_LINE.match(text)
    if gpu is None:
        return None
    model = gpu.group("rest").rstrip()
    if model.endswith(")") and _UUID_TAIL in model:
        model = model[: model.rfind(_UUID_TAIL)].rstrip()
    return model or None


def _read_gpu_models(reading: _Reading, lines: list[PasteLine], index: int, value: str) -> int:
    number = lines[index].number
    reading.values.setdefault(_KEY_GPU_MODELS, (value, number))
    model = _gpu_model(value)
    if model:  # a single GPU is printed on the key's own line
        reading.gpu_models.append((model, number))
    if value:
        return index + 1
    cursor = index + 1
    while cursor < len(lines):
        text = lines[cursor].text
        model = _gpu_model(text)
        if model:
            reading.gpu_models.append((model, lines[cursor].number))
        elif not _MIG_LINE.match(text):
            break  # the blank line (or next key) after the list
        cursor += 1
    return cursor


def _read_topology(reading: _Reading, lines: list[PasteLine], index: int, value: str) -> int:
    cursor = index + 1
    if value and value.lower() not in _MISSING:
        reading.topology.append((value, lines[index].number))
    while cursor < len(lines):
        text = lines[cursor].text
        if not text.strip() or text.strip().startswith("Legend") or _BANNER.match(text):
            break
        if text.strip().lower() not in _MISSING:
            reading.topology.append((" ".join(text.split()), lines[cursor].number))
        cursor += 1
    return cursor


def _normalise_key(key: str) -> str:
    return " ".join(key.split())


def _kind(reading: _Reading, text: str) -> str:
    readable = bool(reading.values or reading.packages or reading.env or reading.topology)
    if not readable:
        return KIND_PLACEHOLDER if reading.placeholder_line else KIND_UNKNOWN
    if reading.sectioned:
        return KIND_SECTIONED
    if _TORCH_COMMAND.search(text[:5000]):
        return KIND_TORCH
    return KIND_FLAT


# ---------------------------------------------------------------------------------------------
# Facts


def _present(reading: _Reading, key: str) -> tuple[str, int] | None:
    """The value printed for key, or None when collect_env printed a 'nothing here' marker."""
    found = reading.values.get(key)
    if not found or found[0].strip().lower() in _MISSING:
        return None
    return found


def _emit_versions(result: ParseResult, reading: _Reading, file: str) -> None:
    torch = _present(reading, _KEY_TORCH)
    if torch:
        result.fact("torch.version", torch[0], file, torch[1])
    cuda_build = _present(reading, _KEY_CUDA_BUILD)
    if cuda_build:
        result.fact("cuda.build", cuda_build[0], file, cuda_build[1])
    runtime = _present(reading, _KEY_CUDA_RUNTIME)
    if runtime and _VERSION_NUMBER.fullmatch(runtime[0]):
        result.fact("cuda.runtime", runtime[0], file, runtime[1])
    python = _present(reading, _KEY_PYTHON)
    if python:
        number = _VERSION_NUMBER.match(python[0])
        if number:
            result.fact("python.version", number.group(0), file, python[1])
    os_name = _present(reading, _KEY_OS)
    if os_name:
        result.fact("os", os_name[0], file, os_name[1])
    vllm = reading.values.get(_KEY_VLLM)
    if vllm:
        version = vllm_version(vllm[0])
        if version:
            result.fact("vllm.version", version, file, vllm[1], note=f"printed as {vllm[0]!r}")
        else:
            result.notes.append(f"line {vllm[1]}: vLLM version not known to collect_env ({vllm[0]!r})")


def vllm_version(printed: str) -> str | None:
    """The version in a `vLLM Version:` value, without the build suffixes collect_env adds.

    `0.11.1.dev12+g5ded9e9aa (git sha: 5ded9e9aa)` → `0.11.1.dev12+g5ded9e9aa`; v0.6.x printed
    the suffix without its closing parenthesis; v0.5.x printed `0.5.4@<40-hex commit>`.
    `N/A` / `N/A (dev)` mean the version was unknown.
    """
    value = re.sub(r"\s*\(git sha:.*$", "", printed.strip())
    value = re.sub(r"@[0-9a-f]{7,40}$", "", value)
    if not value or value.lower().startswith("n/a") or value.lower() in _MISSING:
        return None
    return value


def _emit_gpu_view(result: ParseResult, reading: _Reading, file: str, scope: str) -> None:
    available = _present(reading, _KEY_CUDA_AVAILABLE)
    if available and available[0] in ("True", "False", "Yes", "No"):
        result.fact(f"{scope}.cuda_available", available[0] in ("True", "Yes"), file, available[1])
    driver = _present(reading, _KEY_DRIVER)
    if driver and _DRIVER_VERSION.match(driver[0]):
        result.fact(f"{scope}.driver_version", driver[0], file, driver[1])
    if reading.gpu_models:
        first_line = reading.gpu_models[0][1]
        models = [model for model, _ in reading.gpu_models]
        result.fact(f"{scope}.gpu_models", models, file, first_line)
        result.fact(f"{scope}.gpu_count", len(models), file, first_line)
        return
    printed = _present(reading, _KEY_GPU_MODELS)
    if printed and _ROCM_DEVICE.match(printed[0]):
        # torch's get_gpu_info on ROCm: `torch.cuda.get_device_name(None)` and the gcnArchName of
        # device 0 — the model of the current device, however many there are: no count to read.
        result.fact(
            f"{scope}.gpu_models",
            [printed[0].strip()],
            file,
            printed[1],
            note="ROCm prints the current device's name once, not one line per GPU: the count is not known",
        )
    elif printed:
        result.notes.append(
            f"line {printed[1]}: GPU models line is not a per-GPU list ({printed[0]!r}); "
            "GPU models and count not read"
        )


# `AMD Instinct MI210 (gfx90a:sramecc+:xnack-)`, `AMD Radeon Graphics (gfx1200)`.
_ROCM_DEVICE = re.compile(r"^\s*\S.{0,120}? \(gfx[0-9a-f]{3,4}[^()]{0,60}\)\s*$")


def _emit_packages(result: ParseResult, reading: _Reading, file: str) -> None:
    for tool, spec, number in reading.packages:
        if tool == "conda" or "==" not in spec:
            continue  # conda lines are `name version build channel`; `Could not collect` too
        name, _, version = spec.partition("==")
        name = _canonical_package(name)
        version = version.strip()
        if not name or not version:
            continue
        if name.startswith("nvidia-nccl") and "nccl.version" not in result.facts:
            result.fact("nccl.version", version, file, number)
        if name == "torch" and "torch.version" not in result.facts:
            # a paste cut above 'PyTorch version:' still lists the wheel, whose version is
            # torch.__version__ ('2.7.0+cu128')
            note = "from the pip package list (the 'PyTorch version' line is not in the paste)"
            result.fact("torch.version", version, file, number, note=note)
        if _CUDA_LIBRARY_WHEEL.match(name):
            continue
        if f"pip.{name}" not in result.facts:
            result.fact(f"pip.{name}", version, file, number)


def _canonical_package(name: str) -> str:
    """PEP 503 name, so `torch_c_dlpack_ext` and `torch-c-dlpack-ext` are one package."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def _emit_env(result: ParseResult, reading: _Reading, file: str) -> None:
    for name, (value, number) in reading.env.items():
        result.knob(f"env.{name}", value, file, number)
    for name in sorted(set(reading.env_conflicts)):
        result.notes.append(f"{name} is printed twice with different values; the first one is kept")


def _emit_topology(result: ParseResult, reading: _Reading, file: str, scope: str) -> None:
    rows = [row for row, _ in reading.topology]
    if not rows:
        return
    links = sorted({cell for row in rows[1:] for cell in row.split() if _is_link(cell)})
    # GPU rows carry the " X " self marker; the header row starts with GPU0 too but has none.
    gpu_rows = [at for at, row in enumerate(rows) if re.match(r"GPU\d+\b", row) and "X" in row.split()]
    note = f"{len(gpu_rows)} GPU rows; links: {', '.join(links) or 'none'}"
    result.fact(f"{scope}.topology", rows, file, reading.topology[0][1], note=note)
    # nvidia-smi topo -m names every device in its header row, so a header that reaches the
    # 'CPU Affinity' column counts the GPUs even when the paste lost rows below it (tabs lost in a
    # paste may glue the names: 'GPU0GPU1'); a GPU list read above comes first.
    header = rows[0].split("CPU Affinity")
    named = re.findall(r"GPU\d+", header[0])
    whole = len(header) > 1 or len(named) == len(gpu_rows)
    if named and f"{scope}.gpu_count" not in result.facts and whole:
        note = "GPU Topology header" if len(named) > len(gpu_rows) else "GPU Topology rows"
        result.fact(
            f"{scope}.gpu_count", max(len(named), len(gpu_rows)), file, reading.topology[0][1], note=note
        )


def _is_link(cell: str) -> bool:
    return bool(re.fullmatch(r"NV\d+|PIX|PXB|PHB|NODE|SYS|SOC", cell))


def _note_missing_parts(result: ParseResult, reading: _Reading) -> None:
    """Say what a cut paste lacks, so an absent fact reads as 'not shown', not 'not there'."""
    if _fragment(result, reading):
        return
    if reading.sectioned:
        expected = {
            _SECTION_LIBRARIES: "library versions",
            "vllm info": "vLLM info",
            _SECTION_ENV: "environment variables",
        }
        missing = [label for name, label in expected.items() if name not in reading.sections]
        if missing:
            result.notes.append(
                f"output cut after the '{reading.last_section}' section: {', '.join(missing)} missing"
            )
        return
    has_vllm = _KEY_VLLM in reading.values
    if not reading.saw_libraries and not has_vllm:
        where = "inside the CPU section" if reading.last_section == "cpu" else "before the library list"
        result.notes.append(
            f"output cut {where}: library versions, vLLM version and environment variables are missing"
        )
    elif not has_vllm:
        result.notes.append(
            "no vLLM section: torch.utils.collect_env output (or cut before it); vLLM version unknown"
        )


def _fragment(result: ParseResult, reading: _Reading) -> bool:
    """A piece pasted from the middle (no head of the output): say which parts it holds; True if so."""
    if reading.sectioned:
        first = reading.sections[0] if reading.sections else ""
        if not first or first == _SECTION_TITLES[0] or _KEY_OS in reading.values:
            return False
        shown = ", ".join(f"'{name}'" for name in reading.sections)
        result.notes.append(
            f"a piece of collect_env output: only the {shown} section(s); the rest is not shown"
        )
        return True
    if _KEY_TORCH in reading.values or _KEY_OS in reading.values:
        return False
    parts = [
        label
        for present, label in (
            (reading.saw_libraries or bool(reading.packages), "library versions"),
            (_KEY_VLLM in reading.values, "vLLM version"),
            (_KEY_BUILD_FLAGS in reading.values, "vLLM build flags"),
            (bool(reading.topology), "GPU topology"),
            (bool(reading.env), "environment variables"),
            (bool(reading.gpu_models) or _KEY_DRIVER in reading.values, "GPU view"),
        )
        if present
    ]
    if not parts:
        return False
    result.notes.append(f"a piece of collect_env output: only {', '.join(parts)}; the rest is not shown")
    return True
