"""A model class vLLM inspects in a child interpreter: the child's traceback is printed inside
`RuntimeError: Error raised in subprocess:` and its last exception line names the cause, not the
logged headline `Error in inspecting model architecture` (registry.py's _run_in_subprocess). And
ROCm's HSA runtime line for a GPU page fault, bare on stderr, names a serving crash."""

from __future__ import annotations

from triage_helpers import write_log

A = "(APIServer pid=1) "
R = A + "ERROR 03-02 17:03:02 [registry.py:367] "
SITE = "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/models"


def _inspection_failure(child_error: str | None) -> str:
    child = (
        [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            f'  File "{SITE}/registry.py", line 1017, in <module>',
            "    _run()",
            f'  File "{SITE}/qwen2_vl.py", line 35, in <module>',
            "    from transformers.models.qwen2_vl import Qwen2VLImageProcessor",
            child_error,
        ]
        if child_error
        else []
    )
    logged = [
        "Error in inspecting model architecture 'Qwen2VLForConditionalGeneration'",
        "Traceback (most recent call last):",
        f'  File "{SITE}/registry.py", line 1001, in _run_in_subprocess',
        "    returned.check_returncode()",
        "subprocess.CalledProcessError: Command '['/opt/venv/bin/python3', '-m', "
        "'vllm.model_executor.models.registry']' returned non-zero exit status 1.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{SITE}/registry.py", line 1004, in _run_in_subprocess',
        '    raise RuntimeError(f"Error raised in subprocess:\\n"',
        "RuntimeError: Error raised in subprocess:",
        *child,
        "",
    ]
    outer = [
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1165, in create_model_config',
        "    return ModelConfig(",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "  Value error, Model architectures ['Qwen2VLForConditionalGeneration'] failed to be inspected. "
        "Please check the logs for more details. [type=value_error, input_value=ArgsKwargs((), {}), "
        "input_type=ArgsKwargs]",
    ]
    head = A + "INFO 03-02 17:02:58 [api_server.py:1044] vLLM API server version 0.9.1\n"
    return head + "".join(R + line + "\n" for line in logged) + "".join(A + line + "\n" for line in outer)


def test_the_childs_last_exception_names_the_cause(tmp_path, triage_json):
    error = "ImportError: cannot import name 'Qwen2VLImageProcessor' from 'transformers.models.qwen2_vl'"
    data = triage_json(write_log(tmp_path, _inspection_failure(error)))
    assert data["first_error"]["message"] == error
    assert data["phase"] == "config"


def test_without_the_childs_traceback_the_headline_stays(tmp_path, triage_json):
    # must-not: a paste that kept only the carrier has no child line to prefer
    data = triage_json(write_log(tmp_path, _inspection_failure(None)))
    assert (
        data["first_error"]["message"]
        == "Error in inspecting model architecture 'Qwen2VLForConditionalGeneration'"
    )


W = "(Worker_TP4 pid=955) "


def _rocm_fault(line: str) -> str:
    return (
        A
        + "INFO 08-31 17:40:01 [api_server.py:1900] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
        + A
        + 'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
        + line
        + "\n"
        + "GPU core dump failed\n"
        + "(EngineCore pid=659) ERROR 08-31 17:43:37 [multiproc_executor.py:295] Worker proc VllmWorker-4 "
        "died unexpectedly (exit code: None), shutting down executor.\n"
    )


def test_rocm_page_fault_line_is_the_root_of_a_serving_crash(tmp_path, triage_json):
    fault = "Memory access fault by GPU node-6 (Agent handle: 0x501def90) on address 0x7f5e50c00000. Reason: Unknown."
    data = triage_json(write_log(tmp_path, _rocm_fault(fault)))
    assert data["first_error"]["message"] == fault
    assert data["first_error"]["category"] == "illegal_memory_access"
    assert data["phase"] == "request"


def test_rocm_retry_fault_setting_is_no_fault(tmp_path, triage_json):
    # must-not: the runtime's INFO about its retry-fault setting names no crash
    data = triage_json(write_log(tmp_path, _rocm_fault("Memory access fault handling: retry fault enabled")))
    assert "Memory access fault" not in (data["first_error"] or {}).get("message", "")
