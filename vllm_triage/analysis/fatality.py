"""Fatality: was an error the end of the process that printed it, or did it go on?

DESIGN §3: the root is an error the failing process did not survive. vLLM logs many errors it
recovers from — a Hub request retried after a DNS failure, "Error retrieving safetensors" that
falls back to another format, an INFO line about the shared-memory broadcast in a healthy run.
What proves survival is what the process did next, not the wording of the error:

- a start-up milestone printed after the error by the same process, at or beyond the step it
  had reached (the process went on with start-up — a retry succeeded or the error was logged
  and ignored); a milestone earlier in start-up order is a restart, not progress;
- a milestone of any process two or more steps beyond the furthest one reached before the error
  (the engine as a whole moved on: KV-cache sizing needs every worker). One step is not enough:
  the driver of a TP group finishes loading its own weights while another rank is failing;
- the server becoming ready after the error;
- once the server was ready: a request served successfully after the error (an HTTP 2xx access
  line, or generation throughput above zero).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from vllm_triage.analysis.model import Row
from vllm_triage.engine.rules import Rule, milestone_phases
from vllm_triage.ingest.prefixes import has_ray_repeat

# Start-up steps that open a run: seeing one again after an error means the server was
# restarted, and what follows belongs to another run.
_RESTART_STEPS = ("platform", "version", "args", "engine_banner")
# A completion served (health checks only prove the API process lives).
_SERVED_OK = re.compile(r'"POST /v1/\S* HTTP/[\d.]+" 2\d\d')
# The status of an access-log line: a 4xx right after an error is the server answering the
# request that failed validation (serving_chat's "Error in preprocessing prompt inputs" → 400).
_STATUS = re.compile(r'"(?:GET|POST|PUT|DELETE) /\S* HTTP/[\d.]+" (\d{3})')
# Responses to requests already in flight still come out while an engine dies: a consequence
# this close after the error means the error was fatal, whatever was answered meanwhile.
DEATH_WINDOW_LINES = 100
# The stats heartbeat: the first one after an error may still count tokens generated before it,
# so only a second heartbeat that generated tokens proves the engine kept going (a dead engine
# prints none: its loop has stopped).
_GENERATING = re.compile(r"Avg generation throughput: (?!0\.0 )\d[\d.]*")
HEARTBEATS_NEEDED = 2
# The engine banner's device: DeviceConfig raises "Failed to infer device type" when no platform
# gave one (vllm/config.py 0.7–0.10, vllm/config/device.py since), so a banner naming a device was
# printed by an engine whose platform was found — unless the user named the device (`--device`,
# V0 to 0.10), which DeviceConfig takes without asking the platform.
_BANNER_DEVICE = re.compile(r"\bdevice_config=(?:device\(type=')?(?P<device>[a-z]+)")
_EXPLICIT_DEVICE = re.compile(
    r"""['"]?\bdevice['"]?\s*[:=]\s*['"](?!auto['"])[a-z]+['"]|--device[= ](?!auto\b)[a-z]"""
)
# The stats heartbeat of V0 (`Avg prompt throughput: …, Running: N reqs, Swapped: …`) and V1
# (`Engine 000: Avg prompt throughput: …, Running: N reqs, Waiting: …`): requests running while no
# prompt token is read and no token generated means no engine step finished in the interval.
_HEARTBEAT = re.compile(
    r"(?:Engine (?P<engine>\d+): )?Avg prompt throughput: (?P<prompt>[\d.]+) tokens/s, "
    r"Avg generation throughput: (?P<gen>[\d.]+) tokens/s,.{0,200}?Running: (?P<running>\d+) reqs"
)
# LLM.generate's tqdm bar (vllm/entrypoints/llm.py `_run_engine`): `Processed prompts:  40%|…| 2/5 [`.
_OFFLINE_BAR = re.compile(r"^Processed prompts:\s+\d{1,3}%\|[^|]{0,400}\|\s*(?P<done>\d+)/(?P<total>\d+) \[")
# Lines of another program after a doomed error that show it went on without vLLM (fewer prove
# nothing: a paste that ends two lines later was cut where it died).
NEVER_USED_LINES = 4


@dataclass(frozen=True)
class Survival:
    """Evidence that the process went on after an error."""

    line: int
    reason: str


@dataclass(frozen=True)
class _Marker:
    row: Row
    name: str
    phase: str
    order: int
    serving: bool  # a line printed while serving (access log, stats), not a start-up step


def marker_rows(rows: list[Row], rules: dict[str, Rule], order: list[str]) -> list[_Marker]:
    """Every retained milestone line (not only the first of each), in line order."""
    found = []
    for row in rows:
        if not row.marker:
            continue
        rule = rules[row.marker]
        if rule.shutdown:
            continue
        index = order.index(rule.milestone) if rule.milestone in order else -1
        found.append(_Marker(row, rule.milestone, rule.phase, index, bool(rule.extra.get("serving"))))
    return found


class FatalityJudge:
    """Answers, for each candidate root, whether the process survived it."""

    def __init__(
        self,
        rows: list[Row],
        rules: dict[str, Rule],
        order: list[str],
        consequence_lines: list[int] | None = None,
    ) -> None:
        self.consequence_lines = sorted(consequence_lines or [])
        self.rows = rows
        self._row_lines = [r.line for r in rows]
        self.markers = marker_rows(rows, rules, order)
        # The milestone that opens each step (its first in start-up order), by phase.
        self._opener: dict[str, int] = {}
        for name, phase in milestone_phases(rules.values(), order):
            self._opener.setdefault(phase, order.index(name))
        self.ready_line = next((m.row.line for m in self.markers if m.name == "ready"), None)
        self._explicit_device = any(
            m.name == "args" and _EXPLICIT_DEVICE.search(m.row.message) for m in self.markers
        )
        self.served = [m.row.line for m in self.markers if m.serving and _SERVED_OK.search(m.row.message)]
        self.generating = [
            m.row.line for m in self.markers if m.serving and _GENERATING.search(m.row.message)
        ]
        # Sorted line numbers, so that each candidate is judged by bisection: a day of serving
        # holds thousands of per-request errors, each judged against thousands of markers.
        self._marker_lines = [m.row.line for m in self.markers]
        self._served_set = set(self.served)
        self._access = [m for m in self.markers if m.serving and _STATUS.search(m.row.message)]
        self._access_lines = [m.row.line for m in self._access]

    def never_used_after(self, error: Row) -> Survival | None:
        """A doomed error in a log where vLLM never starts: no start-up milestone anywhere, and
        after it only lines no logger we know printed, none of them an error. vLLM carries on after
        "No platform detected" until something needs a device; a program that imported vllm without
        running it (KServe's huggingface backend, a library that imports vllm for one helper) goes on
        with its own work and nothing of vLLM ever fails."""
        if self.markers:
            return None
        after = self.rows[bisect.bisect_right(self._row_lines, error.line) :]
        if len(after) < NEVER_USED_LINES:
            return None
        if any(r.level is not None or r.exc or r.tb or r.cls for r in after):
            return None  # vLLM (or a logger that may be its own) went on, or something failed
        line = after[-1].line
        return Survival(line, f"vLLM never started: only another program's lines follow (to line {line})")

    def stalled_serving(self) -> tuple[Row, int, int] | None:
        """(first line, heartbeats, running requests) of a serving engine that stopped making
        progress: its last HEARTBEATS_NEEDED or more stats heartbeats, up to the end of the log,
        each report running requests and neither prompt nor generated tokens (vllm#2731 "nothing
        is generated while requests are running", a DP rank stuck with `Running: 255 reqs` at
        0.0 tokens/s in vllm#23378). One such heartbeat proves nothing: the first interval after
        a request arrives may end before its prefill does (vllm#2595 shows 0.0, then 77 tokens/s)."""
        runs: dict[str, list[tuple[Row, int]]] = {}
        for marker in self.markers:
            if not marker.serving:
                continue
            beat = _HEARTBEAT.search(marker.row.message)
            if beat is None:
                continue
            engine = beat["engine"] or ""
            stalled = int(beat["running"]) > 0 and float(beat["prompt"]) == 0 and float(beat["gen"]) == 0
            if stalled:
                runs.setdefault(engine, []).append((marker.row, int(beat["running"])))
            else:
                runs[engine] = []
        found = [run for run in runs.values() if len(run) >= HEARTBEATS_NEEDED]
        if not found:
            return None
        run = min(found, key=lambda r: r[0][0].line)
        return run[0][0], len(run), max(running for _, running in run)

    def last_word_after(self, milestone: Row, before: int | None = None) -> Row:
        """The last line the process of `milestone` logged after it (before `before`): where a
        silent stop stopped. A step logs its own settings and warnings after the milestone that
        opened it (`Asynchronous scheduling is enabled.`, a NUMA-binding warning, a quantization
        scheme's fallback) — the last of them is where it stood when it went quiet. Only vLLM's
        records (a level and a logger location) count: a progress bar, a library's or another
        process's line says nothing of that process. The last END_CONTEXT lines of a log are always
        kept by the scan, so a long log answers as a short one does."""
        for row in reversed(self.rows):
            if before is not None and row.line >= before:
                continue
            if row.line <= milestone.line:
                break
            if (
                row.stream == milestone.stream
                and row.level in ("INFO", "WARNING")
                and row.source
                and not (row.tb or row.exc or row.cls)
            ):
                return row
        return milestone

    def offline_progress_stuck(self) -> tuple[Row, int, int] | None:
        """The log's last line, when it is LLM.generate's progress bar short of its total
        (`Processed prompts:   0%|          | 0/1 [00:00<?, ?it/s…]`): (row, done, total)."""
        last = next((r for r in reversed(self.rows) if r.message.strip()), None)
        if last is None:
            return None
        bar = _OFFLINE_BAR.search(last.message.rsplit("\r", 1)[-1])
        if bar is None or int(bar["done"]) >= int(bar["total"]):
            return None
        return last, int(bar["done"]), int(bar["total"])

    def last_startup_line(self, before: int | None = None) -> Row | None:
        """The last start-up milestone line printed (before `before`): where a silent stop is placed."""
        markers = [m for m in self.markers if not m.serving and (before is None or m.row.line < before)]
        if not markers:
            return None
        # NCCL_DEBUG=INFO lines match the same marker rule as vLLM's own `vLLM is using nccl==…` and
        # follow it in bulk while a communicator is set up: the step that never finished is the one
        # vLLM last reported, so of the trailing lines of that rule the last vLLM logged is placed.
        # (Another rule's line, such as the rank assignment that closes the step, ends the walk.)
        last = markers[-1]
        for marker in reversed(markers):
            if marker.row.marker != last.row.marker:
                break
            if marker.row.level is not None:
                return marker.row
        return last.row

    def survived(
        self, error: Row, block_end: int, doomed: bool = False, raised_in: str | None = None
    ) -> Survival | None:
        """`doomed`: the process goes on after this error by design but cannot succeed (vLLM logs
        "No platform detected" and carries on until something needs a device), so only the
        server becoming ready or serving proves it was survived, not later start-up steps.
        `raised_in`: the step the error's call path was in; the line that opens that same step,
        printed after the error, is another rank starting it (or a restart), not the failing
        process going past it — a paste that keeps neither prefix cannot tell them apart."""
        if self.ready_line is not None and self.ready_line < error.line:
            return self._served_after(block_end)
        before = self.markers[: bisect.bisect_left(self._marker_lines, error.line)]
        after = self.markers[bisect.bisect_right(self._marker_lines, block_end) :]
        reached_here = max((m.order for m in before if m.row.stream == error.stream), default=-1)
        reached_any = max((m.order for m in before), default=-1)
        # Judged once per error, not once per serving line after it.
        died = self._died_soon_after(block_end)
        answered = None if died else self._answered(block_end)
        served = self._served_set
        for marker in after:
            if has_ray_repeat(marker.row.raw):
                # Ray's dedup summary of other processes' lines is a copy printed late, not a step
                # taken after the error (vllm-ascend#986: `Starting to load model … [repeated 14x
                # across cluster]`, stamped before the worker's KeyError, printed after it).
                continue
            if marker.serving:
                if died:
                    continue
                if marker.row.line in served:
                    return Survival(
                        marker.row.line, f"the server served a request afterwards (line {marker.row.line})"
                    )
                if answered is not None and answered.line == marker.row.line:
                    return answered
                continue
            if doomed and marker.name == "platform" and marker.row.stream == error.stream:
                # The doom was having no platform: the same process found one after all (an
                # out-of-tree plugin activated after the builtin probe said "No platform detected").
                line = marker.row.line
                return Survival(line, f"the same process found its platform afterwards (line {line})")
            if doomed and marker.name == "engine_banner" and not self._explicit_device:
                device = _BANNER_DEVICE.search(marker.row.message)
                if device:
                    line = marker.row.line
                    return Survival(
                        line,
                        f"the engine's config names its device, {device['device']} (line {line}): "
                        "a platform was found after all",
                    )
            if doomed and marker.name != "ready":
                continue
            if marker.name in _RESTART_STEPS and before and marker.order <= reached_any:
                # A step that opens a run, printed again (at or before the furthest step reached):
                # a restart, and the rest of the log is another run. Printed for the first time
                # (V1's engine banner after the API server's arguments) it is start-up going on.
                return None
            if marker.name == "ready":
                return Survival(
                    marker.row.line, f"the server became ready afterwards (line {marker.row.line})"
                )
            if raised_in is not None and marker.order == self._opener.get(raised_in):
                continue
            if marker.row.stream == error.stream and marker.order >= max(reached_here, 0):
                return Survival(
                    marker.row.line,
                    f"the same process went on to {marker.name} (line {marker.row.line})",
                )
            if reached_any >= 0 and marker.order > reached_any + 1:
                return Survival(
                    marker.row.line, f"start-up went on to {marker.name} (line {marker.row.line})"
                )
        return None

    def died_soon_after(self, block_end: int) -> bool:
        """A consequence (engine dead, process died) follows within DEATH_WINDOW_LINES."""
        return self._died_soon_after(block_end)

    def _died_soon_after(self, block_end: int) -> bool:
        i = bisect.bisect_right(self.consequence_lines, block_end)
        return i < len(self.consequence_lines) and self.consequence_lines[i] <= block_end + DEATH_WINDOW_LINES

    def answer_after(self, line: int) -> Survival | None:
        """The 4xx answer to the request that failed at `line`, unless the engine died right after."""
        return None if self._died_soon_after(line) else self._answered(line)

    def _answered(self, block_end: int) -> Survival | None:
        """The first access line after the error is a 4xx: the server answered the failed request."""
        for marker in self._access[bisect.bisect_right(self._access_lines, block_end) :]:
            status = _STATUS.search(marker.row.message)
            if status is None:
                continue
            if not status.group(1).startswith("4"):
                return None
            line = marker.row.line
            return Survival(line, f"the server answered the request with {status.group(1)} (line {line})")
        return None

    def _served_after(self, block_end: int) -> Survival | None:
        if self._died_soon_after(block_end):
            return None
        answered = self._answered(block_end)
        if answered is not None:
            return answered
        i = bisect.bisect_right(self.served, block_end)
        line = self.served[i] if i < len(self.served) else None
        if line is None:
            j = bisect.bisect_right(self.generating, block_end) + HEARTBEATS_NEEDED - 1
            if j >= len(self.generating):
                return None
            line = self.generating[j]
        return Survival(line, f"the server went on serving requests (line {line})")
