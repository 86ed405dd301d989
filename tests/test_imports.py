"""The garbage collector is paused while Beam is imported, and the caller's process
keeps its own collector settings."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from conftest import write_jsonl
from mintdim_beam.imports import collector_paused


@pytest.mark.parametrize("caller_froze", [False, True])
@pytest.mark.parametrize("enabled", [True, False])
def test_collector_paused_sets_back_what_it_found(enabled, caller_froze):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        kept = [[] for _ in range(2)]
        if caller_froze:
            gc.freeze()     # the caller's own frozen objects stay frozen
        frozen = gc.get_freeze_count()
        with collector_paused():
            assert not gc.isenabled()
            built = [[] for _ in range(3)]    # what an import builds, and keeps
        assert gc.isenabled() is enabled
        # On the way out (unless the caller had turned the collector off) what the
        # block built is moved to the oldest generation.
        oldest = {id(o) for o in gc.get_objects(generation=2)}
        assert all((id(o) in oldest) is enabled for o in built)
        assert gc.get_freeze_count() == frozen and (frozen > 0) is caller_froze
        if caller_froze:
            assert not any(id(o) in oldest for o in kept)
        with pytest.raises(KeyError):
            with collector_paused():
                raise KeyError("x")
        assert gc.isenabled() is enabled
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_run_leaves_the_callers_collector_as_it_was(tmp_path, tok, enabled):
    """``run()`` imports Beam with the collector paused, and neither leaves it paused
    nor freezes the caller's objects (only the CLI, which exits right after, does)."""
    f = write_jsonl(tmp_path / "d.jsonl", [{"q": "x", "a": "a short answer"}] * 3)
    code = (
        "import gc\n"
        f"{'' if enabled else 'gc.disable()'}\n"
        "collections = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and collections.append(info['generation']))\n"
        "from mintdim_beam import pipeline\n"
        f"job = (pipeline('unit-build').source.jsonl(files=[{f!r}], fields=[['q', 'a']], templates=['{{q}} {{a}}'])"
        f".tokenizer.sentencepiece(files=[{tok('sp_unigram.model')!r}]).units(sizes=[[64]], build_batch=[8])"
        f".output.dir({str(tmp_path / 'out')!r}, samples_per_shard=[4]))\n"
        "job.run(echo=lambda *a: None)\n"
        "print(gc.isenabled(), gc.get_freeze_count(), len(collections) > 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    enabled_after, frozen, collected = out.stdout.split()
    assert enabled_after == str(enabled) and frozen == "0"
    assert collected == str(enabled)      # a collector the caller disabled never ran
    assert (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("switch", [None, "0"])
def test_run_freezes_the_heap_only_at_exit(tmp_path, tok, switch):
    """A build registers one exit hook that freezes the heap for the interpreter's
    shutdown (hooks registered before it still run after it); the caller's objects stay
    collectable until then. ``MINTDIM_FREEZE_AT_EXIT=0`` registers nothing."""
    f = write_jsonl(tmp_path / "d.jsonl", [{"q": "x", "a": "a short answer"}] * 3)
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0))\n"
        "from mintdim_beam import pipeline\n"
        f"job = lambda out: (pipeline('unit-build').source.jsonl(files=[{f!r}], fields=[['q', 'a']], "
        f"templates=['{{q}} {{a}}']).tokenizer.sentencepiece(files=[{tok('sp_unigram.model')!r}])"
        ".units(sizes=[[64]], build_batch=[8]).output.dir(out, samples_per_shard=[4]))\n"
        f"job({str(tmp_path / 'out')!r}).run(echo=lambda *a: None)\n"
        "once = atexit._ncallbacks()\n"
        f"job({str(tmp_path / 'again')!r}).run(echo=lambda *a: None)\n"
        "from mintdim_beam import imports\n"
        "print('again', atexit._ncallbacks() - once, imports._freeze_registered, 'frozen', gc.get_freeze_count())\n"
    )
    env = dict(os.environ)
    env.pop("MINTDIM_FREEZE_AT_EXIT", None)
    if switch is not None:
        env["MINTDIM_FREEZE_AT_EXIT"] = switch
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    lines = out.stdout.splitlines()
    assert lines[-2] == f"again 0 {switch is None} frozen 0"   # a second build adds no hook
    assert lines[-1] == ("at exit True" if switch is None else "at exit False")
