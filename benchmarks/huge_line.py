"""Peak memory of a build whose input is one huge JSONL line, against the line's size.

    python benchmarks/huge_line.py [--mb 200] [--text english|generated] [--model PATH]
                                   [--on-overflow truncate|extend|skip] [--options=--flag ...]
                                   [--no-accelerators] [--skip-alone]

One line is written: ``{"id": ..., "title": ..., "text": <about MB megabytes>}``, a long
document. ``english`` text (the default where ``../shared/realdata`` is present) is the
real English prompts and answers of its data files, repeated; ``generated`` is the
benchmark corpus's mix (English-like words, Vietnamese and a little CJK, which a model
without byte fallback turns into UNK tokens, and about twice as many tokens per byte).
It is built with the template ``{title}\\n\\n{text}`` and ``--model``: the T5
SentencePiece model by default (``../shared/realdata``, else the demo model), or a
Hugging Face ``tokenizer.json`` (a name ending in ``.json``; one without padding, which a
build refuses, is used through a copy in the work directory with padding set to its
``[PAD]``/``<pad>`` token, else id 0: padding never changes the ids of a text). The
build runs in a fresh process, by the fluent API's ``run()`` with no runner (the default
local configuration) unless ``--options`` are given. Three processes are measured, each
for the peak RSS of its whole process tree (launcher and workers, sampled every 50 ms):

* the build of a small line (the fixed cost of Python, Beam and the model);
* the build of the huge line;
* the tokenizer alone: the line parsed and its text encoded by one call of the library,
  in a process that does nothing else (SentencePiece ``encode``; for Hugging Face
  ``encode_batch_fast`` of the whole text without special tokens, padding or
  truncation: what the library needs, which the build avoids for a text it can cut
  exactly, see ``mintdim_beam/long_texts.py``). ``--skip-alone`` leaves it out.

and printed as ratios to the line's size. For SentencePiece the tokenizer's own need
bounds the build's: see docs/decisions.md, "One huge line". Requires ``psutil``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_corpus  # noqa: E402  (the corpus generator's text)
import run as bench  # noqa: E402  (measure: wall time and peak tree RSS)

REALDATA = os.path.join(ROOT, "..", "shared", "realdata")
T5 = os.path.join(REALDATA, "tokenizers", "t5_spiece_32000.model")
DEMO = os.path.join(ROOT, "mintdim_beam", "demo", "demo.model")
ENGLISH = [os.path.join(REALDATA, "data", name)
           for name in ("oasst_prompt_lottery_en_250_text.jsonl", "alpaca_en_demo.jsonl")]

BUILD = """
import json, sys
import mintdim_beam
job = json.load(open(sys.argv[1]))
source = (mintdim_beam.pipeline("unit-build")
          .source.jsonl(files=[job["file"]], fields=[["title", "text"]], templates=["{title}\\n\\n{text}"]))
tokenizer = source.tokenizer.hf_json if job["model"].endswith(".json") else source.tokenizer.sentencepiece
declared = (tokenizer(files=[job["model"]])
            .units(sizes=[[2048, 8192]], build_batch=[64])
            .output.dir(job["out"], samples_per_shard=[4096]))
kwargs = {"options": job["options"]} if job["options"] else {}
declared.run(on_overflow=job["on_overflow"], on_template_unk="continue", on_bad_record="abort",
             accelerators=job["accelerators"], echo=lambda line: None, **kwargs)
"""

TOKENIZER_ALONE = """
import json, sys
import orjson
job = json.load(open(sys.argv[1]))
if job["model"].endswith(".json"):
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(job["model"])
    tok.no_padding()
    tok.no_truncation()
else:
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=job["model"])
with open(job["file"], "rb") as f:
    text = orjson.loads(f.readline())["text"]
if job["model"].endswith(".json"):
    ids = tok.encode_batch_fast([text], add_special_tokens=False)[0].ids
else:
    ids = sp.encode([text], return_type="numpy", num_threads=1)[0]
