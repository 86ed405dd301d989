"""``mintdim-beam verify | inspect | plan | report``: the commands that read a dataset.

    mintdim-beam verify DIR [DIR ...] [--tokenizer [PATH]] [--sample N]
    mintdim-beam inspect DIR (--sample-id N | --shard unit_S/shard_NNNNNN.bin --record K)
    mintdim-beam plan (JOB.yaml | DIR | sample_index.jsonl) [-k K] [--multiple Q] [Beam flags]
    mintdim-beam report DIR -o report.html
    mintdim-beam export DIR --format megatron PREFIX [--append-eod [--eod-token NAME]] | --format parquet OUT.parquet

Each DIR may be a versioned root (``ROOT/LATEST`` naming ``ROOT/<build-id>/``): the
command reads the build ``LATEST`` names and says which on stderr.

The build CLI (``cli.py``) owns the parser; :func:`add_subcommands` adds these commands
to it and :func:`run` executes one, returning the exit code (``flags.EXIT_CODES_HELP``):
0 when all is well, 1 when ``verify`` finds problems, 2 for an error in the data
(printed without a traceback), 64 for a usage error. Only ``plan`` from a job file
imports Beam; the others read the directory with numpy, and take only Beam's
file-system options (``--s3_endpoint_url``, ...) for remote paths.

A new command: a parser in :func:`add_subcommands` (every option with a help line that
ends with its default), its name in ``COMMANDS``, and a branch in :func:`run`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Optional, Sequence

from mintdim_beam.cli import flags
from mintdim_beam.core.config import DEFAULT_BLOCK_SIZE
from mintdim_beam.errors.read_errors import DatasetAccessError
from mintdim_beam.reader import output_files
from mintdim_beam.storage import clients
from mintdim_beam.storage import files as storage
from mintdim_beam.format import names
from mintdim_beam.format.chat import PARTS_PER_MESSAGE

COMMANDS = ("verify", "inspect", "plan", "report", "export")
EXIT_PROBLEMS = flags.EXIT_PROBLEMS
EXIT_ERROR = flags.EXIT_ERROR
FS_OPTIONS_HELP = ("Beam's file-system options (--s3_endpoint_url, --project, ...) may follow, "
                   "for gs:// and s3:// paths.\n\n" + flags.EXIT_CODES_HELP)


def is_job_file(source: str) -> bool:
    """``plan``'s SOURCE is a job file (tokenized by a pipeline), not a built dataset."""
    return source.endswith((".yaml", ".yml", ".json"))


