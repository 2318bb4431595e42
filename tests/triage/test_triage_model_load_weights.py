"""A traceback cut above the model class's own `load_weights` (vllm/model_executor/models/<arch>.py)
is still weight loading: every architecture defines the method and only the loaders call it."""

from __future__ import annotations

from pathlib import Path

from tests.triage.conftest import TriageJson
from tests.triage.triage_helpers import write_log

W = "(VllmWorker rank=1 pid=20417) ERROR 09-30 16:05:41 [multiproc_executor.py:546]"
SITE = "/opt/venv/lib/python3.12/site-packages"

CUT_TRACEBACK = (
    f'{W}   File "{SITE}/vllm/model_executor/models/deepseek_v2.py", line 902, in load_weights\n'
    f"{W}     param = params_dict[name]\n"
    f"{W}             ~~~~~~~~~~~^^^^^^\n"
    f"{W} KeyError: 'model.layers.3.mlp.experts.w2_weight_scale_inv'\n"
    "ERROR 09-30 16:05:43 [core.py:700] EngineCore failed to start.\n"
)


def test_a_key_error_in_a_models_load_weights_is_weight_load(tmp_path: Path, triage_json: TriageJson) -> None:
    data = triage_json(write_log(tmp_path, CUT_TRACEBACK))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["message"].startswith("KeyError: 'model.layers.3.mlp.experts")


def test_a_function_of_another_directory_is_not_matched(tmp_path: Path, triage_json: TriageJson) -> None:
    """The directory entry is one directory: a `load_weights` of a LoRA module elsewhere in vLLM
    (not a model class) gives no weight-loading verdict from that frame."""
    log = CUT_TRACEBACK.replace("vllm/model_executor/models/deepseek_v2.py", "vllm/lora/punica_wrapper/x.py")
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] != "weight_load"
    assert "load_weights" not in data["phase_reason"]


E = "(EngineCore pid=77) ERROR 05-05 07:35:19 [core.py:1136]"

# A quantization method converts the checkpoint's tensors right after they are read (Marlin repack
# on the GPU): a paste that starts at the op frame still says loading.
REPACK_OOM = (
    f'{E}   File "{SITE}/vllm/_custom_ops.py", line 1279, in gptq_marlin_repack\n'
    f"{E}     return torch.ops._C.gptq_marlin_repack(\n"
    f'{E}   File "{SITE}/torch/_ops.py", line 1269, in __call__\n'
    f"{E}     return self._op(*args, **kwargs)\n"
    f"{E} RuntimeError: CUDA driver error: out of memory\n"
)


def test_an_oom_while_repacking_quantized_weights_is_weight_load(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    data = triage_json(write_log(tmp_path, REPACK_OOM))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["rule"] == "oom.cuda_error"
    assert "gptq_marlin_repack" in data["phase_reason"]


def test_a_layers_post_load_conversion_matches_in_nested_packages(
    tmp_path: Path, triage_json: TriageJson
) -> None:
    nested = "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py"
    log = (
        f'{E}   File "{SITE}/{nested}", line 1430, in process_weights_after_loading\n'
        f"{E}     w13_weight = torch.empty_like(layer.w13_weight)\n"
        f"{E} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
    )
    data = triage_json(write_log(tmp_path, log))
    assert data["phase"] == "weight_load"
    assert "process_weights_after_loading" in data["phase_reason"]
    # must-not: the same method name outside vllm/model_executor/layers/ decides nothing by itself
    other = triage_json(write_log(tmp_path, log.replace(nested, "vllm/v1/spec_decode/eagle.py")))
    assert "process_weights_after_loading" not in other["phase_reason"]
