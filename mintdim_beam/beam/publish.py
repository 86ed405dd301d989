"""Finalize: publish staged shards and index parts, or mark the build as failed.

Runs once, after every shard and index part is staged. Publishing moves shards to their
final names, concatenates index parts in sample order, writes the summary files and
``manifest.json`` last, then removes the staging area. Every step is idempotent: a
finalize retried after a crash (or simply run twice) skips what is already published
and rewrites the rest with identical bytes.

On a policy ``abort`` the plan carries the first error (or the first guard rail an
output failed, ``core.limits``; finalize checks ``max_unk_fraction`` itself, from the
index parts' counts, before publishing anything); nothing is published, every
declared unit gets ``UNIT_BUILD_FAILED.md`` with the bilingual message, and the error
record is kept in staging. The pipeline itself completes (an abort is an answer, not a
crash) and yields the error per output; the launcher raises the spec's error class.

The launcher writes ``UNIT_BUILD_FAILED.md`` markers saying "not finalized" before the
build starts (:func:`mark_started`), so even a launcher killed with SIGKILL leaves a
marker; publishing removes them after ``manifest.json`` is written.

``manifest.json`` carries the build fingerprint (:func:`fingerprint`): size and
sha256 of every input and tokenizer file, a hash of the resolved configuration and the
versions of the code that shapes the bytes. It does not depend on the runner, the
block size or ``build_batch``. A versioned root (``ROOT/<build-id>/`` and a ``ROOT/LATEST``
pointer, see :func:`write_latest`) lets a scheduler skip a build whose fingerprint
equals the latest one.
"""

from __future__ import annotations

import errno
import hashlib
import heapq
import json
import logging
import os
from typing import Optional

from mintdim_beam.version import __version__
from mintdim_beam.beam import claims
from mintdim_beam.storage import compose
from mintdim_beam.core import indexes
from mintdim_beam.core import limits
from mintdim_beam.beam import layout
from mintdim_beam.storage import files as storage
from mintdim_beam.core.config import BuildConfig, OutputSpec, describe_sources
from mintdim_beam.format.chat import PARTS_PER_MESSAGE, chat_layout
from mintdim_beam import errors
from mintdim_beam.errors import error_from_dict
from mintdim_beam.core.plan import BuildPlan
from mintdim_beam.format.shard_format import TokenStorage, slot_storage
from mintdim_beam.tokenization.adapters import open_tokenizer
from mintdim_beam.tokenization.special_tokens import locate
from mintdim_beam.format import names
from mintdim_beam.format.names import DUPLICATE_INDEX, PER_BLOCK_INDEXES, IndexLayout

log = logging.getLogger(__name__)



_FIRST_ID = b'"sample_id":'


def _first_sample_id(row: bytes) -> int:
    """The first member's sample id of a ``duplicate_index.jsonl`` row."""
    start = row.index(_FIRST_ID) + len(_FIRST_ID)
    return int(row[start:row.index(b",", start)])


def _rows(path: str):
    for row in storage.iter_lines(path):
        yield _first_sample_id(row), row


def _merge_duplicate_parts(paths: list):
    """Rows of the duplicate tasks' files (each sorted by first sample id), merged.

    Tasks split the digest space, not the samples, so their files interleave; the
    merge streams them, holding one chunk of each file.
    """
    for _, row in heapq.merge(*(_rows(p) for p in paths)):
        yield row


def _failure_text(message: str) -> str:
    return (
        "# Unit build failed\n\n"
        "This unit was not finalized: the build stopped before publishing.\n\n"
        "```\n" + message + "\n```\n"
    )


def _started_text(build_info: dict) -> str:
    return (
        "# Unit build failed\n\n"
        "This unit is not finalized. A build started at "
        f"{build_info.get('started_at', '?')} on {build_info.get('runner', '?')} and has not "
        "published it: either it is still running, or it was interrupted (launcher killed, "
        "workers lost) and nothing can be trusted here. A build that finishes removes this "
        "file after writing manifest.json; a build that fails replaces this text with its "
        "error.\n"
    )


def _write_markers(out: OutputSpec, text: str) -> None:
    for unit in out.sizes:
        path = storage.join(layout.unit_dir(out.path, unit), names.FAILED_MARKER)
        try:
            storage.write_text(path, text)
        except OSError as exc:
            if exc.errno != errno.ENOSPC or not _rewrite_in_place(path, text.encode("utf-8")):
                raise


