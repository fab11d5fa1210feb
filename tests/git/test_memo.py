"""The bounded cache of the long-lived processes (gitliza/git/memo.py): two generations, counted in
entries or in what they weigh."""
from __future__ import annotations

from gitliza.git.memo import Generations


def test_what_is_read_stays_and_what_is_not_goes_after_two_generations() -> None:
    g: Generations[int, str] = Generations(4)
    for k in range(4):
        g[k] = str(k)
    g[4] = "4"  # the young generation was full: it became the old one
    assert g.get(0) == "0"  # found in the old one: back to the young
    for k in range(5, 12):
        g[k] = str(k)
    assert g.get(1) is None and g.get(0) is None  # two flips without a read
    assert len(g) <= 8


def test_a_weighted_cache_is_bounded_by_weight_whatever_the_entries_weigh() -> None:
    """Counted in entries, a cache of parsed trees held as many trees whatever their size, and
    the trees grow with the history; counted by weight, its size is bounded in bytes."""
    g: Generations[int, list[int]] = Generations(100, weight=len)
    for k in range(1_000):
        g[k] = list(range(k % 60))  # trees of 0 to 59 entries
        assert g.weight() <= 2 * 100 + 60, k  # at most one entry past each generation's size
    assert 2 <= len(g) <= 2 * 100
    big = list(range(500))  # one tree bigger than a generation is still kept (one at a time)
    g[-1] = big
    assert g.get(-1) is big
    g[-2] = [1]
    assert g.weight() <= 500 + 100 + 1


def test_replacing_discarding_and_retaining_keep_the_weight_right() -> None:
    g: Generations[str, list[int]] = Generations(10, weight=len)
    g["a"] = [1, 2, 3]
    g["a"] = [1, 2, 3, 4, 5, 6, 7, 8]  # replaced: counted once
    g["b"] = [1, 2]
    assert "a" in g and "b" in g and g.weight() == 10
    g.discard("a")
    g["c"] = [1] * 8  # fits beside b: no flip, b stays young
    assert g.get("b") == [1, 2] and g.weight() == 10
    g.retain(lambda k: k != "c")
    g["d"] = [1] * 8
    assert g.get("b") == [1, 2] and g.get("d") is not None and g.get("c") is None
    g.clear()
    assert len(g) == 0 and g.weight() == 0


def test_update_is_each_item_set_in_turn() -> None:
    """`update` (a collection read whole, gitliza/git/source.py `many`) keeps what setting each
    item keeps: the same entries, the same load, the old generation's copy gone, the bound."""
    from gitliza.git.memo import Generations
    for size, before, batch in ((8, 3, 4), (8, 6, 4), (8, 0, 8), (4, 2, 9)):
        one, bulk = Generations[str, int](size), Generations[str, int](size)
        for g in (one, bulk):
            for i in range(before):
                g[f"k{i}"] = i
            g._old["k1"] = -1  # an older copy of a key the batch brings again
        items = {f"k{i}": 10 * i for i in range(1, batch + 1)}
        for k, v in items.items():
            one[k] = v
        bulk.update(items)
        for g in (one, bulk):
            assert all(g.get(k) == v for k, v in items.items() if k in g)
            assert "k1" not in g._old or g._old["k1"] != -1
            assert len(g._young) <= size and g._load == len(g._young)
        assert set(bulk.keys()) >= set(items) if batch <= size else True
