"""`docker inspect --format '<Go template>'` pasted with what it printed.

Issue threads ask for one field rather than the whole JSON: `docker inspect vllm --format
'{{json .Config.Env}}'`, `-f '{{.HostConfig.ShmSize}}'`, `docker image inspect IMG --format
'Entrypoint={{json .Config.Entrypoint}} Cmd={{json .Config.Cmd}}'`. The template says which field
each printed value is, so the output is read back into the inspect JSON it came from: a piece
(`{"Config": {"Env": […]}}`) that parsers/inspect_fields.py reads like any jq piece.

Only actions that print one field are read: `{{.A.B}}` and `{{json .A.B}}`; a template with
anything else (`range`, `index`, `printf`, pipes) is left alone, since its output cannot be mapped
back to fields with certainty.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from vllm_triage.parsers.base import PasteLine, clean_paste

# The command: `docker|podman [container|image] inspect …` with a --format / -f template. The
# template is quoted (single or double) or one word.
_COMMAND = re.compile(r"\b(?:docker|podman)\s+(?P<what>container\s+|image\s+)?inspect\b(?P<rest>[^\n]*)")
_FORMAT_OPTION = re.compile(r"""(?:--format|-f)(?:=|\s+)(?P<template>'[^']*'|"[^"]*"|\S+)""")
_ACTION = re.compile(r"\{\{-?\s*(?P<json>json\s+)?(?P<path>(?:\.[A-Za-z_]\w*)+)\s*-?\}\}")
_ANY_ACTION = re.compile(r"\{\{.*?\}\}")
_OPTION = re.compile(r"^-")
_PROMPTED = re.compile(r"^\s*(?:[\w.-]+@[\w.-]+(?::\S*)?)?[$#]\s+\S")
_OUTPUT_LABEL = re.compile(r"^\s*(?:output|result|returns?|prints?)\s*:?\s*$", re.I)
# What docker/podman print instead of the fields: `Error: No such object: x`, `Error response from
# daemon: …`, `template parsing error: …`, `Error: template: :1:8: executing "" at <.X>: map has no entry`.
_FAILED = re.compile(r"^\s*(?:error\b|template(?: parsing)? error)", re.I)
_MAX_OUTPUT_LINES = 200  # a pretty-printed env list, at most
_MAX_CONTINUED = 20  # continuation lines of one inspect command (each join copies the line)
# The template becomes a pattern of lazy groups, one per action: its backtracking grows with the
# line's length to the power of the actions, so both are bounded (real templates print a few
# fields on a short line).
_MAX_ACTIONS = 8
_MAX_LINE = 4096


