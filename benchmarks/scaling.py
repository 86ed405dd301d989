"""Wall time and peak memory of a unit build, for a corpus and the same corpus x4.

    python benchmarks/scaling.py                      # 16 MiB corpus, x1 and x4, three runners
    python benchmarks/scaling.py --mib 64 --scales 1 4 --runners memory multi2
    python benchmarks/scaling.py --json results.json  # also write the figures as JSON

Each input is one JSONL file of synthetic instruction records (``tests/testdata/
textgen.py``, seeded), so the x4 corpus is four times as many distinct records in a
single file four times as large; it is split into ``--block-size`` blocks that the
workers read independently. Every build runs in a fresh child process; the parent
samples the resident memory of the child and all its descendants (runner workers,
Dask worker processes) every 50 ms with psutil and reports:

* ``wall s``: the child's build time (``launch()`` only, not interpreter start-up);
* ``peak RSS/process``: the largest resident set any single process reached, which is
  what bounds a worker's memory (it must not grow with the corpus);
* ``peak RSS total``: the largest sum over the process tree at one instant.

Runners: ``memory`` (Beam's FnApiRunner in one process), ``multiN`` (FnApiRunner in
multi_processing mode with N worker processes), ``daskN`` (DaskRunner on a local
``dask.distributed`` cluster of N single-threaded worker processes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests" / "testdata" / "sp_unigram.model"
MiB = 1 << 20


def write_corpus(path: Path, target_bytes: int, seed: int) -> int:
    """Instruction records until ``target_bytes``; returns the record count."""
    sys.path.insert(0, str(ROOT / "tests" / "testdata"))
    import textgen

    rng = random.Random(seed)
    written = records = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target_bytes:
            for row in textgen.instruction_records(rng, 1000):
                line = json.dumps(row, ensure_ascii=False) + "\n"
                f.write(line)
                written += len(line.encode("utf-8"))
                records += 1
    return records


def _child(args) -> None:
    """Run one build and print its figures as JSON on the last line of stdout."""
    from mintdim_beam import pipeline

    job = (
        pipeline("unit-build")
        .source.jsonl(files=[args.input], fields=[["instruction", "input", "output"]],
                      templates=["### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n{output}"])
        .tokenizer.sentencepiece(files=[str(TOKENIZER)])
        .units(sizes=[[64, 128, 256]], build_batch=[args.build_batch])
        .output.dir(args.output, samples_per_shard=[args.samples_per_shard])
    )
    options, runner, cluster = [], None, None
    if args.runner == "memory":   # explicit: the default picks worker processes for large inputs
        options = ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
    elif args.runner.startswith("multi"):
        options = ["--direct_running_mode=multi_processing", f"--direct_num_workers={int(args.runner[5:])}"]
    elif args.runner.startswith("dask"):
        from apache_beam.runners.dask.dask_runner import DaskRunner
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=int(args.runner[4:]), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        runner, options = DaskRunner(), ["--dask_client_address", cluster.scheduler_address]
    started = time.monotonic()
    result = job.run(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip",
                     runner=runner, options=options, block_size=args.block_size, echo=lambda *_: None)
    seconds = time.monotonic() - started
    if cluster is not None:
        cluster.close()
    stats = result.outputs[0].stats
    print(json.dumps({"seconds": round(seconds, 2), "samples": stats["total_samples"],
                      "tokens": stats["total_tokens"], "shards": stats["shards"]}))


def _measure(cmd: list) -> dict:
    """Run ``cmd``; sample the RSS of its process tree; return its JSON line plus peaks."""
    from run import TreeRss

    if hasattr(os, "sync"):
        os.sync()   # nothing an earlier run wrote is left to write back (as run.measure)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rss = TreeRss(proc.pid)
    out, err = proc.communicate()
    rss.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    found = json.loads(out.strip().splitlines()[-1])
    found.update(peak_rss_process_mib=round(rss.single / MiB, 1), peak_rss_total_mib=round(rss.total / MiB, 1))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=16, help="size of the x1 corpus in MiB (default 16)")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--runners", nargs="+", default=["memory", "multi2", "dask2"])
    parser.add_argument("--block-size", type=int, default=2 * MiB)
    parser.add_argument("--build-batch", type=int, default=1024)
    parser.add_argument("--samples-per-shard", type=int, default=4096)
    parser.add_argument("--workdir", help="keep corpora and outputs here (default: a temporary directory)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runner", help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return 0

    work = Path(args.workdir or tempfile.mkdtemp(prefix="mintdim-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for scale in args.scales:
            corpus = work / f"corpus_x{scale}.jsonl"
            if not corpus.exists():
                write_corpus(corpus, int(args.mib * MiB * scale), seed=scale)
            size = corpus.stat().st_size
            for runner in args.runners:
                out = work / f"out_x{scale}_{runner}"
                shutil.rmtree(out, ignore_errors=True)
                cmd = [sys.executable, __file__, "--child", "--runner", runner, "--input", str(corpus),
                       "--output", str(out), "--block-size", str(args.block_size),
                       "--build-batch", str(args.build_batch), "--samples-per-shard", str(args.samples_per_shard)]
                found = _measure(cmd)
                found.update(scale=scale, runner=runner, input_mib=round(size / MiB, 1),
                             blocks=-(-size // args.block_size))
                rows.append(found)
                print(f"x{scale} {runner}: {found}", file=sys.stderr)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print("| corpus | input MiB | blocks | runner | samples | wall s | MiB/s | peak RSS/process MiB | "
          "peak RSS total MiB |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| x{r['scale']} | {r['input_mib']} | {r['blocks']} | {r['runner']} | {r['samples']} | "
              f"{r['seconds']} | {r['input_mib'] / r['seconds']:.2f} | {r['peak_rss_process_mib']} | "
              f"{r['peak_rss_total_mib']} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"settings": {k: v for k, v in vars(args).items()
                                                             if k not in ("child", "runner", "input", "output")},
                                               "cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
