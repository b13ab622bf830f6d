"""Fusion (RRF, convex), recency blend and the reference budget: pure functions."""

import pytest

from domains.retrieval import RRF_K, RRF_WEIGHTS, convex_fusion, fuse, reciprocal_rank_fusion
from domains.retrieval.budget import apply_budget
from domains.retrieval.recency import blend_recency
from domains.retrieval.types import RetrievedChunk


def test_rrf_values():
    assert RRF_K == 5
    assert RRF_WEIGHTS == {"vector": 1.0, "bm25": 1.5}
    fused = reciprocal_rank_fusion({"s:vector": [(1, 0.9), (2, 0.8)], "s:bm25": [(1, 7.0), (3, 5.0)]})
    assert fused[0] == (1, pytest.approx(1 / 6 + 1.5 / 6), {"s:vector": 0.9, "s:bm25": 7.0})
    # the BM25 list weighs 1.5: its second chunk before the dense list's second
    assert fused[1:] == [(3, pytest.approx(1.5 / 7), {"s:bm25": 5.0}), (2, pytest.approx(1 / 7), {"s:vector": 0.8})]


def test_rrf_constant_and_weights_are_parameters():
    lists = {"s:vector": [(1, 0.9), (2, 0.8)], "s:bm25": [(2, 7.0)], "other": [(3, 1.0)]}
    # the paper's form: k = 60, every list weighs 1
    fused = reciprocal_rank_fusion(lists, k=60, weights={})
    assert [(cid, round(score, 9)) for cid, score, _ in fused] == [
        (2, round(1 / 62 + 1 / 61, 9)), (1, round(1 / 61, 9)), (3, round(1 / 61, 9))
    ]
    # a label without a known mode weighs 1.0
    fused = reciprocal_rank_fusion(lists, k=0, weights={"vector": 2.0})
    assert {cid: score for cid, score, _ in fused} == pytest.approx({1: 2.0, 2: 1.0 + 1.0, 3: 1.0})


def test_rrf_keyword_first_outranks_fifth_in_both():
    # A fact past the embedding window: BM25 ranks its chunk 1st, the vectors 80th.
    # Chunk 2 is 5th in both lists. With k = 60 and equal weights chunk 2 won
    # (2 / 65 > 1 / 61 + 1 / 140); now chunk 1 does (1.5 / 6 + 1 / 85 > 2.5 / 10).
    filler = [(100 + i, 0.5) for i in range(80)]
    vector = filler[:4] + [(2, 0.6)] + filler[4:78] + [(1, 0.3)]
    bm25 = [(1, 9.0)] + [(200 + i, 5.0) for i in range(3)] + [(2, 4.0)]
    assert [i for i, (cid, _) in enumerate(vector, 1) if cid in (1, 2)] == [5, 80]
    fused = reciprocal_rank_fusion({"s:vector": vector, "s:bm25": bm25})
    assert [cid for cid, _, _ in fused[:2]] == [1, 2]
    assert fused[0][1] == pytest.approx(1.5 / 6 + 1 / 85)
    assert fused[1][1] == pytest.approx(1 / 10 + 1.5 / 10)
    old = reciprocal_rank_fusion({"s:vector": vector, "s:bm25": bm25}, k=60, weights={})
    assert [cid for cid, _, _ in old[:2]] == [2, 1]


def test_rrf_lists_of_several_queries_share_a_label():
    fused = reciprocal_rank_fusion(
        [("s:vector", [(1, 0.5), (2, 0.4)]), ("s:vector", [(2, 0.9)]), ("t:bm25", [(3, 2.0), (1, 1.0)])]
    )
    assert [(cid, round(score, 9)) for cid, score, _ in fused] == [
        (1, round(1 / 6 + 1.5 / 7, 9)),
        (2, round(1 / 7 + 1 / 6, 9)),
        (3, round(1.5 / 6, 9)),
    ]
    # a label keeps the chunk's best score
    assert fused[1][2] == {"s:vector": 0.9}


def test_rrf_ties_go_to_the_lower_chunk_id():
    fused = reciprocal_rank_fusion([("s:vector", [(1, 0.5), (2, 0.4)]), ("s:vector", [(2, 0.9), (1, 0.1)])])
    assert [(cid, round(score, 9)) for cid, score, _ in fused] == [(1, round(1 / 6 + 1 / 7, 9)), (2, round(1 / 7 + 1 / 6, 9))]


