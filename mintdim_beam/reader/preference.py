"""The preference-pair view of a dataset: TRL-style DPO items (DESIGN.md §9).

A pair output holds each pair as two records, chosen then rejected, with one
``pair_id`` and in one unit (``core.pair_lines``), so both records of an item have the
same width and items of one unit stack. An item has, per side, ``input_ids`` (prompt
and completion), ``labels`` (the completion's tokens, ``-100`` on the prompt and the
padding) and ``attention_mask``, keyed ``chosen_*`` and ``rejected_*`` as DPO trainers
that take concatenated prompt and completion consume them. Where the completion starts
comes from the header alone: the ``completion`` segment of a string pair's template,
or the first message after the row's ``prompt_messages`` of a conversation.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format.chat import PARTS_PER_MESSAGE, PAIR_ROLES
from mintdim_beam.reader.sample_index import as_int
from mintdim_beam.reader.training import IGNORE_INDEX, UnitBatchSampler

#: The segment of a string pair's template that holds the completion.
COMPLETION = "completion"


class PreferencePairs:
    """Map-style dataset of a pair output's pairs, in ascending ``pair_id``.

    ``shift=False`` (the default) gives ``labels`` aligned with ``input_ids``, as DPO
    trainers that shift inside their log-probability step expect; ``shift=True`` gives
    each position the next token as its label. ``return_tensors="pt"`` returns tensors.
    """

    def __init__(self, reader, units: Optional[Sequence[int]] = None, shift: bool = False,
                 return_tensors: Optional[str] = None):
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        ix = reader.index
        if ix.pair_id is None:
            raise ReaderError("not_pairs", reader.path)
        self.reader, self.shift, self.return_tensors = reader, shift, return_tensors
        template = list(reader.sequence_template)
        self._completion_segment = template.index(COMPLETION) if COMPLETION in template else None
        if self._completion_segment is None and reader.chat is None:
            raise ReaderError("not_pairs", reader.path)
        rows = np.asarray(reader.rows_by_id, np.int64)
        rows = rows[ix.pair_id[rows] >= 0]
        chosen = rows[ix.pair_role[rows] == PAIR_ROLES.index("chosen")]
        rejected = rows[ix.pair_role[rows] == PAIR_ROLES.index("rejected")]
        c_ids, r_ids = ix.pair_id[chosen], ix.pair_id[rejected]
        if len(chosen) != len(rejected) or (c_ids != r_ids).any():
            # the first pair id that is not exactly one chosen and one rejected record
            seen, counts = np.unique(np.concatenate([c_ids * 2, r_ids * 2 + 1]), return_counts=True)
            ids, sides = np.unique(seen // 2, return_counts=True)
            odd = np.union1d(ids[sides != 2], seen[counts != 1] // 2)
            raise ReaderError("pair_broken", reader.path, pair_id=int(odd[0]) if len(odd) else int(c_ids[0]),
                              problem="its records do not pair up")
        apart = np.flatnonzero(ix.unit[chosen] != ix.unit[rejected])
        if len(apart):
            raise ReaderError("pair_broken", reader.path, pair_id=int(c_ids[apart[0]]),
                              problem="its records are in different units")
        if units is not None:
            keep = np.isin(ix.unit[chosen], np.asarray(list(units), np.int64))
            chosen, rejected = chosen[keep], rejected[keep]
        self._chosen, self._rejected = chosen, rejected
        if return_tensors == "pt":
            from mintdim_beam.reader.training import torch_module

            torch_module()      # fail now, not in a worker process

    def __len__(self) -> int:
        return int(self._chosen.shape[0])

    @property
    def pair_ids(self) -> np.ndarray:
        return self.reader.index.pair_id[self._chosen]

    @property
    def units(self) -> np.ndarray:
        """Unit size of every item, in dataset order."""
        return self.reader.index.unit[self._chosen]

    def batch_sampler(self, batch_size: int, shuffle: bool = False, seed: int = 0,
                      drop_last: bool = False) -> UnitBatchSampler:
        """Batches of items of one unit each (so they stack), as ``causal_lm``'s."""
        return UnitBatchSampler(self.units, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)

    def completion_start(self, row: int, lengths: np.ndarray) -> int:
        """The payload position where a record's completion starts."""
        if self._completion_segment is not None:
            return int(lengths[:self._completion_segment].sum())
        prompt = self.reader.index.prompt_messages
        if prompt is None or prompt[row] < 0:
            raise ReaderError("pair_broken", self.reader.path, pair_id=int(self.reader.index.pair_id[row]),
                              problem="its conversation rows lack prompt_messages")
        return int(lengths[:PARTS_PER_MESSAGE * int(prompt[row])].sum())

    def _side(self, row: int) -> dict:
        reader = self.reader
        rec = reader.record_at_row(row)
        n = reader.meta.n_segments
        unit = int(reader.index.unit[row])
        lengths = rec[1:1 + n].astype(np.int64)
        count = int(lengths.sum())
        input_ids = rec[1 + n:1 + n + unit].astype(np.int64)
        pos = np.arange(unit)
        attention = pos < count
        target = attention & (pos >= self.completion_start(row, lengths))
        labels = np.full(unit, IGNORE_INDEX, np.int64)
        if self.shift:
            labels[:-1] = np.where(target[1:], input_ids[1:], IGNORE_INDEX)
        else:
            labels = np.where(target, input_ids, IGNORE_INDEX)
        return {"input_ids": input_ids, "labels": labels, "attention_mask": attention}

    def __getitem__(self, i: int) -> dict:
        i = as_int(i, "index")
        if not -len(self) <= i < len(self):
            raise IndexError(f"item {i} out of range for {len(self)} items")
        item = {}
        for side, rows in (("chosen", self._chosen), ("rejected", self._rejected)):
            for key, value in self._side(int(rows[i])).items():
                item[f"{side}_{key}"] = value
        if self.return_tensors == "pt":
            from mintdim_beam.reader.training import torch_module

            torch = torch_module()
            item = {k: torch.from_numpy(v) for k, v in item.items()}
        return item