def _rewrite_in_place(path: str, data: bytes) -> bool:
    """On a full disk, a local marker that is there is rewritten in its own blocks (a
    small file's block holds 4 KiB): the failure still says what happened."""
    if not storage.is_local(path) or not os.path.isfile(path) or len(data) > 4096:
        return False
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate(len(data))
    return True


def _remove_markers(out: OutputSpec) -> None:
    for unit in out.sizes:
        storage.delete(storage.join(layout.unit_dir(out.path, unit), names.FAILED_MARKER))


def mark_started(config: BuildConfig, build_info: dict) -> None:
    """Before the build: every declared unit says "not finalized" until publish, and
    the staging area exists, private to this build's user (``layout.make_staging``)."""
    for out in config.outputs:
        layout.make_staging(out)
        _write_markers(out, _started_text(build_info))


def mark_failed(config: BuildConfig, message: str, error: dict | None = None) -> None:
    """Write ``UNIT_BUILD_FAILED.md`` in every declared unit of every output it owns.

    An output another build claimed is that build's: a losing build leaves it alone.
    The claim is released once the markers say what happened: the directory then holds
    a failed build (``OutputValidationError`` for the next one, as any non-empty
    directory), while a claim left behind means a build is running or was killed.
    """
    for out in config.outputs:
        if storage.exists(storage.join(out.path, names.MANIFEST)) or claims.claimed_by_other(out.path, out.run_id):
            continue
        _write_markers(out, _failure_text(message))
        if error is not None:
            storage.write_text(storage.join(layout.staging_dir(out), names.ERROR_RECORD),
                               json.dumps(error, ensure_ascii=False, indent=2) + "\n")
        claims.release(out.path, out.run_id)


def finalize(config: BuildConfig, plan: BuildPlan, shard_results, part_results, dup_results,
             build_info: dict, digests: Optional[dict] = None, tokenizers: Optional[dict] = None,
             listed_sizes: Optional[dict] = None):
    """Publish every output (yielding one result dict each) or fail the whole build.

    ``digests`` maps every input and tokenizer path to ``(size, sha256)`` for the
    manifest's fingerprint; ``tokenizers`` (tokenizer spec -> adapter) are the ones the
    worker already loaded, else each output loads its own. ``listed_sizes``: each
    input's size as the blocks were planned from it (``{path: size}``); an input that
    is not that size any more, or was hashed at another, fails the build. Running it
    again (a retried finalize) gives the same files.
    """
    # Every output must still be this build's (claims.py) before anything is published:
    # the build that lost a race on an object store stops here, its staging removed.
    claimed = bool(build_info.get("claimed"))
    for out in config.outputs:
        _check_owned(out, claimed)
    error = plan.error if plan.error is not None else _changed_input(config, digests, listed_sizes)
    if error is None:
        error = limits.unk_error(config, plan.outputs, _unk_counts(part_results))
    if error is not None:
        mark_failed(config, str(error_from_dict(error)), error)
        for out in config.outputs:
            for sub in ("blocks", "shards", "parts"):
                storage.delete_tree(storage.join(layout.staging_dir(out), sub))
            yield {"output": out.path, "error": error}
        return
    # A build is one unit: every output's files first, then every manifest, so that a
    # failure anywhere (a full disk, a store that stops answering) leaves no output
    # that looks complete while another is not.
    staged = []
    for out in config.outputs:
        shards = sorted((r.unit, r.shard, r.samples, r.bytes) for r in shard_results if r.output == out.index)
        if _published_by_this_build(out):
            # Published already (a retried finalize): finish the clean-up it may have missed.
            stats = json.loads(storage.read_bytes(storage.join(out.path, names.STATS)))
            staged.append((out, None, stats, shards))
            continue
        found, stats = publish_output(config, out, plan, shard_results, part_results, dup_results, build_info,
                                      digests, (tokenizers or {}).get(out.tokenizer))
        staged.append((out, found, stats, shards))
    for out, found, _, _ in staged:
        if found is not None:       # durable before the manifests vouch for them
            storage.sync_tree(out.path, skip=(names.STAGING,))
    committed = []
    try:
        for out, found, _, _ in staged:
            if found is not None:
                _check_owned(out, claimed)   # once more: a claim can change (or be released) under a build
                storage.write_text(storage.join(out.path, names.MANIFEST), indexes.dumps_file(found), durable=True)
                committed.append(out)
        # Readers refuse a unit with its marker even beside a manifest: the build is
        # published once every marker is gone, and a store that fails a marker's
        # DELETE for good fails the build like a failed manifest PUT.
        for out, _, _, _ in staged:
            _remove_markers(out)
    except BaseException:
        for out in committed:       # none of them may look complete
            try:
                storage.delete(storage.join(out.path, names.MANIFEST))
            except Exception:       # the store failing this too: the error to report is the first
                log.warning("could not remove %s after a failed publish", storage.join(out.path, names.MANIFEST))
        raise
    for out, _, stats, shards in staged:
        # Published: a store failing now leaves a staging area or a claim behind, not a
        # dataset that is not one. The launcher says so (``claims.read`` after the run).
        try:
            _remove_staging(out)
            claims.release(out.path, out.run_id)
        except errors.StoreRequestError as exc:
            log.warning("%s is published; its clean-up failed: %s", out.path, exc.english)
        yield {"output": out.path, "stats": stats, "shards": shards}


