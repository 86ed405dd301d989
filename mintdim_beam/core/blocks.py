"""Byte-range blocks of JSONL files, so that one large file is read by many workers.

A block owns every line that *starts* inside ``[start, end)``. Reading a block seeks to
``start - 1`` and skips to the first line start, then reads on past ``end`` to finish
its last line. Every line is therefore read by exactly one block whatever the block
size, and per-block line counts turned into prefix sums give exact line numbers.

A compressed file (``.gz``, ``.bz2``, ``.zst``, ``.xz``, ``.deflate``: see
``storage.compression``) cannot be entered at a byte offset, so it is planned as one
block that one worker reads from the start (:func:`read_stream_blocks`), cutting the
decompressed bytes into blocks of about the block size at line ends as it goes: the
same lines, numbered the same, as the file uncompressed, and memory bounded by the
block size rather than by the file. Output bytes never depend on where blocks end.
"""

from __future__ import annotations


from mintdim_beam.core.config import BuildConfig
from mintdim_beam.core.plan import BlockRef, EncodeGroup
from mintdim_beam.format.inputs import COMPRESSION_RATIO, is_compressed


def plan_blocks(config: BuildConfig, sizes: dict) -> list[BlockRef]:
    """Split every plain input file into blocks of ``config.block_size`` bytes (at least
    one); a compressed file is one block ``[0, compressed size)``. ``sizes``: ``{path:
    size}`` of every input, as the launcher listed them once (``patterns.expand_sizes``)."""
    refs = []
    for spec in config.files:
        total = sizes[spec.path]
        n = 1 if is_compressed(spec.path) else max(1, -(-total // config.block_size))
        for b in range(n):   # the last block ends at the file's end (a compressed one's only block too)
            refs.append(BlockRef(spec.index, b, b * config.block_size,
                                 total if b == n - 1 else (b + 1) * config.block_size))
    return refs


def group_blocks(config: BuildConfig, refs: list) -> list:
    """``refs`` (``plan_blocks``' order) as encode groups, in the same order.

    Consecutive files of one output that are one block each join one group while its
    input (a compressed file's bytes counted ``COMPRESSION_RATIO`` times) stays within
    ``config.block_size``; every other block is a group alone.
    """
    per_file: dict = {}
    for ref in refs:
        per_file[ref.file] = per_file.get(ref.file, 0) + 1
    groups, run, size = [], [], 0
    for ref in refs:
        path = config.files[ref.file].path
        weight = (ref.end - ref.start) * (COMPRESSION_RATIO if is_compressed(path) else 1)
        small = per_file[ref.file] == 1 and weight <= config.block_size
        if run and not (small and size + weight <= config.block_size
                        and config.files[ref.file].output == config.files[run[0].file].output):
            groups.append(EncodeGroup(tuple(run)))
            run, size = [], 0
        run.append(ref)
        size += weight
        if not small:   # alone
            groups.append(EncodeGroup(tuple(run)))
            run, size = [], 0
    if run:
        groups.append(EncodeGroup(tuple(run)))
    return groups


def plan_groups(config: BuildConfig, sizes: dict) -> list:
    """The build's encode groups: :func:`group_blocks` of :func:`plan_blocks`."""
    return group_blocks(config, plan_blocks(config, sizes))
