"""Parsing, checking, rendering and hashing lines (``LineParser.parse_slice``), per line.

    PYTHONPATH=CHECKOUT python benchmarks/parse_lines.py JSONL [--mb 50] [--runs 5]

Reads the first ``--mb`` MB of ``JSONL`` (the benchmark corpora's three fields,
``{instruction}\\n\\n{input}\\n\\n{output}``) as the encoder reads a block (bytes, not
decoded), then parses it slice by slice with a fresh parser per run and prints the best
run's microseconds per line. Run it with ``PYTHONPATH`` set to each checkout to compare
two trees on one machine.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from mintdim_beam import pipeline
from mintdim_beam.core import sample_lines
from mintdim_beam.storage.line_blocks import read_block_lines

DEMO_MODEL = os.path.join(os.path.dirname(sample_lines.__file__), "..", "demo", "demo.model")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("jsonl")
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    config = (pipeline("unit-build").source.jsonl(files=[args.jsonl], fields=[["instruction", "input", "output"]],
                                                  templates=["{instruction}\n\n{input}\n\n{output}"])
              .tokenizer.sentencepiece(files=[DEMO_MODEL]).units(sizes=[[128, 4096]], build_batch=[1024])
              .output.dir(tempfile.mkdtemp(), samples_per_shard=[16384]).config(on_overflow="extend"))
    spec = config.files[0]
    lines, _ = read_block_lines(args.jsonl, 0, int(args.mb * 1e6), decode=False)
    best = float("inf")
    for _ in range(args.runs):
        lp = sample_lines.LineParser(spec, config.policies)
        started, pos, base = time.perf_counter(), 0, 0
        while pos < len(lines):
            parsed, pos = lp.parse_slice(lines, pos, base, pos == 0)
            base += parsed.size if parsed is not None else 0
        best = min(best, time.perf_counter() - started)
    print(f"{os.path.dirname(os.path.dirname(sample_lines.__file__))}: {len(lines)} lines, "
          f"{best / len(lines) * 1e6:.3f} us a line (best of {args.runs})")


if __name__ == "__main__":
    main()