def _unk_counts(part_results) -> dict:
    """output index -> (UNK tokens, samples with UNK) of its written payloads, as the
    index parts counted them (the figures ``stats.json`` gets)."""
    counts: dict = {}
    for r in part_results:
        unk, samples = counts.get(r.output, (0, 0))
        counts[r.output] = (unk + r.unk_tokens, samples + r.samples_with_unk)
    return counts


def _changed_input(config: BuildConfig, digests: Optional[dict], listed_sizes: Optional[dict]) -> Optional[dict]:
    """The error (as a dict) when an input is not the bytes the build read: its size now,
    or as the fingerprint hashed it, differs from the size the blocks were planned from.
    The fingerprint must vouch for exactly what the dataset holds: a line appended while
    the build ran would be fingerprinted and never built."""
    listed_sizes = listed_sizes or {}
    now_sizes = storage.sizes_or_none(sorted(listed_sizes))   # one listing a folder of many, as at launch
    for path, listed in sorted(listed_sizes.items()):
        now = now_sizes.get(path)
        now = -1 if now is None else now
        hashed = (digests or {}).get(path, (listed,))[0]
        if now != listed or hashed != listed:
            return errors.InputChangedError(path, listed, now if now != listed else hashed).to_dict()
    return None


def publish_output(config: BuildConfig, out: OutputSpec, plan: BuildPlan, shard_results, part_results,
                   dup_results, build_info: dict, digests: Optional[dict] = None, tok=None) -> tuple:
    """Every file of one output but its manifest; returns ``(manifest, stats)``, the
    manifest written by :func:`finalize` once every output got this far."""
    oplan = plan.outputs[out.index]
    shards = sorted((r.unit, r.shard, r.samples, r.bytes) for r in shard_results if r.output == out.index)

    if tok is None:
        tok = open_tokenizer(out.tokenizer.kind, out.tokenizer.path, storage.read_bytes, exists=storage.exists)
    # Staged files go as soon as nothing needs them: the spills now (only the write
    # stage read them), each index's parts once the index is written. Their pages are
    # then never written back, and the pages the index files dirty replace theirs: at
    # four times the XCOPA corpus, 2.2 GB were dirty when publishing began, and copying
    # 1.2 GB of index parts on top of them crossed the kernel's threshold, where it
    # holds writers to the disk's pace (docs/decisions.md).
    storage.delete_tree(layout.spills_dir(out))
    blocks = sorted(key for key, bp in plan.blocks.items() if bp.output == out.index)
    # The parts each block wrote (empty ones are not; a part of a run of blocks is named
    # by its first, the others wrote none); a block without a result counts as having
    # written all, so a missing part fails the copy rather than vanish.
    written = {}
    for r in part_results:
        if r.output == out.index:
            written.update(dict.fromkeys(r.blocks, ()))
            written[(r.file, r.block)] = r.written
    dups = sorted((r.task, r.groups, r.samples) for r in dup_results if r.output == out.index)
    sums = {}   # path in the output -> sha256 hex: every data file, for SHA256SUMS
    part_sums = {(r.file, r.block): dict(r.sha256) for r in part_results if r.output == out.index}
    for name in PER_BLOCK_INDEXES + (DUPLICATE_INDEX,):
        if config.index_layout == IndexLayout.PARTS and name != DUPLICATE_INDEX:
            sums.update(_publish_parts(out, name, blocks, part_sums))
            storage.delete_tree(layout.parts_dir(out, name))
            continue
        final = storage.join(out.path, name)
        # The output directory was new or empty when the build began (preflight), and an
        # index file appears whole (a renamed temporary file, or one object): if it is
        # here, an earlier attempt of this finalize wrote it and may have removed its
        # parts.
        if not storage.exists(final):
            sha = hashlib.sha256()
            if name == DUPLICATE_INDEX:
                storage.write_bytes(final, _merge_duplicate_parts(
                    [layout.duplicate_part_path(out, t) for t, groups, _ in dups if groups]), sha=sha)
            else:
                compose.concatenate(final, [layout.part_path(out, name, f, b) for f, b in blocks
                                            if name in written.get((f, b), PER_BLOCK_INDEXES)], sha=sha)
            sums[name] = sha.hexdigest()
        else:
            sums[name] = storage.file_digest(final)[1]
        storage.delete_tree(layout.parts_dir(out, name))

    for r in shard_results:
        if r.output == out.index:
            sums[f"unit_{r.unit}/shard_{r.shard:06d}.bin"] = r.sha256
    for unit, shard, _, _ in shards:
        staged = layout.staged_shard(out, unit, shard)
        if storage.exists(staged):
            storage.rename(staged, layout.final_shard(out.path, unit, shard))
    for unit in oplan.sizes:
        if oplan.samples.get(unit, 0) == 0:
            storage.write_text(
                storage.join(layout.unit_dir(out.path, unit), names.EMPTY_MARKER),
                f"# Empty unit\n\nNo sample was assigned to unit_size {unit}; this unit has no shards.\n",
            )

    parts = [r for r in part_results if r.output == out.index]
    slots = output_storage(tok, oplan)
    stats = indexes.stats(
        oplan, slots,
        dup_groups=sum(d[1] for d in dups), dup_samples=sum(d[2] for d in dups),
        samples_with_unk=sum(p.samples_with_unk for p in parts),
        unk_tokens=sum(p.unk_tokens for p in parts),
    )
    summaries = {
        names.HISTOGRAM: indexes.histogram(oplan),
        names.STATS: stats,
        names.LENGTH_FIELD: indexes.length_field(slots, out.sequence_template, tok.pad_id, tok.unk_id,
                                                   output_chat(out)),
    }
    for name, content in summaries.items():
        data = indexes.dumps_file(content).encode("utf-8")
        storage.write_bytes(storage.join(out.path, name), data)
        sums[name] = hashlib.sha256(data).hexdigest()
    storage.write_text(storage.join(out.path, names.BUILD_INFO),
                       indexes.dumps_file({**build_info, "output": out.path, "run_id": out.run_id}))
    # SHA256SUMS before manifest.json, which records its checksum: the manifest, written
    # last, vouches for every byte of the dataset (build_info.json aside: it describes
    # the run, differs between runs, and holds no data).
    listing = indexes.checksums_file(sums)
    storage.write_bytes(storage.join(out.path, names.CHECKSUMS), listing)
    found = manifest(config, out, oplan, tok, digests)
    if config.index_layout == IndexLayout.PARTS:
        found["indexes"] = {"layout": IndexLayout.PARTS.value, "parts": {name: len(blocks) for name in PER_BLOCK_INDEXES}}
    found["checksums"] = {"file": names.CHECKSUMS, "sha256": hashlib.sha256(listing).hexdigest()}
    return found, stats


