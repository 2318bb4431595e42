"""Phase from vLLM's call path: which start-up step's code a traceback was running (DESIGN §3).

Pure: no I/O. Input is traceback frame lines (or bare function names, as some pastes give them)
and the frame table (rules/frames.toml, loaded by engine.rules into FrameHint objects); output is a
CallPathVerdict — the deepest strong vLLM frame's phase, the deepest weak one, whether the
exception was raised while shutting down, and the package the innermost frame belongs to.

A frame line looks like
    File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 123, in init_device
and matches a table entry when the function is the same AND the path ends with the entry's file
(`vllm/v1/worker/gpu_worker.py`), so a generic name (`__init__`, `capture`, `compile`) only
matches in the one file it was mapped for. A bare name matches only when every entry of that name
agrees on what it means, and never for the names in GENERIC_FUNCTIONS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Protocol

from vllm_triage.engine.rules import GENERIC_FUNCTIONS
from vllm_triage.ingest.prefixes import strip_ansi

# A traceback line: `File "<path>", line <n>, in <function>` (Python 3.11+ adds nothing here;
# Cython frames name a dotted function, e.g. uvloop.loop.Loop.run_until_complete).
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[^\s]+)')
# IPython / Jupyter (8.x) print a frame as `File /path/x.py:1100, in validate_model(model, …)`.
_IPYTHON_FRAME = re.compile(r"(?:^|\s)File (?P<path>[^\s\"]+\.py):(?P<line>\d+), in (?P<func>[\w<>.]+)")
_HEADER = re.compile(r"Traceback \(most recent call last\):")
_BARE = re.compile(r"^\s*(?P<func>[A-Za-z_<][\w<>.]*)\s*$")
_SITE = re.compile(r"(?:^|/)(?:site|dist)-packages/")
_STDLIB = re.compile(r"(?:^|/)(?:lib(?:64)?/python\d(?:\.\d+)?|Lib)/")
_PYNCCL = "vllm/distributed/device_communicators/pynccl"

PYTHON = "python"  # the standard library, frozen and generated code
USER = "user"  # a file outside site-packages and the standard library: the user's own code
_MESSENGERS = frozenset({PYTHON, "pydantic", "pydantic_core"})


class Hint(Protocol):
    """What callpath needs of a frame-table entry (engine.rules.FrameHint has it; read-only)."""

    @property
    def function(self) -> str: ...
    @property
    def phase(self) -> str: ...
    @property
    def strong(self) -> bool: ...
    @property
    def teardown(self) -> bool: ...
    @property
    def file(self) -> str: ...
    @property
    def package(self) -> str: ...


@dataclass(frozen=True)
class Frame:
    path: str  # with '/' separators; "" for a bare function name
    function: str
    package: str  # top-level package, PYTHON, USER, or "" for a bare name
    line: int | None = None

    @property
    def bare(self) -> bool:
        return not self.path

    @property
    def vllm_file(self) -> str | None:
        """The path relative to the vLLM repository root (`vllm/v1/worker/gpu_worker.py`)."""
        return _relative_to(self.path, "vllm") if self.package == "vllm" else None


@dataclass(frozen=True)
class FrameMatch:
    index: int  # position in the frames given, 0 = outermost
    frame: Frame
    hint: Hint

    def describe(self) -> str:
        """For a reason: `init_device() in vllm/v1/worker/gpu_worker.py`, plus the entry's why."""
        where = self.hint.file or self.frame.vllm_file or self.frame.path
        text = f"{self.hint.function}() in {where}" if where else f"{self.hint.function}()"
        why = getattr(self.hint, "why", "")
        return f"{text} ({why})" if why else text


@dataclass(frozen=True)
class CallPathVerdict:
    strong: FrameMatch | None  # deepest frame of a start-up (or strong request) step
    weak: FrameMatch | None  # deepest weak frame: the serving loop, which warm-up also runs
    teardown: FrameMatch | None  # deepest frame that shows the exception was raised while shutting down
    component: str | None  # package blamed: the innermost frame outside the standard library / pydantic
    innermost: Frame | None
    matches: tuple[FrameMatch, ...] = ()

    @property
    def phase(self) -> str | None:
        return self.strong.hint.phase if self.strong else None

    @property
    def weak_phase(self) -> str | None:
        return self.weak.hint.phase if self.weak else None


# Packages whose source checkouts are common in vLLM images (/vllm-workspace/vllm-ascend/vllm_ascend/…):
# a path through one of them belongs to it, not to the user.
_CHECKOUT_PACKAGES = ("vllm", "vllm_ascend")


def _normalise(path: str) -> str:
    return path.strip().replace("\\", "/")


