"""A gutter (indentation, line numbers, a tail's tag before every line) is learnt from a log's head
and taken off; a log without one is left alone."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from vllm_triage.ingest import gutter
from vllm_triage.pipeline import triage

# A V1 start-up that dies sizing the KV cache, as vLLM prints it (written for this test).
LOG = """\
(APIServer pid=4711) INFO 03-14 09:12:01 [api_server.py:1880] vLLM API server version 0.10.2
(APIServer pid=4711) INFO 03-14 09:12:01 [utils.py:328] non-default args: {'model': 'acme/Chat-8B', 'max_model_len': 262144}
(APIServer pid=4711) INFO 03-14 09:12:09 [model.py:547] Resolved architecture: LlamaForCausalLM
(EngineCore_DP0 pid=4790) INFO 03-14 09:12:15 [core.py:77] Initializing a V1 LLM engine (v0.10.2) with config: model='acme/Chat-8B'
(EngineCore_DP0 pid=4790) INFO 03-14 09:12:17 [parallel_state.py:1208] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0
(EngineCore_DP0 pid=4790) INFO 03-14 09:12:18 [gpu_model_runner.py:2338] Starting to load model acme/Chat-8B...
(EngineCore_DP0 pid=4790) INFO 03-14 09:12:41 [gpu_model_runner.py:2370] Model loading took 14.99 GiB and 22.1 seconds
(EngineCore_DP0 pid=4790) INFO 03-14 09:12:52 [gpu_worker.py:298] Available KV cache memory: 3.02 GiB
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718] EngineCore failed to start.
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718] Traceback (most recent call last):
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 709, in run_engine_core
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718]     raise ValueError(
(EngineCore_DP0 pid=4790) ERROR 03-14 09:12:52 [core.py:718] ValueError: To serve at least one request with the models's max seq len (262144), (32.00 GiB KV cache is needed, which is larger than the available KV cache memory (3.02 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
(APIServer pid=4711) Traceback (most recent call last):
(APIServer pid=4711)   File "/usr/local/bin/vllm", line 10, in <module>
(APIServer pid=4711)     sys.exit(main())
(APIServer pid=4711) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""
LINES = LOG.splitlines()
# A bare traceback, as a CLI prints it before logging is set up (written for this test).
BARE = """\
Traceback (most recent call last):
  File "/opt/venv/bin/vllm", line 8, in <module>
    sys.exit(main())
  File "/opt/venv/lib/python3.11/site-packages/vllm/entrypoints/cli/main.py", line 54, in main
    args.dispatch_function(args)
  File "/opt/venv/lib/python3.11/site-packages/vllm/entrypoints/cli/serve.py", line 57, in cmd
    validate_parsed_serve_args(args)
ValueError: The supplied chat template string (/srv/tpl.jinja) appears path-like, but doesn't exist!
""".splitlines()

PASTED = {
    # a Markdown list item / <details> block: four spaces before everything
    "indent": (["    " + line for line in LINES], "indent"),
    "tab": (["\t" + line for line in LINES], "indent"),
    # a sentence above the paste, the log indented under it
    "indent-under-sentence": (["The server died like this:", *("  " + line for line in LINES)], "indent"),
    # grep -n -C: `N:` on matches, `N-` on context lines
    "grep-n": (
        [f"{n}{':' if 'ERROR' in line else '-'}{line}" for n, line in enumerate(LINES, 1201)],
        "numbers",
    ),
    # cat -n / nl: a padded number and a tab
    "cat-n": ([f"{n:6d}\t{line}" for n, line in enumerate(LINES, 1)], "numbers"),
    # stern: `pod container ` before each line, two pods of one deployment
    "stern": (
        [f"{'vllm-5c9d7-x2k4p' if '4790' in line else 'vllm-5c9d7-q8m1z'} vllm {line}" for line in LINES],
        "tag",
    ),
    # pm2 logs: the app id and name, padded, then `| `
    "pm2": ([f"0|vllm-chat  | {line}" for line in LINES], "tag"),
    # a bare traceback pasted indented
    "bare-indented": (["    " + line for line in BARE], "indent"),
    # a viewer's line-number column copied with the text: the number and one space
    "viewer-numbers": ([f"{n} {line}" for n, line in enumerate(LINES, 41)], "numbers"),
    # the same, right-aligned and quoted in an issue (`>  59 KeyError: …`)
    "quoted-numbers": ([f"> {n:3d} {line}" for n, line in enumerate(LINES, 41)], "numbers"),
}


@pytest.mark.parametrize("name", sorted(PASTED))
def test_a_pasted_gutter_is_learnt_and_taken_off(name: str) -> None:
    lines, kind = PASTED[name]
    learnt = gutter.learn(lines)
    assert learnt is not None and learnt.kind == kind
    original = LINES if name != "bare-indented" else BARE
    stripped = [learnt.strip_line(line) for line in lines]
    assert stripped[-len(original) :] == original
    # the vectorised strip reads every line as the Python one does
    assert learnt.strip(pl.Series("raw", lines)).to_list() == stripped


@pytest.mark.parametrize(
    "lines",
    [
        LINES,  # a log as vLLM printed it
        BARE,  # a bare traceback: Python indents its frames, not the paste
        [line for line in BARE if line.startswith(" ")],  # frames alone: nothing proves a paste
        [f"2025-03-14T09:12:{n:02d}.123456789Z {line}" for n, line in enumerate(LINES)],  # docker -t
        [f"vllm-openai-1  | {line}" for line in LINES],  # compose: the grammar reads it
        ["1: pull the image", "2: start the container", "3: curl the server"],  # a numbered list
        ["1 pull the image", "2 start the container", "3 curl the server"],  # numbered, no record
        [f"{h:02d}:00:01 checkpoint saved" for h in (9, 9, 9, 10, 10)],  # times, not line numbers
        ["  - name: vllm", "    image: vllm/vllm-openai:v0.10.2", "    args: ['--model', 'acme/Chat-8B']"],
    ],
    ids=[
        "vllm",
        "bare-traceback",
        "frames-only",
        "docker-t",
        "compose",
        "numbered-list",
        "numbered-words",
        "times",
        "yaml",
    ],
)
def test_no_gutter_where_the_lines_do_not_show_one(lines: list[str]) -> None:
    assert gutter.learn(lines) is None


def test_a_line_without_the_gutter_is_left_alone() -> None:
    learnt = gutter.Gutter("tag", ("vllm-0 vllm ",))
    assert learnt.strip_line("warning: stern lost the connection") == "warning: stern lost the connection"
    assert learnt.strip_line('vllm-0 vllm   File "x.py", line 1, in f') == '  File "x.py", line 1, in f'


@pytest.mark.parametrize("name", ["indent", "grep-n", "stern", "pm2", "cat-n"])
def test_triage_of_a_pasted_log_is_the_triage_of_the_log(name: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain.log"
    plain.write_text(LOG)
    pasted = tmp_path / "pasted.log"
    pasted.write_text("\n".join(PASTED[name][0]) + "\n")
    want, got = triage([str(plain)]).to_json(), triage([str(pasted)]).to_json()
    assert got["phase"] == want["phase"] == "engine_reserve"
    assert got["first_error"]["line"] == want["first_error"]["line"]
    assert "ValueError: To serve at least one request" in got["first_error"]["text"]
    assert got["first_error"]["text"] == want["first_error"]["text"]
