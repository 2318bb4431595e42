"""A paste as lines of commands: prompts stripped, comments marked, here-documents kept as
files, continued and terminal-wrapped lines joined into logical commands."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from vllm_triage.parsers.base import PasteLine, clean_paste
from vllm_triage.parsers.launch.lexer import ASSIGNMENT, Logical
from vllm_triage.parsers.launch.model import Shell, word_list
from vllm_triage.parsers.vllm_flags import (
    FlagMatch,
    resolve_flag,
)

# A shell prompt in front of a command: `$ `, `user@host:~/dir$ `, `root@abc:/# `,
# `[user@host dir]$ `, `(venv) user@host:~$ `, `PS C:\> `, `C:\models> `. A bare `# ` is a
# comment, not a root prompt: without user@host we cannot tell, and comments are far commoner.
# GitHub masks what looks like an e-mail address in a mailed reply, so `root@gpu-3:/app#` may
# arrive as `***@***.***:/app#`: `*` is a character of user and host.
_PROMPT = re.compile(
    r"^\s*(?:\([^)\s]*\)\s*)?"
    r"(?:\[[^\]]*\]\s*[$#]"
    r"|[\w.*-]+@[\w.*-]+(?::[^\s$#]*)?\s*[$#%]"
    r"|[\w.*-]+@[\w.*-]+\s+\S+\s*[$#%]"
    r"|[\w.-]+:[~/][^\s$#]*[$#]"  # host:~# (a container's or pod's root shell: no user@)
    r"|[$%]"
    r"|PS [^>]*>"
    r"|[A-Za-z]:\\[^>]*>)[ \t]+"
)


# cmd.exe asks `More?` for the next line of a `^`-continued command (bash's `> ` is removed as
# a blockquote marker by clean_paste).
_CONTINUATION_PROMPT = re.compile(r"^More\? ?")


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w]*)\2")


_HEREDOC_TARGET = re.compile(r"(?:>\s*|\btee\s+(?:-a\s+)?)([^\s<>|;&]+)")


_CAT_FILE = re.compile(r"^\s*cat\s+([^\s<>|;&]+)\s*$")


POWERSHELL_ENV = re.compile(r"""^\s*\$env:([A-Za-z_]\w*)\s*=\s*(.*?)\s*;?\s*$""")


# Words that start a new command; a line starting with one is never the tail of a wrapped line.
_COMMAND_WORDS = frozenset(
    word_list("""
    docker podman nvidia-docker vllm python python3 uv uvx conda mamba micromamba source export
    set unset cd ls cat echo printf curl wget sleep wait kill pkill nvidia-smi pip pip3 git sudo
    nohup env exec bash sh zsh if then else elif fi for do done while case esac function return
    mkdir rm cp mv tail head grep sed awk tee chmod chown ray srun sbatch torchrun kubectl helm
    huggingface-cli hf apt apt-get yum dnf systemctl journalctl time timeout numactl taskset
    declare local readonly trap ulimit cmd powershell pwsh setx start call rem
    """)
)


_OPTION_START = re.compile(r"^--?[A-Za-z]")


_LOG_START = re.compile(r"^\s*(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|Traceback|\(\w+ pid=|\[\w)")


@dataclass
class Line:
    number: int
    text: str
    prompted: bool = False
    comment: bool = False
    inline: bool = False  # taken from a markdown code span: read only when nothing else launches


# A markdown inline code span (`vllm serve …` in prose or in a table cell).
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_MARKDOWN_MARK = re.compile(r"^\s*(?:\||[-*+]\s|\d+\.\s|#{1,6}\s|\*\*)")


def _prose(line: str) -> bool:
    """A markdown table row, list item, heading; or a sentence: its first word is no command, no
    path and no assignment (`nohup `which vllm` serve` is a command with a substitution)."""
    if _MARKDOWN_MARK.match(line):
        return True
    outside = _CODE_SPAN.sub(" ", line).split()
    if len(outside) < 3:
        return False
    first = outside[0]
    return first.isalpha() and first.lower() not in _COMMAND_WORDS


def _code_span_command(line: str) -> str | None:
    """The launch a markdown line holds in an inline code span, when the line itself is prose or a
    table row: `| 20140 | memory-llm | `vllm serve …` |` is the command inside the backticks."""
    if "`" not in line or not _prose(line):
        return None
    spans = [span.strip() for span in _CODE_SPAN.findall(line)]
    launches = [span for span in spans if LAUNCH_HINT.search(span) and len(span.split()) >= 2]
    return launches[0] if len(launches) == 1 else None


# A command pasted as one markdown code span: GitHub renders `` `sudo docker run … -q awq` `` as inline
# code, so people wrap a whole command in one or two backticks (three would be a fence). The span
# may run over several lines of one paragraph, the opening run at the start of its first line and
# the closing run at the end of its last.
_SPAN_OPEN = re.compile(r"^(\s*)(``?)(?!`)")
_SPAN_CLOSE = re.compile(r"(?<!`)(``?)\s*$")


def _unwrap_code_span(lines: list[PasteLine]) -> list[PasteLine]:
    """The lines with a command-wide code span's backticks removed. A line that only starts with a
    command substitution (`` `which vllm` serve … ``) keeps its backticks: the run that opens it is
    closed again on the same line, so it wraps no command."""
    out = list(lines)
    index = 0
    while index < len(out):
        opening = _SPAN_OPEN.match(out[index].text)
        end = _span_end(out, index, opening.group(2)) if opening else None
        if opening is None or end is None:
            index += 1
            continue
        ticks = opening.group(2)
        first = out[index].text[opening.end() :]
        if end == index:
            out[index] = PasteLine(out[index].number, opening.group(1) + first.rstrip()[: -len(ticks)])
        else:
            out[index] = PasteLine(out[index].number, opening.group(1) + first)
            last = out[end].text.rstrip()
            out[end] = PasteLine(out[end].number, last[: -len(ticks)])
        index = end + 1
    return out


def _span_end(lines: list[PasteLine], start: int, ticks: str) -> int | None:
    """The index of the line whose end closes the span opened at `start`, when nothing between
    opens or closes a span of the same run (a code span never holds its own delimiter)."""
    for index in range(start, len(lines)):
        text = lines[index].text
        if not text.strip():
            return None  # a blank line ends the paragraph, and an open span with it
        body = text.lstrip()[len(ticks) :] if index == start else text
        close = _SPAN_CLOSE.search(body)
        closed = close is not None and close.group(1) == ticks
        inner = body[: close.start()] if closed and close is not None else body
        if re.search(rf"(?<!`){ticks}(?!`)", inner):
            return None
        if closed and inner.strip():
            return index
    return None


def prepare_lines(text: str) -> tuple[list[Line], bool]:
    """Paste lines with debris removed; prompts stripped and remembered; comments marked."""
    out = []
    for pasted in _unwrap_code_span(clean_paste(text, keep_prompts=True)):
        line = _CONTINUATION_PROMPT.sub("", pasted.text)
        inline = _code_span_command(line)
        if inline is not None:
            out.append(Line(pasted.number, inline, inline=True))
            continue
        prompt = _PROMPT.match(line)
        if prompt:
            command = line[prompt.end() :]
            out.append(Line(pasted.number, command, prompted=True, comment=command.lstrip().startswith("#")))
            continue
        out.append(Line(pasted.number, line, comment=line.lstrip().startswith(("#", "::", "REM "))))
    prompted = any(ln.prompted for ln in out)
    return _single_spaced(out), prompted


def _single_spaced(lines: list[Line]) -> list[Line]:
    """A double-spaced paste read as it was typed: copied from a rendered page, every line of
    `docker run \\` and its continuations came back with a blank line after it (vllm#22793), which
    to bash would end the command at its first line. Only when every line is followed by exactly
    one blank line and a line ends in a backslash — one paragraph break anywhere (two blank
    lines, or two lines together) and the blank lines are the writer's."""
    filled = [index for index, line in enumerate(lines) if line.text.strip()]
    if len(filled) < 3 or any(b - a != 2 for a, b in itertools.pairwise(filled)):
        return lines
    if not any(lines[index].text.rstrip().endswith("\\") for index in filled[:-1]):
        return lines
    return [lines[index] for index in filled]


def take_heredocs(lines: list[Line], shell: Shell) -> list[Line]:
    """Remove here-document bodies (and `$ cat file` output) from the command lines; keep the
    bodies as files, so `--config cfg.yaml` written by `cat > cfg.yaml <<EOF` can be read."""
    kept: list[Line] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        heredoc = None if line.comment else _HEREDOC.search(line.text)
        cat = _CAT_FILE.match(line.text) if line.prompted else None
        if heredoc and "<<<" not in line.text:
            body, index = _heredoc_body(lines, index, heredoc.group(3), strip_tabs=bool(heredoc.group(1)))
            target = _HEREDOC_TARGET.search(line.text[heredoc.end() :] + " " + line.text[: heredoc.start()])
            if target and body:
                shell.files[target.group(1)] = ("\n".join(b.text for b in body), body[0].number)
        elif cat:
            body = []
            while index < len(lines) and not lines[index].prompted:
                body.append(lines[index])
                index += 1
            if body:
                shell.files[cat.group(1)] = ("\n".join(b.text for b in body), body[0].number)
    return kept


def _heredoc_body(lines: list[Line], index: int, delimiter: str, strip_tabs: bool) -> tuple[list[Line], int]:
    body = []
    while index < len(lines):
        candidate = lines[index].text.lstrip("\t") if strip_tabs else lines[index].text
        index += 1
        if candidate.strip() == delimiter:
            break
        body.append(Line(lines[index - 1].number, candidate))
    return body, index


def _strip_continuation(text: str) -> tuple[str, bool]:
    """Remove a trailing continuation character: bash `\\`, PowerShell backtick, cmd.exe `^`,
    or a dangling `&&`/`||`/`|` that the shell completes from the next line."""
    stripped = text.rstrip()
    if stripped.endswith("\\") and not stripped.endswith("\\\\"):
        return stripped[:-1], True
    if stripped.endswith("`") and stripped.count("`") % 2 == 1:
        return stripped[:-1], True
    if stripped == "^" or stripped.endswith((" ^", "\t^")):
        return stripped[:-1], True
    if stripped.endswith(("&&", "||", "|")):
        return stripped, True
    return text, False


# `--gpus all \  # use every GPU`: an aside after the continuation backslash. bash reads `\ ` as an
# escaped space (a word of one space), the `#` as a comment to the end of the line, and the
# newline as the end of the command, so the paste is broken shell (docker takes " " as the image
# and every later line fails as a command of its own). Whoever wrote it meant the backslash to
# continue the command and the comment as a note on the flag, and that is how a reader reads it.
# Seen in public READMEs and docs as `\  # Enable GPU support`, `\ # to prevent memory errors`,
# `\ #`, `\        #注释` (docker run examples in many repositories; found with find_string
# "--gpus all \  #" and "--ipc=host \ #").
_ASIDE_AFTER_CONTINUATION = re.compile(r"(?<=[ \t])\\[ \t]+#")


def _aside_dropped(line: Line, notes: list[str]) -> str:
    """The line without a comment that follows its continuation backslash (see above)."""
    aside = _ASIDE_AFTER_CONTINUATION.search(line.text)
    if aside is None:
        return line.text
    before = line.text[: aside.start()]
    if before.count('"') % 2 or before.count("'") % 2:
        return line.text  # the backslash is inside a quoted string: the shell's reading stands
    notes.append(
        f"line {line.number}: comment after the continuation backslash dropped; the command read as "
        "continued (bash would end it there)"
    )
    return before + "\\"


LAUNCH_HINT = re.compile(r"\bvllm\b|api_server|\b(?:docker|podman)\b", re.I)


def _wrap_separator(previous: str, line: Line, current: Logical) -> str | None:
    """If `line` continues `current` without a continuation character, the separator to join
    them with ("" for a terminal wrap inside a word, " " or "\\n" between words), else None.

    Two cases: a command pasted without its backslashes (the next line starts with an option,
    which can never start a command of its own), and a terminal that wrapped a long line (the
    next line is a fragment such as `ap-space 8 --max-num-seqs 1`).
    """
    if not LAUNCH_HINT.search(current.text) or line.prompted or line.comment:
        return None
    text = line.text
    first = text.split(None, 1)[0] if text.strip() else ""
    if not first or _LOG_START.match(text) or first in _COMMAND_WORDS or ASSIGNMENT.match(first):
        return None
    if _OPTION_START.match(first):
        return "\n"
    if len(previous) < 60 or text[:1] in " \t":
        return None
    last = previous.split()[-1] if previous.split() else ""
    # A wrap inside a flag (`--sw` / `ap-space 8`) joins into a known flag; otherwise the
    # fragment must itself carry options, or it is more likely output than command.
    if (
        last.startswith("-")
        and not previous.endswith((" ", "\t"))
        and _exact_flag((last + first).split("=", 1)[0])
    ):
        return ""
    if not re.search(r"\s--?[A-Za-z]", text):
        return None
    if previous.endswith((" ", "\t")) or (last.startswith("-") and _exact_flag(last.split("=", 1)[0])):
        return " "
    return ""


def _exact_flag(option: str) -> bool:
    match = resolve_flag(option)
    return isinstance(match, FlagMatch) and not match.abbreviated


# Commands that never run another command given as their arguments.
_NO_COMMAND_ARGS = frozenset(
    word_list("""
    export declare typeset local readonly set unset cd source . echo printf mkdir rm cp mv chmod chown
    ls cat sleep wait kill pkill pip pip3 git apt apt-get curl wget
    """)
)


def _ends_at_comment(current: Logical, line: Line) -> bool:
    """Whether a commented line inside a continued command ended it, as bash reads it: a comment
    runs to the end of its line (its backslash included), so the command stops there. A reader
    usually means the comment to drop one flag (`# --enforce-eager \\` between options) and the
    command to go on, and that reading is kept, unless the next line is plainly a command of its
    own after one that takes no command: `export A=1 \\  # B=2 \\  uv run vllm serve`."""
    first = line.text.split(None, 1)[0] if line.text.strip() else ""
    head = current.text.split(None, 1)[0] if current.text.strip() else ""
    return first in _COMMAND_WORDS and head in _NO_COMMAND_ARGS


def logical_commands(
    lines: list[Line], prompted_paste: bool, notes: list[str], join_wraps: bool = True
) -> list[Logical]:
    """Join continued lines into logical commands. Commented lines inside a continued command
    are skipped (the person commented out one flag); blank lines end a command."""
    commands: list[Logical] = []
    current: Logical | None = None
    # A prompted comment (`$ # Deploy with Docker`) prints nothing: the unprompted lines after it
    # are the commands it introduces, not its output.
    after_prompted_comment = False
    comment_inside: int | None = None  # the commented line met inside the open command
    for line in lines:
        if line.prompted:
            after_prompted_comment = line.comment
        if not line.text.strip():
            current = None
            continue
        if line.comment:
            if current is not None and current.open:
                comment_inside = line.number
                notes.append(f"line {line.number}: commented-out line inside a continued command ignored")
            else:
                current = None
            continue
        if comment_inside is not None and current is not None and _ends_at_comment(current, line):
            notes.append(
                f"line {line.number}: a command of its own; the comment on line {comment_inside} "
                f"ended the command of line {current.lines[0]}"
            )
            current = None
        comment_inside = None
        text = _aside_dropped(line, notes)
        if current is not None and current.open:
            piece, still_open = _strip_continuation(text)
            # Inside double quotes bash removes backslash-newline outright (`M="/hub/\⏎models--…"`
            # is one path); elsewhere the break stays a word break, as it was written.
            current.add(line.number, piece, "" if current.quote == '"' else "\n")
        elif (
            join_wraps
            and current is not None
            and (sep := _wrap_separator(current.last_raw, line, current)) is not None
        ):
            piece, still_open = _strip_continuation(text)
            current.add(line.number, piece.lstrip() if sep == " " else piece, sep)
            how = "no backslash" if sep == "\n" else "terminal-wrapped line"
            notes.append(f"line {line.number}: read as the continuation of line {current.lines[0]} ({how})")
        elif prompted_paste and not line.prompted and not after_prompted_comment:
            current = None  # output of a prompted command, not a command
            continue
        else:
            current = Logical()
            commands.append(current)
            piece, still_open = _strip_continuation(text)
            current.add(line.number, piece, "")
        current.open = still_open
        current.quote = _quote_after(piece, current.quote)
        current.last_raw = line.text
    return commands


def _quote_after(text: str, quote: str) -> str:
    """The quote open after `text` read from inside `quote` ("" outside any), as bash reads it:
    nothing is special inside single quotes, a backslash escapes the next character elsewhere."""
    i = 0
    while i < len(text):
        char = text[i]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            i += 1
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1] in " \t"):
            break  # a comment: its quotes open nothing
        i += 1
    return quote