def _relative_to(path: str, package: str) -> str | None:
    parts = path.split("/")
    for i in range(len(parts) - 2, -1, -1):  # the last `package/` component with something after it
        if parts[i] == package:
            return "/".join(parts[i:])
    return None


def package_of(path: str) -> str:
    """The top-level package a traceback path belongs to."""
    path = _normalise(path)
    if not path:
        return ""
    if path.startswith("<frozen") or path == "<string>":
        return PYTHON  # importlib's frozen modules; dataclass / pydantic generated __init__
    if path.startswith("<eval_with_key>"):
        return "torch"  # code torch.fx generated for a compiled graph
    if path.startswith("<"):
        return USER  # <stdin>, <ipython-input-…>: typed by the user
    site = next(reversed(list(_SITE.finditer(path))), None)  # the innermost site-packages
    if site is not None:
        rest = [p for p in path[site.end() :].split("/") if p and not p.endswith(".egg")]
        if rest:
            top = rest[0]
            return top[:-3] if top.endswith(".py") else top
    if path.endswith("/bin/vllm"):
        return "vllm"  # the console-script entry point
    for package in _CHECKOUT_PACKAGES:
        if _relative_to(path, package) is not None:
            return package  # a source checkout / editable install: /workspace/vllm/vllm/v1/…
    if _STDLIB.search(path):
        return PYTHON
    if not path.startswith("/") and ":" not in path.split("/")[0]:
        first = path.split("/")[0]
        if "/" in path and first.isidentifier():
            return first  # a relative path printed by Cython: uvloop/loop.pyx
    return USER


def parse_frame(text: str, bare: bool = False) -> Frame | None:
    """One frame from a traceback line; with `bare`, a lone function name is a frame too (the
    caller knows it holds frames only: a traceback's other lines can be one word, `KeyError`)."""
    text = strip_ansi(text)  # Python 3.13 colours tracebacks on a terminal
    match = _FRAME.search(text)
    function = match.group("func") if match else ""
    if match is None:
        match = _IPYTHON_FRAME.search(text)
        function = match.group("func").rsplit(".", 1)[-1] if match else ""  # IPython prints Class.method
    if match:
        path = _normalise(match.group("path"))
        return Frame(path, function, package_of(path), int(match.group("line")))
    name = _BARE.match(text) if bare else None
    return Frame("", name.group("func"), "") if name else None


def parse_frames(lines: Iterable[str]) -> list[Frame]:
    """The frames among a traceback's lines, in order (outermost first, as Python prints them)."""
    return [frame for frame in (parse_frame(line) for line in lines) if frame is not None]


def _ends_with(path: str, file: str) -> bool:
    """`file` names a module (`vllm/worker/worker.py`), as `dir/*.py` every module of one
    directory (`vllm/model_executor/models/*.py`: each model class defines the same method), or as
    `dir/**/*.py` every module at or below it (the quantization methods live in nested packages)."""
    if file.endswith("/**/*.py"):
        wanted = file[: -len("**/*.py")]
        directory = path.rpartition("/")[0] + "/"
        return path.endswith(".py") and (directory.startswith(wanted) or ("/" + wanted) in directory)
    if file.endswith("/*.py"):
        directory, _, name = path.rpartition("/")
        directory += "/"
        wanted = file[: -len("*.py")]
        return name.endswith(".py") and (directory == wanted or directory.endswith("/" + wanted))
    return path == file or path.endswith("/" + file)


def _meaning(hint: Hint) -> tuple[str, bool, bool]:
    return (hint.phase, hint.strong, hint.teardown)


@lru_cache(maxsize=16)
def _index(hints: tuple[Hint, ...]) -> dict[str, tuple[Hint, ...]]:
    # Later entries first: a --rules directory is loaded after the built-in table and overrides it.
    by_function: dict[str, list[Hint]] = {}
    for hint in reversed(hints):
        by_function.setdefault(hint.function, []).append(hint)
    return {name: tuple(found) for name, found in by_function.items()}


