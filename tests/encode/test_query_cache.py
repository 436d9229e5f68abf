from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from rated.encode.query_cache import QueryCache
from rated.errors import ConfigError


class CountingEncoder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_repeated_queries_are_encoded_once_and_in_order():
    enc, cache = CountingEncoder(), QueryCache(8)
    first = cache.encode(["aa", "b"], enc)
    again = cache.encode(["b", "c", "aa", "c"], enc)
    assert enc.calls == [["aa", "b"], ["c"]]  # only the new query, once, although asked twice
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    np.testing.assert_array_equal(again[1], again[3])
    assert (cache.hits, cache.misses) == (2, 3)


def test_least_recently_used_entry_is_evicted():
    enc, cache = CountingEncoder(), QueryCache(2)
    cache.encode(["a"], enc)
    cache.encode(["b"], enc)
    cache.encode(["a"], enc)  # a is now the most recent
    cache.encode(["c"], enc)  # evicts b
    assert len(cache) == 2
    cache.encode(["a", "b"], enc)
    assert enc.calls[-1] == ["b"]


def test_cached_rows_cannot_be_modified_by_callers():
    cache = QueryCache(4)
    row = cache.encode(["a"], CountingEncoder())[0]
    row[0] = 99.0  # the stacked result is the caller's copy
    assert cache.encode(["a"], CountingEncoder())[0][0] == 1.0


def test_size_zero_disables_the_cache():
    enc, cache = CountingEncoder(), QueryCache(0)
    cache.encode(["a"], enc)
    cache.encode(["a"], enc)
    assert len(enc.calls) == 2 and len(cache) == 0


@pytest.mark.parametrize("size", [-1, 1.5, "10", True])
def test_bad_size_is_a_config_error(size):
    with pytest.raises(ConfigError, match="query_cache"):
        QueryCache(size)


def test_concurrent_callers_get_consistent_rows():
    enc, cache = CountingEncoder(), QueryCache(16)

    def work(seed: int) -> None:
        for i in range(200):
            q = "a" * ((seed + i) % 20)
            assert cache.encode([q], enc)[0][0] == len(q)

    with ThreadPoolExecutor(4) as pool:  # map re-raises a worker's exception here
        list(pool.map(work, range(4)))
    assert len(cache) <= 16
