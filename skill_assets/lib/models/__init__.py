"""Model runtime: encoder and scorer backends, the bundled models, the embedding cache, tuned layers and the model registry."""
