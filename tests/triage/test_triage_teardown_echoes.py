"""What a dying process prints while it frees its tensors repeats the error that killed it: c10's
destroyEvent warning is an echo, never the root, and the line naming the cause wins. Logs written
after what torch and the ROCm runtime print (a compose-prefixed engine crash, a bare ROCm paste)."""

from __future__ import annotations

from triage_helpers import write_log

S = "vllm-svc  | "


def test_the_destroy_event_warning_gives_way_to_what_the_terminate_names(tmp_path, triage_json):
    log = (
        f"{S}(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
        "issue. See stack trace (above) for the root cause.\n"
        f"{S}[rank0]:[W301 10:02:11.114421337 CUDAGuardImpl.h:122] Warning: CUDA warning: an illegal "
        "memory access was encountered (function destroyEvent)\n"
        f"{S}terminate called after throwing an instance of 'c10::AcceleratorError'\n"
        f"{S}  what():  CUDA error: an illegal memory access was encountered\n"
        f"{S}For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["line"] == 4
    assert "what():" in data["first_error"]["message"]


def test_the_destroy_event_warning_after_the_traceback_is_not_the_root(tmp_path, triage_json):
    log = (
        "(EngineCore pid=256) RuntimeError: [FP4 gemm Runner] Failed to initialize cutlass FP4 gemm on "
        "sm120/sm121. Error: Error Internal\n"
        "[rank0]:[W501 16:52:10.789509421 CUDAGuardImpl.h:126] Warning: CUDA warning: out of memory "
        "(function destroyEvent)\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["line"] == 1
    assert "FP4 gemm" in data["first_error"]["message"]


def test_a_real_cuda_warning_of_another_function_is_still_a_candidate(tmp_path, triage_json):
    # must-not: only destroyEvent's warning is the teardown echo
    log = (
        "[rank0]:[W301 10:02:11 CUDAGuardImpl.h:122] Warning: CUDA warning: an illegal memory access "
        "was encountered (function synchronizeStream)\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["line"] == 1
    assert data["first_error"]["category"] == "illegal_memory_access"


def test_a_rocm_queue_abort_wrapped_after_its_status_names_the_fault(tmp_path, triage_json):
    log = (
        "Worker proc VllmWorker-3 started\n"
        "HSA_STATUS_ERROR_EXCEPTION:\n"
        "An HSAIL operation resulted in a hardware exception.\n"
        "code: 0x1016\n"
        "c10::AcceleratorError:\n"
        "CUDA error: unspecified launch failure\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["first_error"]["line"] == 3
    assert data["first_error"]["category"] == "cuda_kernel_fault"


def test_a_one_line_rocm_queue_abort_is_a_kernel_fault(tmp_path, triage_json):
    log = (
        ":0:rocdevice.cpp            :3586: 74339723890 us:  Callback: Queue 0x7f78cb400000 aborting "
        "with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. "
        "code: 0x1016\n"
    )
    assert triage_json(write_log(tmp_path, log))["first_error"]["category"] == "cuda_kernel_fault"


def test_a_gguf_name_map_failure_is_in_weight_load(tmp_path, triage_json):
    log = "(EngineCore pid=37604) RuntimeError: Failed to map GGUF parameters (356): ['blk.0.ffn_gate_exps.weight']\n"
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["category"] == "unexpected_weight_key"