def _publish_parts(out: OutputSpec, name: str, blocks: list, part_sums: dict) -> dict:
    """``index_layout: parts``: each block's part of index ``name`` is renamed to
    ``<index>/part-NNNNN.jsonl``, numbered in block order; returns their sha256 for
    SHA256SUMS, as the workers that wrote the parts computed them.

    No byte goes through this worker: renames (server-side copies on object stores,
    ``compose.move``). A part already moved by an earlier attempt of this finalize is
    left as it is.
    """
    compose.move([(layout.part_path(out, name, f, b), layout.published_part(out.path, name, number))
                  for number, (f, b) in enumerate(blocks)])
    return {names.part_name(name, number): part_sums[key][name] for number, key in enumerate(blocks)}


def output_storage(tok, oplan) -> TokenStorage:
    """The output's slots, as the plan decided them for its shards (DESIGN.md §5)."""
    return slot_storage(tok.storage, oplan.largest_unit)


def _published_by_this_build(out: OutputSpec) -> bool:
    """``manifest.json`` is there and this build wrote it (its ``build_info.json`` says so)."""
    if not storage.exists(storage.join(out.path, names.MANIFEST)):
        return False
    info_path = storage.join(out.path, names.BUILD_INFO)
    info = json.loads(storage.read_bytes(info_path)) if storage.exists(info_path) else {}
    if info.get("run_id") == out.run_id:
        return True
    raise claims.claimed_error(out.path, {"run_id": info.get("run_id", "?")}, status="replaced")


