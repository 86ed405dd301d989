"""What each Beam runner costs here: start-up and steady state, against the local runner.

    python benchmarks/runners.py [--mb 8 --factor 4] [--runs 2] [--runners local,prism,flink]
                                 [--tokenizer sp|demo] [--cluster-flags NAME=FLAGS ...]

Every build is ``mintdim-beam build`` in a fresh process (``run.measure``), on the
generated corpus (``make_corpus.py``) of ``--mb`` MB and on one ``--factor`` times as
large, and on the bundled demo (a few kB: that wall time is the runner's start-up as a
user meets it). Per runner it prints the demo's wall time, the marginal rate

    (tokens_large - tokens_small) / (wall_large - wall_small)

(start-up cancelled out) and that rate over the local runner's, and it checks that each
runner's output equals the local runner's byte for byte (every file but
``build_info.json``). The corpus sizes stay under the local runner's multi-process
threshold unless you pass a larger ``--mb``.

Runners (``tests/runners/runner_engines.py`` finds what they need, ``tools/fetch_runners.sh``
fetches it): ``local`` (no flags: the FnApiRunner in memory), ``local2`` (the
FnApiRunner with two worker processes), ``prism`` (``--runner=PrismRunner
--prism_location=...``), ``flink`` (the Flink job server jar with ``--flink_master=[local]``
and LOOPBACK workers) and ``spark`` (the Spark job server jar in local mode, LOOPBACK).
``--cluster-flags name=FLAGS`` adds a runner of your own (e.g. a Flink cluster:
``flinkc="--runner=FlinkRunner --flink_master=localhost:8081 ..."``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "runners"))

import run as bench  # noqa: E402
import runner_engines as engines  # noqa: E402

DEMO = os.path.join(ROOT, "mintdim_beam", "demo", "instructions.jsonl")
DEMO_MODEL = os.path.join(ROOT, "mintdim_beam", "demo", "demo.model")


def runner_flags(name: str) -> list:
    """The Beam flags of a named runner, or SystemExit saying what is missing."""
    if name == "local":
        return []
    if name == "local2":
        return ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    found = {"prism": engines.prism_flags, "flink": engines.flink_local_flags,
             "spark": engines.spark_local_flags}.get(name)
    if found is None:
        raise SystemExit(f"unknown runner {name!r} (local, local2, prism, flink, spark, or --cluster-flags)")
    flags, missing = found()
    if missing:
        raise SystemExit(f"{name}: {missing}")
    return flags


def _files(out: str) -> dict:
    got = {}
    for base, _, names in os.walk(out):
        for n in names:
            if n != "build_info.json":
                p = os.path.join(base, n)
                with open(p, "rb") as f:
                    got[os.path.relpath(p, out)] = f.read()
    return got


def build(work: str, name: str, corpus: str, kind: str, tokenizer: str, flags: list) -> dict:
    """One build in a fresh process; wall, peak RSS, tokens and the output's files."""
    path, out = bench.job_file(work, name, corpus, kind, tokenizer)
    m = bench.measure([sys.executable, "-m", "mintdim_beam.cli.commands", "build", path, "--quiet", *flags])
    with open(os.path.join(out, "stats.json")) as f:
        m["tokens"] = json.load(f)["total_tokens"]
    m["files"] = _files(out)
    shutil.rmtree(out, ignore_errors=True)
    return m


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=8)
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--runners", default="local,prism")
    parser.add_argument("--tokenizer", default="sp", help="sp: the T5 model of ../shared/realdata "
                                                          "(falls back to demo), demo: the bundled demo.model")
    parser.add_argument("--cluster-flags", action="append", default=[], metavar="NAME=FLAGS")
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    args = parser.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)

    tokenizer = bench.DEFAULT_SP if args.tokenizer == "sp" and os.path.exists(bench.DEFAULT_SP) else DEMO_MODEL
    small = bench.ensure_corpus(args.work, args.mb)
    large = bench.ensure_corpus(args.work, args.mb * args.factor)
    runners = {name: runner_flags(name) for name in args.runners.split(",") if name}
    for spec in args.cluster_flags:
        name, _, flags = spec.partition("=")
        runners[name] = shlex.split(flags)
    print(f"[runners] tokenizer {os.path.basename(tokenizer)}; corpora {os.path.getsize(small) / 1e6:.0f} MB "
          f"and {os.path.getsize(large) / 1e6:.0f} MB; {args.runs} run(s) each", flush=True)

    results = {}
    reference = {}
    tokens = {}
    for run in range(1, args.runs + 1):
        for name, flags in runners.items():     # interleaved: a slow minute hits every runner
            r = results.setdefault(name, {"demo": [], "rate": [], "startup": [], "small": [], "large": [],
                                          "rss": []})
            demo = build(args.work, f"demo_{name}", DEMO, "sentencepiece", DEMO_MODEL, flags)
            b_small = build(args.work, f"small_{name}", small, "sentencepiece", tokenizer, flags)
            b_large = build(args.work, f"large_{name}", large, "sentencepiece", tokenizer, flags)
            for label, m in (("demo", demo), ("small", b_small), ("large", b_large)):
                want = reference.setdefault(label, m["files"])
                same = want == m["files"]
                if not same:
                    differ = sorted(k for k in set(want) | set(m["files"]) if want.get(k) != m["files"].get(k))
                    print(f"  {name}: {label} output DIFFERS from {next(iter(runners))}'s: {differ[:8]}")
            tokens.update(small=b_small["tokens"], large=b_large["tokens"])
            rate = (b_large["tokens"] - b_small["tokens"]) / (b_large["wall"] - b_small["wall"])
            r["demo"].append(demo["wall"])
            r["small"].append(b_small["wall"])
            r["large"].append(b_large["wall"])
            r["rate"].append(rate)
            r["startup"].append(b_small["wall"] - b_small["tokens"] / rate)
            r["rss"].append(b_large["peak_rss"])
            print(f"run {run} {name:>8}: demo {demo['wall']:6.2f} s, {b_small['wall']:6.2f} -> "
                  f"{b_large['wall']:6.2f} s, marginal {rate / 1e6:.2f} M tok/s, peak RSS "
                  f"{b_large['peak_rss'] / 2**20:.0f} MiB", flush=True)

    # The fastest of the runs of each: on a shared machine the others' load only ever adds time.
    def best(r):
        rate = (tokens["large"] - tokens["small"]) / (min(r["large"]) - min(r["small"]))
        return rate, min(r["small"]) - tokens["small"] / rate

    base = best(results[next(iter(runners))])[0]
    print(f"\nbest of {args.runs} (median in brackets); marginal rate from the best walls")
    print(f"{'runner':>8} {'demo s':>14} {'small s':>14} {'large s':>14} {'M tok/s':>8} {'vs first':>8} "
          f"{'start-up s':>10} {'RSS MiB':>8}")
    for name, r in results.items():
        rate, startup = best(r)
        cols = " ".join(f"{min(r[k]):6.2f} ({statistics.median(r[k]):5.2f})" for k in ("demo", "small", "large"))
        print(f"{name:>8} {cols} {rate / 1e6:8.2f} {rate / base:8.2f} {startup:10.2f} "
              f"{max(r['rss']) / 2**20:8.0f}")


if __name__ == "__main__":
    main()
