"""A paste that starts inside a model's forward pass: its frames say the engine was running a
forward (serving, or the profile run when that frame is kept), never initialising the device —
even for an error whose rule alone would say device init (no kernel image for this GPU)."""

from __future__ import annotations

from triage_helpers import write_log

R = "[rank0]: "
SITE = "/venv/lib/python3.12/site-packages/vllm"
ERROR = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


def _paste(outer: list[str]) -> str:
    frames = [
        *outer,
        f'  File "{SITE}/model_executor/models/qwen2.py", line 348, in forward',
        "    hidden_states, residual = layer(",
        f'  File "{SITE}/model_executor/layers/quantization/gptq_marlin.py", line 420, in apply',
        "    return self.kernel.apply_weights(layer, x, bias)",
        f'  File "{SITE}/_custom_ops.py", line 1054, in gptq_marlin_gemm',
        "    return torch.ops._C.gptq_marlin_gemm(a, c, b_q_weight, b_scales,",
        ERROR,
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.",
    ]
    return "".join(R + line + "\n" for line in frames)


def test_inside_the_forward_pass_is_not_device_init(tmp_path, triage_json):
    data = triage_json(write_log(tmp_path, _paste([])))
    assert data["first_error"]["message"] == ERROR
    assert data["phase"] == "request"


def test_the_profile_run_frame_says_engine_reserve(tmp_path, triage_json):
    outer = [
        "Traceback (most recent call last):",
        f'  File "{SITE}/v1/worker/gpu_worker.py", line 263, in determine_available_memory',
        "    self.model_runner.profile_run()",
        f'  File "{SITE}/v1/worker/gpu_model_runner.py", line 2563, in profile_run',
        "    hidden_states, last_hidden_states = self._dummy_run(self.max_num_tokens, is_profile=True)",
    ]
    assert triage_json(write_log(tmp_path, _paste(outer)))["phase"] == "engine_reserve"


def test_without_a_forward_frame_the_error_stays_in_device_init(tmp_path, triage_json):
    # must-not: the same error raised by init_device's first allocation
    text = "".join(
        R + line + "\n"
        for line in (
            "Traceback (most recent call last):",
            f'  File "{SITE}/v1/worker/gpu_worker.py", line 166, in init_device',
            "    torch.cuda.empty_cache()",
            ERROR,
        )
    )
    assert triage_json(write_log(tmp_path, text))["phase"] == "cuda_init"
