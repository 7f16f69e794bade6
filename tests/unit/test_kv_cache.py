"""The key/value cache: its byte count against the tensors' real size, and incremental
decoding against a full causal forward of the same model."""

import pytest
import torch

from mha_lib.core.kv_cache import KVCache, cache_bytes
from mha_lib.experiments.decoding import forward_cached, greedy, new_cache
from mha_lib.experiments.toy_transformer import ToyTransformer


def model(num_kv_heads, causal=True, seed=0):
    torch.manual_seed(seed)
    m = ToyTransformer(11, 11, 16, d_model=16, num_heads=4, num_layers=2,
                       num_kv_heads=num_kv_heads, causal=causal)  # fmt: skip
    return m.double().eval()


def test_a_hand_counted_case():
    # 2 layers x (keys + values) x 2 heads x 4 features x 3 tokens x 4 bytes
    assert cache_bytes(num_layers=2, num_kv_heads=2, d_head=4, tokens=3) == 384
    assert cache_bytes(num_layers=2, num_kv_heads=2, d_head=4, tokens=3,
                       batch=2, dtype=torch.bfloat16) == 384  # fmt: skip


@pytest.mark.parametrize("kv", [4, 2, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_count_is_what_the_tensors_hold(kv, dtype):
    m = model(kv)
    cache = KVCache(m.attentions, 3, 10, dtype=dtype)
    assert cache.nbytes() == cache_bytes(
        num_layers=2, num_kv_heads=kv, d_head=4, tokens=10, batch=3, dtype=dtype
    )


def test_fewer_kv_heads_shrink_the_cache_by_their_ratio():
    sizes = [KVCache(model(kv).attentions, 1, 8).nbytes() for kv in (4, 2, 1)]
    assert sizes[0] == 2 * sizes[1] == 4 * sizes[2]


@pytest.mark.parametrize("kv", [4, 2, 1])
def test_token_by_token_equals_the_full_forward(kv):
    m = model(kv, seed=kv)
    tokens = torch.randint(0, 11, (2, 12), generator=torch.Generator().manual_seed(kv))
    full, _ = m(tokens)
    cache = new_cache(m, 2, 12)
    steps = [forward_cached(m, tokens[:, :5], cache)]  # a prompt of 5, then one at a time
    steps += [forward_cached(m, tokens[:, t : t + 1], cache) for t in range(5, 12)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-10, atol=1e-10)


def test_uneven_groups_after_pruning_decode_the_same():
    m = model(2, seed=3)
    m.attentions[0].prune_heads([0])  # query heads 1, 2, 3 over key/value heads 0, 1
    tokens = torch.randint(0, 11, (1, 9), generator=torch.Generator().manual_seed(0))
    full, _ = m(tokens)
    cache = new_cache(m, 1, 9)
    steps = [forward_cached(m, tokens[:, t : t + 1], cache) for t in range(9)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-10, atol=1e-10)


def test_greedy_generation_matches_recomputing_everything():
    m = model(1, seed=4)
    prompt = torch.tensor([[1, 2, 3]])
    out = greedy(m, prompt, 5)
    seq = prompt
    for _ in range(5):
        logits, _ = m(seq)
        seq = torch.cat([seq, logits[:, -1:].argmax(-1)], 1)
    assert torch.equal(out, seq)


def test_refusals():
    with pytest.raises(ValueError, match="causal"):
        new_cache(model(2, causal=False), 1, 4)
    cache = new_cache(model(2), 1, 2)
    with pytest.raises(ValueError, match="holds 2 tokens"):
        forward_cached(model(2), torch.zeros(1, 3, dtype=torch.long), cache)
