#!/usr/bin/env bash
# Started by hand on gpu-h100-02 (2x H100 80GB SXM); log saved with `docker logs vllm-llama70b > vllm.log 2>&1`.
docker run -d --name vllm-llama70b \
  --gpus '"device=0,1"' \
  --ipc=host \
  -p 8000:8000 \
  -v /srv/hf-cache:/root/.cache/huggingface \
  -e HF_TOKEN \
  vllm/vllm-openai:v0.10.2 \
  --model meta-llama/Llama-3.1-70B-Instruct \
  --tensor-parallel-size 2 \
  --served-model-name llama-70b