def match_frame(frame: Frame, hints: Sequence[Hint]) -> Hint | None:
    """The table entry a frame matches, if any."""
    candidates = _index(tuple(hints)).get(frame.function, ())
    if not candidates:
        return None
    if frame.bare:
        if frame.function in GENERIC_FUNCTIONS:
            return None
        if len({_meaning(h) for h in candidates}) != 1:
            return None  # the name means different steps in different files: no guess
        # vLLM's own entry describes a bare name best; a platform plugin's mirrors it
        return next((h for h in candidates if h.package == "vllm"), candidates[0])
    if "/" not in frame.path and frame.path.endswith(".py") and frame.function not in GENERIC_FUNCTIONS:
        # An abridged paste names the file alone (`File "backend_xgrammar.py", line 126, in
        # compile_grammar`): the entries of that function in a file of that name, when they agree.
        named = [h for h in candidates if h.file.rsplit("/", 1)[-1] == frame.path]
        if named and len({_meaning(h) for h in named}) == 1:
            return next((h for h in named if h.package == "vllm"), named[0])
    for hint in candidates:
        if not hint.file:
            return hint  # a legacy entry without a file matches the name in any package
        if hint.package == "vllm":
            if frame.package == "vllm" and _ends_with(frame.path, hint.file):
                return hint
        elif _ends_with(frame.path, hint.file):
            return hint  # a teardown frame of torch / the standard library
    return None


def _component(frames: Sequence[Frame]) -> tuple[str | None, Frame | None]:
    located = [f for f in frames if not f.bare]
    if not located:
        return None, None
    innermost = located[-1]
    # The standard library (json, socket, asyncio…) and pydantic (it raises ValidationError for
    # the validator that rejected a value) are messengers, rarely the culprit: blame the innermost
    # frame outside them, and a messenger only when nothing else is there.
    blamed = next((f for f in reversed(located) if f.package not in _MESSENGERS), innermost)
    if blamed.package == "vllm" and (blamed.vllm_file or "").startswith(_PYNCCL):
        return "nccl", innermost
    return blamed.package, innermost


def complete_cut_frame(frames: list[Frame], last_line: str, hints: Sequence[Hint]) -> list[Frame]:
    """A paste that ends inside a frame's function name (`…/gpu_worker.py", line 344, in
    compile_o` as the input's last line) keeps the name's start: the innermost frame is completed
    when exactly one function of the call-path table in that file begins with it."""
    if not frames or parse_frame(last_line) != frames[-1]:
        return frames
    cut = frames[-1]
    if cut.bare or len(cut.function) < 4 or cut.function in _index(tuple(hints)):
        return frames
    names = {
        h.function
        for h in hints
        if h.file and h.function.startswith(cut.function) and _ends_with(cut.path, h.file)
    }
    return [*frames[:-1], replace(cut, function=names.pop())] if len(names) == 1 else frames


def phase_from_frames(frames: Sequence[Frame | str], hints: Sequence[Hint]) -> CallPathVerdict:
    """The call path's verdict over `frames` (outermost first; frame lines or bare names are
    parsed). For a chained traceback pass the frames of the exception that was chosen."""
    parsed = [f if isinstance(f, Frame) else parse_frame(f, bare=True) for f in frames]
    located = [f for f in parsed if f is not None]
    strong = weak = teardown = None
    matches = []
    for index, frame in enumerate(located):
        hint = match_frame(frame, hints)
        if hint is None:
            continue
        found = FrameMatch(index, frame, hint)
        matches.append(found)
        if hint.teardown:
            teardown = found
        elif hint.strong:
            strong = found
        else:
            weak = found
    component, innermost = _component(located)
    return CallPathVerdict(strong, weak, teardown, component, innermost, tuple(matches))


# Modules whose logger reports a worker's exception from whatever step it ran: the Ray worker
# wrapper's execute_method (vllm/engine/ray_utils.py 0.4, vllm/executor/ray_utils.py 0.5+, then
# worker_base.py) and the multiproc worker loop. Their other functions are of one step (Ray
# placement: cuda_init), so the frames table alone would place every relayed error there.
_RELAY_LOGGERS = frozenset({"ray_utils.py", "worker_base.py", "multiproc_worker_utils.py"})


# Loggers that report only what failed in V0's serving loop (DESIGN §3: request), with the shape
# of message that says so (None: any failing record). AsyncLLMEngine's _log_task_completion, the
# callback of the engine-loop task that exists only once the engine is built, logs "Engine
# background task failed" and its traceback (async_llm_engine.py:52-68 across 0.4-0.7: vllm#5458,
# vllm#8978, vllm#11366 and many more). MQLLMEngine.start() logs `repr(e)` for what its startup
# and engine loops raise (engine.py:135 in 0.6.4-0.7: `RuntimeError("shape '[0, -1, 128]' …")`
# after "Added request", `AttributeError("'_OpNamespace' …")` after a 500, vllm#11251's OOM);
# an error while the engine is still being built is logged by run_mp_engine as str(e) instead.
_EXCEPTION_REPR = re.compile(r"^[A-Z][A-Za-z0-9_]*(?:Error|Exception)\((?:['\"]|\)$)")
_SERVING_LOGGERS: dict[str, re.Pattern[str] | None] = {
    "async_llm_engine.py": None,
    "engine.py": _EXCEPTION_REPR,
}


