"""The baseline: a bare single-thread loop that parses, renders and encodes the same segments.

    python benchmarks/bare_loop.py CORPUS.jsonl KIND TOKENIZER [--batch 1024] [--fields A,B,C] [--gigatoken]

It does the minimum a correct tool must do — parse each JSON line, render the
template's field segments, encode every segment exactly (literals once) — in one thread
and nothing else: no hashing, no indexes, no shards. ``KIND`` is ``sentencepiece`` or
``hf_json``; the template is the fields (default instruction, input, output) with a
blank line between each two, as ``run.py`` declares it. Prints one JSON line: tokens,
seconds, tokens/s. The HF tokenizer's own thread pool is limited to one thread by the
caller (``RAYON_NUM_THREADS=1``). ``--gigatoken`` (a BPE ``tokenizer.json``, or a SentencePiece
BPE ``.model`` with byte fallback) encodes each batch with
gigatoken instead, in one call on the calling thread (``parallel=False``), the ids read
from its result without a Python int per token.
"""

from __future__ import annotations

import argparse
import json
import os
import time

FIELDS = "instruction,input,output"
#: The template's literal between two fields (``run.py``'s ``template``).
LITERAL = "\n\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("kind", choices=["sentencepiece", "hf_json"])
    parser.add_argument("tokenizer")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--fields", default=FIELDS, help="text fields, comma-separated (default: %(default)s)")
    parser.add_argument("--gigatoken", action="store_true", help="encode with gigatoken on one thread (BPE only)")
    args = parser.parse_args(argv)
    fields = args.fields.split(",")

    if args.gigatoken:
        import numpy as np
        import gigatoken

        with open(args.tokenizer, "rb") as f:
            data = f.read()
        if args.kind == "sentencepiece":     # a BPE model with byte fallback
            backend = gigatoken.Tokenizer.from_sentencepiece(data).backend
        else:
            from gigatoken.gigatoken_rs import load_hf_json

            backend = load_hf_json(data)

        def encode(texts):
            offsets = np.asarray(backend.encode_batch(texts, parallel=False).layout.offsets.data)
            return [range(n) for n in np.diff(offsets).tolist()]   # only the counts are summed
    elif args.kind == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=args.tokenizer)

        def encode(texts):
            return sp.encode(texts, out_type=int, num_threads=1)
    else:
        os.environ.setdefault("RAYON_NUM_THREADS", "1")
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(args.tokenizer)
        tok.no_padding()
        tok.no_truncation()

        def encode(texts):
            return [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]

    start = time.perf_counter()
    literal_tokens = sum(len(ids) for ids in encode([LITERAL] * (len(fields) - 1)))
    tokens = samples = 0
    batch: list = []
    with open(args.corpus, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            batch.extend(record[name] for name in fields)
            samples += 1
            if len(batch) >= args.batch * len(fields):
                tokens += sum(map(len, encode(batch)))
                batch = []
    if batch:
        tokens += sum(map(len, encode(batch)))
    tokens += samples * literal_tokens
    seconds = time.perf_counter() - start
    print(json.dumps({"tokens": tokens, "samples": samples, "seconds": seconds, "tokens_per_s": tokens / seconds}))


if __name__ == "__main__":
    main()
