"""A record of the failing process that names an API request id (`chatcmpl-…`, `cmpl-…`) was
written while serving: the OpenAI server accepts requests only once it is ready, and start-up's
dummy runs carry no such id. Logs written after what the NIXL connector prints on a decode worker
(its lazy handshake and KV fetch happen per request) and after V1's per-request errors."""

from __future__ import annotations

from triage_helpers import write_log

P = "(Worker_DP0_EP0 pid=2811) "


def test_a_handshake_error_followed_by_the_request_it_failed_is_in_request(tmp_path, triage_json):
    log = (
        f"{P}ERROR 03-02 09:14:07 [nixl_connector.py:815] RuntimeError: Remote NIXL agent engine ID "
        "mismatch. Expected 0c5e1a2f-91d4-4b7e-8a33-5d0f6c2b9e41_dp0,received "
        "7fa2b8c1-0d3e-4f5a-b6c7-d8e9f0a1b2c3_dp0.\n"
        f"{P}ERROR 03-02 09:14:07 [nixl_connector.py:827] Handshake failed for request "
        "chatcmpl-4f0c9d2ab17e4c6f9a1b2c3d4e5f6a7b\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "request"
    assert data["first_error"]["line"] == 1
    assert "names a request" in data["phase_reason"]


def test_a_request_id_cut_by_the_paste_after_chatcmpl_still_counts(tmp_path, triage_json):
    log = (
        f"{P}ERROR 03-02 09:14:07 [nixl_connector.py:815] RuntimeError: NIXL compatibility hash "
        "mismatch. Local: 1a2b, Remote: 3c4d.\n"
        f"{P}ERROR 03-02 09:14:07 [nixl_connector.py:827] Handshake failed for request chatcmpl\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "request"


def test_a_completion_id_inside_the_record_counts(tmp_path, triage_json):
    log = (
        "(EngineCore_DP0 pid=3747) ERROR 09-24 16:35:22 [core.py:710] KeyError: "
        "'cmpl-3da205a6-1c3c-41b5-aeaa-b8421e81fd5c-0'\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "request"


def test_without_a_request_id_the_same_error_is_not_placed_in_request(tmp_path, triage_json):
    # must-not: the same frameless record with no request named gives no serving evidence
    log = (
        f"{P}ERROR 03-02 09:14:07 [nixl_connector.py:815] RuntimeError: Remote NIXL agent engine ID "
        "mismatch. Expected 0c5e1a2f_dp0,received 7fa2b8c1_dp0.\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] != "request"


def test_prose_about_completion_ids_is_no_request_id(tmp_path, triage_json):
    # must-not: "cmpl-" needs the id's hex part, and "chatcmpl" must be a word of its own
    log = (
        "ERROR 03-02 09:14:07 [arg_utils.py:1200] ValueError: --request-id-prefix must look like "
        "cmpl-style or chatcmpl-like ids, got 'x'\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] != "request"


def test_milestones_of_a_start_up_still_win(tmp_path, triage_json):
    # must-not: the id is consulted only when neither milestones nor frames place the error
    log = (
        "INFO 03-02 09:10:00 [gpu_model_runner.py:1800] Loading model weights took 14.9 GiB\n"
        f"{P}ERROR 03-02 09:14:07 [nixl_connector.py:700] RuntimeError: NIXL register_memory failed "
        "for cmpl-0a1b2c3d4e5f warm-up buffer\n"
    )
    assert triage_json(write_log(tmp_path, log))["phase"] == "engine_reserve"


def test_a_traceback_through_the_lazy_handshake_is_in_request(tmp_path, triage_json):
    log = (
        f"{P}ERROR 10-16 17:22:56 [nixl_connector.py:1020] Handshake with 96b1c4ff failed\n"
        f"{P}ERROR 10-16 17:22:56 [nixl_connector.py:1020] Traceback (most recent call last):\n"
        f'{P}ERROR 10-16 17:22:56 [nixl_connector.py:1020]   File "/usr/local/lib/python3.12/'
        'dist-packages/vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", line 905, '
        "in _nixl_handshake\n"
        f"{P}ERROR 10-16 17:22:56 [nixl_connector.py:1020]     handshake_bytes = sock.recv()\n"
        f"{P}ERROR 10-16 17:22:56 [nixl_connector.py:1020] zmq.error.Again: Resource temporarily "
        "unavailable\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "request"
    assert "_nixl_handshake" in data["phase_reason"]


def test_a_traceback_through_kv_cache_registration_is_in_engine_reserve(tmp_path, triage_json):
    # must-not: the same connector registers the KV cache at start-up
    log = (
        "(RayWorkerWrapper pid=533576) ERROR 08-07 04:48:56 [worker_base.py:619] Traceback (most "
        "recent call last):\n"
        '(RayWorkerWrapper pid=533576) ERROR 08-07 04:48:56 [worker_base.py:619]   File "/workspace/'
        'vllm/vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py", line 816, in '
        "register_kv_caches\n"
        "(RayWorkerWrapper pid=533576) ERROR 08-07 04:48:56 [worker_base.py:619]     "
        "self.nixl_wrapper.register_memory(descs)\n"
        "(RayWorkerWrapper pid=533576) ERROR 08-07 04:48:56 [worker_base.py:619] nixl._bindings."
        "nixlBackendError: NIXL_ERR_BACKEND\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "engine_reserve"
    assert "register_kv_caches" in data["phase_reason"]
