"""``verify`` on a chat output (DESIGN.md §9): its index's roles against the manifest,
and the samples a training loss by role would find empty.

A row's ``roles`` must fit the layout (present, at most ``max_messages``, each a role
the manifest declares): anything else is a problem, as any damaged row is. A sample
with no token of a loss role (``--loss-roles``, default ``assistant`` when the dataset
has it) is not damage: a conversation without an answer, or whose answers truncation
cut away, is what the data holds. Training on it gives no loss, so ``verify`` lists it
as a warning with its sample id and source line, and the exit code stays what the
checks decide. The positions come from the record headers and the rows' roles alone,
read through the reader's checked batches (a unit whose shards fail those checks is
left out: its problems are listed by the shard checks).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from mintdim_beam.errors import read_messages as R
from mintdim_beam.errors.read_errors import ReaderError
from mintdim_beam.format import names
from mintdim_beam.format.chat import ABSENT, MESSAGE_PARTS
from mintdim_beam.reader import chat_view, output_files
from mintdim_beam.reader import dataset as rd
from mintdim_beam.reader.verify_report import LISTED_PER_CHECK, Checker, VerifyWarning

#: The loss role ``verify`` checks when none is given, if the dataset has it.
DEFAULT_LOSS_ROLE = "assistant"


def check_chat(chk: Checker, meta: output_files.Metadata, index, loss_roles: Optional[Sequence[str]] = None,
               loss_parts: Sequence[str] = MESSAGE_PARTS) -> None:
    """The chat checks of ``verify``: problems for rows whose roles do not fit the
    layout, warnings for samples without a loss position."""
    try:
        layout = chat_view.layout_of(meta)
    except ReaderError as exc:
        chk.problem(names.MANIFEST, exc.reason.replace(f"{meta.path}: {names.MANIFEST}: ", ""))
        return
    if layout is None:
        if loss_roles:
            chk.warning(names.MANIFEST, R.WARN_NOT_CHAT.format(roles=",".join(loss_roles)))
        return
    found = chat_view.index_problems(layout, index)
    for row, kind, facts in found[:LISTED_PER_CHECK]:
        chk.problem(names.SAMPLE_INDEX, R.read_text(kind, **facts).en, line=int(index.row_line[row]))
    if len(found) > LISTED_PER_CHECK:
        chk.problem(names.SAMPLE_INDEX, f"... and {len(found) - LISTED_PER_CHECK} more rows whose roles do not fit "
                                        f"the manifest's chat layout")
    if loss_roles is None:
        loss_roles = [DEFAULT_LOSS_ROLE] if DEFAULT_LOSS_ROLE in layout.roles else []
    wanted = []
    for role in loss_roles:
        if role in layout.roles:
            wanted.append(role)
        else:
            chk.warning(names.MANIFEST, R.WARN_ROLE_ABSENT.format(role=role, roles=list(layout.roles)))
    if len(index) and index.role_count is not None:
        _scan_headers(chk, meta, index, layout, wanted, tuple(loss_parts))


def _scan_headers(chk: Checker, meta, index, layout: chat_view.ChatLayout, roles: list, parts: tuple) -> None:
    """Every record's header against its row's roles: a problem for a record holding a
    message its roles do not list, a warning for each sample whose messages of
    ``roles`` (none: no warning) hold no token in ``parts``."""
    mapping = np.asarray([layout.roles.index(n) if n in layout.roles else ABSENT for n in index.role_names],
                         np.int16)
    codes = np.asarray(layout.codes(roles), np.int64)
    try:
        reader = rd.OutputReader(meta.path, index=index)
    except ReaderError:
        return          # e.g. two rows for one sample id: listed by the index checks
    truncated = set()
    for _, row in output_files.iter_index(meta.path, names.OVERFLOW_INDEX, meta.manifest):
        if isinstance(row, dict) and row.get("action") == "truncate" and isinstance(row.get("sample_id"), int):
            truncated.add(row["sample_id"])
    n = meta.n_segments
    empty = []          # rows without a loss position, and whether they have a loss role's message
    unlisted = []       # (row, slot, tokens, messages listed) of records holding a message roles omit
    for unit in meta.unit_sizes:
        rows = reader.unit_rows(unit)
        done = 0
        try:
            for batch in reader.batches(unit):
                mine = rows[done:done + len(batch.sample_ids)]
                done += len(mine)
                slots = chat_view.slot_codes(index, mapping, mine, layout.max_messages)
                fits = (index.role_count[mine] >= 0) & (index.role_count[mine] <= layout.max_messages)
                found = chat_view.unlisted_slots(batch.records[:, 1:1 + n], slots)
                first = found[np.unique(found[:, 0], return_index=True)[1]]    # a record's first slot
                for j, slot, count in first.tolist():
                    if fits[j] and len(unlisted) < LISTED_PER_CHECK:
                        unlisted.append((int(mine[j]), slot, count, int(index.role_count[mine[j]])))
                kept = np.isin(slots, codes)
                tokens = chat_view.message_tokens(batch.records[:, 1:1 + n], parts)
                none = ((tokens * kept).sum(axis=1) == 0) & fits     # rows that do not fit: problems
                empty.extend(zip(mine[none].tolist(), kept[none].any(axis=1).tolist()))
        except ReaderError:
            continue    # its shards' problems are listed by the shard checks
    for row, slot, count, listed in unlisted:
        unit, shard = int(index.unit[row]), int(index.shard[row])
        text = R.read_text("roles_slots", slot=slot, count=count, listed=listed)
        chk.problem(meta.shard_path(unit, shard), f"sample {int(index.sample_id[row])}: {text.en}",
                    record=int(index.record[row]))
    if not roles:
        return
    empty.sort()
    said = ",".join(roles)
    chk.report.no_loss_samples = len(empty)
    listed = 0
    for row, has_role in empty[:LISTED_PER_CHECK * 5]:
        sid = int(index.sample_id[row])
        where = f"{index.files[int(index.file[row])]}:{int(index.line[row])} (sample {sid})"
        if not has_role:
            text = R.WARN_NO_LOSS_ROLE.format(where=where, roles=said)
        elif sid in truncated:
            text = R.WARN_LOSS_TRUNCATED.format(where=where, roles=said, parts=",".join(parts))
        else:
            text = R.WARN_LOSS_EMPTY.format(where=where, roles=said, parts=",".join(parts))
        if not chk.warning(names.SAMPLE_INDEX, text, line=int(index.row_line[row])):
            break
        listed += 1
    if listed < len(empty):
        chk.report.warnings.append(VerifyWarning(names.SAMPLE_INDEX, R.WARN_MORE.format(count=len(empty) - listed)))
