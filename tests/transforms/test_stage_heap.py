"""A stage's set-up ends by freezing the heap it built (``stage_base.settle_heap``)."""

from __future__ import annotations

import gc
import weakref

from mintdim_beam.beam.stage_base import settle_heap


class _Node:
    pass


def test_settling_collects_the_garbage_then_freezes_what_lives():
    """Cyclic garbage made before is collected, not frozen with the rest; what lives is
    frozen (full collections then skip it); garbage made after is collected as before."""
    before = _Node()
    before.self = before
    gone = weakref.ref(before)
    del before
    alive = _Node()
    try:
        settle_heap()
        assert gone() is None
        assert gc.get_freeze_count() > 0
        assert not any(o is alive for o in gc.get_objects())   # frozen objects are not listed
        after = _Node()
        after.self = after
        later = weakref.ref(after)
        del after
        gc.collect()
        assert later() is None
    finally:
        gc.unfreeze()
