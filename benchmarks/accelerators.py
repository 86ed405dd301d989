"""Encoder CPU with and without the exact accelerators (``mintdim_beam.tokenization.accel``), one thread.

    python benchmarks/make_corpus.py /tmp/c.jsonl --mb 20
    python benchmarks/accelerators.py /tmp/c.jsonl --sp T5.model --bpe TOKENIZER.json [--repeats 2]

What a worker's encoder spends in the tokenizer adapter, and nothing else: the corpus's
field texts (instruction, input, output; empty ones left out, as the encoder does) in
calls of 1024 texts, each call followed by the UNK audit of the texts holding an UNK
token (SentencePiece). ``--sp``: the adapter with accelerators (the Unigram UNK audit
from the normalized text) against the adapter without (a second encode to protos).
``--bpe``: a byte-level BPE ``tokenizer.json`` encoded word by word against
``encode_batch_fast``; the adapter's two paths, called directly, because a tokenizer
without an unk token (GPT-NeoX) is refused by the adapter but encodes the same way.
CPU seconds (``time.process_time``, every thread) per 100 MB of corpus, the best of
``--repeats`` interleaved runs; the tokenizers library is held to one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")   # before the tokenizers library starts its pool

import numpy as np  # noqa: E402

FIELDS = ("instruction", "input", "output")
BATCH = 1024


def _texts(corpus: str) -> list:
    texts = []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            texts.extend(record[k] for k in FIELDS if record.get(k))
    return texts


def _sentencepiece(path: str, batches: list, accelerators: bool) -> float:
    from mintdim_beam.tokenization.adapters import load_tokenizer

    with open(path, "rb") as f:
        tok = load_tokenizer("sentencepiece", path, f.read(), threads=1, accelerators=accelerators)
    tok.prepare()
    start = time.process_time()
    for batch in batches:
        flat, lengths = tok.encode_batch(batch)
        starts = np.cumsum(lengths) - lengths
        positions = [np.flatnonzero(flat[a:a + n] == tok.unk_id).tolist() for a, n in zip(starts, lengths)]
        held = [k for k, p in enumerate(positions) if p]
        if held:
            tok.unk_column_at([batch[k] for k in held], [positions[k] for k in held])
    return time.process_time() - start


def _byte_level_bpe(path: str, batches: list, accelerators: bool) -> float:
    from tokenizers import Tokenizer

    from mintdim_beam.tokenization.accel import bpe_word_encoder

    with open(path, encoding="utf-8") as f:
        text = f.read()
    tok = Tokenizer.from_str(text)
    words = bpe_word_encoder(tok, text) if accelerators else None
    if accelerators and words is None:
        raise SystemExit(f"{path}: not a byte-level BPE the word encoder serves")
    start = time.process_time()
    for batch in batches:
        if words is not None:
            words.encode_batch(batch)
        else:
            ids = [e.ids for e in tok.encode_batch_fast(batch, add_special_tokens=False)]
            np.fromiter((i for one in ids for i in one), np.int64, sum(map(len, ids)))
    return time.process_time() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--sp", help="SentencePiece .model (e.g. T5)")
    parser.add_argument("--bpe", help="byte-level BPE tokenizer.json (e.g. GPT-NeoX)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    texts = _texts(args.corpus)
    batches = [texts[a:a + BATCH] for a in range(0, len(texts), BATCH)]
    per_100mb = 100e6 / os.path.getsize(args.corpus)
    for label, path, run in (("sentencepiece", args.sp, _sentencepiece), ("byte-level bpe", args.bpe, _byte_level_bpe)):
        if not path:
            continue
        best = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeats):
            for accelerators in (True, False):
                best[accelerators] = min(best[accelerators], run(path, batches, accelerators))
        fast, plain = best[True] * per_100mb, best[False] * per_100mb
        print(json.dumps({"tokenizer": label, "path": os.path.basename(path),
                          "accelerated_s_per_100mb": round(fast, 2), "plain_s_per_100mb": round(plain, 2),
                          "saved": f"{1 - fast / plain:.0%}"}), flush=True)


if __name__ == "__main__":
    main()
