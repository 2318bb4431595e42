"""One exception printed twice — bare by Python, then by `logger.exception`, which repeats its
message without the class — is one failure: the first print, naming the class, is the root (issue
9, set D group E). Logs written for the test after how vLLM 0.7's MQLLMEngine prints them."""

from __future__ import annotations

from functools import partial

from triage_helpers import write_log

SITE = "/opt/venvs/serve/lib/python3.12/site-packages"
MESSAGE = (
    "Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
    "'/srv/weights/mirror/acme/Orca-Mini-34B'. Use `repo_type` argument if needed."
)


_write = partial(write_log, name="engine.log")


def _logged(message: str) -> str:
    prefix = "ERROR 05-07 18:22:41 engine.py:389]"
    return (
        f"{prefix} {message}\n"
        f"{prefix} Traceback (most recent call last):\n"
        f'{prefix}   File "{SITE}/vllm/engine/multiprocessing/engine.py", line 380, in run_mp_engine\n'
        f"{prefix}     engine = MQLLMEngine.from_engine_args(engine_args=engine_args,\n"
        f'{prefix}   File "{SITE}/huggingface_hub/utils/_validators.py", line 154, in validate_repo_id\n'
        f"{prefix}     raise HFValidationError(\n"
        f"{prefix} huggingface_hub.errors.HFValidationError: {message}\n"
    )


CUT_TOP = (
    f'  File "{SITE}/huggingface_hub/utils/_validators.py", line 106, in _inner_fn\n'
    "    validate_repo_id(arg_value)\n"
    f'  File "{SITE}/huggingface_hub/utils/_validators.py", line 154, in validate_repo_id\n'
    "    raise HFValidationError(\n"
    f"huggingface_hub.errors.HFValidationError: {MESSAGE}\n"
    "INFO 05-07 18:22:40 __init__.py:190] Automatically detected platform cuda.\n"
)


def test_the_exception_line_beats_the_logger_echo_of_its_message(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, CUT_TOP + _logged(MESSAGE)))
    assert data["first_error"]["line"] == 5
    assert data["first_error"]["message"].startswith("huggingface_hub.errors.HFValidationError: Repo id")
    assert data["phase"] == "weight_load"
    # it is the failure, not an error the server survived
    assert not [f for f in data["findings"] if f["id"] == "survived-error"]


def test_an_echo_cut_at_a_fixed_width_still_names_the_same_exception(tmp_path, triage_json):
    cut = MESSAGE[:70]
    log = CUT_TOP + _logged(MESSAGE).replace(f"] {MESSAGE}\n", f"] {cut}\n", 1)
    data = triage_json(_write(tmp_path, log))
    assert data["first_error"]["line"] == 5


def test_a_different_later_error_leaves_the_survived_line_survived(tmp_path, triage_json):
    # must-not: the later logged failure is another exception; the first line is not its echo
    other = "No CUDA GPUs are available"
    logged = (
        _logged(MESSAGE)
        .replace(MESSAGE, other)
        .replace("huggingface_hub.errors.HFValidationError: No CUDA", "RuntimeError: No CUDA")
    )
    data = triage_json(_write(tmp_path, CUT_TOP + logged))
    assert data["first_error"]["line"] > 6
    assert "No CUDA GPUs are available" in data["first_error"]["message"]
