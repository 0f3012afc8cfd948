"""Training stage: variants, hard-negative mining, losses, the embedder and reranker trainers and their loop."""