def add_subcommands(subparsers) -> dict:
    """Add the verify, inspect, plan, report and export parsers to ``subparsers``;
    return them by name."""
    parsers = {}
    p = parsers["verify"] = subparsers.add_parser(
        "verify", help="re-read every shard and check it against the indexes", epilog=FS_OPTIONS_HELP,
        usage="%(prog)s DIR [DIR ...] [--tokenizer [PATH]] [--sample N] [--no-checksums] [--max-problems N]\n"
              "       [--loss-roles ROLE[,ROLE...]] [--loss-parts PART[,PART...]] [--log-level LEVEL]",
        description="Check shards (magic, headers, pad tails, token ids, record counts), sample_index.jsonl "
                    "positions, the stats and histogram figures, and every file against SHA256SUMS.")
    # DIR is checked after parsing (_verify_targets): argparse would hand the first DIR
    # to a --tokenizer written before it.
    p.add_argument("dirs", nargs="*", metavar="DIR", help="output directory of a build (local, gs:// or s3://)")
    p.add_argument("--tokenizer", nargs="?", const="manifest", metavar="PATH",
                   help="also match every row to its source line by sample id and re-tokenize a sample of "
                        "rows from those lines; without PATH the tokenizer named in manifest.json. A "
                        "directory right after --tokenizer is a DIR, not its PATH (default: no source checks)")
    p.add_argument("--sample", type=int, default=64, metavar="N",
                   help="rows to re-tokenize with --tokenizer, spread over the dataset, 0 for all (default: 64)")
    p.add_argument("--no-checksums", dest="checksums", action="store_false",
                   help="skip comparing every file with the sha256 in SHA256SUMS; the other checks still run "
                        "(default: compare)")
    p.add_argument("--max-problems", type=int, default=200, metavar="N",
                   help="problems listed per directory; all are counted (default: 200)")
    p.add_argument("--loss-roles", metavar="ROLE[,ROLE...]", default=None,
                   help="on a chat output, warn about each sample with no token of a message of these roles "
                        "(no loss position for causal_lm(loss_roles=...)); warnings leave the exit code "
                        "unchanged (default: assistant, when the dataset has that role)")
    p.add_argument("--loss-parts", metavar="PART[,PART...]", default="prefix,content,suffix",
                   help="the parts of those messages that count: prefix, content, suffix (default: all three)")
    p.set_defaults(consumer_command="verify", usage_error=p.error)

    p = parsers["inspect"] = subparsers.add_parser(
        "inspect", help="print one sample's segments, decoded to text", epilog=FS_OPTIONS_HELP,
        description="Print a sample's segments, lengths, unit, shard and source, decoded back to text with "
                    "the tokenizer. Give --sample-id, or --shard with --record.")
    p.add_argument("dir", metavar="DIR", help="output directory of a build (local, gs:// or s3://)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--sample-id", type=int, metavar="N",
                       help="the sample's id (required, unless --shard is given)")
    which.add_argument("--shard", metavar="PATH",
                       help="shard path relative to DIR, such as unit_512/shard_000000.bin (required with "
                            "--record, unless --sample-id is given)")
    p.add_argument("--record", type=int, metavar="K",
                   help="record position in --shard, from 0 (required with --shard)")
    p.add_argument("--tokenizer", metavar="PATH", help="tokenizer file to decode with "
                                                       "(default: the one in manifest.json)")
    p.add_argument("--ids", action="store_true", help="also print token ids (default: off)")
    p.add_argument("--json", action="store_true", help="print one JSON object (default: text)")
    p.set_defaults(consumer_command="inspect")

    p = parsers["plan"] = subparsers.add_parser(
        "plan", help="suggest the K unit sizes with the least padding",
        epilog="With a job file, Beam pipeline options (--runner, ...) may follow; with a dataset, its "
               "file-system options.\n\n" + flags.EXIT_CODES_HELP,
        description="Token-length histogram of a job (tokenized by a Beam pipeline, nothing written) or of "
                    "a built dataset, and the K unit sizes that minimise padding.")
    p.add_argument("source", metavar="SOURCE", help="job file (.yaml, .yml or .json), output directory of a "
                                                    "build, or its sample_index.jsonl")
    p.add_argument("-k", "--k", type=int, dest="k", metavar="K",
                   help="number of unit sizes to suggest (default: as many as the current sizes)")
    p.add_argument("--multiple", type=int, default=1, metavar="Q",
                   help="round suggested sizes up to multiples of Q (default: 1)")
    p.add_argument("--sizes", metavar="S1,S2,...",
                   help="compare against these sizes (default: the job's or dataset's current sizes)")
    p.add_argument("--block-size", dest="plan_block_size", type=int, metavar="BYTES",
                   help="input block size for a job file (default: the job's run.block_size, else "
                        f"{DEFAULT_BLOCK_SIZE})")
    p.add_argument("--json", action="store_true", help="print one JSON object per output (default: text)")
    p.set_defaults(consumer_command="plan")

    p = parsers["report"] = subparsers.add_parser(
        "report", help="write a self-contained HTML report of a dataset", epilog=FS_OPTIONS_HELP,
        description="One HTML page (no network needed) with the token-length histogram, padding per unit, "
                    "duplicates, UNK and overflow summaries.")
    p.add_argument("dir", metavar="DIR", help="output directory of a build (local, gs:// or s3://)")
    p.add_argument("-o", "--output", default="report.html", metavar="FILE",
                   help="HTML file to write (default: report.html)")
    p.add_argument("-k", "--k", type=int, dest="k", metavar="K",
                   help="unit count for the suggested sizes (default: as many as the current sizes)")
    p.set_defaults(consumer_command="report")

    parsers["export"] = _add_export(subparsers)
    return parsers


