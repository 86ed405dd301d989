"""Check a published output directory against its own indexes and summaries.

A shard is only trustworthy if every layer agrees: the bytes (magic at every record,
header lengths that fit the unit, a payload padded with the pad id, token ids inside the
vocabulary), the layout (``samples_per_shard`` records per shard, shards numbered from
0), ``sample_index.jsonl`` (each row points to the record holding its sample and every
record has exactly one row), and the summaries (``stats.json`` and ``histogram.json``
equal to figures recounted from the shards and index files). With a tokenizer, a sample
of rows is also re-rendered and re-tokenized from its source line and compared
(:mod:`mintdim_beam.reader.source_check`). Every data file is compared with the sha256 that
``SHA256SUMS`` records, and that file with the manifest: the only check that finds a
token changed to another valid id.

Shards are scanned in chunks of records with numpy, so memory stays bounded by the
chunk, not the shard; the records are checked by the reader's own checks
(:func:`mintdim_beam.format.record_checks.check_records`), which find the records
failing each check and their facts, listed here in English. Every problem names its
file and, for a shard, the record; the same check failing on many records of one shard
is listed for the first few and then counted, so a badly broken dataset still gives a
readable report.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from mintdim_beam.reader import dataset as rd
from mintdim_beam.reader.chat_checks import check_chat
from mintdim_beam.format.chat import MESSAGE_PARTS
from mintdim_beam.format.record_checks import check_records, check_token_counts, parse_checksums
from mintdim_beam.format.names import CHECKSUMS, INDEX_FILES, LENGTH_FIELD, SHARD_NAME, SUMMARY_FILES
from mintdim_beam.errors import read_errors
from mintdim_beam.format import names
from mintdim_beam.reader import output_files
from mintdim_beam.reader import sample_index
from mintdim_beam.reader.verify_report import LISTED_PER_CHECK, Checker, Problem, VerifyReport
from mintdim_beam.storage import files as storage

__all__ = ["LISTED_PER_CHECK", "Checker", "Problem", "VerifyReport", "index_file_names", "verify_output"]

_CHUNK_SLOTS = 1 << 22         # slots scanned at once (8-16 MiB of shard)
_SHARD_PATH = re.compile(r"unit_\d+/shard_\d{6}\.bin")


@dataclass
class _ShardScan:
    """Per-record figures of one shard (complete records only)."""

    records: int
    totals: np.ndarray      # header length sum per record
    unk: np.ndarray         # UNK tokens in the written payload per record
    sha256: Optional[str] = None    # of the whole file, read once with the records


_MISSING_SHARD = _ShardScan(0, np.zeros(0, np.int64), np.zeros(0, np.int64))


def verify_output(path: str, tokenizer: Optional[str] = None, sample_rows: int = 64,
                  checksums: bool = True, loss_roles: Optional[Sequence[str]] = None,
                  loss_parts: Sequence[str] = MESSAGE_PARTS) -> VerifyReport:
    """Check the output directory at ``path``; ``tokenizer`` (a file path, or
    ``"manifest"`` for the one the manifest names) enables the re-tokenization of
    ``sample_rows`` rows (0 = all). ``checksums`` compares every data file with the
    sha256 that ``SHA256SUMS`` records (and that file with the manifest). A versioned
    root is checked as the build its ``LATEST`` names (the report's ``path``), and a
    ``LATEST`` that names no published build is its problem. On a chat output, the
    samples whose ``loss_roles`` messages (default ``assistant``, when it is a role)
    hold no token in ``loss_parts`` are the report's ``warnings``
    (:mod:`~mintdim_beam.reader.chat_checks`)."""
    try:
        path, _ = output_files.dataset_path(path)
    except read_errors.ReaderError as exc:
        chk = Checker(path)
        chk.problem(names.LATEST, exc.reason.replace(f"{path}: {names.LATEST}: ", ""))
        return chk.report
    chk = Checker(path)
    try:
        meta = output_files.read_metadata(path)
    except read_errors.ReaderError as exc:
        chk.problem(names.MANIFEST, exc.reason)
        return chk.report
    files = {}
    for name in SUMMARY_FILES:
        try:
            files[name] = output_files.read_json(storage.join(path, name))
        except read_errors.ReaderError as exc:
            chk.problem(name, exc.reason.replace(storage.join(path, name) + ": ", ""))
    for name, size in _index_file_sizes(meta, chk).items():
        if size is None and not _unreadable_index(chk, meta, name):
            chk.problem(name, "index file is missing")

    sums = _read_checksums(chk, meta) if checksums else None
    scans = _scan_units(chk, meta, hashed=sums is not None)
    if sums is not None:
        _compare_checksums(chk, meta, scans, sums)
    index_problems: list = []
    try:
        index = sample_index.parse_sample_index_pieces(output_files.index_pieces(path, names.SAMPLE_INDEX, meta.manifest), index_problems)
    except FileNotFoundError:
        index = sample_index.parse_sample_index(b"")
    except read_errors.ReaderError:     # a part that cannot be read: listed with the index files above
        index = sample_index.parse_sample_index(b"")
    for p in index_problems:
        chk.problem(names.SAMPLE_INDEX, p.message, line=p.line)
    _check_sample_index(chk, meta, index, scans)
    counts = _check_side_indexes(chk, meta, index, scans)
    _check_summaries(chk, meta, scans, counts, files)
    check_chat(chk, meta, index, loss_roles, loss_parts)
    if tokenizer:
        from mintdim_beam.reader.source_check import retokenize

        retokenize(chk, meta, index, tokenizer, sample_rows)

    rep = chk.report
    rep.units = len(meta.unit_sizes)
    rep.shards = sum(len(s) for s in scans.values())
    rep.samples = sum(x.records for s in scans.values() for x in s)
    rep.tokens = int(sum(int(x.totals.sum()) for s in scans.values() for x in s))
    return rep


# --------------------------------------------------------------------------- shards


def _scan_units(chk: Checker, meta: output_files.Metadata, hashed: bool = False) -> dict:
    """Scan every shard of every unit; ``{unit: [_ShardScan, ...]}`` indexed by shard number.

    The layout is judged from the files themselves (numbered from 0 without gaps, every
    shard but the last full), so one missing file is one problem, not a cascade; the
    summaries are compared with the recount afterwards.
    """
    scans: dict = {}
    sps = meta.samples_per_shard
    files: dict = {}       # (st_dev, st_ino) -> shard path, on a local disk
    on_disk = {name for name in storage.list_dir(meta.path) if name.startswith("unit_")}
    for name in sorted(on_disk - {f"unit_{u}" for u in meta.unit_sizes}):
        chk.problem(name, f"unit directory not in manifest units.sizes {list(meta.unit_sizes)}")
    for unit in meta.unit_sizes:
        udir = f"unit_{unit}"
        entries = storage.list_dir(storage.join(meta.path, udir))
        if names.FAILED_MARKER in entries:
            chk.problem(f"{udir}/UNIT_BUILD_FAILED.md", "failure marker present in a published unit")
        numbers = set()
        for n in entries:
            m = SHARD_NAME.match(n)
            if m:
                numbers.add(int(m.group(1)))
            elif n not in (names.EMPTY_MARKER, names.FAILED_MARKER):
                chk.problem(f"{udir}/{n}", "unexpected file in a unit directory")
        if not numbers and names.EMPTY_MARKER not in entries:
            chk.problem(udir, "unit has no shards and no EMPTY_UNIT.md marker")
        elif numbers and names.EMPTY_MARKER in entries:
            chk.problem(f"{udir}/EMPTY_UNIT.md", "empty-unit marker in a unit that has shards")
        count = max(numbers) + 1 if numbers else 0
        if storage.is_local(meta.path):
            for rel, other in rd.same_files(meta.path, unit, [f"shard_{k:06d}.bin" for k in sorted(numbers)], files):
                chk.problem(rel, f"is the same file as {other} (a link to it, or a hard link): each shard holds "
                                 f"records of its own")
        scans[unit] = []
        for k in range(count):
            rel = meta.shard_path(unit, k)
            if k not in numbers:
                chk.problem(rel, "shard is missing (later shards of the unit exist)")
                scans[unit].append(_MISSING_SHARD)
                continue
            full = storage.join(meta.path, *rel.split("/"))
            if storage.is_local(full) and not os.path.isfile(full):   # a directory in its place
                chk.problem(rel, "not a regular file (a shard is a file of records)")
                scans[unit].append(_MISSING_SHARD)
                continue
            scan = _scan_shard(chk, meta, unit, rel, hashed)
            scans[unit].append(scan)
            if k < count - 1 and scan.records != sps:
                chk.problem(rel, f"holds {scan.records} records; every shard but the last must hold "
                                 f"samples_per_shard={sps}")
            elif k == count - 1 and not 0 < scan.records <= sps:
                chk.problem(rel, f"holds {scan.records} records; the last shard holds 1 to "
                                 f"samples_per_shard={sps}")
    return scans


# verify's English wording of the record checks (format.record_checks.check_records
# decides which records fail and with what facts), in the order a shard lists them
_LISTED = {
    "magic": "magic is {got:#x}, expected {want:#x}",
    "over_unit": "header lengths sum to {total} > unit size {unit}",
    "pad_tail": "pad tail: payload slot {slot} holds {got} after the {total} written tokens, expected pad id {pad}",
    "vocab": "token id {id} at payload position {at} is >= vocab size {vocab}",
}
_TOKEN_COUNT = ("header lengths sum to {total} but sample_index.jsonl line {line} (sample {sample}) says "
                "token_count {count}")


def _scan_shard(chk: Checker, meta: output_files.Metadata, unit: int, rel: str, hashed: bool = False) -> _ShardScan:
    """Check every record of one shard; with ``hashed``, the file's sha256 too, from the
    same reads (the records in order, then any incomplete tail)."""
    full = storage.join(meta.path, *rel.split("/"))
    data = storage.read_bytes(full) if not storage.is_local(full) else None
    size = len(data) if data is not None else storage.size(full)
    rb = meta.record_bytes(unit)
    complete = size // rb
    sha = hashlib.sha256() if hashed else None
    if size % rb:
        chk.problem(rel, f"truncated: {size} bytes is not a whole number of {rb}-byte records "
                         f"({size % rb} bytes of an incomplete record after {complete} records)",
                    record=complete)
    if complete == 0:
        if sha is not None:
            sha.update(data if data is not None else storage.read_bytes(full))
        return _ShardScan(0, np.zeros(0, np.int64), np.zeros(0, np.int64), sha and sha.hexdigest())
    slots = meta.slots(unit)
    if data is not None:
        arr = np.frombuffer(data, dtype=meta.dtype, count=complete * slots).reshape(complete, slots)
    else:
        arr = np.memmap(full, dtype=meta.dtype, mode="r", shape=(complete, slots))
    n = meta.n_segments
    totals = np.zeros(complete, np.int64)
    unk = np.zeros(complete, np.int64)
    failing: dict = {kind: [] for kind in _LISTED}     # kind -> failing records, a chunk at a time
    facts: dict = {kind: {} for kind in _LISTED}       # kind -> {record: facts}, of the ones listed
    step = max(1, _CHUNK_SLOTS // slots)
    for start in range(0, complete, step):
        chunk = np.asarray(arr[start:start + step])
        if sha is not None:
            sha.update(chunk)
        found = check_records(meta, unit, chunk)
        totals[start:start + chunk.shape[0]] = found.total
        for kind in _LISTED:
            bad = found.failing(kind)
            if len(bad):
                failing[kind].append(bad + start)
                for j in bad[:LISTED_PER_CHECK + 1 - len(facts[kind])].tolist():
                    facts[kind][start + j] = found.facts(kind, j)
        if meta.unk_id is not None:
            unk[start:start + chunk.shape[0]] = ((chunk[:, 1 + n:] == meta.unk_id) & found.written).sum(axis=1)
    for kind, wording in _LISTED.items():
        bad = np.concatenate(failing[kind]) if failing[kind] else np.zeros(0, np.int64)
        chk.per_record(rel, bad, lambda r, kind=kind, wording=wording: wording.format(**facts[kind][r]))
    if sha is not None and size % rb:
        if data is not None:
            sha.update(data[complete * rb:])
        else:
            with open(full, "rb") as f:
                f.seek(complete * rb)
                sha.update(f.read())
    return _ShardScan(complete, totals, unk, sha and sha.hexdigest())


# --------------------------------------------------------------------------- checksums


def _read_checksums(chk: Checker, meta: output_files.Metadata) -> Optional[dict]:
    """``{path: sha256}`` from ``SHA256SUMS``, after checking that file against the
    sha256 the manifest records for it; None (and a problem) when there is none."""
    info = meta.manifest.get("checksums")
    if not isinstance(info, dict) or info.get("file") != CHECKSUMS or not isinstance(info.get("sha256"), str):
        chk.problem(names.MANIFEST, f"records no checksums ({{\"file\": \"{CHECKSUMS}\", \"sha256\": ...}}), so a "
                                 f"changed token cannot be found: rebuild the dataset with this version, or "
                                 f"pass --no-checksums to run the other checks only")
        return None
    try:
        data = storage.read_bytes(storage.join(meta.path, CHECKSUMS))
    except FileNotFoundError:
        chk.problem(CHECKSUMS, "file is missing (manifest.json records its sha256)")
        return None
    got = hashlib.sha256(data).hexdigest()
    if got != info["sha256"]:
        chk.problem(CHECKSUMS, f"sha256 is {got}, manifest.json records {info['sha256']} (the file changed "
                               f"after the build)")
    sums, bad = parse_checksums(data)
    for n in bad:
        chk.problem(CHECKSUMS, "not a '<sha256 hex>  <path>' line", line=n)
    return sums


def _compare_checksums(chk: Checker, meta: output_files.Metadata, scans: dict, sums: dict) -> None:
    """Every data file against its ``SHA256SUMS`` line, and every line against a file.

    Shards were hashed while they were scanned (one read); the index and summary files
    are read here. Only names a dataset holds are opened, never a path the listing
    makes up.
    """
    data_files = {name: None for name in index_file_names(meta) + list(SUMMARY_FILES) + [LENGTH_FIELD]}
    for unit, shards in scans.items():
        for k, scan in enumerate(shards):
            if scan is not _MISSING_SHARD:
                data_files[meta.shard_path(unit, k)] = scan.sha256
    checked = 0
    for name in sorted(set(sums) - set(data_files)):
        why = "does not exist" if _SHARD_PATH.fullmatch(name) else "is not a data file of a mintdim dataset"
        chk.problem(CHECKSUMS, f"lists {name}, which {why}")
    fetched: dict = {}
    if not storage.is_local(meta.path):
        # On an object store the index parts and summaries are fetched ahead, one
        # request each, rather than asked for one after another.
        names = [name for name, got in data_files.items() if got is None]
        fetched = {name: None if data is None else hashlib.sha256(data).hexdigest() for name, (_, data)
                   in zip(names, output_files.read_files([storage.join(meta.path, *n.split("/")) for n in names]))}
    for name, got in data_files.items():
        path = storage.join(meta.path, *name.split("/"))
        if got is None and name in fetched:
            got = fetched[name]
            if got is None:
                continue           # reported as missing already
        elif got is None:
            if not storage.exists(path):
                continue           # reported as missing already
            try:
                got = _file_sha256(path)
            except (OSError, read_errors.ReaderError):
                continue           # not a file (a directory in its place): reported already
        want = sums.get(name)
        if want is None:
            chk.problem(name, f"{CHECKSUMS} has no line for this file")
        elif got != want:
            chk.problem(name, f"sha256 is {got}, {CHECKSUMS} records {want} (the file changed after the build)")
        checked += 1
    chk.report.checksummed = checked


def index_file_names(meta: output_files.Metadata) -> list:
    """The index files of the dataset, relative to it: the five files, or with
    ``index_layout: parts`` each per-block index's parts (``sample_index/part-00000.jsonl``, ...)."""
    base = len(storage.join(meta.path, ""))
    return [p[base:].replace(os.sep, "/") for name in INDEX_FILES for p in output_files.index_paths(meta.path, name, meta.manifest)]


def _index_file_sizes(meta: output_files.Metadata, chk: Optional[Checker] = None) -> dict:
    """``{index file relative to the dataset: size, or None when absent}``, as
    :func:`index_file_names` orders them (one listing per parts folder remotely).

    With ``chk``, index files the layout does not name are problems too: a part beyond
    the manifest's count, a single-file index beside its parts folder, a parts folder
    beside a single file. Nothing reads them, so they would pass unseen. The parts
    folders' listing is the one the sizes come from; the other two are looked for on
    a local disk only (on a store each would cost requests per index)."""
    base = len(storage.join(meta.path, ""))
    rel = lambda p: p[base:].replace(os.sep, "/")   # noqa: E731
    sizes = {}
    for name in INDEX_FILES:
        paths = output_files.index_paths(meta.path, name, meta.manifest)
        stem = name.rsplit(".", 1)[0]
        parts = paths != [storage.join(meta.path, name)]
        local = storage.is_local(meta.path)
        if parts and not local:

            listed = storage.files_and_sizes(posixpath.dirname(paths[0]))
            found = {p: listed.get(p) for p in paths}
            extra = sorted(rel(p) for p in set(listed) - set(paths))
        else:
            found = output_files.index_sizes(meta.path, name, meta.manifest)
            expected = {rel(p) for p in paths}
            extra = [f"{stem}/{n}" for n in storage.list_dir(storage.join(meta.path, stem))
                     if f"{stem}/{n}" not in expected] if local else []
        sizes.update((rel(p), size) for p, size in found.items())
        if chk is None:
            continue
        for n in extra:
            chk.problem(n, f"not one of the {name} parts manifest.json counts")
        if parts and local and os.path.lexists(storage.join(meta.path, name)):
            chk.problem(name, f"stray file: the manifest publishes this index as parts in {stem}/")
    return sizes


def _unreadable_index(chk: Checker, meta: output_files.Metadata, name: str) -> bool:
    """Whether index file ``name`` (relative), absent by its size, is there in some
    form on a local disk: a directory in its place, or its parts folder a file. Then
    it is listed as unreadable, with the system's words, rather than as missing."""
    full = storage.join(meta.path, *name.split("/"))
    if not storage.is_local(full):
        return False
    folder = os.path.dirname(full)
    if folder != storage.join(meta.path, "").rstrip(os.sep) and os.path.lexists(folder) and not os.path.isdir(folder):
        if not any(p.file == name.split("/")[0] for p in chk.report.problems):
            chk.problem(name.split("/")[0], "not a directory: manifest.json publishes this index as parts "
                                            "in this folder")
        return True
    if os.path.lexists(full) and not os.path.isfile(full):
        why = "Is a directory" if os.path.isdir(full) else "not a regular file"   # never opened: a FIFO blocks
        chk.problem(name, f"cannot be read ({why}; an index file is a file of JSON lines)")
        return True
    return False


def _file_sha256(path: str) -> str:
    """A file's sha256, read 4 MiB at a time (a local path that is not a regular file
    is a ReaderError, never a blocking read)."""
    sha = hashlib.sha256()
    if storage.is_local(path):
        for chunk in output_files.file_pieces(path, 1 << 22):
            sha.update(chunk)
    else:
        sha.update(storage.read_bytes(path))
    return sha.hexdigest()


# --------------------------------------------------------------------------- sample index


def _check_sample_index(chk: Checker, meta: output_files.Metadata, index: sample_index.SampleIndex, scans: dict) -> None:
    name = names.SAMPLE_INDEX
    sps = meta.samples_per_shard
    ids = index.sample_id
    lines = index.row_line
    if len(ids) > 1:
        for k in np.nonzero(ids[1:] <= ids[:-1])[0][:LISTED_PER_CHECK].tolist():
            chk.problem(name, f"sample_id {int(ids[k + 1])} is not above the previous row's {int(ids[k])} "
                              f"(rows must be in ascending sample_id)", line=int(lines[k + 1]))
    sources = set((meta.manifest.get("source") or {}).get("files") or [])
    if sources:
        for f, fname in enumerate(index.files):
            if fname not in sources:
                k = int(np.argmax(index.file == f))
                chk.problem(name, f"source_file {fname!r} is not among the manifest's source files",
                            line=int(lines[k]))
    claimed: dict = {}     # (unit, shard) -> claims per record
    dangling: dict = {}    # shard path -> rows pointing past its records
    for unit in sorted(set(index.unit.tolist())):
        rows = np.nonzero(index.unit == unit)[0]
        if unit not in scans:
            for k in rows[:LISTED_PER_CHECK].tolist():
                chk.problem(name, f"unit_size {unit} is not in manifest units.sizes {list(meta.unit_sizes)}",
                            line=int(lines[k]))
            continue
        pos = index.positions(sps)[rows]
        for k in np.nonzero(pos[1:] <= pos[:-1])[0][:LISTED_PER_CHECK].tolist():
            chk.problem(name, f"sample {int(ids[rows[k + 1]])} is stored before sample {int(ids[rows[k]])} "
                              f"in unit {unit}; records must be in ascending sample_id",
                        line=int(lines[rows[k + 1]]))
        held, totals = [], []     # rows pointing to a record of the unit, and its header length sum
        for r in rows.tolist():
            shard, rec = int(index.shard[r]), int(index.record[r])
            rel = meta.shard_path(unit, shard)
            if shard >= len(scans[unit]) or rec >= scans[unit][shard].records or rec >= sps:
                dangling.setdefault(rel, []).append(r)
                continue
            claimed.setdefault((unit, shard), np.zeros(scans[unit][shard].records, np.int64))[rec] += 1
            held.append(r)
            totals.append(int(scans[unit][shard].totals[rec]))
        found = check_token_counts(np.asarray(totals, np.int64), index.token_count[held])
        for j in found.failing("token_count").tolist():
            r = held[j]
            chk.problem(meta.shard_path(unit, int(index.shard[r])), _TOKEN_COUNT.format(
                line=int(lines[r]), sample=int(ids[r]), **found.facts("token_count", j)), record=int(index.record[r]))
    for rel, rows in dangling.items():
        for r in rows[:LISTED_PER_CHECK]:
            chk.problem(name, f"sample {int(ids[r])} points to record {int(index.record[r])} of {rel}, "
                              f"which does not exist", line=int(lines[r]))
        if len(rows) > LISTED_PER_CHECK:
            chk.problem(name, f"... and {len(rows) - LISTED_PER_CHECK} more rows point to missing records of {rel}")
    for unit, shards in scans.items():
        for shard, scan in enumerate(shards):
            rel = meta.shard_path(unit, shard)
            got = claimed.get((unit, shard), np.zeros(scan.records, np.int64))
            chk.per_record(rel, np.nonzero(got == 0)[0], lambda r: "no sample_index.jsonl row points to this record")
            chk.per_record(rel, np.nonzero(got > 1)[0],
                           lambda r: f"{int(got[r])} sample_index.jsonl rows point to this record")


def _check_side_indexes(chk: Checker, meta: output_files.Metadata, index: sample_index.SampleIndex, scans: dict) -> dict:
    """Duplicate, UNK, overflow and bad-record indexes; returns their recounted figures."""
    row_of = dict(zip(index.sample_id.tolist(), range(len(index))))
    counts = {"duplicate_groups": 0, "duplicate_samples": 0, "samples_with_unk": 0, "unk_tokens": 0,
              "overflow_samples": 0, "bad_records": 0}

    def rows(name, keyed=True):
        try:
            for n, row in output_files.iter_index(meta.path, name, meta.manifest):
                if row is output_files.BLANK_LINE:
                    chk.problem(name, "blank line: the build never writes one (a line was inserted or the file "
                                      "edited)", line=n)
                    continue
                if not isinstance(row, dict) or (keyed and not isinstance(row.get("sample_id"), int)):
                    chk.problem(name, "row is not a JSON object" + (" with an integer sample_id" if keyed else ""),
                                line=n)
                    continue
                yield n, row
        except read_errors.ReaderError:
            return      # a file that cannot be read: listed with the index files

    last = -1
    for n, row in rows(names.DUPLICATE_INDEX, keyed=False):
        members = row.get("samples") or []
        sids = [m.get("sample_id") for m in members if isinstance(m, dict)]
        counts["duplicate_groups"] += 1
        counts["duplicate_samples"] += len(members)
        if row.get("count") != len(members) or len(members) < 2:
            chk.problem(names.DUPLICATE_INDEX, f"count {row.get('count')!r} but {len(members)} samples "
                                                  f"(a group holds at least 2)", line=n)
        if sids != sorted(sids) or (sids and sids[0] <= last):
            chk.problem(names.DUPLICATE_INDEX, "groups must be ordered by first sample_id, members ascending",
                        line=n)
        last = sids[0] if sids else last
        for sid in sids:
            r = row_of.get(sid)
            if r is not None and index.hash(r) != row.get("hash"):
                chk.problem(names.DUPLICATE_INDEX, f"sample {sid} has hash {index.hash(r)} in sample_index.jsonl, "
                                                      f"not the group's {row.get('hash')}", line=n)

    unk_rows: dict = {}
    for n, row in rows(names.UNK_INDEX):
        sid = row["sample_id"]
        positions = row.get("unk_positions") or []
        counts["samples_with_unk"] += 1
        counts["unk_tokens"] += len(positions)
        unk_rows[sid] = n
        if row.get("unk_count") != len(positions) or len(row.get("unk_chars") or []) != len(positions) \
                or len(row.get("unk_field_indices") or []) != len(positions):
            chk.problem(names.UNK_INDEX, "unk_count, unk_positions, unk_field_indices and unk_chars disagree "
                                           "in length", line=n)
        r = row_of.get(sid)
        if r is None:
            chk.problem(names.UNK_INDEX, f"sample {sid} has no sample_index.jsonl row", line=n)
            continue
        unit, shard, rec = int(index.unit[r]), int(index.shard[r]), int(index.record[r])
        if unit not in scans or shard >= len(scans[unit]) or rec >= scans[unit][shard].records:
            continue
        found = int(scans[unit][shard].unk[rec])
        if meta.unk_id is not None and found != len(positions):
            chk.problem(meta.shard_path(unit, shard), f"payload holds {found} UNK tokens (id {meta.unk_id}) but "
                                                      f"unk_index.jsonl line {n} lists {len(positions)}", record=rec)
    if meta.unk_id is not None:
        for unit, shards in scans.items():
            for shard, scan in enumerate(shards):
                with_unk = np.nonzero(scan.unk)[0]
                if not len(with_unk):
                    continue
                listed = set()
                for r in np.nonzero((index.unit == unit) & (index.shard == shard))[0].tolist():
                    if int(index.sample_id[r]) in unk_rows:
                        listed.add(int(index.record[r]))
                missing = np.asarray([x for x in with_unk.tolist() if x not in listed], np.int64)
                chk.per_record(meta.shard_path(unit, shard), missing,
                               lambda x: "payload holds UNK tokens but no unk_index.jsonl row lists its sample")

    last = -1
    for n, row in rows(names.OVERFLOW_INDEX):
        counts["overflow_samples"] += 1
        sid, action = row["sample_id"], row.get("action")
        if sid <= last:
            chk.problem(names.OVERFLOW_INDEX, "rows must be in ascending sample_id", line=n)
        last = sid
        if action not in ("truncate", "skip", "extend"):
            chk.problem(names.OVERFLOW_INDEX, f"action {action!r} is not truncate, skip or extend", line=n)
        elif (action == "skip") != (sid not in row_of):
            chk.problem(names.OVERFLOW_INDEX, f"sample {sid} ({action}) "
                        + ("still has a sample_index.jsonl row" if action == "skip" else "has no sample_index.jsonl row"),
                        line=n)
        if action == "extend" and row.get("new_unit_size") not in meta.unit_sizes:
            chk.problem(names.OVERFLOW_INDEX, f"new_unit_size {row.get('new_unit_size')!r} is not in "
                                                f"manifest units.sizes", line=n)
    last = -1
    for n, row in rows(names.BAD_RECORD_INDEX):
        counts["bad_records"] += 1
        sid = row["sample_id"]
        if sid <= last:
            chk.problem(names.BAD_RECORD_INDEX, "rows must be in ascending sample_id", line=n)
        last = sid
        if sid in row_of:
            chk.problem(names.BAD_RECORD_INDEX, f"bad record {sid} also has a sample_index.jsonl row", line=n)
    return counts


# --------------------------------------------------------------------------- summaries


def _check_summaries(chk: Checker, meta: output_files.Metadata, scans: dict, counts: dict, files: dict) -> None:
    samples = {u: sum(s.records for s in scans[u]) for u in meta.unit_sizes}
    tokens = {u: sum(int(s.totals.sum()) for s in scans[u]) for u in meta.unit_sizes}
    shards = {u: sum(1 for s in scans[u] if s.records) for u in meta.unit_sizes}
    unk_found = sum(int(s.unk.sum()) for u in scans for s in scans[u])
    histogram = {str(u): samples[u] for u in meta.unit_sizes}
    hist = files.get(names.HISTOGRAM)
    if hist is not None:
        if not isinstance(hist, dict) or list(hist) != list(histogram):
            chk.problem(names.HISTOGRAM, f"keys {list(hist) if isinstance(hist, dict) else hist!r} are not "
                                          f"the unit sizes {list(histogram)}")
        else:
            for key, want in histogram.items():
                if hist[key] != want:
                    chk.problem(names.HISTOGRAM, f"unit {key}: {hist[key]!r} samples, recounted {want} "
                                                  f"records in unit_{key}/")
    stats = files.get(names.STATS)
    if stats is None:
        return
    if not isinstance(stats, dict):
        chk.problem(names.STATS, "must hold a JSON object")
        return
    slots = sum(samples[u] * u for u in meta.unit_sizes)
    total_tokens = sum(tokens.values())
    dtype = "uint16" if meta.dtype.itemsize == 2 else "uint32"
    expected = {
        "total_samples": sum(samples.values()),
        "total_tokens": total_tokens,
        "token_dtype": dtype,
        "bytes_per_token": meta.dtype.itemsize,
        "duplicate_groups": counts["duplicate_groups"],
        "duplicate_samples": counts["duplicate_samples"],
        "samples_with_unk": counts["samples_with_unk"],
        "unk_tokens": counts["unk_tokens"],
        "unit_distribution": histogram,
        "pad_tokens": slots - total_tokens,
        "padding_ratio": (slots - total_tokens) / slots if slots else 0.0,
        "bad_records": counts["bad_records"],
        "overflow_samples": counts["overflow_samples"],
        "shards": sum(shards.values()),
        "units": {str(u): {"samples": samples[u], "tokens": tokens[u], "pad_tokens": samples[u] * u - tokens[u],
                           "padding_ratio": (samples[u] * u - tokens[u]) / (samples[u] * u) if samples[u] else 0.0,
                           "shards": shards[u]} for u in meta.unit_sizes},
    }
    where = {"duplicate_groups": names.DUPLICATE_INDEX, "duplicate_samples": names.DUPLICATE_INDEX,
             "samples_with_unk": names.UNK_INDEX, "unk_tokens": names.UNK_INDEX,
             "bad_records": names.BAD_RECORD_INDEX, "overflow_samples": names.OVERFLOW_INDEX}
    for key, want in expected.items():
        _compare(chk, names.STATS, key, stats.get(key, "<missing>"), want,
                 f"recounted from {where.get(key, 'the shards')}")
    if meta.unk_id is not None and unk_found != counts["unk_tokens"]:
        chk.problem(names.UNK_INDEX, f"lists {counts['unk_tokens']} UNK tokens but the shards' written payloads "
                                       f"hold {unk_found} tokens with the unk id {meta.unk_id}")


def _compare(chk: Checker, file: str, key: str, got, want, source: str) -> None:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            chk.problem(file, f"{key} is {got!r}, expected an object")
            return
        for k in sorted(set(got) - set(want)):
            chk.problem(file, f"{key}.{k} is not expected (no such unit)")
        for k, w in want.items():
            _compare(chk, file, f"{key}.{k}", got.get(k, "<missing>"), w, source)
        return
    if isinstance(want, float):
        same = isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - want) <= 1e-12 * max(1.0, abs(want))
    else:
        same = type(got) is type(want) and got == want
    if not same:
        chk.problem(file, f"{key} is {got!r}, {source}: {want!r}")
