"""The picture of the HTML report as geometry: one lane per run across the phase bands, a dot per
milestone reached, and a mark where the first error struck.

The x axis is the ordered phases (DESIGN §3), not time: logs of different runs rarely share a
clock, and a phase axis puts the same milestone at the same x in every lane, so two runs side by
side show at a glance which got further. Each milestone has its own slot inside its phase's band,
in the canonical startup order, whether or not a run reached it: the report's `milestone_order`,
made from the rules the command loaded (rules/markers.toml and any `--rules` directory), so this
module is a pure function of the report. The template (reports/report.html.j2) only draws what
this module computes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vllm_triage.core.phases import PHASES

PHASE_LABELS = {
    "container": "container",
    "config": "config",
    "cuda_init": "CUDA init",
    "weight_load": "weight load",
    "engine_reserve": "engine reserve",
    "request": "serving",
}
WIDTH = 980
LABEL_WIDTH = 210
RIGHT_MARGIN = 16
PHASE_TITLE_Y = 16
MILESTONE_LABEL_Y = 100  # milestone names are written once, slanted, above the lanes
HEADER = 112
LANE_HEIGHT = 66
FOOTER = 40
# A band's width follows the number of milestones in it, with room for its title when it has few.
MIN_BAND_WEIGHT = 2.0
# Text is measured before it is placed, so no label runs off the picture or into the lane labels.
# SVG has no text metrics before layout: an average glyph is ~0.6 em in a sans-serif font (bold a
# little wider); estimating on the wide side keeps real glyphs inside the box.
EM_REGULAR = 0.56
EM_BOLD = 0.6
ERROR_LABEL_SIZE = 11.5
ERROR_WHERE_SIZE = 10.5
LANE_LABEL_SIZE = 12.5
LANE_STATUS_SIZE = 11
EDGE = 8


def text_width(text: str, size: float, bold: bool = False) -> float:
    return len(text) * size * (EM_BOLD if bold else EM_REGULAR)


def fit(text: str, room: float, size: float, bold: bool = False) -> str:
    """`text`, cut with … so that it takes at most `room` pixels."""
    if text_width(text, size, bold) <= room:
        return text
    keep = max(int(room / (size * (EM_BOLD if bold else EM_REGULAR))) - 1, 1)
    return text[:keep].rstrip() + "…"


def distinct_labels(labels: list[str], room: float, size: float) -> list[str]:
    """Each lane's label cut to `room` pixels so that two lanes never read the same: a label
    longer than the room keeps its start and its end (runs are usually named `model … node-17`);
    when that still collides, the part where it differs from the others is kept."""
    limit = max(int(room / (size * EM_BOLD)), 6)

    def middle(label: str) -> str:
        if len(label) <= limit:
            return label
        head = (limit - 1) // 2
        return label[:head] + "…" + label[len(label) - (limit - 1 - head) :]

    out = [middle(label) for label in labels]
    for i, label in enumerate(labels):
        if len(label) <= limit or out.count(out[i]) == 1:
            continue
        others = [o for j, o in enumerate(labels) if j != i and out[j] == out[i]]
        differs = min(
            next(
                (k for k, (x, y) in enumerate(zip(label, other, strict=False)) if x != y),
                min(len(label), len(other)),
            )
            for other in others
        )
        start = max(min(differs - 2, len(label) - (limit - 1)), 0)
        out[i] = "…" + label[start : start + limit - 1]
    return out


def two_lines(label: str, first: float, second: float, size: float) -> list[str]:
    """A lane label on one line, or on two broken between words (the first line after `T<n> `
    has less room), so that a label is shown whole; only what two lines cannot hold is cut (by
    distinct_labels, before)."""
    per_em = size * EM_BOLD
    one, two = max(int(first / per_em), 6), max(int(second / per_em), 6)
    if len(label) <= one:
        return [label]
    words = label.split(" ")
    head = ""
    for i, word in enumerate(words):
        candidate = f"{head} {word}" if head else word
        if len(candidate) > one:
            rest = " ".join(words[i:])
            if head and len(rest) <= two:
                return [head, rest]
            break
        head = candidate
    # No break between words fits: break inside one, the end cut if it is still too long.
    return [label[:one], fit(label[one:], second, size, bold=True)]


@dataclass
class Slot:
    marker: str
    phase: str
    x: float


@dataclass
class Band:
    phase: str
    label: str
    x: float
    width: float
    slots: list[Slot] = field(default_factory=list)


def milestone_phases(milestone_order: list[dict[str, str]]) -> tuple[list[str], dict[str, str]]:
    """The canonical milestone order and the phase each milestone's marker opens, from the report's
    `milestone_order` (the rules the command loaded, `--rules` included: a renderer reads no rules)."""
    phase_of: dict[str, str] = {}
    for entry in milestone_order:
        if entry["phase"] in PHASES:
            phase_of.setdefault(entry["marker"], entry["phase"])
    return list(phase_of), phase_of


def bands(order: list[str], phase_of: dict[str, str]) -> list[Band]:
    members = {phase: [m for m in order if phase_of.get(m) == phase] for phase in PHASES}
    weights = {phase: max(MIN_BAND_WEIGHT, len(members[phase]) + 0.5) for phase in PHASES}
    unit = (WIDTH - LABEL_WIDTH - RIGHT_MARGIN) / sum(weights.values())
    out = []
    x = float(LABEL_WIDTH)
    for phase in PHASES:
        width = weights[phase] * unit
        band = Band(phase, PHASE_LABELS[phase], x, width)
        step = width / (len(members[phase]) + 1)
        band.slots = [Slot(m, phase, band.x + (k + 1) * step) for k, m in enumerate(members[phase])]
        out.append(band)
        x += width
    return out


def _error_x(band: Band, reached: set[str]) -> float:
    """Just after the last slot of the failing phase that was reached (the step that did not finish)."""
    xs = [band.x] + [s.x for s in band.slots] + [band.x + band.width]
    done = [i for i, s in enumerate(band.slots, 1) if s.marker in reached]
    last = max(done, default=0)
    return (xs[last] + xs[last + 1]) / 2


def _served(run: dict[str, Any]) -> str:
    """What a run that never failed did: `ready, served 12 requests`, `ready, no request` (the
    status line is cut to the label column if it must be)."""
    requests = run.get("requests")
    if requests is None:
        return "ready"
    if not requests:
        return "ready, no request"
    return f"ready, served {requests} request{'' if requests == 1 else 's'}"


def _place_label(end_x: float, texts: list[tuple[str, float, bool]]) -> tuple[str, float, list[str]]:
    """(anchor, x, texts cut to fit) for the labels beside the error mark: on the side with more
    room, each text cut so it stays inside the picture and clear of the lane labels."""
    right_room = WIDTH - EDGE - (end_x + 12)
    left_room = end_x - 12 - (LABEL_WIDTH + 4)
    widest = max(text_width(t, size, bold) for t, size, bold in texts)
    if widest <= right_room or right_room >= left_room:
        anchor, x, room = "start", end_x + 12, right_room
    else:
        anchor, x, room = "end", end_x - 12, left_room
    return anchor, round(x, 1), [fit(t, room, size, bold) for t, size, bold in texts]


def lane(run: dict[str, Any], index: int, all_bands: list[Band], short_label: str = "") -> dict[str, Any]:
    y = HEADER + index * LANE_HEIGHT + LANE_HEIGHT / 2
    reached = {m["marker"] for m in run["milestones"]}
    where = {m["marker"]: m["where"] for m in run["milestones"]}
    fe = run["first_error"]
    failed_phase = run["phase"] if fe is not None and run["phase"] in PHASES else None
    end_x: float = WIDTH - RIGHT_MARGIN
    error = None
    if failed_phase is not None:
        band = next(b for b in all_bands if b.phase == failed_phase)
        end_x = _error_x(band, reached)
        label = (
            "stopped here, no error (hang)"
            if fe.get("kind") == "hang"
            else f"first error: {fe.get('category')}"
        )
        where_text = str(fe.get("where") or "") + (f" · {fe['timestamp']}" if fe.get("timestamp") else "")
        anchor, label_x, (label_shown, where_shown) = _place_label(
            end_x, [(label, ERROR_LABEL_SIZE, True), (where_text, ERROR_WHERE_SIZE, False)]
        )
        error = {
            "x": round(end_x, 1),
            "y": y,
            "hang": fe.get("kind") == "hang",
            "category": fe.get("category"),
            "where": fe.get("where"),
            "timestamp": fe.get("timestamp"),
            "phase": failed_phase,
            "label": label,  # whole, for the tooltip
            "label_shown": label_shown,
            "where_shown": where_shown,
            "anchor": anchor,
            "label_x": label_x,
        }
    elif not run["ready"]:
        # No failure and never ready: as far as the last milestone (a log that simply stops).
        reached_x = [s.x for b in all_bands for s in b.slots if s.marker in reached]
        end_x = max(reached_x, default=LABEL_WIDTH)
    states = []
    failed_index = PHASES.index(failed_phase) if failed_phase else None
    for i, band in enumerate(all_bands):
        if failed_index is not None:
            stopped = "stopped" if error is not None and error["hang"] else "failed"
            state = "passed" if i < failed_index else (stopped if i == failed_index else "unreached")
        elif run["ready"]:
            state = "passed"
        else:
            state = (
                "passed" if band.x + band.width <= end_x else ("reached" if band.x < end_x else "unreached")
            )
        if state == "passed" and not any(s.marker in reached for s in band.slots):
            # Passed only on evidence: a phase with no milestone reached in it (the container band
            # has none; a partial log starts later) is shown as not seen, not as a success.
            state = "unseen"
        states.append(
            {"phase": band.phase, "x": round(band.x, 1), "width": round(band.width, 1), "state": state}
        )
    dots = [
        {
            "x": round(s.x, 1),
            "y": y,
            "marker": s.marker,
            "reached": s.marker in reached,
            "where": where.get(s.marker, ""),
        }
        for b in all_bands
        for s in b.slots
    ]
    return {
        "index": index,
        "y": y,
        "top": y - LANE_HEIGHT / 2 + 6,
        "height": LANE_HEIGHT - 12,
        "label": run["label"],
        "short_label": short_label or run["label"],
        "status": fit(
            PHASE_LABELS.get(run["phase"], run["phase"])
            if error
            else (_served(run) if run["ready"] else "no failure seen"),
            LABEL_WIDTH - 14,
            LANE_STATUS_SIZE,
        ),
        "number": run["number"],
        "phase": run["phase"],
        "ready": run["ready"],
        "bands": states,
        "dots": dots,
        "progress_end": round(end_x, 1),
        "error": error,
    }


def timeline(runs: list[dict[str, Any]], milestone_order: list[dict[str, str]]) -> dict[str, Any]:
    """The picture's geometry for `runs` (the report's), with a slot for each milestone of
    `milestone_order` (the report's: every milestone the rules define, in startup order)."""
    order, phase_of = milestone_phases(milestone_order)
    all_bands = bands(order, phase_of)
    # Room for the label after `T<n> ` on its first line, the whole column on its second; a label
    # longer than both lines is cut where it differs from the others.
    first = LABEL_WIDTH - 14 - text_width("T00 ", LANE_LABEL_SIZE, True)
    second = LABEL_WIDTH - 14
    labels = [str(run["label"]) for run in runs]
    # A word break wastes up to a word's room on the first line: a cut leaves that much.
    shorts = distinct_labels(labels, first + second - 80, LANE_LABEL_SIZE)
    lanes = []
    for i, run in enumerate(runs):
        whole = two_lines(labels[i], first, second, LANE_LABEL_SIZE)
        shown = labels[i] if "…" not in "".join(whole) else shorts[i]
        lanes.append(lane(run, i, all_bands, shown))
        lanes[-1]["label_lines"] = (
            whole if shown == labels[i] else two_lines(shown, first, second, LANE_LABEL_SIZE)
        )
    height = HEADER + LANE_HEIGHT * len(runs) + FOOTER
    return {
        "width": WIDTH,
        "height": height,
        "label_width": LABEL_WIDTH,
        "start_x": LABEL_WIDTH,
        "bands": [
            {
                "phase": b.phase,
                "label": b.label,
                "x": round(b.x, 1),
                "width": round(b.width, 1),
                "center": round(b.x + b.width / 2, 1),
            }
            for b in all_bands
        ],
        "slots": [{"marker": s.marker, "x": round(s.x, 1)} for b in all_bands for s in b.slots],
        "phase_title_y": PHASE_TITLE_Y,
        "milestone_label_y": MILESTONE_LABEL_Y,
        "lanes_top": HEADER - 4,
        "lanes_bottom": HEADER + LANE_HEIGHT * len(runs),
        "lanes": lanes,
        "axis_y": height - FOOTER + 16,
    }
