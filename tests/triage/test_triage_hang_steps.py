"""A hang belongs to the step that never finished (DESIGN §3), which is not always the step of the
last line: a line that closes its step (the rank assignment that ends distributed init, the parsed
arguments) is followed by the next step. Logs written for the test after how vLLM prints them."""

from __future__ import annotations

from functools import partial

from triage_helpers import write_log

E = "(EngineCore pid=3107)"
A = "(APIServer pid=2950)"


_write = partial(write_log, name="serve.log")


V1_UNTIL_GROUPS = (
    f"{A} INFO 03-02 09:14:51 [api_server.py:1839] vLLM API server version 0.11.2\n"
    f"{A} INFO 03-02 09:14:51 [utils.py:233] non-default args: {{'model_tag': 'acme/coder-14b', 'port': 8100}}\n"
    f"{A} INFO 03-02 09:14:58 [model.py:547] Resolved architecture: Qwen2ForCausalLM\n"
    f"{E} INFO 03-02 09:15:05 [core.py:93] Initializing a V1 LLM engine (v0.11.2) with config: model='acme/coder-14b'\n"
    f"{E} INFO 03-02 09:15:07 [parallel_state.py:1208] world_size=1 rank=0 local_rank=0 "
    "distributed_init_method=tcp://10.0.0.12:40113 backend=nccl\n"
)
RANKS = (
    f"{E} INFO 03-02 09:15:07 [parallel_state.py:1394] rank 0 in world size 1 is assigned as DP rank 0, "
    "PP rank 0, TP rank 0, EP rank 0\n"
)


def test_a_log_that_stops_at_the_rank_assignment_hangs_in_loading(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, V1_UNTIL_GROUPS + RANKS))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["category"] == "hang"
    assert "is assigned as DP rank 0" in data["first_error"]["message"]
    assert data["last_milestone"] == "distributed_init"
    assert "never reported" in data["phase_reason"]


def test_a_log_that_stops_inside_distributed_init_hangs_there(tmp_path, triage_json):
    # must-not: the process-group set-up line opens the step; it is still running
    data = triage_json(_write(tmp_path, V1_UNTIL_GROUPS))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["category"] == "hang"