def test_rrf_keys_by_chunk_id_and_handles_empty_lists():
    # chunks 4 and 5 have identical text in two files: they stay two results
    fused = reciprocal_rank_fusion({"a:bm25": [(4, 3.0), (5, 3.0)], "a:vector": []})
    assert [cid for cid, _, _ in fused] == [4, 5]
    assert reciprocal_rank_fusion({"a": [], "b": []}) == []
    assert reciprocal_rank_fusion([]) == []


def test_convex_fusion_normalises_each_list():
    lists = {"s:vector": [(1, 0.8), (2, 0.2)], "s:bm25": [(2, 10.0), (3, 5.0)]}
    fused = convex_fusion(lists, alpha=0.6)
    # vector: (s + 1) / (0.8 + 1); bm25: s / 10
    expected = {1: 0.6 * 1.0, 2: 0.6 * 1.2 / 1.8 + 0.4 * 1.0, 3: 0.4 * 0.5}
    assert [cid for cid, _, _ in fused] == [2, 1, 3]
    assert {cid: score for cid, score, _ in fused} == pytest.approx(expected)
    assert fused[0][2] == {"s:vector": 0.2, "s:bm25": 10.0}
    assert [cid for cid, _, _ in convex_fusion(lists, alpha=1.0)] == [1, 2, 3]
    assert [cid for cid, _, _ in convex_fusion(lists, alpha=0.0)] == [2, 3, 1]


def test_fusion_bad_input():
    with pytest.raises(ValueError, match=r"convex fusion alpha must be in \[0, 1\], got 1.5"):
        convex_fusion({}, 1.5)
    with pytest.raises(ValueError, match="list label 'x' must end in ':vector' or ':bm25'"):
        convex_fusion({"x": [(1, 1.0)]}, 0.5)
    with pytest.raises(ValueError, match="unknown fusion method 'max'; allowed: rrf, convex"):
        fuse({}, "max")


def chunk(cid, score=0.0, year=None, text="t", domain="d"):
    return RetrievedChunk(cid, text, [], {}, "f", 1, "s", domain, year=year, score=score)


def test_recency_equal_relevance():
    chunks = blend_recency([chunk(1, 0.5, 2000), chunk(2, 0.5, None), chunk(3, 0.5, 2020)])
    assert [(c.chunk_id, round(c.score, 9)) for c in chunks] == [(3, 1.0), (2, 0.95), (1, 0.9)]


def test_recency_blend_values():
    chunks = blend_recency([chunk(1, 0.04, 2010), chunk(2, 0.03, 2020), chunk(3, 0.02, 2015), chunk(4, 0.01)])
    # relevance = (s - 0.01) / 0.03; time = (year - 2010) / 10, 0.5 without a year
    assert {c.chunk_id: round(c.score, 9) for c in chunks} == {
        1: round(0.9 * 1.0 + 0.1 * 0.0, 9),
        2: round(0.9 * (2 / 3) + 0.1 * 1.0, 9),
        3: round(0.9 * (1 / 3) + 0.1 * 0.5, 9),
        4: round(0.9 * 0.0 + 0.1 * 0.5, 9),
    }
    assert [c.chunk_id for c in chunks] == [1, 2, 3, 4]
    same_year = blend_recency([chunk(1, 0.2, 2000), chunk(2, 0.1, 2000)])
    assert [round(c.score, 9) for c in same_year] == [1.0, 0.1]
    assert blend_recency([]) == []


def test_budget_round_robin_across_domains():
    a = [chunk(1, text="a" * 800, domain="A"), chunk(2, text="a" * 800, domain="A"), chunk(3, text="a" * 10, domain="A")]
    b = [chunk(4, text="b" * 300, domain="B"), chunk(5, text="b" * 3000, domain="B"), chunk(6, text="b" * 10, domain="B")]
    # costs: 1000, 500, 1000 (total 2500), then 5 (3200) does not fit: B's turn ends for good
    taken = apply_budget([a, b], max_chars=3000)
    assert [c.chunk_id for c in taken] == [1, 4, 2, 3]
    assert [c.chunk_id for c in apply_budget([a, b], max_chars=20_000)] == [1, 4, 2, 5, 3, 6]
    assert [c.chunk_id for c in apply_budget([a, b], max_chars=999)] == [4]  # A's first never fits
    assert apply_budget([], max_chars=100) == []
