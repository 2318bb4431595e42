"""A JSON document is not a log even when it quotes log lines; a log whose first line starts with
a bracket (torch's `[rank0]:`, a bracketed timestamp) still is."""

from __future__ import annotations

import json

from vllm_triage.parsers.roles import sniff_text


def test_label_json_quoting_a_traceback_is_not_a_log() -> None:
    text = json.dumps(
        {"first_error": "Traceback (most recent call last):\nRuntimeError: NCCL error: x"}, indent=1
    )
    assert sniff_text(text, "label.json") != "vllm_log"


def test_log_starting_with_torch_rank_prefix_is_a_log() -> None:
    text = (
        "[rank0]:[E822 16:31:16.131931664 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)\n"
        "[rank1]:[E822 16:31:16.135435629 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)\n"
    )
    assert sniff_text(text, "log.txt") == "vllm_log"


def test_log_starting_with_bracketed_timestamp_is_a_log() -> None:
    text = "[2025-11-30 14:16:59] node:600:600 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found\n"
    assert sniff_text(text, "worker.out") == "vllm_log"
