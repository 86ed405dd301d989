"""The training view of a dataset: fixed-width causal-LM items and unit-pure batches.

Kept apart from :mod:`mintdim_beam.reader.dataset` (which finds and checks records) because it
is a choice of what a training step wants: ``input_ids``/``labels``/``attention_mask``
of the record's unit width, labels shifted or not, the loss on chosen segments or, for
a chat output, on the messages of chosen roles (their positions come from the header
and the index row's roles, ``format.chat.role_mask``). Every
record comes through :meth:`OutputReader.record_at_row`, so items are checked like any
other read. Pure numpy; torch is imported only for ``return_tensors="pt"``, inside
``__getitem__``, so the dataset pickles into ``DataLoader`` worker processes.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import numpy as np

from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format.chat import MESSAGE_PARTS, role_mask
from mintdim_beam.reader.chat_view import raise_unlisted
from mintdim_beam.reader.sample_index import as_int

IGNORE_INDEX = -100  # the label value PyTorch's cross-entropy ignores


def segment_mask(lengths: np.ndarray, sequence_template: Sequence[str], names: Iterable[str],
                 width: int) -> np.ndarray:
    """Boolean ``(..., width)`` mask of payload positions inside the named segments.

    ``lengths`` are the header lengths, ``(n_segments,)`` for one record or
    ``(records, n_segments)`` for many: e.g. ``names=["output"]`` puts the loss on the
    answer only.
    """
    names = set(names)
    unknown = names - set(sequence_template)
    if unknown:
        raise KeyError(f"no segment named {sorted(unknown)}; segments: {list(sequence_template)}")
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths, axis=-1)
    starts = ends - lengths
    pos = np.arange(width)
    mask = np.zeros(lengths.shape[:-1] + (width,), dtype=bool)
    for j, name in enumerate(sequence_template):
        if name in names:
            mask |= (pos >= starts[..., j, None]) & (pos < ends[..., j, None])
    return mask


def causal_lm_arrays(record: np.ndarray, n_segments: int, unit: int, pad_id: int,
                     loss_mask: Optional[np.ndarray] = None, shift: bool = True) -> dict:
    """``input_ids``, ``labels`` and ``attention_mask`` of one record, in numpy.

    With ``shift`` (the default) ``labels[i]`` is the token at ``i + 1`` (the target of
    position ``i``), so the labels feed a loss directly; pass ``shift=False`` for models
    that shift internally (Hugging Face), which get ``labels == input_ids``. Padding, and
    tokens outside ``loss_mask``, are ``-100`` in the labels; padding is False in the mask.
    """
    lengths = record[1:1 + n_segments].astype(np.int64)
    count = int(lengths.sum())
    input_ids = record[1 + n_segments:1 + n_segments + unit].astype(np.int64)
    attention = np.arange(unit) < count
    target_ok = attention if loss_mask is None else attention & loss_mask
    labels = np.full(unit, IGNORE_INDEX, dtype=np.int64)
    if shift:
        labels[:-1] = np.where(target_ok[1:], input_ids[1:], IGNORE_INDEX)
    else:
        labels = np.where(target_ok, input_ids, IGNORE_INDEX)
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention}


class CausalLMDataset:
    """Map-style dataset of training items, in ascending sample_id.

    ``dataset[i]`` is ``{"input_ids", "labels", "attention_mask"}``, each of the
    sample's unit width, so items of one unit stack without collation work. Give
    ``units=[size]`` for a plain ``DataLoader(dataset, batch_size=...)``, or keep every
    unit and pass ``batch_sampler=dataset.batch_sampler(batch_size)`` so that each batch
    holds one unit. ``return_tensors="pt"`` imports torch (only then) and returns tensors.

    The loss covers every written token unless narrowed: ``loss_segments`` keeps the
    named segments; on a chat output ``loss_roles`` keeps the messages of those roles,
    whole (prefix, content and suffix, so an ``{@eos}`` closing the turn is learnt),
    or only their ``loss_parts`` (``("content", "suffix")`` leaves the role header
    out). Given both, a position is in the loss when both keep it.
    """

    def __init__(self, reader, units: Optional[Sequence[int]] = None,
                 loss_segments: Optional[Sequence[str]] = None, shift: bool = True,
                 return_tensors: Optional[str] = None, loss_roles: Optional[Sequence[str]] = None,
                 loss_parts: Optional[Sequence[str]] = None):
        if return_tensors not in (None, "np", "pt"):
            raise ValueError(f"return_tensors must be None, 'np' or 'pt', got {return_tensors!r}")
        if return_tensors == "pt":
            torch_module()        # fail now, not in a worker process
        self.return_tensors = return_tensors
        self.reader = reader
        self.loss_segments = tuple(loss_segments) if loss_segments is not None else None
        if self.loss_segments is not None:
            unknown = set(self.loss_segments) - set(reader.sequence_template)
            if unknown:
                raise KeyError(f"no segment named {sorted(unknown)}; segments: {list(reader.sequence_template)}")
        self.loss_roles, self.loss_parts, self._role_codes = _loss_roles(reader, loss_roles, loss_parts)
        self.shift = shift
        ix = reader.index
        rows = reader.rows_by_id
        if units is not None:
            missing = set(units) - set(reader.unit_sizes)
            if missing:
                raise ReaderError("no_unit", reader.path, unit=sorted(missing), units=list(reader.unit_sizes))
            rows = rows[np.isin(ix.unit[rows], np.asarray(list(units), np.int64))]
        self._rows = np.asarray(rows, np.int64)

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    def unit_of(self, i: int) -> int:
        return int(self.reader.index.unit[self._rows[i]])

    @property
    def units(self) -> np.ndarray:
        """Unit size of every item, in dataset order."""
        return self.reader.index.unit[self._rows]

    @property
    def sample_ids(self) -> np.ndarray:
        return self.reader.index.sample_id[self._rows]

    def __getitem__(self, i: int) -> dict:
        i = as_int(i, "index")
        if not -len(self) <= i < len(self):
            raise IndexError(f"item {i} out of range for {len(self)} items")
        row = int(self._rows[i])
        unit = int(self.reader.index.unit[row])
        rec = self.reader.record_at_row(row)
        n = self.reader.meta.n_segments
        mask = None
        if self.loss_segments is not None:
            mask = segment_mask(rec[1:1 + n], self.reader.sequence_template, self.loss_segments, unit)
        if self.loss_roles is not None:
            codes = self.reader.role_codes([row])[0]
            raise_unlisted(self.reader, np.asarray([row]), rec[None, :], codes[None, :])
            by_role = role_mask(rec[1:1 + n], codes, self._role_codes, self.loss_parts, unit)
            mask = by_role if mask is None else mask & by_role
        item = causal_lm_arrays(rec, n, unit, self.reader.meta.pad_id, mask, self.shift)
        if self.return_tensors == "pt":
            torch = torch_module()
            item = {k: torch.from_numpy(v) for k, v in item.items()}
        return item

    def batch_sampler(self, batch_size: int, shuffle: bool = False, seed: int = 0,
                      drop_last: bool = False) -> "UnitBatchSampler":
        return UnitBatchSampler(self.units, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)


def _loss_roles(reader, loss_roles, loss_parts) -> tuple:
    """``(roles, parts, role codes)`` of a training view's ``loss_roles`` and
    ``loss_parts``, checked against the dataset; all None without ``loss_roles``."""
    if loss_roles is None:
        if loss_parts is not None:
            raise ValueError("loss_parts chooses parts of the loss_roles' messages: give loss_roles too")
        return None, None, None
    if isinstance(loss_roles, str) or isinstance(loss_parts, str):
        raise TypeError("loss_roles and loss_parts are lists of names, e.g. loss_roles=['assistant']")
    roles = tuple(loss_roles)
    if not roles:
        raise ValueError("loss_roles is empty: name at least one role, or leave it out for every token")
    layout = reader.chat_layout
    if layout is None:
        raise ReaderError("not_chat", reader.path, segments=list(reader.sequence_template))
    parts = MESSAGE_PARTS if loss_parts is None else tuple(loss_parts)
    unknown = sorted(set(parts) - set(MESSAGE_PARTS))
    if unknown or not parts:
        raise KeyError(f"no message part named {unknown or parts!r}; parts: {list(MESSAGE_PARTS)}")
    return roles, parts, layout.codes(roles)


def torch_module():
    """PyTorch, or an ImportError saying how to get it (for ``return_tensors="pt"``)."""
    try:
        import torch
    except ImportError:
        raise ImportError("return_tensors='pt' needs PyTorch: pip install torch") from None
    return torch


class UnitBatchSampler:
    """Batches of dataset indices, each from a single unit (so items stack).

    Re-iterable and sized, as ``DataLoader(batch_sampler=...)`` expects. With
    ``shuffle`` the order of items within a unit and of the batches changes per
    epoch (``set_epoch``), reproducibly from ``seed``.
    """

    def __init__(self, units: np.ndarray, batch_size: int, shuffle: bool = False, seed: int = 0,
                 drop_last: bool = False):
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.units = np.asarray(units)
        self.batch_size, self.shuffle, self.seed, self.drop_last = batch_size, shuffle, seed, drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _batches(self) -> list:
        rng = np.random.default_rng([self.seed, self.epoch]) if self.shuffle else None
        batches = []
        for unit in np.unique(self.units).tolist():
            idx = np.nonzero(self.units == unit)[0]
            if rng is not None:
                idx = rng.permutation(idx)
            for start in range(0, len(idx), self.batch_size):
                chunk = idx[start:start + self.batch_size]
                if len(chunk) < self.batch_size and self.drop_last:
                    continue
                batches.append(chunk.tolist())
        if rng is not None:
            batches = [batches[k] for k in rng.permutation(len(batches)).tolist()]
        return batches

    def __iter__(self):
        return iter(self._batches())

    def __len__(self) -> int:
        total = 0
        for unit in np.unique(self.units).tolist():
            n = int((self.units == unit).sum())
            total += n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return total
