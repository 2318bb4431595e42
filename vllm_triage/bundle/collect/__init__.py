"""`vllm-triage collect`: capturing the scene of a failed run into a bundle folder."""
