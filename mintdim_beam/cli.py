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
import gc
import logging
import json
import os
import signal
import sys
from typing import Optional, Sequence

from . import consumer_cli, digests, errors, patterns, warm_workers
from .imports import collector_paused, freeze_at_exit
from .config import (DEFAULT_BLOCK_SIZE, JOB_SECTIONS, JobSpec, Policies, check_build_id, check_job_sections,
                     resolve, run_settings)
from .tokenizers import HF_JSON, SENTENCEPIECE

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
DEMO_DIR = os.path.join(os.path.dirname(__file__), "demo")

_SECTIONS = {name: set(keys) for name, keys in JOB_SECTIONS.items()}


def _invalid(problem: str) -> errors.PipelineValidationError:
    return errors.PipelineValidationError.invalid(
        problem=problem,
        rules=["job file sections: " + ", ".join(f"{k} ({', '.join(sorted(v))})" for k, v in _SECTIONS.items())],
    )


def load_job_file(path: str) -> tuple[JobSpec, dict]:
    """Parse a YAML/JSON job file into a JobSpec and the ``run`` section."""
    if not os.path.exists(path):
        raise errors.MintDimFileNotFoundError(context="job file", path=path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        if path.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:
        raise _invalid(f"job file {path} could not be parsed: {exc}") from None
    check_job_sections(data, path)
    source, tok = data.get("source", {}), data.get("tokenizer", {})
    units, output = data.get("units", {}), data.get("output", {})
    kind, tok_files = tok.get("type"), tok.get("files")
    for name in (SENTENCEPIECE, HF_JSON):
        if name in tok:
            kind, tok_files = name, tok[name]
    if kind is not None and kind not in (SENTENCEPIECE, HF_JSON):
        raise errors.TokenizerValidationError.unsupported_format(tokenizer_type=kind)
    spec = JobSpec(
        files=source.get("files"), fields=source.get("fields"), templates=source.get("templates"),
        tokenizer_kind=kind, tokenizer_files=tok_files,
        sizes=units.get("sizes"), build_batch=units.get("build_batch"),
        output_dirs=output.get("dir"), samples_per_shard=output.get("samples_per_shard"),
    )
    return spec, dict(data.get("run", {}))


def demo_job(out_dir: str) -> tuple[JobSpec, dict]:
    """The bundled demo: English instructions and Vietnamese chat, one output each."""
    spec = JobSpec(
        files=[os.path.join(DEMO_DIR, "instructions.jsonl"), os.path.join(DEMO_DIR, "chat_vi.jsonl")],
        fields=[["instruction", "input", "output"], ["prompt", "response"]],
        templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}",
                   "Người dùng: {prompt}\n\nTrợ lý: {response}"],
        tokenizer_kind=SENTENCEPIECE,
        tokenizer_files=[os.path.join(DEMO_DIR, "demo.model")],
        sizes=[[64, 128, 256], [64, 128, 192]],
        build_batch=[256],
        output_dirs=[os.path.join(out_dir, "instructions"), os.path.join(out_dir, "chat_vi")],
        samples_per_shard=[64],
    )
    return spec, {"on_overflow": "extend", "on_template_unk": "continue", "on_bad_record": "skip"}


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
    config = patterns.expand(config, list(beam_args))
    early = pool = None
    if not run.get("versioned"):
        # Both overlap the Beam import: hashing the inputs, and starting the worker
        # processes the default local runner will use (warm_workers).
        early = digests.start_local(config)
        pool = warm_workers.start_for(config, None, list(beam_args))
    try:
        with collector_paused():
            from .launcher import launch, launch_versioned  # imports Beam; after logging is configured
        freeze_at_exit()
    except BaseException:
        if pool is not None:
            pool.close()
        raise

    if run.get("versioned"):
        found = launch_versioned(config, options=list(beam_args), skip_unchanged=bool(run.get("skip_unchanged")),
                                 build_id=getattr(args, "build_id", None))
        if found.skipped:
            return 0
        result = found.result
    else:
        result = launch(config, options=list(beam_args), input_digests=early, warm_pool=pool)
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
    from apache_beam.options import pipeline_options as po

    from . import storage

    parser = po._BeamArgumentParser(add_help=False)
    for name in storage.FILESYSTEM_OPTION_CLASSES:
        cls = getattr(po, name, None)
        if cls is not None:
            cls._add_argparse_args(parser)
    known, rest = parser.parse_known_args(list(beam_args))
    settings = {k: v for k, v in vars(known).items() if v is not None}
    if settings:
        storage.configure(settings, force=True)
    return list(beam_args) if keep else rest


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
    """The ``mintdim-beam`` command: :func:`main`, then a quick interpreter exit.

    When ``main`` returns, every output is published and every file closed; what is
    left is the interpreter's teardown, whose garbage collections walk the ~1,600
    modules a Beam process has imported (0.3-0.5 s measured). Freezing the heap
    first skips those walks; this process ends right after, so nothing is kept alive
    that would have been needed. (The library's ``run()`` leaves the caller's
    process alone.)
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console_main()