def test_once_loading_started_the_rank_line_of_a_late_worker_is_no_step_back(tmp_path, triage_json):
    log = (
        V1_UNTIL_GROUPS
        + f"{E} INFO 03-02 09:15:08 [gpu_model_runner.py:2602] Starting to load model acme/coder-14b...\n"
        + RANKS.replace("rank 0 in world size 1", "rank 1 in world size 2")
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "weight_load"
    assert data["last_milestone"] == "model_load_start"


def test_an_error_after_the_rank_assignment_is_still_placed_in_device_init(tmp_path, triage_json):
    # the step after the line is only a hang's answer: an error there is placed by its evidence
    log = (
        V1_UNTIL_GROUPS
        + RANKS
        + f"{E} ERROR 03-02 09:15:08 [core.py:708] EngineCore failed to start.\n"
        + f"{E} ERROR 03-02 09:15:08 [core.py:708] Traceback (most recent call last):\n"
        + f'{E} ERROR 03-02 09:15:08 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 201, in init_device\n'
        + f"{E} ERROR 03-02 09:15:08 [core.py:708]     self.model_runner = GPUModelRunner(self.vllm_config, self.device)\n"
        + f"{E} ERROR 03-02 09:15:08 [core.py:708] RuntimeError: pinned host memory could not be registered\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["message"].startswith("RuntimeError: pinned host memory")


ARGS_ONLY = (
    "INFO 01-14 22:40:03 [__init__.py:216] Automatically detected platform cuda.\n"
    f"{A} INFO 01-14 22:40:09 [api_server.py:1885] vLLM API server version 0.10.2\n"
    f"{A} INFO 01-14 22:40:09 [utils.py:328] non-default args: {{'model_tag': 'org/big-moe', "
    "'tensor_parallel_size': 2, 'download_dir': '/mnt/models'}\n"
)


def test_a_log_that_stops_at_the_parsed_arguments_hangs_finding_the_model(tmp_path, triage_json):
    # what runs next is ModelConfig fetching the model's config: the only step there that can block
    data = triage_json(_write(tmp_path, ARGS_ONLY))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["category"] == "hang"
    assert "non-default args" in data["first_error"]["message"]


def test_a_log_that_stops_at_the_engine_banner_hangs_in_engine_start(tmp_path, triage_json):
    # must-not: the banner opens engine start (worker and device init), still in progress
    log = ARGS_ONLY + (
        f"{E} INFO 01-14 22:40:21 [core.py:654] Initializing a V1 LLM engine (v0.10.2) with config: "
        "model='org/big-moe', tensor_parallel_size=2\n"
    )
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "cuda_init"


V0_RAY_UNTIL_NCCL = (
    "INFO 07-14 18:02:09 llm_engine.py:184] Initializing an LLM engine (v0.6.1.post2) with config: "
    "model='acme/chat-70b', tensor_parallel_size=4, pipeline_parallel_size=2\n"
    "INFO 07-14 18:02:31 pynccl.py:63] vLLM is using nccl==2.20.5\n"
    "gpu-a-03:7102:7102 [0] NCCL INFO Bootstrap : Using bond0:10.40.2.3<0>\n"
    "(RayWorkerWrapper pid=3311, ip=10.40.2.4) INFO 07-14 18:02:31 pynccl.py:63] vLLM is using nccl==2.20.5\n"
    "gpu-a-03:7102:7102 [0] NCCL INFO Using network IB\n"
    "gpu-a-03:7102:7102 [0] NCCL INFO comm 0x55d0c3a0 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\n"
    "gpu-a-03:7102:7102 [0] NCCL INFO Channel 00/02 :    0   1\n"
)


def test_a_hang_inside_nccl_set_up_points_at_vllms_last_line(tmp_path, triage_json):
    """NCCL_DEBUG lines keep coming while the communicator is set up; the step that never
    finished is the one vLLM last reported (a Ray worker's `vLLM is using nccl`)."""
    data = triage_json(_write(tmp_path, V0_RAY_UNTIL_NCCL))
    assert data["phase"] == "cuda_init"
    assert data["first_error"]["category"] == "hang"
    assert data["first_error"]["line"] == 4


V0_START = (
    "INFO 08-12 14:54:40 llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: "
    "model='acme/gemma-2b', speculative_config=None, tokenizer='acme/gemma-2b'\n"
    "INFO 08-12 14:54:48 selector.py:79] Using Flashinfer backend.\n"
)


def test_a_v0_log_that_stops_at_the_second_backend_line_hangs_in_loading(tmp_path, triage_json):
    # V0 logs the backend from ModelRunner.__init__ (before init_device) and again from the first
    # Attention layer load_model builds: the second print by the same process is load_model.
    log = V0_START + "INFO 08-12 14:54:49 selector.py:79] Using Flashinfer backend.\n"
    data = triage_json(_write(tmp_path, log))
    assert data["phase"] == "weight_load"
    assert data["first_error"]["category"] == "hang"
    assert data["first_error"]["line"] == 3


def test_one_backend_line_or_one_per_process_is_still_device_init(tmp_path, triage_json):
    # must-not: one print is the model runner's; a second from another process is that worker's first
    assert triage_json(_write(tmp_path, V0_START))["phase"] == "cuda_init"
    log = (
        V0_START
        + "(VllmWorkerProcess pid=812) INFO 08-12 14:54:49 selector.py:79] Using Flashinfer backend.\n"
    )
    assert triage_json(_write(tmp_path, log))["phase"] == "cuda_init"


# The front end resolves the config and goes quiet (written for this test after a v0.19 log that
# ends so): the step's own settings lines follow the last milestone.
QUIET_AFTER_CONFIG = (
    f"{A} INFO 05-24 01:29:26 [utils.py:233] non-default args: {{'model_tag': 'Qwen/Qwen3-4B', 'model': 'Qwen/Qwen3-4B'}}\n"
    f"{A} INFO 05-24 01:29:28 [model.py:549] Resolved architecture: Qwen3ForCausalLM\n"
    f"{A} INFO 05-24 01:29:28 [model.py:1678] Using max model len 2048\n"
    f"{A} WARNING 05-24 01:29:31 [numa_utils.py:74] CPU affinity is already constrained for this process. "
    "Skipping automatic NUMA binding; pass --numa-bind-nodes explicitly to override.\n"
)


def test_a_hang_points_at_the_last_line_the_stalled_process_logged(tmp_path, triage_json):
    data = triage_json(_write(tmp_path, QUIET_AFTER_CONFIG))
    assert data["first_error"]["category"] == "hang"
    assert "CPU affinity is already constrained" in data["first_error"]["message"]
    assert data["last_milestone"] == "model_resolved"
    assert "the last line it logged is line 4" in data["phase_reason"]
    # must-not: another process's line, or a line that is no vLLM record, is not its last word
    other = QUIET_AFTER_CONFIG.replace(f"{A} WARNING", f"{E} WARNING")
    assert "Using max model len 2048" in triage_json(_write(tmp_path, other))["first_error"]["message"]
    library = QUIET_AFTER_CONFIG.split(f"{A} WARNING")[0] + (
        "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml "
        "package is deprecated.\n"
    )
    moved = triage_json(_write(tmp_path, library))["first_error"]["message"]
    assert "Using max model len 2048" in moved
