import math

import numpy as np
import pytest
import torch

from skill_assets.lib.training.losses import (
    R3_SIBLING_WEIGHT,
    R3_TEMPERATURE,
    GradedListNetLoss,
    InBatchInfoNCELoss,
    ListwiseCrossEntropyLoss,
    MultiPositiveInfoNCELoss,
    PointwiseBCELoss,
)

Q = np.array([[1.0, 0.2, 0.0], [0.1, 1.0, 0.3]])
C = np.array([[1.0, 0.15, 0.05], [0.9, 0.3, 0.1], [0.2, 1.0, 0.35], [0.95, 0.25, 0.2]])  # 1 and 3: hard for q0
POS = [0, 2]
SIB = [[False, True, False, False], [False, False, False, False]]


def _cos():
    qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    cn = C / np.linalg.norm(C, axis=1, keepdims=True)
    return qn @ cn.T


def _neg_log_ratio(num, den_terms):
    # -log(exp(num) / sum(exp(den_terms))) computed stably by hand
    m = max(den_terms)
    return -(num - (m + math.log(sum(math.exp(t - m) for t in den_terms))))


def _hand_r3(tau, lam, sib_as_negative=False):
    z = _cos() / tau
    # query 0: positive 0, sibling 1, negatives 2 and 3
    if sib_as_negative:
        l0 = _neg_log_ratio(z[0, 0], [z[0, 0], z[0, 1], z[0, 2], z[0, 3]])
    else:
        nce0 = _neg_log_ratio(z[0, 0], [z[0, 0], z[0, 2], z[0, 3]])
        sib0 = _neg_log_ratio(z[0, 1], [z[0, 1], z[0, 2], z[0, 3]])
        l0 = nce0 + lam * sib0
    # query 1: positive 2, no sibling
    l1 = _neg_log_ratio(z[1, 2], [z[1, 0], z[1, 1], z[1, 2], z[1, 3]])
    return (l0 + l1) / 2


def _tensors(sib=SIB):
    return (torch.tensor(Q, dtype=torch.float64), torch.tensor(C, dtype=torch.float64),
            torch.tensor(POS), torch.tensor(sib))


def test_r3_constants():
    assert R3_TEMPERATURE == pytest.approx(1 / 30)
    assert R3_SIBLING_WEIGHT == 0.25


def test_multi_positive_infonce_matches_hand_value():
    expected = _hand_r3(1 / 30, 0.25)
    assert 0.05 < expected < 5  # a non-degenerate example: hard negatives matter
    loss = MultiPositiveInfoNCELoss()(*_tensors())
    expected = _hand_r3(1 / 30, 0.25)
    assert loss.item() == pytest.approx(expected, abs=1e-5)
    # float32 inputs give the same value to 1e-4
    q, c, p, s = _tensors()
    assert MultiPositiveInfoNCELoss()(q.float(), c.float(), p, s).item() == pytest.approx(expected, abs=1e-4)


def test_wrong_temperature_or_sibling_handling_changes_value():
    expected = _hand_r3(1 / 30, 0.25)
    assert abs(_hand_r3(0.05, 0.25) - expected) > 1e-3
    assert abs(_hand_r3(1 / 30, 0.25, sib_as_negative=True) - expected) > 1e-3
    assert abs(_hand_r3(1 / 30, 0.0) - expected) > 1e-3
    # the module with a sibling treated as a negative reproduces the hand value for that (wrong) recipe
    no_sib = [[False] * 4, [False] * 4]
    assert MultiPositiveInfoNCELoss()(*_tensors(no_sib)).item() == pytest.approx(
        _hand_r3(1 / 30, 0.25, sib_as_negative=True), abs=1e-5)
    assert MultiPositiveInfoNCELoss(temperature=0.05)(*_tensors()).item() == pytest.approx(
        _hand_r3(0.05, 0.25), abs=1e-5)
    assert MultiPositiveInfoNCELoss(sibling_weight=1.0)(*_tensors()).item() == pytest.approx(
        _hand_r3(1 / 30, 1.0), abs=1e-5)


def test_positive_in_sibling_mask_is_ignored():
    sib = [[True, True, False, False], [False, False, True, False]]
    assert MultiPositiveInfoNCELoss()(*_tensors(sib)).item() == pytest.approx(_hand_r3(1 / 30, 0.25), abs=1e-5)


