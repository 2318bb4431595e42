"""The line that names the cause (DESIGN §3), in two shapes set G showed (issue 9, group E):
pydantic's `Value error, …` body under its generic headline, and V0's engine logging the
exception it died of as repr(e), cut before the closing parenthesis."""

from __future__ import annotations

from triage_helpers import write_log as _write


def test_a_pydantic_body_no_rule_knows_is_still_the_line_that_names_the_cause(tmp_path, triage_json):
    log = (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig\n"
        "  Value error, speculative decoding needs a draft model with the same vocabulary "
        "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]\n"
        "    For further information visit https://errors.pydantic.dev/2.11/v/value_error\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "config"
    assert data["first_error"]["message"].strip().startswith("Value error, speculative decoding needs")


def test_a_validation_error_without_a_body_line_keeps_its_headline(tmp_path, triage_json):
    log = "pydantic_core._pydantic_core.ValidationError: 2 validation errors for CacheConfig\n"
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("pydantic_core._pydantic_core.ValidationError")


def test_the_engines_repr_line_is_the_root_not_the_api_servers_dead_engine_error(tmp_path, triage_json):
    log = (
        'INFO:     10.1.2.3:40112 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        "ERROR 03-14 08:02:11 [serving_chat.py:880] vllm.engine.multiprocessing.MQEngineDeadError: Engine loop "
        "is not running. Inspect the stacktrace to find the original error: RuntimeError('ACL stream "
        "synchronize failed, error code:507035\n"
        "ERROR 03-14 08:02:11 [engine.py:160] RuntimeError('ACL stream synchronize failed, error code:507035\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["message"].startswith("RuntimeError('ACL stream synchronize failed")
    assert data["first_error"]["line"] == 3  # the engine's own line, not the relay above it


# aiter's get_gfx on an RDNA3 card (written for this test after a ROCm compose report): a dict miss,
# then its handler raising again with a message that names the key.
GFX_CHAIN = """\
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/aiter/jit/utils/chip_info.py", line 40, in get_gfx
(APIServer pid=1)     gfx = GFX_MAP[arch]
(APIServer pid=1) KeyError: 'gfx1101'
(APIServer pid=1)
(APIServer pid=1) During handling of the above exception, another exception occurred:
(APIServer pid=1)
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/aiter/jit/utils/chip_info.py", line 44, in get_gfx
(APIServer pid=1)     raise KeyError(
(APIServer pid=1) KeyError: "Unknown GPU architecture: gfx1101. Supported architectures: ['gfx90a', 'gfx942', 'gfx1100']"
"""


def test_a_bare_key_miss_gives_way_to_the_handler_that_names_it(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, GFX_CHAIN))
    assert data["first_error"]["message"].startswith('KeyError: "Unknown GPU architecture: gfx1101')
    assert data["first_error"]["block"]["start"] == 1


def test_a_key_miss_followed_by_an_unrelated_exception_stays_the_cause(tmp_path, triage_json):
    # must-not: the next exception of the chain does not name the key (a cleanup that failed too)
    other = GFX_CHAIN.replace("Unknown GPU architecture: gfx1101. ", "cannot close the JIT cache. ")
    data = triage_json(_write(tmp_path, other))
    assert data["first_error"]["message"] == "KeyError: 'gfx1101'"
