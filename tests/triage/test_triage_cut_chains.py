"""A paste that starts inside a logged chained exception: the blank record and Python's "During
handling of the above exception" line between its tracebacks are structure, never the error; a
CUDA error whose first line was cut is named by torch's `Search for `cudaErrorX'` line."""

from __future__ import annotations

from triage_helpers import write_log

P = "(Worker_TP1 pid=15193) ERROR 05-08 19:06:38 [multiproc_executor.py:962] "
SEARCH = (
    "Search for `cudaErrorStreamCaptureUnsupported' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information."
)
BOILERPLATE = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
)


def _chain_tail(first: tuple[str, ...]) -> str:
    lines = (
        *first,
        *BOILERPLATE,
        "",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vl',
    )
    return "".join(P + line + "\n" for line in lines)


def test_a_paste_starting_at_the_error_name_line_reports_it(tmp_path, triage_json):
    data = triage_json(write_log(tmp_path, _chain_tail((SEARCH,))))
    first = data["first_error"]
    assert first is not None and "cudaErrorStreamCaptureUnsupported" in first["message"]
    assert "During handling" not in first["message"] and first["message"].strip()


def test_with_its_exception_line_the_exception_line_names_it(tmp_path, triage_json):
    # must-not: under its own exception line the name line stays boilerplate
    exception = "RuntimeError: CUDA error: operation not permitted when stream is capturing"
    data = triage_json(write_log(tmp_path, _chain_tail((exception, SEARCH))))
    assert data["first_error"]["message"] == exception


def test_the_chain_separator_and_blank_records_are_never_the_error(tmp_path, triage_json):
    # must-not: a chain with nothing but boilerplate above it has no error line to report
    data = triage_json(write_log(tmp_path, _chain_tail(())))
    first = data["first_error"]
    assert first is None or (first["message"].strip() and "During handling" not in first["message"])
