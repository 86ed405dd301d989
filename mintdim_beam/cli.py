"""``mintdim-beam``: build from a job file or the bundled demo; read and check outputs.

    mintdim-beam build JOB.yaml [--on-overflow truncate] [--versioned [--skip-unchanged]] [Beam flags ...]
    mintdim-beam demo OUT_DIR [Beam flags ...]
    mintdim-beam verify DIR [--tokenizer]
    mintdim-beam inspect DIR --sample-id N | --shard PATH --record K
    mintdim-beam plan JOB.yaml|DIR|sample_index.jsonl -k K [--multiple Q]
    mintdim-beam report DIR -o report.html

A job file (YAML or JSON) holds the same fields as the fluent API plus the policies;
every argument the CLI does not know is handed to Beam as a pipeline option
(``--runner``, ``--direct_num_workers``, ``--temp_location``, ...). Spec errors print
their bilingual message without a traceback and exit with status 2.

``--versioned`` treats each output directory as a versioned root: the build goes to
``ROOT/<build-id>/`` and ``ROOT/LATEST`` is replaced by the new id once every output
is published. ``--skip-unchanged`` hashes the inputs first and builds nothing (exit 0)
when every root's latest build has the same fingerprint, which is what a nightly
``cron`` entry wants. SIGTERM and Ctrl-C stop the build and leave
``UNIT_BUILD_FAILED.md`` markers that say so (exit status 130).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Optional, Sequence

from . import consumer_cli, errors
from .api import _invalid, demo_job, load_job_file
from .config import DEFAULT_BLOCK_SIZE, JobSpec, Policies, check_build_id, resolve, run_settings

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

def _build(spec: JobSpec, run: dict, args, beam_args: Sequence[str]) -> int:
    for name in ("on_overflow", "on_template_unk", "on_bad_record", "block_size"):
        value = getattr(args, name, None)
        if value is not None:
            run[name] = value
    for name in ("versioned", "skip_unchanged"):
        if getattr(args, name, False):
            run[name] = True
    run = run_settings(run)
    build_id = getattr(args, "build_id", None)
    if build_id is not None:
        check_build_id(build_id)
        if not run["versioned"]:
            raise _invalid("--build-id needs versioned output roots (--versioned or run.versioned: true)")
    if getattr(args, "no_accelerators", False):
        run["accelerators"] = False
    policies = Policies(
        on_overflow=run.get("on_overflow", "abort"),
        on_template_unk=run.get("on_template_unk", "prompt"),
        on_bad_record=run.get("on_bad_record", "abort"),
    )
    config = resolve(spec, policies, run.get("block_size", DEFAULT_BLOCK_SIZE), run["accelerators"])
    from .launcher import launch, launch_versioned  # imports Beam; after logging is configured

    if run.get("versioned"):
        found = launch_versioned(config, options=list(beam_args), skip_unchanged=bool(run.get("skip_unchanged")),
                                 build_id=getattr(args, "build_id", None))
        if found.skipped:
            return 0
        result = found.result
    else:
        result = launch(config, options=list(beam_args))
    for out in result.outputs:
        s = out.stats
        print(f"[unit-build] done output={out.path} samples={s['total_samples']} tokens={s['total_tokens']} "
              f"shards={s['shards']} padding_ratio={s['padding_ratio']:.4f} duplicates={s['duplicate_groups']} "
              f"unk_samples={s['samples_with_unk']} bad_records={s['bad_records']}")
    return 0


def _take_filesystem_flags(beam_args: Sequence[str], keep: bool = False) -> list:
    """Apply Beam's file-system flags (``--s3_endpoint_url``, ``--project``, ...); drop them
    unless ``keep`` (``plan`` runs its own pipeline, which needs them too).

    ``verify``, ``inspect`` and ``report`` read ``s3://`` and ``gs://`` outputs
    through Beam's ``FileSystems``, which needs these settings; the other flags
    are left for the command to accept or refuse.
    """
    if not beam_args:
        return []
    from . import storage

    storage.configure(list(beam_args))
    if keep:
        return list(beam_args)
    fs_names = storage.filesystem_option_names()
    return [a for a in beam_args if not (a.startswith("--") and a.lstrip("-").partition("=")[0] in fs_names)]


def _interrupt(signum, _frame):
    """SIGTERM (a scheduler stopping the job) unwinds like Ctrl-C, so the build is marked."""
    raise KeyboardInterrupt(f"terminated by signal {signal.Signals(signum).name}")


def _policy_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--on-overflow", dest="on_overflow", choices=["abort", "truncate", "skip", "extend"])
    parser.add_argument("--on-template-unk", dest="on_template_unk", choices=["abort", "continue", "prompt"])
    parser.add_argument("--on-bad-record", dest="on_bad_record", choices=["abort", "skip"])
    parser.add_argument("--block-size", dest="block_size", type=_int_or_text, help="input block size in bytes")
    parser.add_argument("--no-accelerators", dest="no_accelerators", action="store_true",
                        help="encode with the tokenizer libraries alone (same output, more CPU)")


def _int_or_text(value: str):
    """An int when it reads as one; otherwise the text, which the run checks report bilingually."""
    try:
        return int(value)
    except ValueError:
        return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="mintdim-beam", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the outputs declared in a job file")
    build.add_argument("job", help="job file (.yaml, .yml or .json)")
    _policy_flags(build)
    build.add_argument("--versioned", action="store_true",
                       help="build into OUTPUT/<build-id>/ and point OUTPUT/LATEST at it")
    build.add_argument("--skip-unchanged", dest="skip_unchanged", action="store_true",
                       help="with --versioned: build nothing when the inputs' fingerprint equals LATEST's")
    build.add_argument("--build-id", dest="build_id", help="with --versioned: the build id (default: UTC time + random)")
    demo = sub.add_parser("demo", help="build the bundled sample data into OUT_DIR")
    demo.add_argument("out_dir")
    _policy_flags(demo)
    consumer_cli.add_subcommands(sub)
    parser.add_argument("--log-level", default="ERROR",
                        help="Python logging level for Beam and the build (default ERROR)")
    args, beam_args = parser.parse_known_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.ERROR),
                        format="%(levelname)s %(name)s: %(message)s")
    if args.command in consumer_cli.COMMANDS:
        command = getattr(args, "consumer_command", args.command)
        return consumer_cli.run(args, _take_filesystem_flags(beam_args, keep=command == "plan"))
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        if args.command == "build":
            spec, run = load_job_file(args.job)
        else:
            spec, run = demo_job(args.out_dir)
        return _build(spec, run, args, beam_args)
    except errors.MintDimError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        print(f"[unit-build] interrupted: {exc or 'KeyboardInterrupt'}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def console_main() -> None:
    """The ``mintdim-beam`` command."""
    sys.exit(main())


if __name__ == "__main__":
    console_main()
