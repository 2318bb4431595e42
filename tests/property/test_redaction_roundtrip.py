"""Redaction round-trip through the parsers (hypothesis): a redacted env file or launch command
still reads as the same environment — every knob that held no secret keeps its value, every knob
that held one now holds a `<redacted:…>` placeholder, the same secret gets the same placeholder
wherever it appears, and no secret survives in the text.

The redaction engine's own round-trip (every token form in every shape, leak scan clean, text
without secrets byte for byte) is tests/bundle/test_redact_properties.py; this one checks that
what `redact` hands a maintainer is still a bundle `fingerprint` can read.
"""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_triage.bundle.redact.redactor import redact_text
from vllm_triage.parsers import env_file, launch

BUDGET = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
ALNUM = string.ascii_letters + string.digits


def _body(size: int) -> st.SearchStrategy[str]:
    return st.text(ALNUM, min_size=size, max_size=size).filter(lambda s: len(set(s)) >= 8)


SECRETS = st.one_of(_body(34).map(lambda b: "hf_" + b), _body(40).map(lambda b: "sk-proj-" + b))
SECRET_VARS = st.sampled_from(["HF_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY", "HUGGING_FACE_HUB_TOKEN"])
# Ordinary settings: values a redactor must leave alone (paths, numbers, backends, device lists).
PLAIN_VARS = st.dictionaries(
    st.sampled_from(
        [
            "VLLM_ATTENTION_BACKEND",
            "CUDA_VISIBLE_DEVICES",
            "NCCL_DEBUG",
            "HF_HOME",
            "VLLM_LOGGING_LEVEL",
            "OMP_NUM_THREADS",
        ]
    ),
    st.sampled_from(["FLASHINFER", "0,1,2,3", "INFO", "/mnt/cache/huggingface", "DEBUG", "8", "XFORMERS"]),
    max_size=5,
)
PLAIN_FLAGS = st.dictionaries(
    st.sampled_from(["--max-model-len", "--tensor-parallel-size", "--gpu-memory-utilization", "--port"]),
    st.sampled_from(["8192", "2", "0.9", "8000"]),
    max_size=4,
)


def _values(result) -> dict[str, object]:
    return {name: sourced.value for name, sourced in result.knobs.items()}


@BUDGET
@given(plain=PLAIN_VARS, secrets=st.dictionaries(SECRET_VARS, SECRETS, min_size=1, max_size=3))
def test_redacted_env_file_reads_the_same(plain: dict[str, str], secrets: dict[str, str]) -> None:
    lines = [f"{k}={v}" for k, v in plain.items()] + [f'export {k}="{v}"' for k, v in secrets.items()]
    text = "\n".join(lines) + "\n"
    clean, _ = redact_text(text, file="vllm.env")
    before, after = _values(env_file.parse(text, "vllm.env")), _values(env_file.parse(clean, "vllm.env"))
    assert before.keys() == after.keys()
    for name, value in plain.items():
        assert after[f"env.{name}"] == value
    placeholders: dict[str, object] = {}
    for name, secret in secrets.items():
        assert secret not in clean
        got = after[f"env.{name}"]
        assert str(got).startswith("<redacted:")
        assert placeholders.setdefault(secret, got) == got  # one secret, one placeholder


@BUDGET
@given(flags=PLAIN_FLAGS, secret=SECRETS, quoted=st.booleans())
def test_redacted_launch_command_reads_the_same(flags: dict[str, str], secret: str, quoted: bool) -> None:
    value = f'"{secret}"' if quoted else secret
    options = " ".join(f"{k} {v}" for k, v in flags.items())
    text = f"export HF_TOKEN={secret}\nvllm serve Qwen/Qwen3-8B {options} --api-key {value}\n"
    clean, _ = redact_text(text, file="launch.sh")
    before, after = _values(launch.parse(text, "launch.sh")), _values(launch.parse(clean, "launch.sh"))
    assert secret not in clean
    assert before.keys() == after.keys()
    for name in before:
        if before[name] == secret:
            assert str(after[name]).startswith("<redacted:")
        else:
            assert after[name] == before[name], name
    assert after["arg.api_key"] == after["env.HF_TOKEN"]  # one secret, one placeholder
