#!/bin/bash
source /opt/conda/bin/activate vllm066
python -m vllm.entrypoints.openai.api_server \
    --model mistralai/Mistral-Nemo-Instruct-2407 \
    --tensor-parallel-size 2 \
    --max-model-len 32768 \
    --tokenizer-mode mistral \
    --port 8000 2>&1 | tee server.log