print(len(ids))
"""


def with_padding(model: str, work: str) -> str:
    """``model``, or for a ``tokenizer.json`` without padding (which a build refuses) a
    copy in ``work`` whose padding is its pad token, else id 0."""
    if not model.endswith(".json"):
        return model
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(model)
    if tok.padding:
        return model
    vocab = tok.get_vocab(with_added_tokens=True)
    token = next((t for t in ("[PAD]", "<pad>", "<|padding|>", "<|endoftext|>") if t in vocab), None)
    tok.enable_padding(pad_id=vocab[token] if token else 0, pad_token=token or "<pad>")
    path = os.path.join(work, "padded." + os.path.basename(model))
    tok.save(path)
    return path


def _strings(value, out: list) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def _pieces(kind: str, rng: random.Random) -> list:
    """Distinct texts to join into the huge one."""
    if kind == "english":
        texts: list = []
        for path in ENGLISH:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        _strings(json.loads(line), texts)
        return [t + "\n" for t in texts if t.strip()]
    latin = make_corpus._latin_vocab(rng)
    return [make_corpus._text(rng, latin, rng.randint(200, 2000)) + "\n" for _ in range(400)]


def write_line(path: str, megabytes: float, kind: str, seed: int = 0) -> int:
    """One JSONL line of about ``megabytes`` MB of ``kind`` text; returns its size in
    bytes (newline aside). Pieces of text are drawn at random until the size is reached,
    so that 200 MB take seconds to write."""
    rng = random.Random(seed)
    pieces = [json.dumps(p, ensure_ascii=False)[1:-1] for p in _pieces(kind, rng)]
    target = int(megabytes * 1_000_000)
    head = '{"id": "doc-0", "title": "One very long document", "text": "'
    size = len(head)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(head)
        while size < target:
            piece = rng.choice(pieces)
            f.write(piece)
            size += len(piece.encode("utf-8"))
        f.write('"}\n')
    return size + 2


def measure(work: str, name: str, megabytes: float, args, script: str) -> dict:
    data = os.path.join(work, f"{name}.jsonl")
    line_bytes = write_line(data, megabytes, args.text)
    out = os.path.join(work, f"out_{name}")
    shutil.rmtree(out, ignore_errors=True)
    job = os.path.join(work, f"{name}.json")
    with open(job, "w") as f:
        json.dump({"file": data, "model": args.build_model, "out": out, "on_overflow": args.on_overflow,
                   "options": args.options, "accelerators": args.accelerators}, f)
    m = bench.measure([sys.executable, "-c", script, job])
    m["line_bytes"] = line_bytes
    if script is BUILD:
        with open(os.path.join(out, "stats.json")) as f:
            stats = json.load(f)
        with open(os.path.join(out, "build_info.json")) as f:
            info = json.load(f)
        with open(os.path.join(out, "sample_index.jsonl")) as f:
            m["tokens"] = sum(json.loads(row)["token_count"] for row in f) if stats["total_samples"] else 0
        if stats.get("overflow_samples"):
            with open(os.path.join(out, "overflow_index.jsonl")) as f:
                m["tokens"] = json.loads(f.readline())["token_count"]
        m["config"] = f"{info['runner']} {info.get('direct_running_mode')} x{info.get('direct_num_workers')}"
        if args.model.endswith(".json"):
            m["config"] += f", word encoder {'on' if info.get('bpe_word_encoder') else 'off'}"
    else:
        m["tokens"] = int(m["stdout"].strip())
        m["config"] = "one encode_batch_fast call" if args.model.endswith(".json") else "one SentencePiece call"
    shutil.rmtree(out, ignore_errors=True)
    os.remove(data)
    return m


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=200.0, help="size of the huge line in MB")
    ap.add_argument("--text", choices=("english", "generated"),
                    default="english" if all(map(os.path.exists, ENGLISH)) else "generated")
    ap.add_argument("--model", default=T5 if os.path.exists(T5) else DEMO,
                    help="SentencePiece .model, or Hugging Face tokenizer .json")
    ap.add_argument("--on-overflow", default="truncate", choices=("truncate", "extend", "skip"))
    ap.add_argument("--options", action="append", default=[], help="a Beam flag (repeatable)")
    ap.add_argument("--no-accelerators", dest="accelerators", action="store_false",
                    help="build with the tokenizer libraries alone (run option accelerators: false)")
    ap.add_argument("--skip-alone", action="store_true",
                    help="do not measure the tokenizer alone (a Hugging Face tokenizer needs 100-180x the line "
                         "for it: too much for a large line on a shared machine)")
    ap.add_argument("--work", default=None, help="work directory (a temporary one by default)")
    args = ap.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="mintdim-huge-")
    os.makedirs(work, exist_ok=True)
    try:
        args.build_model = with_padding(args.model, work)
        print(f"{args.text} text, model {os.path.basename(args.model)}, on_overflow={args.on_overflow}, "
              f"accelerators {args.accelerators}, options {args.options or 'default'}", flush=True)
        small = measure(work, "small", 0.001, args, BUILD)
        huge = measure(work, "huge", args.mb, args, BUILD)
        alone = None if args.skip_alone else measure(work, "alone", args.mb, args, TOKENIZER_ALONE)
        mib, size = 2 ** 20, huge["line_bytes"]
        rows = (("build, small line", small), ("build, huge line", huge), ("tokenizer alone", alone))
        for label, m in (row for row in rows if row[1] is not None):
            print(f"{label:<18} {m['line_bytes'] / mib:8.1f} MiB line {m['tokens']:>12,} tokens "
                  f"{m['wall']:7.1f} s  peak tree RSS {m['peak_rss'] / mib:7.0f} MiB "
                  f"= {m['peak_rss'] / m['line_bytes']:6.2f}x line  [{m['config']}]", flush=True)
        above_alone = "" if alone is None else \
            f"; above the tokenizer alone {(huge['peak_rss'] - alone['peak_rss']) / size:.2f}x"
        print(f"build: {huge['peak_rss'] / size:.2f}x the line; above the small line's build "
              f"{(huge['peak_rss'] - small['peak_rss']) / size:.2f}x{above_alone} "
              f"({size / max(huge['tokens'], 1):.2f} bytes a token)")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
