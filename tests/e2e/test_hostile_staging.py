"""Nothing the build reads back from staging can run code, and staging is the build's own.

A build into a directory another local user can write lets that user swap what the
build staged. The metadata the write stage reads back is data (``spill_meta``), checked
against the digest the encoder reported; staging is created private; and an output
that others can write is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
from pathlib import Path

import numpy as np
import pytest

from conftest import TESTDATA, write_jsonl

from mintdim_beam import errors, pipeline
from mintdim_beam.beam import layout, write_stage
from mintdim_beam.core import spill_meta
from mintdim_beam.core.block_result import BlockResult
from mintdim_beam.core.plan import BlockPlan

TOKENIZER = str(TESTDATA / "sp_unigram.model")


def _job(tmp_path, out: Path, rows=3):
    src = write_jsonl(tmp_path / "in.jsonl", [{"a": f"hello world {i}"} for i in range(rows)])
    return (pipeline("unit-build").source.jsonl(files=[src], fields=[["a"]], templates=["{a}"])
            .tokenizer.sentencepiece(files=[TOKENIZER]).units(sizes=[[16, 32]], build_batch=[4])
            .output.dir(str(out), samples_per_shard=[10]))


def _refused(job) -> errors.OutputValidationError:
    with pytest.raises(errors.OutputValidationError) as caught:
        job.run(on_overflow="truncate", on_template_unk="continue", quiet=True)
    err = caught.value
    assert err.fields["reason"] == "shared_writable"
    text = str(err)
    assert "another user can write it" in text and "người dùng khác có quyền ghi" in text
    return err


def test_an_output_directory_others_can_write_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    err = _refused(_job(tmp_path, out))
    assert str(out) in str(err) and "0777" in str(err)
    assert list(out.iterdir()) == []          # nothing written, not even a claim


def test_an_output_directory_of_another_user_is_refused(tmp_path):
    if os.getuid() != 0:
        pytest.skip("chown to another user needs root")
    out = tmp_path / "out"
    out.mkdir(mode=0o755)
    os.chown(out, 65534, 65534)
    _refused(_job(tmp_path, out))
    assert list(out.iterdir()) == []


def test_a_new_output_in_a_shared_folder_needs_the_sticky_bit(tmp_path):
    shared = tmp_path / "scratch"
    shared.mkdir()
    os.chmod(shared, 0o777)
    _refused(_job(tmp_path, shared / "out"))
    assert not (shared / "out").exists()
    os.chmod(shared, 0o1777)                   # as /tmp: nobody can rename what we create
    _job(tmp_path, shared / "out").run(on_overflow="truncate", on_template_unk="continue", quiet=True, echo=lambda *a: None)
    assert (shared / "out" / "manifest.json").is_file()


def test_staging_is_created_private(tmp_path):
    config = _job(tmp_path, tmp_path / "out").config()
    out = config.outputs[0]
    os.makedirs(out.path, exist_ok=True)
    old = os.umask(0)
    try:
        layout.make_staging(out)
    finally:
        os.umask(old)
    for directory in (layout.staging_root(out.path), layout.staging_dir(out)):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


def test_a_swapped_block_metadata_is_refused_not_unpickled(tmp_path):
    """The write stage reads a block's metadata only when it has the bytes whose sha256
    the encoder reported; a crafted pickle in its place is never loaded."""
    config = _job(tmp_path, tmp_path / "out").config()
    out = config.outputs[0]
    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    good = spill_meta.encode(BlockResult(n_lines=1, status=np.zeros(1, np.int8), local_line=np.zeros(1, np.int64),
                                         token_count=np.ones(1, np.int64), orig_count=np.ones(1, np.int64),
                                         unit=np.full(1, 16), digests=np.zeros((1, 32), np.uint8)))
    for data in (pickle.dumps(Boom()), good):
        path = layout.block_spill(out, 0, 0)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_bytes(data)
        plan = BlockPlan(0, 0, 0, 0, 0, {16: 0, 32: 0}, meta=(0, len(data)), samples=1,
                         meta_sha256=hashlib.sha256(good).hexdigest())
        if data != good:
            with pytest.raises(ValueError, match="staging area was changed"):
                write_stage.write_index_part(config, (plan,))
        else:
            write_stage.write_index_part(config, (plan,))
    assert not marker.exists()


@pytest.mark.parametrize("index_layout, flushed", [("file", False), ("parts", True)])
def test_only_published_index_parts_are_flushed_by_the_write_stage(tmp_path, index_layout, flushed):
    """A part that publish copies into its index file stays in the page cache for that
    copy (publish flushes the index file); a part published as it is goes to the disk
    as soon as it is written. Either way its rows are the block's."""
    config = _job(tmp_path, tmp_path / "out").config(index_layout=index_layout)
    out = config.outputs[0]
    meta = spill_meta.encode(BlockResult(n_lines=1, status=np.zeros(1, np.int8), local_line=np.zeros(1, np.int64),
                                         token_count=np.ones(1, np.int64), orig_count=np.ones(1, np.int64),
                                         unit=np.full(1, 16), digests=np.zeros((1, 32), np.uint8)))
    path = layout.block_spill(out, 0, 0)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Path(path).write_bytes(meta)
    plan = BlockPlan(0, 0, 0, 0, 0, {16: 0, 32: 0}, meta=(0, len(meta)), samples=1,
                     meta_sha256=hashlib.sha256(meta).hexdigest())

    class Recorder:
        def __init__(self):
            self.added = []

        def add(self, path):
            self.added.append(path)

    recorder = Recorder()
    result = write_stage.write_index_part(config, (plan,), recorder)
    part = layout.part_path(out, "sample_index.jsonl", 0, 0)
    assert "sample_index.jsonl" in result.written
    assert recorder.added == ([layout.part_path(out, name, 0, 0) for name in result.written] if flushed else [])
    assert all(os.path.exists(p) for p in recorder.added)
    row = json.loads(Path(part).read_bytes())
    assert (row["sample_id"], row["hash"], row["token_count"], row["source_line"]) == (0, "00" * 32, 1, 1)
