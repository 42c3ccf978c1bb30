"""evalfleet: evaluate frontier models on hard multimodal benchmarks at scale."""
