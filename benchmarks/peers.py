"""The build beside its peers, on two corpora and two tokenizers, at two sizes, in one run.

    python benchmarks/peers.py [--mb 100 --factor 3 | --small] [--runs 1]
                               [--corpus-kind generated,real] [--tokenizers bpe,sp,spbpe]
                               [--megatron MEGATRON_LM_CHECKOUT] [--workers 2]
                               [--word-encoder] [--rows NAME,NAME]

Each row runs in a fresh process (``run.measure``: wall time, peak RSS of the process
tree) on a corpus of ``--mb`` MB and on one ``--factor`` times as large; the marginal
rate from the one to the other (extra MB, or extra tokens, over extra seconds) cancels
start-up out, once each row has run once untimed on the small corpus (a first process
after boot reads its libraries from the disk; ``--no-warm-up`` times it; the project's
and the Megatron checkout's modules are compiled to bytecode first, ``run.compile_bytecode``,
as an installed package's are); with
``--runs`` above 1 the summary takes each size's best wall over the runs (a shared
machine's load only ever adds time), and a marginal figure whose
extra seconds are under twice the runs' spread of one size's walls is marked
``(noise)`` (a verdict resting on one says so): start-up that varies by seconds hides
a fast row's cost, and a larger ``--factor`` shows it. The rows:

  loop               ``bare_loop.py``: parse, render, encode with the tokenizer's own
                     library on one thread (``RAYON_NUM_THREADS=1``), nothing else;
  loop-gigatoken     (BPE) the same loop, each batch in one gigatoken call, one thread;
  gigatoken-jsonl    (BPE) ``gigatoken_jsonl.py``: gigatoken reads and encodes the file
                     itself, one field after another, on all cores; nothing written;
  megatron-fast      (BPE) Megatron-LM's ``tools/preprocess_data_fast.py`` from the
                     checkout given by ``--megatron`` (``HuggingFaceTokenizer``,
                     ``--use-gigatoken``): gigatoken's ``JsonlFileSource`` per field, then
                     Megatron's ``IndexedDatasetBuilder.add_documents``, ``.bin``/``.idx``;
  megatron-classic   the checkout's ``tools/preprocess_data.py --workers N``
                     (``HuggingFaceTokenizer`` for the BPE, ``SentencePieceTokenizer`` for
                     T5): a process pool encoding line by line, the same writer;
  datatrove          (BPE) datatrove's ``DocumentTokenizer``, ``--workers`` processes, on
                     the corpus rendered beforehand into 8 files of ``{"text": ...}``;
  build              the default build (``fluent_build.py``: ``run()`` with no runner),
                     accelerators on;
  build-plain        the same build with ``accelerators: false``: the libraries alone;
  build-words        (``--word-encoder``, BPE) the default build with gigatoken hidden
                     from every process of it (a ``sitecustomize`` on ``PYTHONPATH``).

Megatron's code is imported from the checkout by its own scripts, never copied here;
they need torch and transformers in the interpreter running this script. Without a
checkout, or without torch, those rows print why they were skipped and the rest runs.

Corpora (``--corpus-kind``): ``generated`` is ``make_corpus.py``'s (mostly invented
Latin-script words, Vietnamese, CJK, one 1 MB line); ``real`` is Alpaca's 999 records
recombined (``make_corpus.py --tile --recombine --unique``: each field drawn from a
random record, each value ending with the record's number, so no sample and no field
value repeats; the words and sentences are all Alpaca's), seed 0 for the small corpus
and seed 1 for the large. Tokenizers: ``bpe`` a 32k byte-level BPE ``tokenizer.json``
trained on each corpus kind's small corpus (``run.ensure_bpe``), ``sp`` the T5
SentencePiece unigram model (``run.DEFAULT_SP``, or ``--sp-model``), ``spbpe`` a 32k
SentencePiece BPE ``.model`` in Llama 2's settings trained on the small corpus
(``run.ensure_sp_bpe``; the build encodes it through gigatoken, ``accel.gigatoken_sp``).

The build writes shards, four indexes and the duplicate index, and renders the template
(two literals a sample); Megatron writes one ``.bin``/``.idx`` pair per field; the loops
and gigatoken's path only encode. Each row counts its own tokens (the loops and the build
count the template's literals, Megatron and gigatoken's path do not, datatrove encodes
the rendered text whole), so the ratios are taken on marginal MB/s of the same input.
``--small`` uses 20 and 60 MB. Requires ``psutil`` and gigatoken
(``pip install mintdim-beam[fast]``), and datatrove for its row.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (corpus, tokenizer, measure, run_pipeline)
from make_corpus import recombine  # noqa: E402

SINGLE = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
REAL_SOURCE = os.path.join(bench.ROOT, "..", "shared", "realdata", "data", "alpaca_en_demo.jsonl")
KINDS = {"bpe": "hf_json", "sp": "sentencepiece", "spbpe": "sentencepiece"}
LABELS = {"bpe": "BPE 32k", "sp": "T5 unigram", "spbpe": "SentencePiece BPE 32k"}
#: Targets (issue: benchmarks side by side), on marginal MB/s within one run.
TARGET_FAST = {"generated": 0.5, "real": 1.0}      # BPE build / Megatron's fast path
TARGET_SP_LOOP, TARGET_SP_CLASSIC = 1.8, 1.5       # T5 build / loop, / Megatron classic
TARGET_RSS = 10**9                                 # 1 GB, the build's peak tree RSS
#: Megatron's ``.idx`` dtype codes (``indexed_dataset.DType``) and their sizes in bytes.
MEGATRON_DTYPES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 8, 7: 4, 8: 2}
ROWS = ("loop", "loop-gigatoken", "gigatoken-jsonl", "megatron-fast", "megatron-classic", "datatrove",
        "build", "build-plain", "build-words")
NAMES = {"loop": "bare loop, library (1 thread)", "loop-gigatoken": "bare loop, gigatoken (1 thread)",
         "gigatoken-jsonl": "gigatoken JSONL path (all cores)",
         "megatron-fast": "Megatron fast path (gigatoken + IndexedDatasetBuilder)",
         "megatron-classic": "Megatron preprocess_data.py --workers {w}",
         "datatrove": "datatrove DocumentTokenizer x{w}", "build": "build, default (accelerators on)",
         "build-plain": "build, accelerators off", "build-words": "build, word encoder (gigatoken hidden)"}


class Skip(Exception):
    """A row that cannot run here, and why (printed in its place)."""


def megatron_tokens(prefix: str, fields) -> int:
    """Tokens Megatron wrote: each field's ``.bin`` size over the item size its ``.idx``
    header names (magic, version, dtype code: ``indexed_dataset._IndexWriter``)."""
    total = 0
    for key in fields:
        with open(f"{prefix}_{key}_document.idx", "rb") as f:
            head = f.read(18)
        if head[:9] != b"MMIDIDX\x00\x00":
            raise RuntimeError(f"{prefix}_{key}_document.idx: not a Megatron index")
        (code,) = struct.unpack("<B", head[17:18])
        total += os.path.getsize(f"{prefix}_{key}_document.bin") // MEGATRON_DTYPES[code]
    return total


def datatrove_tokens(folder: str) -> int:
    """Tokens datatrove wrote: its ``.ds`` files, two bytes a token (its default size)."""
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(folder, "**", "*.ds"), recursive=True)) // 2


def hf_folder(folder: str, tokenizer_json: str) -> str:
    """A folder ``transformers.AutoTokenizer`` loads (Megatron's ``HuggingFaceTokenizer``):
    the ``tokenizer.json`` and a config naming the fast tokenizer class."""
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(tokenizer_json, os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast"}, f)
    return folder


def _blocker(work: str) -> str:
    """A folder whose ``sitecustomize`` makes ``import gigatoken`` fail in every process
    started with it on ``PYTHONPATH`` (the build's workers inherit the environment)."""
    folder = os.path.join(work, "no_gigatoken")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.modules['gigatoken'] = None   # written by benchmarks/peers.py\n")
    return folder


def _with_path(folder: str) -> dict:
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([folder] + ([path] if path else []))}


class Peers:
    """The rows of one tokenizer on one corpus kind: each ``row(name, corpus)`` is one
    measured process (``wall``, ``peak_rss``, ``tokens``) or raises :class:`Skip`."""

    def __init__(self, args, work: str, tok: str, corpus_small: str):
        self.args, self.work, self.tok = args, work, tok
        self.kind = KINDS[tok]
        self.fields = args.fields
        if tok == "bpe":
            self.model, self.plain = bench.ensure_bpe(work, corpus_small, self.fields)
            self.hf = hf_folder(os.path.join(work, "hf_bpe32k"), self.plain)
        elif tok == "spbpe":
            self.model = self.plain = bench.ensure_sp_bpe(work, corpus_small, self.fields)
        else:
            self.model = self.plain = os.path.abspath(args.sp_model)
        self.megatron_missing = self._megatron_missing()

    def _megatron_missing(self) -> str | None:
        if not self.args.megatron:
            return "skipped: no --megatron checkout given"
        for script in ("preprocess_data.py", "preprocess_data_fast.py"):
            if not os.path.exists(os.path.join(self.args.megatron, "tools", script)):
                return f"skipped: the checkout has no tools/{script}"
        for module in ("torch", "transformers"):
            if importlib.util.find_spec(module) is None:
                return f"skipped: {module} missing"
        return None

    def row(self, name: str, corpus: str) -> dict:
        return getattr(self, "_" + name.replace("-", "_"))(corpus)

    def _only_bpe(self, why: str) -> None:
        if self.tok != "bpe":
            raise Skip(f"n/a: {why}")

    def _loop(self, corpus: str, gigatoken: bool = False) -> dict:
        cmd = [sys.executable, os.path.join(HERE, "bare_loop.py"), corpus, self.kind, self.plain,
               "--fields", ",".join(self.fields)]
        m = bench.measure(cmd + (["--gigatoken"] if gigatoken else []), env=SINGLE)
        m["tokens"] = json.loads(m["stdout"])["tokens"]
        return m

    def _loop_gigatoken(self, corpus: str) -> dict:
        if self.tok == "sp":
            raise Skip("n/a: gigatoken loads BPE models only")
        return self._loop(corpus, gigatoken=True)

    def _gigatoken_jsonl(self, corpus: str) -> dict:
        self._only_bpe("gigatoken loads Hugging Face tokenizer files only")
        m = bench.measure([sys.executable, os.path.join(HERE, "gigatoken_jsonl.py"), corpus, self.plain,
                           "--fields", ",".join(self.fields)])
        m["tokens"] = json.loads(m["stdout"])["tokens"]
        return m

    def _megatron(self, corpus: str, script: str, flags: list) -> dict:
        if self.megatron_missing:
            raise Skip(self.megatron_missing)
        out = os.path.join(self.work, "out_megatron")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        prefix = os.path.join(out, "corpus")
        if self.tok == "bpe":
            tokenizer = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", self.hf]
        else:
            tokenizer = ["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", self.model]
        m = bench.measure([sys.executable, os.path.join(self.args.megatron, "tools", script), "--input", corpus,
                           "--json-keys", *self.fields, *tokenizer, "--output-prefix", prefix, *flags])
        m["tokens"] = megatron_tokens(prefix, self.fields)
        shutil.rmtree(out, ignore_errors=True)
        return m

    def _megatron_fast(self, corpus: str) -> dict:
        self._only_bpe("Megatron's fast path encodes through gigatoken, Hugging Face tokenizers only")
        return self._megatron(corpus, "preprocess_data_fast.py", ["--use-gigatoken"])

    def _megatron_classic(self, corpus: str) -> dict:
        return self._megatron(corpus, "preprocess_data.py", ["--workers", str(self.args.workers),
                                                             "--log-interval", "1000000"])

    def _datatrove(self, corpus: str) -> dict:
        self._only_bpe("datatrove's DocumentTokenizer loads a tokenizers file, not a SentencePiece model")
        if importlib.util.find_spec("datatrove") is None:
            raise Skip("skipped: datatrove missing")
        docs = bench.render_for_datatrove(self.work, corpus, fields=self.fields)
        out = os.path.join(self.work, "out_datatrove")
        shutil.rmtree(out, ignore_errors=True)
        m = bench.measure([sys.executable, os.path.join(HERE, "datatrove_job.py"), docs, out, self.plain,
                           "--workers", str(self.args.workers)])
        m["tokens"] = datatrove_tokens(out)
        shutil.rmtree(out, ignore_errors=True)
        return m

    def _build(self, corpus: str, accelerators: bool = True, env: dict | None = None, name: str = "peer") -> dict:
        return bench.run_pipeline(self.work, f"{name}_{self.tok}", corpus, self.kind, self.model, [], fluent=True,
                                  fields=self.fields, accelerators=accelerators, env=env)

    def _build_plain(self, corpus: str) -> dict:
        return self._build(corpus, accelerators=False, name="peer_plain")

    def _build_words(self, corpus: str) -> dict:
        self._only_bpe("the word encoder is the byte-level BPE's")
        return self._build(corpus, env=_with_path(_blocker(self.work)), name="peer_words")


def corpora(args, kind: str) -> tuple[str, str, str]:
    """The work folder, small and large corpus of a corpus kind (made once, then reused)."""
    big = args.mb * args.factor
    if kind == "generated":
        return args.work, bench.ensure_corpus(args.work, args.mb), bench.ensure_corpus(args.work, big)
    work = os.path.join(args.work, "real")
    os.makedirs(work, exist_ok=True)
    paths = []
    for mb, seed in ((args.mb, 0), (big, 1)):
        path = os.path.join(work, f"alpaca_unique_{mb:g}mb_seed{seed}.jsonl")
        if not os.path.exists(path):
            print(f"[peers] recombining {args.real_source} into {path}", flush=True)
            recombine(path + ".tmp", args.real_source, mb, seed, unique=True)
            os.replace(path + ".tmp", path)
        paths.append(path)
    return work, paths[0], paths[1]


def ratio(rates: dict, name: str, base: str) -> float | None:
    return rates[name] / rates[base] if name in rates and base in rates else None


def fmt(x: float | None, spec: str = ".2f", suffix: str = "x") -> str:
    return "" if x is None else f"{x:{spec}}{suffix}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--factor", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="20 and 60 MB instead of --mb and --factor")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    parser.add_argument("--corpus-kind", default="generated,real", help="generated, real, or both (comma-separated)")
    parser.add_argument("--real-source", default=REAL_SOURCE, help="the real dataset recombined (default: Alpaca)")
    parser.add_argument("--tokenizers", default="bpe,sp")
    parser.add_argument("--sp-model", default=bench.DEFAULT_SP)
    parser.add_argument("--fields", default=",".join(bench.FIELDS))
    parser.add_argument("--megatron", help="a Megatron-LM checkout (its tools/ are run from there)")
    parser.add_argument("--workers", type=int, default=2, help="Megatron classic's and datatrove's processes")
    parser.add_argument("--word-encoder", action="store_true", help="also the build with gigatoken hidden")
    parser.add_argument("--rows", help="only these rows (comma-separated: %s)" % ", ".join(ROWS))
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="time each row's first process too (by default each row first runs once "
                             "on the small corpus, untimed: a process after boot reads its libraries, "
                             "2 GB for torch, from the disk, which lengthens one wall only)")
    args = parser.parse_args(argv)
    if args.small:
        args.mb, args.factor = 20, 3
    args.fields = tuple(args.fields.split(","))
    kinds = args.corpus_kind.split(",")
    toks = args.tokenizers.split(",")
    for k in kinds:
        if k not in ("generated", "real"):
            parser.error(f"unknown corpus kind {k!r} (generated, real)")
    for t in toks:
        if t not in KINDS:
            parser.error(f"unknown tokenizer {t!r} (bpe, sp, spbpe)")
    rows = [r for r in ROWS if r != "build-words" or args.word_encoder]
    if args.rows:
        rows = [r for r in args.rows.split(",")]
        for r in rows:
            if r not in ROWS:
                parser.error(f"unknown row {r!r} ({', '.join(ROWS)})")
    if args.megatron:
        args.megatron = os.path.abspath(args.megatron)
    os.makedirs(args.work, exist_ok=True)
    # Every row imports its Python code as an installed package would: compiled.
    bench.compile_bytecode(os.path.join(bench.ROOT, "mintdim_beam"),
                           *([os.path.join(args.megatron, d) for d in ("megatron", "tools")] if args.megatron else []))

    import platform

    load = os.getloadavg()
    print(f"[peers] python {platform.python_version()}, {os.cpu_count()} cpus; load average at the start "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; Megatron-LM: {args.megatron or 'none'}", flush=True)
    table = []      # (corpus kind, tokenizer, row name, walls, marginal MB/s, Mtok/s, peak RSS, ratios)
    verdicts = []
    for kind in kinds:
        work, small, large = corpora(args, kind)
        sizes = {"small": os.path.getsize(small) / 1e6, "large": os.path.getsize(large) / 1e6}
        for tok in toks:
            peers = Peers(args, work, tok, small)
            print(f"\n== {kind} corpus, {LABELS[tok]}: {os.path.basename(small)} ({sizes['small']:.0f} MB) -> "
                  f"{os.path.basename(large)} ({sizes['large']:.0f} MB) ==", flush=True)
            per_run = []
            skipped = {}
            for name in rows:
                if not args.warm_up:
                    break
                try:
                    m = peers.row(name, small)
                except Skip:
                    continue     # said once, in the timed runs
                print(f"warm-up {NAMES[name].format(w=args.workers):<56} {m['wall']:8.2f} s (not counted)",
                      flush=True)
            for run in range(1, args.runs + 1):
                got = {}
                for size, corpus in (("small", small), ("large", large)):
                    for name in rows:      # interleaved: every row at one size, then the next size
                        if name in skipped:
                            continue
                        label = NAMES[name].format(w=args.workers)
                        try:
                            m = peers.row(name, corpus)
                        except Skip as why:
                            skipped[name] = str(why)
                            print(f"run {run} {label:<58} {why}", flush=True)
                            continue
                        got[name, size] = m
                        print(f"run {run} {size:<5} {label:<52} {m['wall']:8.2f} s "
                              f"{sizes[size] / m['wall']:7.2f} MB/s {m['tokens'] / m['wall'] / 1e6:7.2f} Mtok/s "
                              f"{m['peak_rss'] / 2**20:7.0f} MiB", flush=True)
                per_run.append(got)
            for name in rows:
                label = NAMES[name].format(w=args.workers)
                if name in skipped:
                    table.append((kind, tok, label, None, skipped[name]))
                    continue
                # The best (shortest) wall of each size over the runs: on a shared machine
                # the others' load only ever adds time (one run: its walls).
                walls = (min(g[name, "small"]["wall"] for g in per_run),
                         min(g[name, "large"]["wall"] for g in per_run))
                tokens = (per_run[0][name, "small"]["tokens"], per_run[0][name, "large"]["tokens"])
                rss = max(max(g[name, "small"]["peak_rss"], g[name, "large"]["peak_rss"]) for g in per_run)
                spent = walls[1] - walls[0]
                # Run-to-run spread of the walls, the noise the extra seconds must stand
                # out of (known from two runs on): start-up (torch, Megatron) can vary by
                # more than a fast row's whole marginal cost.
                spread = max((max(g[name, s]["wall"] for g in per_run) - min(g[name, s]["wall"] for g in per_run)
                              for s in ("small", "large")), default=0.0)
                # A larger corpus done sooner is start-up noise, not a rate: no figure.
                table.append((kind, tok, label, {"name": name, "walls": walls,
                                                 "mb_s": (sizes["large"] - sizes["small"]) / spent if spent > 0 else None,
                                                 "tok_s": (tokens[1] - tokens[0]) / spent if spent > 0 else None,
                                                 "noisy": len(per_run) > 1 and spent < 2 * spread,
                                                 "rss": rss}, None))
            rates = {e[3]["name"]: e[3]["mb_s"] for e in table
                     if e[0] == kind and e[1] == tok and e[3] and e[3]["mb_s"] is not None}
            for e in table:
                if e[0] == kind and e[1] == tok and e[3]:
                    e[3]["x_loop"] = ratio(rates, e[3]["name"], "loop")
                    e[3]["x_fast"] = ratio(rates, e[3]["name"], "megatron-fast")
                    e[3]["x_classic"] = ratio(rates, e[3]["name"], "megatron-classic")
            noisy = {e[3]["name"] for e in table if e[0] == kind and e[1] == tok and e[3] and e[3]["noisy"]}
            builds = [e[3] for e in table if e[0] == kind and e[1] == tok and e[3] and e[3]["name"] == "build"]
            if builds:
                b = builds[0]
                if tok == "bpe":
                    checks = (("x_fast", TARGET_FAST[kind], "Megatron fast path", "megatron-fast"),)
                elif tok == "spbpe":      # no target of its own: the ratios are in the table
                    checks = ()
                else:
                    checks = (("x_loop", TARGET_SP_LOOP, "single-thread loop", "loop"),
                              ("x_classic", TARGET_SP_CLASSIC,
                               f"Megatron preprocess_data.py --workers {args.workers}", "megatron-classic"))
                for key, want, what, peer in checks:
                    unsure = sorted({"build", peer} & noisy)
                    verdicts.append(f"{kind}, {LABELS[tok]}: build / {what} >= {want}x: "
                                    + (f"{b[key]:.2f}x, {'met' if b[key] >= want else 'NOT met'}"
                                       if b[key] is not None else "not measured")
                                    + (f" (within run-to-run noise: {', '.join(unsure)}; use a larger --factor)"
                                       if unsure and b[key] is not None else ""))
                verdicts.append(f"{kind}, {LABELS[tok]}: build peak RSS <= 1 GB: {b['rss'] / 2**20:.0f} MiB, "
                                f"{'met' if b['rss'] <= TARGET_RSS else 'NOT met'}")

    big = args.mb * args.factor
    print(f"\n| corpus | tokenizer | row | {args.mb:g} MB s | {big:g} MB s | marginal MB/s | marginal Mtok/s "
          f"| peak RSS | x loop | x Megatron fast | x Megatron classic |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    not_applicable = {}
    for kind, tok, label, r, why in table:
        if r is None and why.startswith("n/a"):
            not_applicable.setdefault((LABELS[tok], label, why), []).append(kind)
            continue
        if r is None:
            print(f"| {kind} | {LABELS[tok]} | {label} | {why} | | | | | | | |")
            continue
        if r["mb_s"] is None:
            rate = f"(noise: faster at {big:g} MB) | "
        else:
            rate = f"{r['mb_s']:.2f}{' (noise)' if r['noisy'] else ''} | {r['tok_s'] / 1e6:.2f}"
        print(f"| {kind} | {LABELS[tok]} | {label} | {r['walls'][0]:.2f} | {r['walls'][1]:.2f} | {rate} "
              f"| {r['rss'] / 2**20:,.0f} MiB | {fmt(r['x_loop'])} | {fmt(r['x_fast'])} | {fmt(r['x_classic'])} |")
    print()
    for (tok, label, why), where in not_applicable.items():
        print(f"not run: {tok}, {label} ({', '.join(where)}): {why}")
    for line in verdicts:
        print("target " + line)
    load = os.getloadavg()
    print(f"[peers] load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)


if __name__ == "__main__":
    main()
