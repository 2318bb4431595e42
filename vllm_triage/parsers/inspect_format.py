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

from vllm_triage.parsers.base import PasteLine, clean_paste, is_prompt
from vllm_triage.parsers.launch.lexer import tokenize_string

# Where a command may be: `docker|podman [container|image] inspect …` (a cheap test before the
# line is read by the shell lexer).
_COMMAND = re.compile(r"\b(?:docker|podman)\s+(?:(?:container|image)\s+)?inspect\b")
_ACTION = re.compile(r"\{\{-?\s*(?P<json>json\s+)?(?P<path>(?:\.[A-Za-z_]\w*)+)\s*-?\}\}")
_ANY_ACTION = re.compile(r"\{\{.*?\}\}")
_OUTPUT_LABEL = re.compile(r"^\s*(?:output|result|returns?|prints?)\s*:?\s*$", re.I)
# `docker inspect` options that take a value (the rest are flags): `--type image`.
_VALUED_OPTIONS = ("--type",)
# What docker/podman print instead of the fields: `Error: No such object: x`, `Error response from
# daemon: …`, `template parsing error: …`, `Error: template: :1:8: executing "" at <.X>: map has no entry`.
_FAILED = re.compile(r"^\s*(?:error\b|template(?: parsing)? error)", re.I)
_MAX_OUTPUT_LINES = 200  # a pretty-printed env list, at most
_MAX_NOTES = 20
_MAX_CONTINUED = 20  # continuation lines of one inspect command (each join copies the line)


@dataclass(frozen=True)
class _Command:
    """One `inspect --format` command as the shell reads it."""

    template: str
    name: str | None  # the object inspected
    image: bool  # `docker image inspect` / `--type image`