# The location of MQLLMEngine.start()'s `logger.exception(repr(e))` (vllm/engine/multiprocessing/
# engine.py): line 157 in 0.6.2–0.6.3, line 135 in 0.6.4–0.7; run_mp_engine's, for an engine that
# failed while being built, is two hundred lines below. Every line of the record carries it — the
# traceback and the closing exception line too — so a paste cut below the repr line is still placed
# by it: multi-step `TypeError("advance_step() …")` and `AssertionError('Logits Processors are not
# supported in multi-step decoding')` at engine.py:157 after serving stats, a benchmark's
# `OutOfMemoryError('CUDA out of memory …')` at engine.py:157, `AttributeError("'_OpNamespace' …")`
# after a 500 and a run_engine_loop traceback at engine.py:135, a k9s paste of `RuntimeError: CUDA
# error: an illegal memory access` at engine.py:157 (vllm#6976).
_SERVING_LOCATIONS = frozenset({"engine.py:135", "engine.py:157"})


def serving_loop_logger(source: str, message: str) -> bool:
    """Whether a failing record was logged by V0's serving loop (see above)."""
    location = _normalise(source).rsplit("/", 1)[-1]
    if location in _SERVING_LOCATIONS:
        return True
    name = location.split(":", 1)[0]
    if name not in _SERVING_LOGGERS:
        return False
    shape = _SERVING_LOGGERS[name]
    return shape is None or bool(shape.match(message))


def phase_from_source(source: str, hints: Sequence[Hint]) -> str | None:
    """The phase of a logged line from its logger location (`[linear.py:210]` gives `linear.py`,
    or a full path): when every start-up entry of the table whose file has that name agrees on one
    phase, the module belongs to that step (linear.py only runs while the model is built);
    modules that serve several steps (gpu_model_runner.py, core.py, utils.py) or the serving loop
    give None."""
    name = _normalise(source).rsplit("/", 1)[-1].split(":", 1)[0]
    if not name.endswith(".py") or name in _RELAY_LOGGERS:
        return None
    entries = [
        h for h in hints if h.package == "vllm" and h.file.rsplit("/", 1)[-1] == name and not h.teardown
    ]
    if any(not h.strong for h in entries):
        return None  # the module also runs the serving loop
    phases = {h.phase for h in entries}
    return phases.pop() if len(phases) == 1 else None


def split_tracebacks(lines: Iterable[str]) -> list[list[Frame]]:
    """The frames of each traceback of a chained exception, in print order: the cause first
    ("The above exception was the direct cause…", "During handling of the above exception…"),
    the exception that ended the chain last."""
    chain: list[list[Frame]] = []
    for line in lines:
        plain = strip_ansi(line)
        if _HEADER.search(plain) or not chain:
            chain.append([])
            if _HEADER.search(plain):
                continue
        frame = parse_frame(plain)
        if frame is not None:
            chain[-1].append(frame)
    return [frames for frames in chain if frames]


def phase_from_chain(lines: Sequence[str], hints: Sequence[Hint]) -> CallPathVerdict:
    """The verdict for a block that may hold a chained exception: the first traceback (the root
    cause, printed first) that passes through a start-up step decides — a later one is a wrapper
    re-raising it, or a handler failing while cleaning up after it. Without any strong frame, the
    whole block is read as one call path (weak and teardown frames anywhere count)."""
    chain = split_tracebacks(lines)
    for frames in chain:
        verdict = phase_from_frames(frames, hints)
        if verdict.strong is not None:
            return verdict
    return phase_from_frames([f for frames in chain for f in frames], hints)


# V0's executors name the worker method a failure came out of, above the worker's traceback
# (which a paste often leaves out): multiproc_worker_utils.py logs `Exception in worker %s while
# processing method %s.` (before 0.6 with `: <error>` after the name), the Ray worker wrapper
# (worker_base.py execute_method, since vllm#3459) `Error executing method %r. This might cause
# deadlock in distributed execution.` (unquoted before 0.7). The method is the step that ran.
_EXECUTOR_METHOD = re.compile(
    r"(?:Exception in worker \S+ while processing method|Error executing method) '?(?P<func>[A-Za-z_]\w*)'?"
)


def executor_method(lines: Iterable[str]) -> Frame | None:
    """The worker method an executor's headline names, as a bare frame (the outermost step)."""
    for line in lines:
        found = _EXECUTOR_METHOD.search(line)
        if found:
            return Frame("", found.group("func"), "")
    return None
