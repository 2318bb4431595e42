"""The one reader of "vLLM inside an argv": an argv given as a list of words (docker/podman
inspect `Path`+`Args` or `Entrypoint`+`Cmd`, a pod's `command`+`args`) goes through the same
wrapper list, `sh -c` lexing and vLLM argument reader as a pasted command line.

    >>> argv = ["/usr/bin/tini", "--", "vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]
    >>> launch = read_argv(argv, [3] * 7, "x")
    >>> launch.launcher, launch.args["model"].value, launch.args["tensor_parallel_size"].value
    ('vllm_serve', 'Qwen/Qwen3-8B', '2')
"""

from __future__ import annotations

from collections.abc import Sequence

from vllm_triage.parsers.launch.analyse import analyse
from vllm_triage.parsers.launch.lexer import Token, tokenize_string
from vllm_triage.parsers.launch.model import Context, Launch, Shell


def read_argv(words: Sequence[str], lines: Sequence[int | None], file: str) -> Launch | None:
    """The vLLM launch an argv starts (each word with the line it was read from), or None."""
    tokens = [Token(word, line) for word, line in zip(words, lines, strict=False)]
    if not tokens:
        return None
    return analyse(tokens, Shell(), Context(file))


def split_command(command: str) -> list[str]:
    """A command written as one string (Podman 4 prints `Entrypoint` so), split as the shell
    would; operators stay words of their own, as `shlex.split` with punctuation would give."""
    return [token.text for token in tokenize_string(command, None)]