@dataclass
class FormatReading:
    """What the commands printed, as inspect JSON: one piece per command, as JSON text with the
    line of the paste each of its lines was read from (so a value keeps its own line)."""

    pieces: list[tuple[str, list[int]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def has_format_command(text: str) -> bool:
    """A `docker inspect --format` command (or `| jq` path) with a field action is in `text`."""
    head = text[:400_000]
    if "inspect" not in head or ("{{" not in head and "jq" not in head):
        return False  # cheap: most texts are turned away here
    for line in _joined(clean_paste(head, keep_prompts=True)):
        command = _command(line.text)
        if command is not None and _ACTION.search(command.template):
            return True
    return False


def read_format_output(text: str) -> FormatReading:
    """Every `inspect --format` command of the paste and the output under it, as one piece."""
    reading = FormatReading()
    lines = _joined(clean_paste(text, keep_prompts=True))
    notes: list[str] = []
    for i, line in enumerate(lines):
        if ("{{" not in line.text and "jq" not in line.text) or not _COMMAND.search(line.text):
            continue
        # The output first: a paste of commands and nothing else is answered without lexing each.
        output = _output_after(lines, i)
        if not output:
            notes.append(f"line {line.number}: no output under the inspect --format command")
            continue
        command = _command(line.text)
        if command is None:
            continue
        template = command.template
        if not _ACTION.search(template):
            notes.append(f"line {line.number}: the --format template prints no field: not read")
            continue
        if _ANY_ACTION.sub("", template) != _ACTION.sub("", template):
            notes.append(f"line {line.number}: the --format template does more than print fields: not read")
            continue
        if _FAILED.match(output[0].text):
            notes.append(f"line {line.number}: the inspect --format command failed: not read")
            continue
        image = command.name if command.image else None
        whole = _ACTION.fullmatch(template.strip())
        if whole and whole.group("json"):
            piece_text = _whole_json_piece(_path(whole.group("path")), output, image)
            if piece_text is None:
                notes.append(f"line {line.number}: the output is not the JSON its --format prints")
            else:
                reading.pieces.append(piece_text)
            continue
        found = _read_template(template, output)
        if found is None:
            notes.append(f"line {line.number}: the output does not fit its --format template")
            continue
        piece: dict[str, object] = {}
        for path, value, _ in found:
            _put(piece, path, value)
        if image:
            piece.setdefault("RepoTags", [image])  # `docker image inspect NAME`: NAME is the image
        reading.pieces.append((json.dumps(piece), [found[0][2]]))
    # A note a command: bounded, as a paste may hold thousands of them.
    reading.notes = notes[:_MAX_NOTES] + (
        [f"… and {len(notes) - _MAX_NOTES} more"] if len(notes) > _MAX_NOTES else []
    )
    return reading


def _command(text: str) -> _Command | None:
    """The `inspect --format` command on `text`, read by the shell lexer, or None."""
    if not _COMMAND.search(text):
        return None
    words: list[str] = []
    piped: list[str] | None = None  # the words of a `| jq FILTER` after the inspect command
    for token in tokenize_string(text, None):
        if token.op == "|" and piped is None:
            piped = []
            continue
        if token.op:  # `&&`, a redirection, a second pipe: the command ends
            break
        (words if piped is None else piped).append(token.text)
    start = next((n for n, word in enumerate(words) if word in ("docker", "podman")), None)
    if start is None:
        return None
    args = words[start + 1 :]
    image = bool(args) and args[0] == "image"
    if args[:1] in (["image"], ["container"]):
        args = args[1:]
    if args[:1] != ["inspect"]:
        return None
    template, names, index = None, [], 1
    while index < len(args):
        word = args[index]
        if word in ("--format", "-f") and index + 1 < len(args):
            template, index = args[index + 1], index + 2
            continue
        if word.startswith(("--format=", "-f=")):
            template = word.split("=", 1)[1]
        elif word in _VALUED_OPTIONS and index + 1 < len(args):
            image = image or args[index + 1] == "image"
            index += 1
        elif word.startswith("--type="):
            image = image or word == "--type=image"
        elif not word.startswith("-"):
            names.append(word)
        index += 1
    if template is None and piped:
        template = _jq_as_template(piped)
    if names and not image and _IMAGE_REF.search(names[0]) and not names[0].startswith("sha256:"):
        image = True  # a container's name holds no '/' or ':' ([a-zA-Z0-9][a-zA-Z0-9_.-]+)
    if template is None:
        return None
    return _Command(template, names[0] if names else None, image)


# `docker inspect X | jq '.[0].Config.Env'`: jq picks one field of the (one-object) array and
# prints it as JSON, as `--format '{{json .Config.Env}}'` does. Only a plain path is read;
# `-r` prints a string's text without quotes (as `{{.A.B}}` does).
_IMAGE_REF = re.compile(r"[/:]")
_JQ_OPTIONS = ("-r", "--raw-output", "-c", "--compact-output", "-M", "-C")  # they change no value
_JQ_PATH = re.compile(r"^\.(?:\[0?\])?(?P<path>(?:\.[A-Za-z_]\w*)+)$")


def _jq_as_template(words: list[str]) -> str | None:
    if not words or words[0] != "jq":
        return None
    options = [w for w in words[1:] if w.startswith("-")]
    filters = [w for w in words[1:] if not w.startswith("-")]
    path = _JQ_PATH.match(filters[0]) if len(filters) == 1 else None
    if path is None or any(option not in _JQ_OPTIONS for option in options):
        return None
    raw = any(option in ("-r", "--raw-output") for option in options)
    return "{{" + ("" if raw else "json ") + path.group("path") + "}}"


def _joined(lines: list[PasteLine]) -> list[PasteLine]:
    """Continued command lines (a trailing backslash) joined onto their first line's number."""
    out: list[PasteLine] = []
    open_line: PasteLine | None = None
    pieces = 0
    for line in lines:
        if open_line is not None and pieces < _MAX_CONTINUED:
            pieces += 1
            joined = open_line.text.rstrip()[:-1].rstrip() + " " + line.text.strip()
            open_line = PasteLine(open_line.number, joined)
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
        if is_prompt(line.text) or _COMMAND.search(line.text):
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
    """(field path, value, line) for each action of `template`, read from the first output line
    that fits it."""
    template = template.strip()
    actions = list(_ACTION.finditer(template))
    bounds = [0, *(n for action in actions for n in action.span()), len(template)]
    literals = [_spaced(template[start:end]) for start, end in zip(bounds[::2], bounds[1::2], strict=True)]
    for line in output:
        values = _split_by_literals(_spaced(line.text.strip()), literals)
        if values is None:
            continue
        found: list[tuple[tuple[str, ...], object, int]] = []
        for action, raw in zip(actions, values, strict=True):
            path = _path(action.group("path"))
            value = _value(raw, bool(action.group("json")), path)
            if value is _UNREADABLE:
                return None
            found.append((path, value, line.number))
        return found
    return None


def _split_by_literals(text: str, literals: list[str]) -> list[str] | None:
    """The values between the template's literal pieces (`shm=`, ` ipc=`), each ending where its
    next literal first occurs, as Go printed them left to right. One pass forward: no pattern is
    built from the template, so nothing backtracks however long the line (a template of lazy
    groups had taken minutes on a 300-character line). Two actions with nothing between them
    cannot be told apart: not read."""
    head, *middle, tail = literals
    if not text.startswith(head) or not text.endswith(tail) or any(not piece for piece in middle):
        return None
    end = len(text) - len(tail)
    pos, values = len(head), []
    for piece in middle:
        found = text.find(piece, pos, end)
        if found < 0:
            return None
        values.append(text[pos:found])
        pos = found + len(piece)
    if pos > end:
        return None
    values.append(text[pos:end])
    return values


def _spaced(text: str) -> str:
    # a run of spaces in the template may be printed as any whitespace (a terminal, a paste)
    return re.sub(r"\s+", " ", text)


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