def run(args, beam_args: Sequence[str] = ()) -> int:
    """Execute the command ``args`` holds; ``beam_args`` are Beam flags (``plan`` only)."""
    from mintdim_beam import errors

    command = getattr(args, "consumer_command", None) or getattr(args, "command", None)
    fs_options = list(beam_args)
    if beam_args and not (command == "plan" and is_job_file(args.source)):

        clients.configure(list(beam_args))   # file-system options, for gs:// and s3:// paths
        beam_args = ()
    try:
        remote = [p for p in _paths(command, args) if "://" in p]
        if remote:   # a wrong endpoint or key: said in seconds, not after Beam's retries
            from mintdim_beam.storage import access as storage_access

            storage_access.check(remote, fs_options)
        if command == "verify":
            return _verify(args)
        if command == "inspect":
            return _inspect(args)
        if command == "plan":
            return _plan(args, list(beam_args))
        if command == "report":
            return _report(args)
        if command == "export":
            return _export(args)
    except SystemExit as exc:   # verify's usage errors, found once paths can be looked at
        return exc.code if isinstance(exc.code, int) else flags.EXIT_USAGE
    except errors.MintDimError as exc:   # the reader's, the report's and the build's errors: bilingual
        print(str(exc), file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # Whoever read the output stopped early (`... | head`): nothing went wrong here.
        # Later writes to the closed pipe go to /dev/null so the exit prints nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (OSError, ValueError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(DatasetAccessError("command_failed", command=command, why=str(message)), file=sys.stderr)
        return EXIT_ERROR
    print(f"mintdim-beam: unknown command {command!r}", file=sys.stderr)
    return EXIT_ERROR


def _paths(command: str, args) -> list:
    """The paths a command reads or writes, as given (``plan`` of a job file: none here,
    its inputs are checked once the job is resolved)."""
    if command == "verify":
        paths = list(args.dirs)
        return paths + ([args.tokenizer] if args.tokenizer not in (None, "manifest") else [])
    if command == "inspect":
        return [args.dir] + ([args.tokenizer] if args.tokenizer else [])
    if command == "plan":
        return [] if is_job_file(args.source) else [args.source]
    if command == "report":
        return [args.dir]
    if command == "export":
        return [args.dir, args.out] + ([args.tokenizer] if args.tokenizer else [])
    return []


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Stand-alone entry point (the same commands without ``build``/``demo``)."""
    parser = flags.Parser(prog="mintdim-beam", description=__doc__.split("\n\n")[0],
                          epilog=flags.EXIT_CODES_HELP)
    parsers = add_subcommands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                                    parser_class=flags.Parser))
    try:
        args, rest = parser.parse_known_args(argv)
        scope = flags.BEAM if args.command == "plan" and is_job_file(args.source) else flags.FILESYSTEM
        rest = flags.check_flags(parsers[args.command], rest, scope)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else flags.EXIT_USAGE
    return run(args, rest)


# --------------------------------------------------------------------------- verify


def _read_latest(command: str, path: str) -> str:
    """The dataset ``path`` names: itself, or the build a versioned root's ``LATEST``
    names, said on stderr (stdout stays the command's output)."""
    found, build_id = output_files.dataset_path(path)
    if build_id is not None:
        print(f"mintdim-beam {command}: reading {found} (LATEST)", file=sys.stderr)
    return found


def _verify(args) -> int:
    from mintdim_beam.errors.read_errors import ReaderError
    from mintdim_beam.reader import dataset as reader
    from mintdim_beam.reader.verify import verify_output

    dirs, tokenizer = _verify_targets(args, reader)
    loss_roles, loss_parts = _loss_flags(args)
    missing = [path for path in dirs if not _is_directory(path, reader)]
    if missing:
        # Nothing to verify is an error in the command (exit 2), not a problem found in a
        # dataset (exit 1): a typo'd path must not read as a damaged dataset.
        raise DatasetAccessError("no_directory", command="verify", paths=", ".join(missing))
    status = 0
    for path in dirs:
        try:
            path = _read_latest("verify", path)
        except ReaderError:
            pass           # a LATEST naming no build: verify_output lists it as the root's problem
        report = verify_output(path, tokenizer=tokenizer, sample_rows=args.sample,
                               checksums=args.checksums, loss_roles=loss_roles, loss_parts=loss_parts)
        for warning in report.warnings[:args.max_problems]:
            print(f"{path}: {warning}")
            print(f"{path}: {warning.vietnamese}")
        for problem in report.problems[:args.max_problems]:
            print(f"{path}: {problem}")
        if len(report.problems) > args.max_problems:
            print(f"{path}: ... {len(report.problems) - args.max_problems} more problems not listed")
        print(report.summary())
        if not report.ok:
            status = EXIT_PROBLEMS
    return status


def _loss_flags(args) -> tuple:
    """``--loss-roles`` and ``--loss-parts`` as lists (roles None when not given); a
    part that is none of prefix, content, suffix is a usage error."""
    from mintdim_beam.format.chat import MESSAGE_PARTS

    roles = None if args.loss_roles is None else [r for r in args.loss_roles.split(",") if r]
    if roles is not None and not roles:
        args.usage_error("--loss-roles needs at least one role name")
    parts = [p for p in args.loss_parts.split(",") if p]
    wrong = [p for p in parts if p not in MESSAGE_PARTS]
    if wrong or not parts:
        args.usage_error(f"--loss-parts: {','.join(wrong) or 'nothing'} is not a message part "
                         f"(give some of {','.join(MESSAGE_PARTS)})")
    return roles, parts


def _verify_targets(args, reader) -> tuple[list, Optional[str]]:
    """(the DIRs to verify, the tokenizer: None, "manifest" or a PATH).

    ``--tokenizer`` takes an optional PATH, so argparse gives it whatever word follows:
    ``verify --tokenizer DIR`` would read the dataset as the tokenizer. A tokenizer is a
    file and a dataset a directory, so a --tokenizer value that is a directory is the
    first DIR and the manifest's tokenizer is meant; with no DIR left at all the command
    is a usage error (exit 64) that says how the words were read."""
    dirs, tokenizer = list(args.dirs), args.tokenizer
    if tokenizer not in (None, "manifest") and _is_directory(tokenizer, reader):
        dirs, tokenizer = [tokenizer, *dirs], "manifest"
    if not dirs:
        if tokenizer in (None, "manifest"):
            args.usage_error("the following arguments are required: DIR")
        args.usage_error(f"no DIR to verify: --tokenizer took {tokenizer!r} as its PATH, and that is not a "
                         f"directory (give the dataset directory: verify DIR --tokenizer [PATH])")
    return dirs, tokenizer


def _is_directory(path: str, reader) -> bool:
    """A local directory, or a remote prefix with at least one object under it."""
    if storage.is_local(path):
        import os

        return os.path.isdir(path)
    return bool(storage.list_dir(path))


# --------------------------------------------------------------------------- inspect


def _inspect(args) -> int:
    from mintdim_beam.reader import dataset as rd

    out = rd.OutputReader(_read_latest("inspect", args.dir))
    if args.shard is not None:
        if args.record is None:
            raise DatasetAccessError("shard_needs_record", command="inspect")
        sample = out.sample_at(args.shard, args.record)
    else:
        try:
            sample = out.sample(args.sample_id)
        except KeyError:
            raise _why_missing(out, args.sample_id) from None
    tok, note = _load_tokenizer(out, args.tokenizer)
    info = _describe(out, sample, tok)
    if args.json:
        if not args.ids:
            for seg in info["segments"]:
                seg.pop("ids")
        print(json.dumps(info, ensure_ascii=False, indent=2))
        return 0
    sid = "(no sample_index row)" if sample.sample_id is None else sample.sample_id
    print(f"sample    {sid}")
    if sample.source_file is not None:
        print(f"source    {sample.source_file}:{sample.source_line}")
    print(f"unit      {sample.unit_size}   {sample.shard_path} record {sample.shard_record}")
    print(f"tokens    {sample.token_count} written, {sample.unit_size - sample.token_count} pad")
    if sample.hash:
        print(f"hash      {sample.hash}")
    if sample.empty_fields:
        print(f"empty     {', '.join(sample.empty_fields)}")
    if sample.roles is not None:
        print(f"roles     {', '.join(sample.roles) or '(no message)'}")
    if sample.pair_id is not None:
        print(f"pair      {sample.pair_id} ({sample.pair_role})")
    if info.get("unk"):
        u = info["unk"]
        print(f"unk       {len(u['unk_positions'])} at payload positions {u['unk_positions']} "
              f"chars {json.dumps(u['unk_chars'], ensure_ascii=False)}")
    if info.get("overflow"):
        o = info["overflow"]
        print(f"overflow  {o.get('action')} (original {o.get('token_count')} tokens)")
    if note:
        print(f"note      {note}")
    shown = info["segments"]
    if sample.roles is not None:      # a chat sample: the slots of its messages, not the empty rest
        shown = shown[:PARTS_PER_MESSAGE * len(sample.roles)]
        absent = len(sample.sequence_template) // PARTS_PER_MESSAGE - len(sample.roles)
        if absent:
            print(f"slots     {absent} message slots past the last message, empty, not shown")
    for seg in shown:
        print(f"[{seg['index']}] {seg['name']} ({seg['length']} tokens)")
        if "text" in seg:
            print("    " + json.dumps(seg["text"], ensure_ascii=False))
        if args.ids or "text" not in seg:
            print(f"    ids {seg['ids']}")
    return 0


def _load_tokenizer(out, path: Optional[str]):
    """The tokenizer to decode with, or (None, why not)."""
    from mintdim_beam.tokenization.adapters import open_tokenizer

    info = out.manifest.get("tokenizer") or {}
    path = path or info.get("path")
    try:
        return open_tokenizer(info.get("type"), path, storage.read_bytes, exists=storage.exists), None
    except Exception as exc:
        return None, f"text not decoded: tokenizer {path} could not be loaded ({str(exc).strip().splitlines()[0]})"


def _describe(out, sample, tok) -> dict:

    segments = []
    for seg in sample.segments:
        item = {"index": seg.index, "name": seg.name, "length": int(len(seg.ids)), "ids": seg.ids.tolist()}
        if tok is not None:
            item["text"] = tok.decode(seg.ids.tolist())
        segments.append(item)
    info = {"sample_id": sample.sample_id, "source_file": sample.source_file, "source_line": sample.source_line,
            "unit_size": sample.unit_size, "shard_path": sample.shard_path, "shard_record": sample.shard_record,
            "token_count": sample.token_count, "hash": sample.hash, "empty_fields": list(sample.empty_fields),
            "segments": segments}
    if sample.roles is not None:
        info["roles"] = list(sample.roles)
    if sample.pair_id is not None:
        info["pair_id"], info["pair_role"] = sample.pair_id, sample.pair_role
    if sample.sample_id is not None:
        for name, key in ((names.UNK_INDEX, "unk"), (names.OVERFLOW_INDEX, "overflow")):
            for _, row in output_files.iter_index(out.path, name, out.manifest):
                if isinstance(row, dict) and row.get("sample_id") == sample.sample_id:
                    info[key] = row
                    break
    return info


def _why_missing(out, sample_id: int) -> DatasetAccessError:
    """Say why a sample id has no record: a bad record, an overflow skip, or out of range."""

    for name in (names.BAD_RECORD_INDEX, names.OVERFLOW_INDEX):
        for _, row in output_files.iter_index(out.path, name, out.manifest):
            if isinstance(row, dict) and row.get("sample_id") == sample_id:
                where = f"{row.get('source_file')}:{row.get('source_line')}"
                if name.startswith("bad"):
                    return DatasetAccessError("bad_record_sample", command="inspect", sample_id=sample_id,
                                              where=where, error=row.get("error"), why=row.get("reason"))
                return DatasetAccessError("dropped_sample", command="inspect", sample_id=sample_id, where=where,
                                          action=row.get("action"), count=row.get("token_count"))
    ids = out.sample_ids
    if not len(ids):
        return DatasetAccessError("no_sample_written", out.path, command="inspect", sample_id=sample_id)
    return DatasetAccessError("no_sample", out.path, command="inspect", sample_id=sample_id, first=int(ids[0]),
                              last=int(ids[-1]))


# --------------------------------------------------------------------------- plan


def _plan(args, beam_args: list) -> int:
    from mintdim_beam.reader.unit_planner import dataset_length_histogram, fit, optimal_sizes

    sizes_override = _parse_sizes(args.sizes) if args.sizes else None
    source = args.source
    plans = []
    if is_job_file(source):
        plans = _job_histograms(source, args, beam_args)
    else:
        from mintdim_beam.reader import dataset as reader

        if not source.endswith(".jsonl"):
            if not _is_directory(source, reader):
                raise DatasetAccessError("no_directory", command="plan", paths=source)
            source = _read_latest("plan", source)
        hist, info = dataset_length_histogram(source)
        notes = []
        if info["truncated_restored"] or info["skipped_added"]:
            notes.append(f"{info['truncated_restored']} truncated samples counted at their original length, "
                         f"{info['skipped_added']} skipped samples added from overflow_index.jsonl")
        plans.append((source, hist, info["current_sizes"], notes))
    for name, hist, current, notes in plans:
        current = sizes_override or current
        if not hist.samples:
            print(f"[plan] output={name} has no samples to plan for")
            continue
        k = args.k or (len(current) if current else None)
        if not k:
            raise DatasetAccessError("plan_needs_k", command="plan")
        suggested = optimal_sizes(hist, k, args.multiple)
        best = fit(hist, suggested)
        now = fit(hist, current) if current else None
        # Like with like: the current sizes' padding can only count the samples that fit
        # them, so when some overflow, a suggestion is also made for those samples alone.
        same = None
        if now is not None and now.overflow_samples:
            inside = hist.upto(max(now.sizes))
            if inside.samples:
                same = fit(inside, optimal_sizes(inside, k, args.multiple))
        kind = f"K={k}" + (f", multiple of {args.multiple}" if args.multiple > 1 else "")
        if args.json:
            print(json.dumps({
                "output": name, "samples": hist.samples, "tokens": hist.tokens,
                "min_length": int(hist.lengths[0]), "max_length": hist.max_length,
                "histogram": {str(k_): v for k_, v in hist.as_dict().items()},
                "k": k, "multiple": args.multiple, "notes": notes,
                "overflow_samples": now.overflow_samples if now is not None else 0,
                "current": _fit_json(now), "suggested_same_samples": _fit_json(same),
                "suggested": _fit_json(best),
            }, ensure_ascii=False))
            continue
        print(f"[plan] output={name} samples={hist.samples} tokens={hist.tokens} "
              f"lengths={int(hist.lengths[0])}..{hist.max_length}")
        for note in notes:
            print(f"[plan] note: {note}")
        if now is None or not now.overflow_samples:
            if now is not None:
                print(_fit_line("current  ", now))
            print(_fit_line("suggested", best, f" ({kind})"))
            _print_saving(now, best)
            _print_units(best)
            continue
        fitting = hist.samples - now.overflow_samples
        print(f"[plan] overflow: {now.overflow_samples} of {hist.samples} samples are longer than "
              f"{max(now.sizes)}, the largest current size; the current sizes are measured on the "
              f"{fitting} samples that fit")
        print(_fit_line("current  ", now, f" on the {fitting} samples that fit"))
        if same is not None:
            print(_fit_line("suggested", same, f" on the same {fitting} samples ({kind})"))
            _print_saving(now, same)
            _print_units(same)
        print(_fit_line("suggested", best, f" on all {hist.samples} samples, none overflow ({kind})"))
        _print_units(best)
    return 0


def _print_saving(now, best) -> None:
    """The padding saved by ``best`` over ``now`` (both measured on the same samples)."""
    if now is None or not now.slots:
        return
    saved = now.pad_tokens - best.pad_tokens
    print(f"[plan] padding {now.padding_ratio:.4f} -> {best.padding_ratio:.4f}: "
          f"{saved} fewer pad tokens ({saved / now.slots:.2%} of the current payload slots)")


def _print_units(f) -> None:
    print(f"  {'unit':>8} {'samples':>9} {'tokens':>11} {'pad':>10} {'padding':>8}")
    for u in f.per_unit():
        print(f"  {u['size']:>8} {u['samples']:>9} {u['tokens']:>11} {u['pad_tokens']:>10} "
              f"{u['padding_ratio']:>8.2%}")


def _fit_line(label: str, f, suffix: str = "") -> str:
    return (f"[plan] {label} sizes={','.join(map(str, f.sizes))} padding_ratio={f.padding_ratio:.4f} "
            f"pad_tokens={f.pad_tokens}{suffix}")


def _fit_json(f) -> Optional[dict]:
    if f is None:
        return None
    return {"sizes": list(f.sizes), "padding_ratio": f.padding_ratio, "pad_tokens": f.pad_tokens,
            "overflow_samples": f.overflow_samples, "units": f.per_unit()}


def _parse_sizes(text: str) -> list:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise DatasetAccessError("sizes_not_integers", command="plan", got=repr(text)) from None
    if not sizes or sizes != sorted(set(sizes)) or sizes[0] <= 0:
        raise DatasetAccessError("sizes_not_ascending", command="plan", got=repr(text))
    return sizes


def _job_histograms(path: str, args, beam_args: list) -> list:
    """Resolve the job file and tokenize its inputs on Beam: one histogram per output."""
    from mintdim_beam.launch.api import load_job_file
    from mintdim_beam.core.config import COUNTING_POLICIES, resolve
    from mintdim_beam.launch import patterns
    from mintdim_beam.launch import preflight
    from mintdim_beam.storage import access as storage_access
    from mintdim_beam.launch.launcher import length_histograms
    from mintdim_beam.reader.unit_planner import LengthHistogram

    spec, run_section = load_job_file(path)
    block_size = args.plan_block_size or run_section.get("block_size")     # None: the default
    config = resolve(spec, COUNTING_POLICIES, None if block_size is None else int(block_size))
    preflight.check_schemes(config)
    storage_access.check([f.path for f in config.files] + [f.tokenizer.path for f in config.files], beam_args)
    config, sizes = patterns.expand_sizes(config, beam_args)    # as the build expands (and lists) them
    preflight.check_inputs(config, sizes)            # regular files: a FIFO would block for good
    found = length_histograms(config, options=beam_args, sizes=sizes)
    plans = []
    for out in config.outputs:
        counts, bad = found[out.index]
        hist = LengthHistogram.from_counts(counts)
        notes = [f"{bad} bad records not counted"] if bad else []
        plans.append((out.path, hist, list(out.sizes), notes))
    return plans


# --------------------------------------------------------------------------- report


def _report(args) -> int:
    from mintdim_beam.reader.report import write_report

    path = write_report(_read_latest("report", args.dir), args.output, k=args.k)
    print(f"[report] wrote {path}")
    return 0



# --------------------------------------------------------------------------- export


def _add_export(subparsers):
    p = subparsers.add_parser(
        "export", help="write the dataset as Megatron-LM .bin/.idx or as Parquet", epilog=FS_OPTIONS_HELP,
        description="Read every written sample (checking each record) and write it, without padding, "
                    "in ascending sample_id: --format megatron writes OUT.bin and OUT.idx (Megatron-LM's "
                    "indexed dataset, one document per sample); --format parquet writes one file with a "
                    "row per sample. Nothing appears under the output names unless the export completes.")
    p.add_argument("dir", metavar="DIR", help="output directory of a build (local or gs://, s3://)")
    p.add_argument("out", metavar="OUT", help="path prefix for megatron (OUT.bin, OUT.idx); file for parquet")
    p.add_argument("--format", required=True, choices=["megatron", "parquet"],
                   help="megatron (Megatron-LM indexed dataset) or parquet (required)")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files (default: refuse)")
    p.add_argument("--append-eod", action="store_true",
                   help="megatron: end every document that has tokens with the tokenizer's end-of-sequence token, "
                        "as Megatron's preprocess_data.py --append-eod does; the tokenizer is the one manifest.json "
                        "names (default: off)")
    p.add_argument("--eod-token", metavar="NAME",
                   help="with --append-eod: the end token's exact text, for a tokenizer whose end token is another "
                        "special token, such as <|endoftext|> or [SEP] (default: its end-of-sequence token)")
    p.add_argument("--tokenizer", metavar="PATH",
                   help="with --append-eod: where the dataset's tokenizer file is now (default: the path in "
                        "manifest.json)")
    p.add_argument("--row-group-rows", type=int, default=65_536, metavar="N",
                   help="parquet: most samples per row group (default: 65536)")
    p.add_argument("--row-group-tokens", type=int, default=1 << 20, metavar="N",
                   help="parquet: a row group closes once it holds N tokens (default: 1048576)")
    p.set_defaults(consumer_command="export", usage_error=p.error)
    return p


def _export(args) -> int:
    from mintdim_beam.reader.export import export

    options = {}
    if args.format == "parquet":
        options = {"row_group_rows": args.row_group_rows, "row_group_tokens": args.row_group_tokens}
        if args.append_eod:
            args.usage_error("--append-eod is for --format megatron (a Parquet row keeps its sample's tokens)")
    elif args.append_eod:
        options = {"append_eod": True, "eod_token": args.eod_token, "tokenizer": args.tokenizer}
    if not args.append_eod and (args.eod_token is not None or args.tokenizer is not None):
        args.usage_error("--eod-token and --tokenizer choose the token of --append-eod, which is not given")
    summary = export(_read_latest("export", args.dir), args.format, args.out, overwrite=args.overwrite, **options)
    print(summary.describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
