"""The report as vLLM's bug-report form wants it: one body per field of the form, each within
GitHub's size limit, and the guide that says which block goes into which field.

vLLM's repository allows no blank issue (.github/ISSUE_TEMPLATE/config.yml: blank_issues_enabled:
false), so one Markdown body cannot be pasted as it is: the bug form (400-bug-report.yml) has a
title input ("[Bug]: "), the textarea "Your current environment" (collect_env inside its
<details> block), the textarea "🐛 Describe the bug" (the error with its full traceback, the code or
command that reproduces it) and the checkbox `askllm`. The form gives its two textareas no `id`,
so the names here (`environment`, `bug`) are short forms of their labels; `askllm` is the form's
own id, but a checkbox has nothing to paste: the guide says to tick it.

GitHub builds the issue body from the fields ("### label", blank line, the text) and refuses one
over 65,536 characters; the fields are fitted so that the whole body stays under BODY_BUDGET: the
longest artefacts are cut (collect_env and a request at their end, a traceback in its middle, where
its head says what was running and its tail what was raised), each cut saying so.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_triage.render.templates import render

GITHUB_BODY_LIMIT = 65_536  # characters of an issue body, as GitHub refuses a longer one
# Kept under the limit by a margin: GitHub's own wording around the fields may change a little.
BODY_BUDGET = 64_000
TITLE_LIMIT = 256  # characters of an issue title on GitHub
CUT_NOTE = "cut by vllm-triage to fit GitHub's 65,536-character issue limit"
ASKLLM_LABEL = (
    "Make sure you already searched for relevant issues, and asked the chatbot living at the bottom "
    "right corner of the [documentation page](https://docs.vllm.ai/en/latest/), which can answer lots "
    "of frequently asked questions."
)


@dataclass(frozen=True)
class FormField:
    """One field of the form: the name `--field` takes, the label the form shows, its body."""

    name: str
    label: str
    body: str


# (name, the label on the form) in the form's order.
FIELDS = (
    ("title", "Title"),
    ("environment", "Your current environment"),
    ("bug", "🐛 Describe the bug"),
)
FIELD_NAMES = tuple(name for name, _label in FIELDS)


def submitted_body(fields: list[FormField]) -> str:
    """The issue body GitHub makes of the filled form: a heading per textarea, then the checkbox."""
    parts = [f"### {f.label}\n\n{f.body.rstrip()}" for f in fields if f.name != "title"]
    parts.append(f"### Before submitting a new issue...\n\n- [X] {ASKLLM_LABEL}")
    return "\n\n".join(parts) + "\n"


def _title(report: dict[str, Any]) -> str:
    title = " ".join(str(report["title"]).split())
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1] + "…"


def _cut_text(piece: dict[str, Any], by: int) -> None:
    """Keep the head of an artefact (collect_env, a request, a command): its first lines say what
    it is; end on a whole line unless that loses most of the head (a prompt on one long line)."""
    text = piece["text"]
    keep = max(0, len(text) - by)
    head = text[:keep]
    if "\n" in head and head.rindex("\n") >= keep // 2:
        head = head[: head.rindex("\n")]
    piece["text"] = head
    piece["cut"] = True


def _cut_lines(lines: list[str], by: int) -> list[str]:
    """A traceback without its middle: the head names the failing step, the tail the exception."""
    total = sum(len(line) + 1 for line in lines)
    target = max(0, total - by)
    head: list[str] = []
    tail: list[str] = []
    size = 0
    low, high = 0, len(lines) - 1
    # Alternate: one line from the tail for each line from the head, the tail first (it is the error).
    while low <= high:
        line = lines[high]
        if size + len(line) + 1 > target:
            break
        tail.insert(0, line)
        size += len(line) + 1
        high -= 1
        if low > high:
            break
        line = lines[low]
        if size + len(line) + 1 > target:
            break
        head.append(line)
        size += len(line) + 1
        low += 1
    dropped = high - low + 1
    if dropped <= 0:
        return lines
    return [*head, f"[… {dropped} line(s) {CUT_NOTE} …]", *tail]


def _pieces(run: dict[str, Any]) -> list[tuple[int, Callable[[int], None]]]:
    """The artefacts of the bug field that can be cut: (size, cut by so many characters)."""
    out: list[tuple[int, Callable[[int], None]]] = []
    for key in ("request", "command"):
        piece = run.get(key)
        if piece and piece.get("text"):
            out.append((len(piece["text"]), functools.partial(_cut_text, piece)))
    fe = run.get("first_error")
    if fe and fe.get("block_lines"):

        def cut_block(by: int, fe: dict[str, Any] = fe) -> None:
            fe["block_lines"] = _cut_lines([str(line) for line in fe["block_lines"]], by)

        out.append((sum(len(str(line)) + 1 for line in fe["block_lines"]), cut_block))
    if run.get("env"):

        def cut_env(by: int, run: dict[str, Any] = run) -> None:
            kept, size = [], 0
            budget = sum(len(v) + 1 for v in run["env"]) - by
            for value in run["env"]:
                if size + len(value) + 1 > budget:
                    break
                kept.append(value)
                size += len(value) + 1
            run["env"] = [*kept, f"# … {len(run['env']) - len(kept)} more variable(s) {CUT_NOTE}"]

        out.append((sum(len(v) + 1 for v in run["env"]), cut_env))
    return out


def _level(sizes: list[int], total: int) -> int:
    """The largest L such that cutting every piece down to L leaves at most `total` characters:
    the longest artefacts are cut, evenly, and a short one is left whole."""
    low, high = 0, max(sizes)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(size, mid) for size in sizes) <= total:
            low = mid
        else:
            high = mid - 1
    return low


def _fit(
    draw: Callable[[], str], pieces: Callable[[], list[tuple[int, Callable[[int], None]]]], budget: int
) -> str:
    """Draw the field; while it is over budget, cut its longest artefacts to one level and draw again."""
    body = draw()
    for _round in range(4):
        excess = len(body) - budget
        if excess <= 0:
            return body
        candidates = [p for p in pieces() if p[0] > 0]
        if not candidates:
            break
        sizes = [size for size, _cut in candidates]
        level = _level(sizes, sum(sizes) - excess - 300 * len(sizes))  # room for the notes the cuts add
        for size, cut in candidates:
            if size > level:
                cut(size - level)
        body = draw()
    if len(body) > budget:
        # Nothing left to cut that is long enough (a form of many short parts): cut the text itself.
        body = body[: budget - len(CUT_NOTE) - 20].rsplit("\n", 1)[0] + f"\n\n[… {CUT_NOTE}]\n"
    return body


def form_fields(report: dict[str, Any], helpers: dict[str, Any]) -> list[FormField]:
    """The fields of the bug form for the report's primary run, fitted to GitHub's limit together."""
    report = copy.deepcopy(report)  # the cuts are for this rendering only
    run = report["runs"][report["primary"]]
    overhead = len(submitted_body([FormField(n, label, "") for n, label in FIELDS]))
    room = BODY_BUDGET - overhead

    def draw_bug() -> str:
        return render("form_bug.md.j2", r=report, run=run, **helpers)

    def draw_environment() -> str:
        return render("form_environment.md.j2", r=report, run=run, **helpers)

    def environment_pieces() -> list[tuple[int, Callable[[int], None]]]:
        piece = run["environment"].get("collect_env")
        if not piece or not piece.get("text"):
            return []
        return [(len(piece["text"]), lambda by: _cut_text(piece, by))]

    # Each field may have half the room; what one leaves, the other may use.
    bug_wanted = len(draw_bug())
    environment = _fit(draw_environment, environment_pieces, max(room // 2, room - bug_wanted))
    bug = _fit(draw_bug, lambda: _pieces(run), room - len(environment))
    return [
        FormField("title", "Title", _title(report)),
        FormField("environment", "Your current environment", environment),
        FormField("bug", "🐛 Describe the bug", bug),
    ]
