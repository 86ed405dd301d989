"""Where the local runner's default should switch from one process to worker processes.

    python benchmarks/local_mode.py [--sizes 8,16,32,64,128] [--tokenizers bpe,sp] [--runs 3]

The default local build (``launcher.choose_local_mode``) runs in memory below
``launcher.MULTI_PROCESS_MIN_BYTES`` of input and with one worker process per core
from there. This script builds the generated corpus at each ``--sizes`` MB both ways,
each build a fresh ``mintdim-beam build`` process (``run.run_pipeline``), interleaved:
``--direct_running_mode=in_memory`` (the encode pool's threads beside one parsing
thread) and ``--direct_running_mode=multi_processing --direct_num_workers=N`` (N: the
cores), and prints the best wall of ``--runs`` for each, their ratio, and the smallest
size from which worker processes were faster at every larger size too. Output bytes
are the same either way (the tests check it); only time differs. Requires ``psutil``.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (corpus, tokenizer, run_pipeline)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="8,16,32,64,128", help="corpus sizes in MB")
    parser.add_argument("--tokenizers", default="bpe,sp")
    parser.add_argument("--sp-model", default=bench.DEFAULT_SP)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    cores = os.cpu_count() or 1
    modes = {"in memory": ["--direct_running_mode=in_memory"],
             f"{cores} processes": ["--direct_running_mode=multi_processing", f"--direct_num_workers={cores}"]}
    os.makedirs(args.work, exist_ok=True)
    corpora = {mb: bench.ensure_corpus(args.work, mb) for mb in sizes}
    print(f"[local-mode] {cores} cores; load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for tok in args.tokenizers.split(","):
        if tok == "bpe":
            model, _ = bench.ensure_bpe(args.work, bench.ensure_corpus(args.work, 100))
            kind = "hf_json"
        else:
            model, kind = os.path.abspath(args.sp_model), "sentencepiece"
        best = {}
        for run in range(args.runs):
            for mb in sizes:
                for mode, flags in modes.items():
                    m = bench.run_pipeline(args.work, "local_mode", corpora[mb], kind, model, flags)
                    key = (mb, mode)
                    best[key] = min(best.get(key, float("inf")), m["wall"])
                    print(f"run {run + 1} {tok} {mb:g} MB {mode:12s} {m['wall']:6.2f} s  ({m['config']})",
                          flush=True)
        ratios = [best[(mb, "in memory")] / best[(mb, f"{cores} processes")] for mb in sizes]
        faster = [r > 1 for r in ratios]
        from_mb = next((mb for k, mb in enumerate(sizes) if all(faster[k:])), None)
        for mb, ratio in zip(sizes, ratios):
            rows.append((tok, mb, best[(mb, "in memory")], best[(mb, f"{cores} processes")], ratio))
        print(f"[local-mode] {tok}: processes faster from "
              f"{'never' if from_mb is None else f'{from_mb:g} MB'} on", flush=True)
    print(f"\n| tokenizer | MB | in memory s | {cores} processes s | in memory / processes |")
    print("|---|---:|---:|---:|---:|")
    for tok, mb, mem, procs, ratio in rows:
        print(f"| {tok} | {mb:g} | {mem:.2f} | {procs:.2f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