def _check_owned(out: OutputSpec, claimed: bool = False) -> None:
    """Stop unless the output is still this build's; a loser removes its own staging.
    ``claimed``: the launcher claimed it (``build_info["claimed"]``)."""
    try:
        if not _published_by_this_build(out):
            claims.check_owned(out.path, out.run_id, claimed)
    except Exception:
        storage.delete_tree(layout.staging_dir(out))
        raise


def _remove_staging(out: OutputSpec) -> None:
    """This build's staging area, then the staging root if no other build's is left."""
    storage.delete_tree(layout.staging_dir(out))
    if storage.is_local(out.path):
        try:
            os.rmdir(layout.staging_root(out.path))
        except OSError:   # absent, or another build's staging is there
            pass


def _pair_policy(config: BuildConfig, out: OutputSpec) -> dict:
    """A pair output's manifest names its ``on_pair_collapse`` too; no other does."""
    if config.files_of(out)[0].pairs is None:
        return {}
    return {"on_pair_collapse": config.policies.on_pair_collapse}


def output_chat(out: OutputSpec) -> Optional[dict]:
    """A chat output's layout for its manifest and ``length_field.json``; None otherwise."""
    if not out.roles:
        return None
    return chat_layout(len(out.sequence_template) // PARTS_PER_MESSAGE, out.roles)


def manifest(config: BuildConfig, out: OutputSpec, oplan, tok, digests: Optional[dict] = None) -> dict:
    """manifest.json: what was built and how; nothing that varies between runs."""
    slots = output_storage(tok, oplan)
    found = {
        "pipeline": "unit-build",
        "mintdim_version": __version__,
        "tokenizer": tok.describe(),
        "token_storage": {
            "dtype": slots.dtype,
            "bytes_per_token": slots.bytes_per_token,
            "magic": slots.magic,
        },
        "sequence_template": list(out.sequence_template),
        **({"chat": output_chat(out)} if out.roles else {}),
        "length_field_metadata": names.LENGTH_FIELD,
        "units": {"sizes": list(oplan.sizes), "declared_sizes": list(oplan.declared)},
        "source": describe_sources(config, out),
        "output": {"samples_per_shard": out.samples_per_shard},
        "policies": {
            "on_overflow": config.policies.on_overflow,
            "on_template_unk": config.policies.on_template_unk,
            "on_bad_record": config.policies.on_bad_record,
            **_pair_policy(config, out),
        },
    }
    if digests is not None:
        found["fingerprint"] = fingerprint(config, out, digests)
    return found


# --------------------------------------------------------------------------- fingerprint

def _canonical(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def component_versions() -> dict:
    """Versions of the packages that can change the bytes of an output."""
    import sentencepiece
    import tokenizers

    return {"mintdim_beam": __version__, "tokenizers": tokenizers.__version__,
            "sentencepiece": sentencepiece.__version__}


def resolved_config(config: BuildConfig, out: OutputSpec) -> dict:
    """What the job asks of one output, without where it goes or how it is executed.

    Output paths (a versioned root puts each build elsewhere), ``block_size`` and
    ``build_batch`` (they never change the bytes) are left out on purpose; with
    ``index_layout: parts`` the layout and ``block_size`` are in (the index files
    are split where the blocks end).
    """
    found = {
        "pipeline": "unit-build",
        "source": describe_sources(config, out),
        "tokenizer": {"type": out.tokenizer.kind, "path": out.tokenizer.path},
        "sequence_template": list(out.sequence_template),
        "sizes": list(out.sizes),
        "samples_per_shard": out.samples_per_shard,
        "policies": {
            "on_overflow": config.policies.on_overflow,
            "on_template_unk": config.policies.on_template_unk,
            "on_bad_record": config.policies.on_bad_record,
            **_pair_policy(config, out),
        },
    }
    if config.index_layout != IndexLayout.FILE:
        # Other files, split where the blocks end: block_size changes them too.
        found["index_layout"] = config.index_layout.value
        found["block_size"] = config.block_size
    return found


def fingerprint(config: BuildConfig, out: OutputSpec, digests: dict, versions: Optional[dict] = None) -> dict:
    """The build fingerprint of one output; ``id`` hashes everything else in it.

    Two builds with the same ``id`` read the same bytes with the same tokenizer bytes,
    configuration and code versions, so they publish the same output.
    """
    def entry(path: str) -> dict:
        size, sha = digests[path]
        return {"path": path, "size": size, "sha256": sha}

    files = locate(out.tokenizer.kind, out.tokenizer.path, storage.exists)
    body = {
        "inputs": [entry(f.path) for f in config.files_of(out)],
        "tokenizer": entry(files.main),
        "config_sha256": hashlib.sha256(_canonical(resolved_config(config, out))).hexdigest(),
        "versions": versions if versions is not None else component_versions(),
    }
    if files.companions:    # the files that name its special tokens (DESIGN.md §8)
        body["tokenizer_companions"] = [entry(p) for p in files.companions]
    return {"id": hashlib.sha256(_canonical(body)).hexdigest(), **body}


# --------------------------------------------------------------------------- versioned roots


def read_latest(root: str) -> Optional[str]:
    """The build id ``ROOT/LATEST`` points to, or None."""
    path = storage.join(root, names.LATEST)
    if not storage.exists(path):
        return None
    return names.latest_build_id(storage.read_bytes(path))


def latest_fingerprint(root: str) -> Optional[str]:
    """The fingerprint id of the build ``ROOT/LATEST`` points to, or None."""
    build_id = read_latest(root)
    if build_id is None:
        return None
    path = storage.join(root, build_id, names.MANIFEST)
    if not storage.exists(path):
        return None
    found = json.loads(storage.read_bytes(path)).get("fingerprint") or {}
    return found.get("id")


def write_latest(root: str, build_id: str) -> None:
    """Point ``ROOT/LATEST`` at a published build, replacing it atomically.

    Locally the new text goes to a temporary file renamed over ``LATEST``; on object
    stores (gs://, s3://) one object upload replaces the old object in one step. A
    reader sees the old id or the new one, never a mix.
    """
    if not storage.exists(storage.join(root, build_id, names.MANIFEST)):
        raise FileNotFoundError(f"{root}/{build_id} is not a published build (no manifest.json)")
    storage.write_text(storage.join(root, names.LATEST), build_id + "\n", durable=True)


def write_latest_all(roots, build_id: str) -> None:
    """Move every root's ``LATEST`` to ``build_id``, or none: a root whose move fails
    (a full disk, a store that stops answering) puts the roots already moved back to
    the builds they named. SIGINT and SIGTERM wait until the moves are done, so an
    interrupted build never leaves one root at the new build and another at the old."""
    import signal
    import threading

    previous = {root: read_latest(root) for root in roots}
    masked = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) if masked else None
    moved = []
    try:
        for root in roots:
            write_latest(root, build_id)
            moved.append(root)
    except BaseException as exc:
        for root in moved:
            if previous[root] is None:
                storage.delete(storage.join(root, names.LATEST))
            else:
                storage.write_text(storage.join(root, names.LATEST), previous[root] + "\n")
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:   # the LATEST being written: its id
            raise errors.DiskFullError.at(exc.filename or "", len((build_id + "\n").encode("utf-8"))) from None
        raise
    finally:
        if masked:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
