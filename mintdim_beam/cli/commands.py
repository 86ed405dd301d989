"""The mintdim-beam command: build from a job file or the bundled demo; read, check,
plan and export what was built.

    mintdim-beam build JOB.yaml [--on-overflow truncate] [--versioned [--skip-unchanged] [--keep N]] [Beam options]
    mintdim-beam demo OUT_DIR [Beam options]
    mintdim-beam verify | inspect | plan | report | export ...    (consumer_cli.py)
    mintdim-beam tokenizer add-padding TOKENIZER_JSON --pad-token TOKEN OUT   (tokenizer_commands.py)
    mintdim-beam --version

A job file (YAML or JSON) holds the same fields as the fluent API plus a run section of
policies; flags on the command line override the run section. Beam pipeline options
(--runner, --direct_num_workers, --temp_location, the build's --encode_threads, ...)
follow build, demo and plan JOB; flags.py checks that every other flag is one of ours,
so a typo is a usage error instead of a flag Beam silently drops.

--versioned treats each output directory as a versioned root: the build goes to
ROOT/<build-id>/ and ROOT/LATEST is replaced by the new id once every output is
published. --skip-unchanged hashes the inputs first and builds nothing (exit 0) when
every root's latest build has the same fingerprint, which is what a nightly cron entry
wants; --keep N then removes each root's complete builds older than its N newest.
SIGTERM and Ctrl-C stop the build and leave UNIT_BUILD_FAILED.md markers that say so
(exit 130). Exit codes: flags.EXIT_CODES_HELP.

A build shows its progress on stderr (one redrawn line on a terminal, a line every 10 s
otherwise) and closes with a summary line; --quiet turns the progress off.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Optional, Sequence

from mintdim_beam.cli import consumer_commands as consumer_cli
from mintdim_beam.cli import tokenizer_commands as tokenizer_cli
from mintdim_beam import errors
from mintdim_beam.errors import job_messages as J
from mintdim_beam.cli import flags
from mintdim_beam.storage import clients
from mintdim_beam.launch.api import job_file_error, demo_job, load_job_file
from mintdim_beam.core.config import (BAD_RECORD_POLICIES, PAIR_COLLAPSE_POLICIES, DEFAULT_BLOCK_SIZE, DEFAULT_INDEX_LAYOUT, INDEX_LAYOUTS,
                                      OVERFLOW_POLICIES, TEMPLATE_UNK_POLICIES, JobSpec, Policies, check_build_id,
                                      resolve, run_settings)

EXIT_ERROR = flags.EXIT_ERROR
EXIT_USAGE = flags.EXIT_USAGE
EXIT_INTERRUPTED = flags.EXIT_INTERRUPTED

DESCRIPTION = "Build fixed-width token shards from JSONL datasets on Apache Beam; read, check, plan and export them."
BEAM_OPTIONS_HELP = """Beam pipeline options may follow: --runner, --direct_running_mode, --direct_num_workers,
--temp_location, --project, --s3_endpoint_url, ..., and the build's --encode_threads
(tokenizer calls at once per worker process; default: its share of the machine's cores).
Any other flag is a usage error."""


def _build(spec: JobSpec, run: dict, args, beam_args: Sequence[str]) -> int:
    for name in ("on_overflow", "on_template_unk", "on_bad_record", "on_pair_collapse", "block_size",
                 "index_layout", "max_bad_records", "max_unk_fraction", "keep"):
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
            raise job_file_error(J.NEEDS_VERSIONED.format(option="--build-id"))
    if getattr(args, "no_accelerators", False):
        run["accelerators"] = False
    policies = Policies(on_overflow=run.get("on_overflow"), on_template_unk=run.get("on_template_unk"),
                        on_bad_record=run.get("on_bad_record"),
                        on_pair_collapse=run.get("on_pair_collapse"))    # None: the default
    config = resolve(spec, policies, run.get("block_size"), run["accelerators"], run["index_layout"], run["limits"])
    from mintdim_beam.launch.launcher import launch
    from mintdim_beam.launch.versioned import launch_versioned  # imports Beam; after logging is configured

    if run.get("versioned"):
        found = launch_versioned(config, options=list(beam_args), skip_unchanged=bool(run.get("skip_unchanged")),
                                 build_id=getattr(args, "build_id", None), quiet=args.quiet, keep=run["keep"])
        if found.skipped:
            return 0
        result = found.result
    else:
        result = launch(config, options=list(beam_args), quiet=args.quiet)
    for out in result.outputs:
        s = out.stats
        print(f"[unit-build] done output={out.path} samples={s['total_samples']} tokens={s['total_tokens']} "
              f"shards={s['shards']} padding_ratio={s['padding_ratio']:.4f} duplicates={s['duplicate_groups']} "
              f"unk_samples={s['samples_with_unk']} bad_records={s['bad_records']}")
    return 0


def _interrupt(signum, _frame):
    """SIGTERM (a scheduler stopping the job) unwinds like Ctrl-C, so the build is marked."""
    raise KeyboardInterrupt(f"terminated by signal {signal.Signals(signum).name}")


def _policy_flags(parser: argparse.ArgumentParser, run: Optional[dict] = None) -> None:
    """The run options a command line may set. ``run``: the command's own run section
    (the demo's), whose values are then the defaults the help names."""
    def default(name: str, fallback) -> str:
        return str(run.get(name, fallback)) if run is not None else f"the job's run.{name}, else {fallback}"

    defaults = Policies()
    parser.add_argument("--on-overflow", dest="on_overflow", choices=list(OVERFLOW_POLICIES),
                        help="a sample longer than the largest unit: stop the build, cut it, drop it, or add a "
                             "unit that holds it (default: " + default("on_overflow", defaults.on_overflow) + ")")
    parser.add_argument("--on-template-unk", dest="on_template_unk", choices=list(TEMPLATE_UNK_POLICIES),
                        help="template text that encodes to the unknown token: stop, go on, or ask on a "
                             "terminal (default: " + default("on_template_unk", defaults.on_template_unk) + ")")
    parser.add_argument("--on-bad-record", dest="on_bad_record", choices=list(BAD_RECORD_POLICIES),
                        help="a line that is not a valid record: stop, or skip it and list it in "
                             "bad_record_index.jsonl (default: "
                             + default("on_bad_record", defaults.on_bad_record) + ")")
    parser.add_argument("--on-pair-collapse", dest="on_pair_collapse", choices=list(PAIR_COLLAPSE_POLICIES),
                        help="a preference pair whose chosen and rejected records are the same tokens once "
                             "written: stop, or leave it out with overflow_index rows (action collapsed) "
                             "(default: " + default("on_pair_collapse", defaults.on_pair_collapse) + ")")
    parser.add_argument("--block-size", dest="block_size", type=_int_or_text, metavar="BYTES",
                        help="input bytes per unit of work; never changes the output "
                             "(default: " + default("block_size", DEFAULT_BLOCK_SIZE) + ")")
    parser.add_argument("--index-layout", dest="index_layout", choices=list(INDEX_LAYOUTS),
                        help="parts: publish sample_index/part-NNNNN.jsonl (one per input block) and the other "
                             "per-block indexes likewise, nothing concatenated at finalize (default: "
                             + default("index_layout", DEFAULT_INDEX_LAYOUT) + ")")
    parser.add_argument("--max-bad-records", dest="max_bad_records", type=_number_or_text, metavar="N|F",
                        help="fail the build, publishing nothing, above N bad records or above a fraction F (0 to "
                             "1, such as 0.01) of an output's samples (default: "
                             + default("max_bad_records", "no limit") + ")")
    parser.add_argument("--max-unk-fraction", dest="max_unk_fraction", type=_number_or_text, metavar="F",
                        help="fail the build, publishing nothing, when more than F (0 to 1) of an output's written "
                             "tokens are UNK (default: " + default("max_unk_fraction", "no limit") + ")")
    parser.add_argument("--no-accelerators", dest="no_accelerators", action="store_true",
                        help="encode with the tokenizer libraries alone: same output, more CPU "
                             "(default: the exact accelerators where their checks pass)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress display on stderr; the result lines still print (default: a line "
                             "redrawn on a terminal, else one every 10 s)")


def _int_or_text(value: str):
    """An int when it reads as one; otherwise the text, which the run checks report bilingually."""
    try:
        return int(value)
    except ValueError:
        return value


def _number_or_text(value: str):
    """An int, else a float, when the text reads as one (``10`` is a count, ``0.01`` a
    fraction); otherwise the text, which the run checks report bilingually."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def build_parser() -> tuple[flags.Parser, dict]:
    """The ``mintdim-beam`` parser and its subcommand parsers by name."""
    parser = flags.Parser(prog="mintdim-beam", description=DESCRIPTION,
                          epilog="Each command's --help lists its options. Beam pipeline options may follow\n"
                                 "build, demo and plan JOB (see their --help); any other flag is a usage error."
                                 "\n\n" + flags.EXIT_CODES_HELP)
    parser.add_argument("--version", action="version", version=flags.version_text(),
                        help="print the versions of mintdim-beam, Apache Beam and Python, and exit")
    flags.add_log_level(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=flags.Parser)
    build = sub.add_parser("build", help="build the outputs declared in a job file",
                           description="Build the outputs a job file declares.",
                           epilog=BEAM_OPTIONS_HELP + "\n\n" + flags.EXIT_CODES_HELP)
    build.add_argument("job", metavar="JOB",
                       help="job file (.yaml, .yml or .json) with sections source, tokenizer, units, output "
                            "and optionally run")
    _policy_flags(build)
    build.add_argument("--versioned", action="store_true",
                       help="build into OUTPUT/<build-id>/ and point OUTPUT/LATEST at it "
                            "(default: the job's run.versioned, else off)")
    build.add_argument("--skip-unchanged", dest="skip_unchanged", action="store_true",
                       help="with --versioned: build nothing when the inputs' fingerprint equals LATEST's "
                            "(default: the job's run.skip_unchanged, else off)")
    build.add_argument("--keep", dest="keep", type=_int_or_text, metavar="N",
                       help="with --versioned: once the build is published, remove each root's complete builds "
                            "older than its N newest (never the one LATEST names, nor one still being written) "
                            "(default: the job's run.keep, else keep every build)")
    build.add_argument("--build-id", dest="build_id", metavar="ID",
                       help="with --versioned: the build's directory name (default: UTC time and 8 random "
                            "hex digits)")
    demo = sub.add_parser("demo", help="build the bundled sample data into OUT_DIR",
                          description="Build the bundled demo (English instructions and Vietnamese chat) "
                                      "into OUT_DIR/instructions and OUT_DIR/chat_vi.",
                          epilog=BEAM_OPTIONS_HELP + "\n\n" + flags.EXIT_CODES_HELP)
    demo.add_argument("out_dir", metavar="OUT_DIR",
                      help="directory for the two outputs (their directories must be new or empty)")
    _policy_flags(demo, demo_job("OUT_DIR")[1])
    parsers = {"build": build, "demo": demo, **consumer_cli.add_subcommands(sub),
               **tokenizer_cli.add_subcommands(sub)}
    for command in parsers.values():
        flags.add_log_level(command, subcommand=True)
    return parser, parsers


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; return its exit status (``flags.EXIT_CODES_HELP``)."""
    parser, parsers = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # Before Beam is imported (the flag check imports it).
        level = getattr(logging, str(args.log_level).upper(), logging.ERROR)
        # The handler's own level holds the line for loggers that a runner sets lower
        # itself (Beam sets its Prism job server's to INFO).
        handler = logging.StreamHandler()
        handler.setLevel(level)
        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", handlers=[handler])
        beam_args = flags.check_flags(parsers[args.command], extra, _flag_scope(args))
    except SystemExit as exc:   # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else flags.EXIT_USAGE
    if args.command in consumer_cli.COMMANDS:
        return consumer_cli.run(args, beam_args)
    if args.command in tokenizer_cli.COMMANDS:
        if beam_args:
            clients.configure(list(beam_args))   # file-system options, for gs:// and s3:// paths
        return tokenizer_cli.run(args)
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


def _flag_scope(args) -> str:
    """Every Beam option where a pipeline runs (build, demo, plan of a job file);
    file-system options only where a dataset is read."""
    if args.command in ("build", "demo") or (args.command == "plan" and consumer_cli.is_job_file(args.source)):
        return flags.BEAM
    return flags.FILESYSTEM


def console_main() -> None:
    """The ``mintdim-beam`` command."""
    sys.exit(main())


if __name__ == "__main__":
    console_main()
