"""Steady-state throughput: what each extra megabyte costs, against the bare tokenizer loop.

    python benchmarks/steady_state.py [--mb 100 --factor 3] [--runs 3] [--tokenizers sp,bpe]

A build's wall time is a fixed start-up (interpreter, Beam's import, the runner's
workers, the plan and publishing) plus a part that grows with the data. Users of a
large corpus pay the second, so this script measures it directly: the default build
(the fluent API's ``run()`` with no runner, ``fluent_build.py``) and the bare
single-thread loop (``bare_loop.py``) each run on the generated corpus of ``--mb`` MB
and on one ``--factor`` times as large (same generator, same seed family), each in a
fresh process. The marginal rate of each is

    (tokens_large - tokens_small) / (wall_large - wall_small)

and their ratio is the build's steady-state speed over the bare loop, start-up
cancelled out. The four processes of a run are interleaved and the ratio is taken
within the run; ``--runs`` repeats the whole and prints the median ratio.

Start-up is reported apart: the build's wall time at ``--mb`` minus its tokens at the
marginal rate, beside Beam's own floor, a trivial pipeline (``Create`` of three
numbers, one ``Map``) on the in-memory runner and with two worker processes.

Tokenizers as in ``run.py``: ``sp`` is the T5 SentencePiece model from
``../shared/realdata`` (or ``--sp-model``), ``bpe`` a 32k byte-level BPE trained on the
small corpus. Requires ``psutil``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (the shared helpers: corpus, tokenizer, measure)

#: Targets of the lean-core work on 2 cores (docs/performance.md).
TARGET = {"sentencepiece": 1.1, "hf_json": 4.0}

TRIVIAL = """
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
import sys
flags = sys.argv[1:]
with beam.Pipeline(runner=FnApiRunner(), options=PipelineOptions(flags)) as p:
    p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
"""


def _bare(corpus: str, kind: str, tokenizer: str) -> dict:
    m = bench.measure([sys.executable, os.path.join(HERE, "bare_loop.py"), corpus, kind, tokenizer],
                      env={"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    m["tokens"] = json.loads(m["stdout"])["tokens"]
    return m


def _build(work: str, corpus: str, kind: str, tokenizer: str) -> dict:
    return bench.run_pipeline(work, f"steady_{kind}", corpus, kind, tokenizer, [], fluent=True)


def _marginal(small: dict, large: dict) -> float:
    return (large["tokens"] - small["tokens"]) / (large["wall"] - small["wall"])


def trivial_floor() -> dict:
    """Wall seconds of a trivial Beam pipeline, in memory and with two worker processes."""
    out = {}
    for name, flags in (("in memory", []),
                        ("2 processes", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"])):
        out[name] = bench.measure([sys.executable, "-c", TRIVIAL, *flags])["wall"]
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--factor", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokenizers", default="sp,bpe")
    parser.add_argument("--sp-model", default=bench.DEFAULT_SP)
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    parser.add_argument("--corpus", help="the small corpus (default: the generated one of --mb MB)")
    parser.add_argument("--corpus-large", help="the large corpus, with --corpus (e.g. made by make_corpus.py "
                                               "--tile ... --unique with another --seed)")
    args = parser.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    if bool(args.corpus) != bool(args.corpus_large):
        parser.error("--corpus and --corpus-large go together")

    small = args.corpus or bench.ensure_corpus(args.work, args.mb)
    large = args.corpus_large or bench.ensure_corpus(args.work, args.mb * args.factor)
    kinds = []
    for t in args.tokenizers.split(","):
        if t == "sp":
            kinds.append(("sentencepiece", args.sp_model))
        elif t == "bpe":
            kinds.append(("hf_json", bench.ensure_bpe(args.work, small)[0]))
        else:
            parser.error(f"unknown tokenizer {t!r} (sp, bpe)")

    floor = trivial_floor()
    print(f"[steady] Beam's floor, a trivial pipeline: in memory {floor['in memory']:.2f} s, "
          f"2 processes {floor['2 processes']:.2f} s", flush=True)
    for kind, tokenizer in kinds:
        ratios, startups = [], []
        print(f"\n== {kind}: {os.path.basename(tokenizer)}, {os.path.basename(small)} "
              f"({os.path.getsize(small) / 1e6:.0f} MB) -> {os.path.basename(large)} "
              f"({os.path.getsize(large) / 1e6:.0f} MB) ==", flush=True)
        for run in range(1, args.runs + 1):
            b_small = _build(args.work, small, kind, tokenizer)
            l_small = _bare(small, kind, tokenizer)
            b_large = _build(args.work, large, kind, tokenizer)
            l_large = _bare(large, kind, tokenizer)
            for b, l in ((b_small, l_small), (b_large, l_large)):
                if b["tokens"] != l["tokens"]:
                    print(f"  note: build wrote {b['tokens']} tokens, the loop encoded {l['tokens']}")
            build_rate, bare_rate = _marginal(b_small, b_large), _marginal(l_small, l_large)
            ratio = build_rate / bare_rate
            startup = b_small["wall"] - b_small["tokens"] / build_rate
            ratios.append(ratio)
            startups.append(startup)
            print(f"run {run}: build {b_small['wall']:.2f} -> {b_large['wall']:.2f} s "
                  f"[{b_small['config']}], bare loop {l_small['wall']:.2f} -> {l_large['wall']:.2f} s; "
                  f"marginal {build_rate / 1e6:.2f} M tok/s against {bare_rate / 1e6:.2f} M tok/s: "
                  f"{ratio:.2f}x; start-up {startup:.2f} s; peak RSS {b_large['peak_rss'] / 2**20:.0f} MiB",
                  flush=True)
        median = statistics.median(ratios)
        verdict = "met" if median >= TARGET[kind] else "NOT met"
        print(f"median steady-state ratio {median:.2f}x (target >= {TARGET[kind]}x: {verdict}); "
              f"median start-up {statistics.median(startups):.2f} s", flush=True)


if __name__ == "__main__":
    main()
