"""Importing Beam without the garbage collector walking what the import builds.

An import allocates tens of thousands of objects that live as long as the process
(modules, functions, classes, constants), and each burst of allocations triggers
collections that walk all of them again: about 0.09 s of Beam's 0.65 s import on our
machine. The collector is paused for the import and then set back as it was, so the
caller's process keeps its own settings. On the way out what the import built is moved
to the oldest generation: left to the automatic collector, the first young collection
and then the next middle one walked all of it (0.05 s and 0.04 s of a build's
start-up). The move is ``gc.freeze()`` then ``gc.unfreeze()``, which relinks the
generations' lists without walking them (2 us; a collection of the young generations
did the same in 0.05 s), unless the caller has frozen objects of its own, which
``unfreeze`` would release: then it is that collection.

The same objects cost again at the end: see :func:`freeze_at_exit`.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os


@contextlib.contextmanager
def collector_paused():
    """Pause automatic garbage collection inside the block, then move every object to
    the oldest generation (what the block built lives as long as the process)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            else:
                gc.collect(1)
            gc.enable()


#: Set to 0 to leave the interpreter's shutdown as it is (:func:`freeze_at_exit`).
EXIT_SWITCH = "MINTDIM_FREEZE_AT_EXIT"
_freeze_registered = False


def freeze_at_exit() -> None:
    """At interpreter exit, keep the shutdown's collections off the objects alive then.

    Python's shutdown clears the modules and runs full collections over every object
    still tracked: with Beam imported, about 115k objects, so that a build's process
    took 0.17-0.19 s to exit (0.02-0.03 s with them frozen; generated 100 MB corpus,
    a build through ``run()``, three exits each). An exit hook freezes them
    (``gc.freeze``), after the program and every exit hook registered after this one
    have run. What shutdown frees by reference counting it still frees; objects in
    reference cycles still alive at exit are left to the operating system, their
    finalizers not run, which Python does not promise for such objects anyway
    (exit hooks registered before this one, such as ``logging``'s flush and
    ``weakref.finalize``'s, still run). Registered once per process, by a build that
    imports Beam; ``MINTDIM_FREEZE_AT_EXIT=0`` in the environment turns it off.
    """
    global _freeze_registered
    if _freeze_registered or os.environ.get(EXIT_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return
    _freeze_registered = True
    atexit.register(gc.freeze)
