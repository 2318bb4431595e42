"""A pasted request as the shell saw it: paste debris removed (parsers/base.clean_paste) and the
prompt in front of each command taken off (`user@host:~$ `, `(venv) $ `, `PS C:\\> `, a root `# `),
one output line per input line so that line numbers stay the file's."""

from __future__ import annotations

import re

from vllm_triage.parsers.base import clean_paste

_PROMPT_LINE = re.compile(
    r"^\s*(?:\(\S+\)\s*)?(?:[\w.-]+(?:@[\w.-]+(?::[^\s$#]*)?|:[^\s$#]*)\s*)?\$\s+(?=\S)"
)
_WINDOWS_PROMPT = re.compile(r"^\s*(?:PS )?[A-Za-z]:\\[^>\n]*>\s*(?=\S)")
_ROOT_PROMPT = re.compile(r"^\s*(?:[\w.-]+(?:@[\w.-]+(?::[^\s$#]*)?|:[^\s$#]*)\s*)?#\s+(?=curl\b)")


def cleaned_text(text: str) -> str:
    """Paste debris removed, prompts stripped, and one output line per input line (numbers kept)."""
    lines = text.splitlines()
    kept = {pl.number: pl.text for pl in clean_paste(text, keep_prompts=True)}
    out = []
    for number in range(1, len(lines) + 1):
        line = kept.get(number, "")
        for prompt in (_PROMPT_LINE, _WINDOWS_PROMPT, _ROOT_PROMPT):
            line = prompt.sub("", line, count=1)
        out.append(line)
    return "\n".join(out)
