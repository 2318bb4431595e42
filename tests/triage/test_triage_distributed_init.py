"""Distributed start-up failures pasted without milestones: the rendezvous store timing out on
ranks that never joined, Gloo failing to connect every pair of ranks, and torch's deferred CUDA
init failing on a device index the process cannot see — each placed in cuda_init by its kind."""

from __future__ import annotations

from triage_helpers import write_log

TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
RAY = "(RayWorkerWrapper pid=1355, ip=192.168.201.208) ERROR 07-25 06:51:17 worker_base.py:382] "


def test_a_rendezvous_store_timeout_is_distributed_init(tmp_path, triage_json):
    text = (
        f'  File "{TORCH}/distributed/distributed_c10d.py", line 1714, in init_process_group\n'
        "    store, rank, world_size = next(rendezvous_iterator)\n"
        f'  File "{TORCH}/distributed/rendezvous.py", line 194, in _create_c10d_store\n'
        "    return TCPStore(\n"
        "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/4 clients joined.\n"
    )
    data = triage_json(write_log(tmp_path, text))
    assert data["first_error"]["rule"] == "cuda.dist_port"
    assert data["phase"] == "cuda_init"


def test_gloo_that_cannot_connect_its_ranks_is_distributed_init(tmp_path, triage_json):
    text = "".join(
        RAY + line + "\n"
        for line in (
            f'  File "{TORCH}/distributed/distributed_c10d.py", line 1509, in _new_process_group_helper',
            "    backend_class = ProcessGroupGloo(backend_prefix_store, group_rank, group_size, timeout=timeout)",
            "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        )
    )
    data = triage_json(write_log(tmp_path, text))
    assert data["first_error"]["rule"] == "cuda.gloo_connect"
    assert data["phase"] == "cuda_init"


def test_a_deferred_cuda_init_failure_is_cuda_init(tmp_path, triage_json):
    error = (
        "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: "
        'device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/CUDAContext.cpp":49'
    )
    text = (
        f'  File "{TORCH}/cuda/__init__.py", line 317, in _lazy_init\n'
        "    raise DeferredCudaCallError(msg) from e\n"
        f"{error}\n"
        "CUDA call was originally invoked at:\n"
        f'  File "{TORCH}/cuda/__init__.py", line 261, in _lazy_call\n'
    )
    data = triage_json(write_log(tmp_path, text))
    assert data["first_error"]["message"] == error
    assert data["phase"] == "cuda_init"


def test_a_store_wait_timeout_while_training_is_not_the_rendezvous(tmp_path, triage_json):
    # must-not: TRL's `DistStoreError: wait timeout` mid-training is no start-up rendezvous
    data = triage_json(write_log(tmp_path, "[rank0]: torch.distributed.DistStoreError: wait timeout\n"))
    assert (data["first_error"] or {}).get("rule") != "cuda.dist_port"


def test_gaudi_graph_compiler_errors_are_errors(tmp_path, triage_json):
    # hl_logger's own error lines, printed with no vLLM prefix before the process gives up
    text = (
        "[19:08:34.164951][GC                    ][error][tid:44F8A] Failed to load tpc kernel for node: "
        "TPC634, GUID: constant_bf16. Got error: GLUE_FAILED\n"
        "[19:08:34.165002][SYN_RECIPE    ][error][tid:44F8A] compileGraph: Can not compile graph\n"
        "[19:08:34.165045][PT_BRIDGE       ][error][tid:44F8A] graph.cpp: 599Graph compile failed. "
        "synStatus=synStatus 26 [Generic failure]. compile\n"
    )
    data = triage_json(write_log(tmp_path, text))
    assert data["first_error"] is not None
    assert "Failed to load tpc kernel" in data["first_error"]["message"]
