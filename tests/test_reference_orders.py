"""Reference orders: a seeded random order and the query-document cosine."""

import torch

from srdiv.features.bundle import random_bundle
from srdiv.models.reference import CosineOrder, RandomOrder


def test_cosine_order_by_hand():
    bundle = random_bundle(queries=1, docs=3, emb=2, pad=False, seed=0)
    bundle.query_vec[:] = [[1.0, 0.0]]
    bundle.doc_vec[:] = [[[0.0, 2.0], [3.0, 3.0], [5.0, 0.1]]]   # cosines 0, 0.707, 0.9998
    batch = bundle.to_torch()
    scores = CosineOrder(bundle.dims).list_scores(batch)
    torch.testing.assert_close(scores, torch.tensor([[0.0, 2 ** -0.5, 5.0 / (25.01 ** 0.5)]]))
    assert CosineOrder(bundle.dims).rank(batch).tolist() == [[2, 1, 0]]


def test_random_order_is_seeded_and_keeps_padding_last():
    bundle = random_bundle(queries=6, docs=9, seed=1)
    batch = bundle.to_torch()
    a, b = RandomOrder(bundle.dims, seed=3).rank(batch), RandomOrder(bundle.dims, seed=3).rank(batch)
    assert torch.equal(a, b)
    assert not torch.equal(a, RandomOrder(bundle.dims, seed=4).rank(batch))
    assert ((a >= 0) == batch["doc_mask"]).all()
    for row, mask in zip(a, batch["doc_mask"]):
        assert sorted(row[row >= 0].tolist()) == torch.nonzero(mask)[:, 0].tolist()
    # the order is not the initial one on every query
    initial = torch.arange(9).expand(6, 9)
    assert not torch.equal(torch.where(batch["doc_mask"], a, -1), torch.where(batch["doc_mask"], initial, -1))
