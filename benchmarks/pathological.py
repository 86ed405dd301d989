"""What the generated corpus's 1 MB line without whitespace costs a build.

    python benchmarks/pathological.py [--mb 100] [--pairs 3] [--tokenizers sp,bpe]

The generated corpus (``make_corpus.py``) holds one pathological record: a single line
of about 1 MB without whitespace. Its twin, ``--no-pathological`` with the same seed,
holds the same records with ordinary records in place of that line (the generator
fills up to the same size). Builds of the two differ only in that megabyte, so

    line cost = wall(with the line) - wall(twin) + share,   share = wall(twin) x 1 MB / size

and the line costs no more than its share of bytes when the two builds take the same
time (the mean of the pairs is printed, and the median pair, which one noisy pair does
not move). Both run through the fluent API's ``run()`` with its default configuration, in
interleaved pairs (the machine's drift hits both alike); the bare single-thread loop
(``bare_loop.py``) is measured the same way for comparison. Prints each pair and the
means.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import DEFAULT_SP, ensure_bpe, ensure_corpus, measure, run_pipeline  # noqa: E402


def twin(work: str, mb: float) -> str:
    path = os.path.join(work, f"corpus_{mb:g}mb_no_pathological.jsonl")
    if not os.path.exists(path):
        from make_corpus import generate

        print(f"[bench] generating {path}", flush=True)
        generate(path + ".tmp", mb, pathological=False)
        os.replace(path + ".tmp", path)
    return path


def bare(corpus: str, kind: str, tokenizer: str) -> float:
    m = measure([sys.executable, os.path.join(HERE, "bare_loop.py"), corpus, kind, tokenizer],
                env={"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    return json.loads(m["stdout"])["seconds"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--tokenizers", default="sp,bpe")
    parser.add_argument("--sp-model", default=DEFAULT_SP)
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    args = parser.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    corpus, plain = ensure_corpus(args.work, args.mb), twin(args.work, args.mb)
    size = os.path.getsize(plain)
    with open(corpus, "rb") as f:
        line = max((len(row) for row in f), default=0)
    print(f"[bench] longest line {line:,} bytes; corpora {os.path.getsize(corpus):,} and {size:,} bytes")
    for name in args.tokenizers.split(","):
        kind, tok = (("sentencepiece", args.sp_model) if name == "sp"
                     else ("hf_json", ensure_bpe(args.work, corpus)[0]))
        print(f"\n== {kind}: {os.path.basename(tok)} ==", flush=True)
        for label, run in (
            ("pipeline default", lambda c: run_pipeline(args.work, f"patho_{name}", c, kind, tok, [],
                                                        fluent=True)["wall"]),
            ("bare loop (encode seconds)", lambda c: bare(c, kind, tok)),
        ):
            pairs = []
            for _ in range(args.pairs):
                pairs.append((run(corpus), run(plain)))
                print(f"{label:<28} with the line {pairs[-1][0]:7.2f} s   twin {pairs[-1][1]:7.2f} s", flush=True)
            with_line = sum(a for a, _ in pairs) / len(pairs)
            without = sum(b for _, b in pairs) / len(pairs)
            share = without * line / size
            cost = with_line - without + share
            print(f"{label:<28} means {with_line:.2f} s / {without:.2f} s: the line costs {cost:.2f} s "
                  f"against a byte share of {share:.2f} s ({cost / share:.2f}x)", flush=True)
            # One pair caught by the machine's noise moves the mean by more than the
            # share; the median pair is the figure such a pair does not move.
            median = statistics.median(a - b for a, b in pairs) + share
            print(f"{label:<28} median pair: the line costs {median:.2f} s ({median / share:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
