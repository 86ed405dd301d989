"""gigatoken's own JSONL path, as Megatron-LM's ``tools/preprocess_data_fast.py`` uses it.

    python benchmarks/gigatoken_jsonl.py CORPUS.jsonl TOKENIZER.json [--fields A,B,C]
                                         [--megatron MEGATRON_LM_CHECKOUT --out PREFIX]

For each field: ``gt.Tokenizer(path).encode_files(gt.JsonlFileSource([corpus],
field=key), parallel=True)``: Rust reads the file, parses each line, takes the field and
encodes every value on gigatoken's thread pool (all cores). The fields are done one
after another in this one process, as Megatron's script does them (``peers.py`` runs
that script itself as its "Megatron fast path" row). Nothing is written unless ``--megatron`` names a Megatron-LM checkout:
then each field's documents are written with its ``IndexedDatasetBuilder`` to
``PREFIX_<field>_document.bin/.idx``, as Megatron does (its code is imported from the
checkout, never copied here; it needs torch). No template, no literals, no hashing, no
indexes: encoding and, optionally, Megatron's writer. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("tokenizer")
    parser.add_argument("--fields", default="instruction,input,output")
    parser.add_argument("--megatron", help="a Megatron-LM checkout: write its indexed dataset too")
    parser.add_argument("--out", help="with --megatron: the output prefix")
    args = parser.parse_args(argv)
    if args.megatron and not args.out:
        parser.error("--megatron needs --out")
    start = time.perf_counter()
    import numpy as np
    import gigatoken as gt

    tokenizer = gt.Tokenizer(args.tokenizer)
    builder_module = None
    if args.megatron:
        sys.path.insert(0, args.megatron)
        from megatron.core.datasets import indexed_dataset as builder_module
    tokens = docs = 0
    for key in args.fields.split(","):
        encoded = tokenizer.encode_files(gt.JsonlFileSource([args.corpus], field=key), parallel=True)
        offsets = np.asarray(encoded.layout.offsets.data)
        tokens += int(offsets[-1] - offsets[0])
        docs += len(offsets) - 1
        if builder_module is not None:
            _write_megatron(builder_module, encoded, tokenizer.vocab_size, f"{args.out}_{key}_document")
    seconds = time.perf_counter() - start
    print(json.dumps({"tokens": tokens, "documents": docs, "seconds": seconds, "tokens_per_s": tokens / seconds}))


def _write_megatron(indexed_dataset, encoded, vocab_size: int, prefix: str) -> None:
    """Megatron's writer, as ``preprocess_data_fast.py`` calls it: ``add_documents`` with
    gigatoken's jagged array (older checkouts without it: one ``add_document`` a document)."""
    builder = indexed_dataset.IndexedDatasetBuilder(prefix + ".bin",
                                                    dtype=indexed_dataset.DType.optimal_dtype(vocab_size))
    if hasattr(builder, "add_documents"):
        builder.add_documents(encoded)
    else:
        import numpy as np
        import torch

        offsets = np.asarray(encoded.layout.offsets.data)
        ids = np.asarray(encoded.layout.content.data)
        for a, b in zip(offsets[:-1], offsets[1:]):
            builder.add_document(torch.from_numpy(ids[a:b].astype(np.int64)), [int(b - a)])
    builder.finalize(prefix + ".idx")


if __name__ == "__main__":
    main()