def test_inbatch_infonce_masks_siblings_without_weighting_them():
    loss = InBatchInfoNCELoss()(*_tensors())
    assert loss.item() == pytest.approx(_hand_r3(0.05, 0.0), abs=1e-5)


def test_multi_positive_gradients_flow():
    q, c, p, s = _tensors()
    q.requires_grad_(True)
    MultiPositiveInfoNCELoss()(q, c, p, s).backward()
    assert q.grad is not None and torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0


SCORES = torch.tensor([[2.0, 0.5, -1.0, 0.0], [0.3, 1.2, -0.4, 99.0]], dtype=torch.float64)
LABELS = torch.tensor([[3, 1, 0, 0], [0, 3, 1, 3]])
MASK = torch.tensor([[True, True, True, True], [True, True, True, False]])


def _log_softmax(v):
    m = max(v)
    lse = m + math.log(sum(math.exp(x - m) for x in v))
    return [x - lse for x in v]


def _softmax(v):
    return [math.exp(x) for x in _log_softmax(v)]


def test_graded_listnet_matches_hand_value_and_ignores_padding():
    rows = []
    for s, l, n in [([2.0, 0.5, -1.0, 0.0], [3, 1, 0, 0], 4), ([0.3, 1.2, -0.4], [0, 3, 1], 3)]:
        t, lp = _softmax([float(x) for x in l[:n]]), _log_softmax(s[:n])
        rows.append(-sum(a * b for a, b in zip(t, lp)))
    expected = sum(rows) / 2
    loss = GradedListNetLoss()(SCORES, LABELS, MASK)
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    # padding contents do not matter
    scores2, labels2 = SCORES.clone(), LABELS.clone()
    scores2[1, 3], labels2[1, 3] = -50.0, 0
    assert GradedListNetLoss()(scores2, labels2, MASK).item() == pytest.approx(expected, abs=1e-6)
    # but unmasking the padded item does
    assert abs(GradedListNetLoss()(SCORES, LABELS, torch.ones_like(MASK)).item() - expected) > 1e-3


def test_listwise_ce_matches_hand_value():
    labels = torch.tensor([[3, 1, 0, 0], [0, 3, 1, 0]])
    # row 0: one positive (index 0); row 1: positive index 1 (padding excluded)
    lp0 = _log_softmax([2.0, 0.5, -1.0, 0.0])
    lp1 = _log_softmax([0.3, 1.2, -0.4])
    expected = (-lp0[0] - lp1[1]) / 2
    assert ListwiseCrossEntropyLoss()(SCORES, labels, MASK).item() == pytest.approx(expected, abs=1e-6)
    # two tied top labels: target mass spread uniformly
    tied = torch.tensor([[3, 3, 0, 0], [0, 3, 1, 0]])
    expected_tied = (-(lp0[0] + lp0[1]) / 2 - lp1[1]) / 2
    assert ListwiseCrossEntropyLoss()(SCORES, tied, MASK).item() == pytest.approx(expected_tied, abs=1e-6)
    # temperature divides the scores
    lp0t = _log_softmax([x / 0.5 for x in [2.0, 0.5, -1.0, 0.0]])
    lp1t = _log_softmax([x / 0.5 for x in [0.3, 1.2, -0.4]])
    assert ListwiseCrossEntropyLoss(temperature=0.5)(SCORES, labels, MASK).item() == pytest.approx(
        (-lp0t[0] - lp1t[1]) / 2, abs=1e-6)


def test_pointwise_bce_matches_hand_value():
    labels = torch.tensor([[3, 1, 0, 0], [0, 3, 1, 0]])
    pairs = [(2.0, 1), (0.5, 0), (-1.0, 0), (0.0, 0), (0.3, 0), (1.2, 1), (-0.4, 0)]  # padding left out
    sig = lambda x: 1 / (1 + math.exp(-x))
    expected = -sum(y * math.log(sig(s)) + (1 - y) * math.log(1 - sig(s)) for s, y in pairs) / len(pairs)
    assert PointwiseBCELoss()(SCORES, labels, MASK).item() == pytest.approx(expected, abs=1e-6)
