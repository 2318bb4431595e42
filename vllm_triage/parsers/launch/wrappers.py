"""Where vLLM starts inside an argv: env assignments and wrapper commands (sudo, nohup,
systemd-run, srun, numactl, uv run, conda run, apptainer/singularity exec, hf jobs run …)
skipped, up to `vllm serve`, the api_server module, docker/podman run or `sh -c`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vllm_triage.parsers.launch.lexer import ASSIGNMENT, Token

_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?(?:\.exe)?$")


_API_SERVER_MODULES = {
    "vllm.entrypoints.openai.api_server": "api_server_module",
    "vllm.entrypoints.api_server": "api_server_module",  # the old demo server; same engine args
}


_SHELLS = {"bash", "sh", "zsh", "dash", "ash"}


@dataclass(frozen=True)
class Wrapper:
    """A command that runs the command after it (`nohup vllm serve …`): which of its options take
    a value, how many positional arguments it takes before the command, and which options set
    an environment variable for the command."""

    value_options: frozenset[str] = frozenset()
    positionals: int = 0
    env_options: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()  # long options known to take no value (`--nv`)


def _wrapper(options: str = "", positionals: int = 0, env: str = "", flags: str = "") -> Wrapper:
    return Wrapper(frozenset(options.split()), positionals, frozenset(env.split()), frozenset(flags.split()))


_APPTAINER = _wrapper(
    "-B --bind --env --env-file --home -H --pwd --overlay -o",
    1,
    "--env",
    "--nv --nvccli --rocm --cleanenv --containall --contain --writable-tmpfs --fakeroot --no-home",
)


# THE wrapper list: every reader of an argv (a pasted command, docker inspect Path+Args, a
# pod's command/args, a supervisord command=) goes through it. Options not listed here that
# start with `--` are taken to carry a value unless the next word is an option or a program.
WRAPPERS: dict[str, Wrapper] = {
    "sudo": _wrapper("-u -g -C -D -h -p -r -t -U --user --group --chdir"),
    "doas": _wrapper("-u -C"),
    "nohup": _wrapper(),
    "exec": _wrapper("-a"),
    "time": _wrapper("-f -o"),
    "command": _wrapper(),
    "nice": _wrapper("-n --adjustment"),
    "ionice": _wrapper("-c -n"),
    "chrt": _wrapper(positionals=1),
    "unbuffer": _wrapper(),
    "stdbuf": _wrapper("-i -o -e"),
    "env": _wrapper("-u -C -S --unset --chdir --split-string"),
    "numactl": _wrapper("-C -N -m -p -i --physcpubind --cpunodebind --membind --preferred --interleave"),
    "taskset": _wrapper(positionals=1),  # taskset -c 0-7 cmd: the CPU list is the positional
    "timeout": _wrapper("-s -k --signal --kill-after", positionals=1),  # timeout 3600 cmd
    "srun": _wrapper("-N -n -p -c -w -t -J -A -G -o -e --gres --gpus --nodes --ntasks --partition"),
    "mpirun": _wrapper("-n -np -N -H --host --hostfile -x"),
    "systemd-run": _wrapper(
        "-p --property -u --unit -M --machine -H --host --slice --uid --gid --description "
        "--working-directory --nice -E --setenv --on-active --on-calendar",
        env="-E --setenv",
    ),
    "tini": _wrapper("-s -p -e -l -g"),
    "dumb-init": _wrapper("-r --rewrite"),
    "uvx": _wrapper("--from --with --python -p"),
    "catchsegv": _wrapper(),
    "strace": _wrapper("-o -e -p -s"),
    "setsid": _wrapper(),  # -f -w -c take no value
    "runuser": _wrapper("-u -g -G --user --group --supp-group"),
    "chroot": _wrapper("--userspec --groups", positionals=1),
}

# Two-word wrappers: `uv run`, `conda run`, `accelerate launch` …
RUNNERS: dict[tuple[str, str], Wrapper] = {
    ("uv", "run"): _wrapper(
        "--with -p --python --env-file --project --directory --package --extra --group --index "
        "--index-url --with-requirements"
    ),
    ("conda", "run"): _wrapper("-n --name -p --prefix --cwd"),
    ("mamba", "run"): _wrapper("-n --name -p --prefix"),
    ("micromamba", "run"): _wrapper("-n --name -p --prefix"),
    ("poetry", "run"): _wrapper(),
    ("pipenv", "run"): _wrapper(),
    ("pdm", "run"): _wrapper(),
    ("hatch", "run"): _wrapper(),
    ("pixi", "run"): _wrapper("-e --environment"),
    # `accelerate launch [options] -m vllm.entrypoints…`: its -m makes the script a module, as
    # python's does, so the words from -m on are read like python's.
    ("accelerate", "launch"): _wrapper(
        "--config_file --num_processes --num_machines --machine_rank --main_process_ip "
        "--main_process_port --mixed_precision --gpu_ids --dynamo_backend --num_cpu_threads_per_process"
    ),
    # Container runners that take the image as their one positional argument, then the command:
    # `apptainer exec --nv -B /data img.sif vllm serve …` (HPC), `singularity exec …` likewise.
    ("apptainer", "exec"): _APPTAINER,
    ("apptainer", "run"): _APPTAINER,
    ("singularity", "exec"): _APPTAINER,
    ("singularity", "run"): _APPTAINER,
}

# Three-word runners: `hf jobs run [options] IMAGE COMMAND…` (Hugging Face Jobs).
RUNNERS3: dict[tuple[str, str, str], Wrapper] = {
    ("hf", "jobs", "run"): _wrapper(
        "--flavor --timeout --namespace --expose -e --env -s --secrets", 1, "-e --env", "-d --detach"
    ),
    ("huggingface-cli", "jobs", "run"): _wrapper(
        "--flavor --timeout --namespace --expose -e --env -s --secrets", 1, "-e --env", "-d --detach"
    ),
}


@dataclass
class Anchor:
    kind: str  # vllm_serve | api_server_module | docker_run | podman_run | shell_c
    index: int  # index of the program word
    args_from: int  # index of the first argument after the program (and subcommand)
    prefix_env: list[Token] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)


def basename(word: str) -> str:
    return re.split(r"[\\/]", word)[-1]


def _skip_wrapper(words: list[Token], index: int) -> tuple[int, str, list[Token]] | None:
    """If words[index] starts a wrapper: the index after it, its description, and the env
    assignments its options make (`systemd-run -E HF_HOME=/data`)."""
    name = basename(words[index].text)
    following = words[index + 1].text if index + 1 < len(words) else ""
    third = words[index + 2].text if index + 2 < len(words) else ""
    runner = RUNNERS.get((name, following))
    runner3 = RUNNERS3.get((name, following, third))
    if runner3 is not None:
        cursor, described, spec = index + 3, f"{name} {following} {third}", runner3
        runner = runner3
    elif runner is not None:
        cursor, described = index + 2, f"{name} {following}"
        spec = runner
    elif name in WRAPPERS:
        cursor, described, spec = index + 1, name, WRAPPERS[name]
    else:
        return None
    env: list[Token] = []
    while cursor < len(words) and words[cursor].text.startswith("-") and words[cursor].text != "--":
        option, eq, attached = words[cursor].text.partition("=")
        if runner is not None and option in ("-m", "--module") and name == "accelerate":
            break  # the module comes next; _module_anchor reads it
        takes_value = option in spec.value_options and not eq
        # `srun --ntasks 1 vllm serve`: an unlisted long option may take a value too, but
        # never the program we are looking for.
        if (
            not takes_value
            and option.startswith("--")
            and not eq
            and option not in spec.value_options
            and option not in spec.flags
        ):
            takes_value = cursor + 1 < len(words) and not _is_program(words[cursor + 1].text)
            takes_value = takes_value and not words[cursor + 1].text.startswith("-")
        value = (
            attached if eq else (words[cursor + 1].text if takes_value and cursor + 1 < len(words) else "")
        )
        if option in spec.env_options and ASSIGNMENT.match(value):
            line = words[cursor].line if eq else words[cursor + 1].line
            env.append(Token(value, line))
        if option in ("-n", "--name") and runner is not None and value:
            described += f" -n {value}"
        cursor += 2 if takes_value else 1
    if cursor < len(words) and words[cursor].text == "--":
        cursor += 1
    cursor += spec.positionals
    return cursor, described, env


# The columns `ps -ef` / `ps aux` / `ps -lefww` print before the command: numbers (PID, PPID, %CPU,
# RSS), times, the TTY (`?`, `pts/0`), state codes (`S`, `Ssl`, `R+`), `-`; and the `....` or `…`
# a person puts for the columns they cut. One word may be the user name.
_PS_COLUMN = re.compile(
    r"^(?:\.{2,}|…|\d[\d:.,%-]*[KMG]?|\?|-|pts/\d+|tty\w*|[DIRSTWXZ][<NLsl+]{0,3}|[a-z_]\w*_\w*|\d+:\d+)$"
)


def _after_ps_columns(words: list[Token]) -> int | None:
    """Where the command starts in a process-listing line, or None when the line is not one: the
    words before a vLLM program are all ps columns (a user name allowed), with a number or an
    elision among them, so `echo vllm serve …` is never taken for a launch."""
    users = 0
    seen_number = False
    for index, token in enumerate(words[:20]):
        text = token.text
        if _is_program(text):
            start = _program_anchor(
                words, index, basename(text), words[index + 1].text if index + 1 < len(words) else ""
            )
            return index if start is not None and seen_number and index > 0 else None
        if _PS_COLUMN.match(text):
            seen_number = seen_number or text[0].isdigit() or text[0] in ".…"
            continue
        if re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", text) and users == 0 and text not in _NOT_USERS:
            users += 1
            continue
        return None
    return None


# Words that are commands, never the user column of ps
_NOT_USERS = frozenset(
    [
        "echo",
        "printf",
        "cat",
        "grep",
        "ps",
        "kill",
        "pkill",
        "pgrep",
        "sleep",
        "if",
        "then",
        "do",
        "for",
        "while",
        "exec",
    ]
)


def _is_program(word: str) -> bool:
    name = basename(word)
    return (
        name in ("vllm", "docker", "podman", "nvidia-docker") or name in _SHELLS or bool(_PYTHON.match(name))
    )


def find_anchor(words: list[Token]) -> Anchor | None:
    """Locate the program that starts vLLM, skipping env assignments and wrapper commands."""
    prefix_env: list[Token] = []
    wrappers: list[str] = []
    index = 0
    while index < len(words):
        word = words[index].text
        name = basename(word)
        following = words[index + 1].text if index + 1 < len(words) else ""
        if ASSIGNMENT.match(word):
            prefix_env.append(words[index])
            index += 1
            continue
        anchor = _program_anchor(words, index, name, following)
        if anchor:
            anchor.prefix_env, anchor.wrappers = prefix_env, wrappers
            return anchor
        if name in ("-m", "--module") and wrappers and wrappers[-1].startswith("accelerate launch"):
            anchor = _module_anchor(words, index - 1, index)
            if anchor:
                anchor.prefix_env, anchor.wrappers = prefix_env, wrappers
            return anchor
        skipped = _skip_wrapper(words, index)
        if skipped is None and index == 0 and (after := _after_ps_columns(words)) is not None:
            index = after  # a `ps -ef` line: the command is the last column
            wrappers.append("ps listing")
            continue
        if skipped is None:
            return None
        index, described, wrapper_env = skipped
        prefix_env.extend(wrapper_env)
        wrappers.append(described)
    return None


def _program_anchor(words: list[Token], index: int, name: str, following: str) -> Anchor | None:
    if name in ("docker", "podman", "nvidia-docker"):
        kind = "podman_run" if name == "podman" else "docker_run"
        if following == "run":
            return Anchor(kind, index, index + 2)
        if following == "container" and index + 2 < len(words) and words[index + 2].text == "run":
            return Anchor(kind, index, index + 3)
        return None
    if name in ("vllm", "vllm.exe") and following == "serve":
        return Anchor("vllm_serve", index, index + 2)
    if _PYTHON.match(name):
        return _python_anchor(words, index)
    if _shell_c(name, following) and index + 2 < len(words):
        # `command: ["/bin/sh", "-c", "--"]` in pod specs: `--` ends sh's options; the script follows.
        script_at = index + 3 if words[index + 2].text == "--" and index + 3 < len(words) else index + 2
        return Anchor("shell_c", index, script_at)
    return None


def _shell_c(name: str, option: str) -> bool:
    """`sh -c`, `bash -lc`, `sh -ec`: a shell told to run the string that follows as its script."""
    return name in _SHELLS and option.startswith("-") and not option.startswith("--") and option.endswith("c")


def awaits_script(words: list[Token]) -> bool:
    """A shell `-c` whose script is still to come (`command: ["/bin/sh", "-c"]`, maybe with `--`):
    the next word given (the first `args:` item) is the whole script."""
    texts = [word.text for word in words]
    if len(texts) == 3 and texts[2] == "--":
        texts = texts[:2]
    return len(texts) == 2 and _shell_c(basename(texts[0]), texts[1])


def _python_anchor(words: list[Token], index: int) -> Anchor | None:
    cursor = index + 1
    while cursor < len(words):
        word = words[cursor].text
        if word == "-m" and cursor + 1 < len(words):
            return _module_anchor(words, index, cursor)
        if word.startswith("-m") and word[2:] in _API_SERVER_MODULES:
            return Anchor(_API_SERVER_MODULES[word[2:]], index, cursor + 1)
        if word.replace("\\", "/").endswith("vllm/entrypoints/openai/api_server.py"):
            return Anchor("api_server_module", index, cursor + 1)
        # `python3 /usr/local/bin/vllm serve …`: the interpreter running vLLM's console script,
        # as `ps` shows a server started as `vllm serve`
        if basename(word) == "vllm" and cursor + 1 < len(words) and words[cursor + 1].text == "serve":
            return Anchor("vllm_serve", index, cursor + 2)
        if not word.startswith("-"):
            return None  # a script that is not vLLM's
        cursor += 2 if word in ("-X", "-W") else 1
    return None


def _module_anchor(words: list[Token], index: int, cursor: int) -> Anchor | None:
    """`-m MODULE …` at `cursor` (python's, or accelerate launch's): vLLM's server modules."""
    if cursor + 1 >= len(words):
        return None
    module = words[cursor + 1].text
    if module in _API_SERVER_MODULES:
        return Anchor(_API_SERVER_MODULES[module], index, cursor + 2)
    if (
        module == "vllm.entrypoints.cli.main"
        and cursor + 2 < len(words)
        and words[cursor + 2].text == "serve"
    ):
        return Anchor("vllm_serve", index, cursor + 3)
    return None