@dataclass
class FormatReading:
    """What the commands printed, as inspect JSON: one piece per command, as JSON text with the
    line of the paste each of its lines was read from (so a value keeps its own line)."""

    pieces: list[tuple[str, list[int]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def has_format_command(text: str) -> bool:
    """A `docker inspect --format` command with a field action is in `text`."""
    head = text[:400_000]
    if "inspect" not in head or "{{" not in head:
        return False  # cheap: most texts are turned away here
    for line in _joined(clean_paste(head, keep_prompts=True)):
        match = _COMMAND.search(line.text)
        option = _FORMAT_OPTION.search(match.group("rest")) if match else None
        if option and _ACTION.search(option.group("template")):
            return True
    return False


def read_format_output(text: str) -> FormatReading:
    """Every `inspect --format` command of the paste and the output under it, as one piece."""
    reading = FormatReading()
    lines = _joined(clean_paste(text, keep_prompts=True))
    for i, line in enumerate(lines):
        command = _COMMAND.search(line.text)
        option = _FORMAT_OPTION.search(command.group("rest")) if command else None
        if command is None or option is None:
            continue
        template = unquote_simple(option.group("template"))
        if _ANY_ACTION.sub("", template) != _ACTION.sub("", template):
            reading.notes.append(
                f"line {line.number}: the --format template does more than print fields: not read"
            )
            continue
        output = _output_after(lines, i)
        if not output:
            reading.notes.append(f"line {line.number}: no output under the inspect --format command")
            continue
        if _FAILED.match(output[0].text):
            reading.notes.append(f"line {line.number}: the inspect --format command failed: not read")
            continue
        name = _inspected_name(command.group("rest"), option)
        is_image = bool(command.group("what")) and command.group("what").strip() == "image"
        whole = _ACTION.fullmatch(template.strip())
        if whole and whole.group("json"):
            piece_text = _whole_json_piece(_path(whole.group("path")), output, name if is_image else None)
            if piece_text is None:
                reading.notes.append(f"line {line.number}: the output is not the JSON its --format prints")
            else:
                reading.pieces.append(piece_text)
            continue
        found = _read_template(template, output)
        if found is None:
            reading.notes.append(f"line {line.number}: the output does not fit its --format template")
            continue
        piece: dict[str, object] = {}
        for path, value, _ in found:
            _put(piece, path, value)
        if is_image and name:
            piece.setdefault("RepoTags", [name])  # `docker image inspect NAME`: NAME is the image
        reading.pieces.append((json.dumps(piece), [found[0][2]]))
    return reading


def _joined(lines: list[PasteLine]) -> list[PasteLine]:
    """Continued command lines (a trailing backslash) joined onto their first line's number."""
    out: list[PasteLine] = []
    open_line: PasteLine | None = None
    pieces = 0
    for line in lines:
        if open_line is not None and pieces < _MAX_CONTINUED:
            pieces += 1
            open_line = PasteLine(open_line.number, open_line.text[:-1].rstrip() + " " + line.text.strip())
            out[-1] = open_line
        else:
            out.append(line)
            open_line, pieces = line, 0
        if not open_line.text.rstrip().endswith("\\") or not _COMMAND.search(open_line.text):
            open_line = None
    return out


def _output_after(lines: list[PasteLine], i: int) -> list[PasteLine]:
    """The lines a command printed: up to the next command or the end, labels (`Output:`) skipped."""
    out: list[PasteLine] = []
    for line in lines[i + 1 : i + 1 + _MAX_OUTPUT_LINES]:
        if _PROMPTED.match(line.text) or _COMMAND.search(line.text):
            break
        if not line.text.strip() or _OUTPUT_LABEL.match(line.text):
            if out and not line.text.strip():
                break
            continue
        out.append(line)
    return out


def _read_template(
    template: str, output: list[PasteLine]
) -> list[tuple[tuple[str, ...], object, int]] | None:
    """(field path, value, line) for each action of `template`, read from `output`."""
    actions = list(_ACTION.finditer(template))
    if len(actions) > _MAX_ACTIONS:
        return None
    pattern = _template_pattern(template, actions)
    for line in output:
        if len(line.text) > _MAX_LINE:
            continue
        match = pattern.fullmatch(line.text.strip())
        if match is None:
            continue
        found: list[tuple[tuple[str, ...], object, int]] = []
        for n, action in enumerate(actions):
            raw = match.group(f"v{n}")
            value = _value(raw, bool(action.group("json")), _path(action.group("path")))
            if value is _UNREADABLE:
                return None
            found.append((_path(action.group("path")), value, line.number))
        return found
    return None


def _whole_json_piece(
    path: tuple[str, ...], output: list[PasteLine], image: str | None
) -> tuple[str, list[int]] | None:
    """`{{json .A.B}}`: the printed JSON (maybe pretty-printed over lines, `… | jq .`) wrapped
    in the objects of its path, each printed line kept on its own line of the piece."""
    text = "\n".join(line.text for line in output)
    try:
        json.loads(text)
    except ValueError:
        return None
    opening = "".join("{" + json.dumps(key) + ": " for key in path)
    if image:
        opening = "{" + json.dumps("RepoTags") + ": " + json.dumps([image]) + ", " + opening[1:]
    lines = [opening, *(line.text for line in output), "}" * len(path)]
    numbers = [output[0].number, *(line.number for line in output), output[-1].number]
    return "\n".join(lines), numbers


def _template_pattern(template: str, actions: list[re.Match[str]]) -> re.Pattern[str]:
    parts: list[str] = []
    last = 0
    for n, action in enumerate(actions):
        parts.append(_literal(template[last : action.start()]))
        parts.append(f"(?P<v{n}>.*?)" if n < len(actions) - 1 else f"(?P<v{n}>.*)")
        last = action.end()
    parts.append(_literal(template[last:]))
    return re.compile("".join(parts).strip())


def _literal(text: str) -> str:
    # a run of spaces in the template may be printed as any whitespace (a terminal, a paste)
    return r"\s+".join(re.escape(piece) for piece in re.split(r"\s+", text))


_UNREADABLE = object()


def _value(raw: str, is_json: bool, path: tuple[str, ...]) -> object:
    raw = raw.strip()
    if is_json:
        try:
            return json.loads(raw)
        except ValueError:
            return _UNREADABLE
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if raw in ("true", "false"):
        return raw == "true"
    if raw.startswith("[") and raw.endswith("]"):
        return _go_list(raw[1:-1], path)
    return raw


def _go_list(inner: str, path: tuple[str, ...]) -> list[str]:
    """Go's plain print of a []string, `[a b c]`: its items joined by single spaces, with no
    quoting, so an item holding a space cannot be told from two. An environment entry is
    `NAME=value`: a word without `=` goes on with the entry before it (`OPTS=-a -b` stays one)."""
    words = inner.split()
    if path[-1:] != ("Env",):
        return words
    items: list[str] = []
    for word in words:
        if items and not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
            items[-1] += " " + word
        else:
            items.append(word)
    return items


def unquote_simple(text: str) -> str:
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else text


def _path(text: str) -> tuple[str, ...]:
    return tuple(text.lstrip(".").split("."))


def _put(piece: dict[str, object], path: tuple[str, ...], value: object) -> None:
    node = piece
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


def _inspected_name(rest: str, option: re.Match[str]) -> str | None:
    """The object the command inspects: its first word that is no option nor the template."""
    words = (rest[: option.start()] + " " + rest[option.end() :]).split()
    names = [unquote_simple(w) for w in words if not _OPTION.match(w) and w not in ("|", "&&")]
    return names[0] if names and not names[0].startswith(("|", ">")) else None
