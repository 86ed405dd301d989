"""Throughput and memory of the unit build, measured against baselines in one run.

    python benchmarks/run.py [--mb 100] [--tokenizers sp,bpe] [--skip-datatrove] [--scaling]
                             [--corpus F] [--fields A,B,C] [--scaling-corpus F4]

On the same generated corpus (``make_corpus.py``) and the same tokenizer it measures,
each in a fresh process, whole-process wall time and peak RSS (summed over the process
tree, sampled every 20 ms):

  (a) ``bare_loop.py``: parse, render and encode the same segments in one thread;
  (b) the pipeline: "default" is a script calling the fluent API's ``run()`` with no
      runner (``fluent_build.py``, the configuration ``run()`` picks itself); the
      in-memory FnApiRunner and the multi-process FnApiRunner with 2 workers go
      through ``mintdim-beam build`` with Beam flags;
  (c) datatrove's tokenizer step (BPE only), installed by this script into its own
      virtualenv under the work directory.

and prints tokens/s, peak RSS and the ratios (b)/(a) and (b)/(c), each followed by
whether it meets its target (``TARGET_*``). ``--scaling`` adds the default pipeline on
the corpus and on a corpus 4x as large, side by side (with the time and memory targets):
the generated corpus at 4x the size, the ``--corpus`` repeated 4 times, or
``--scaling-corpus``.

Tokenizers: ``sp`` is the T5 SentencePiece model from ``../shared/realdata`` (or
``--sp-model``); ``bpe`` is a 32k byte-level BPE ``tokenizer.json`` trained here on the
corpus (cached in the work directory). Requires ``psutil`` (``pip install psutil``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SP = os.path.join(ROOT, "..", "shared", "realdata", "tokenizers", "t5_spiece_32000.model")
FIELDS = ("instruction", "input", "output")
SIZES = [128, 256, 512, 1024, 2048, 4096]
#: The targets the summary of a 100 MB run checks, on a 2-core machine: the build against the bare loop and datatrove.
TARGET_OVER_BARE = {"sentencepiece": 1.0, "hf_json": 1.5}
TARGET_OVER_DATATROVE = 1.5
TARGET_SCALING_TOLERANCE = 0.15    # wall time x4 +-15% for 4x the data
TARGET_RSS_GROWTH = 0.10           # peak RSS within +10% for 4x the data


#: How often the RSS of the known processes is read, and how often the process tree
#: is listed again (listing it reads every process's /proc entry: about 1 ms a time).
RSS_EVERY, TREE_EVERY = 0.05, 0.25


class TreeRss:
    """Peak RSS of a process tree, sampled on a thread: the sum over the tree at one
    instant, and the largest single process.

    The sampler runs beside what it measures, on the same cores: listing the tree at
    every sample cost 6% of a core, which a build using both cores paid in wall time and
    a single-threaded loop did not. So the tree is listed every ``TREE_EVERY`` seconds and
    only the known processes' RSS (one small /proc read each, :func:`_rss`) is read every
    ``RSS_EVERY`` seconds; a process is counted from the first listing after it starts.
    """

    def __init__(self, pid: int):
        import psutil

        self._psutil = psutil
        self.total = self.single = 0
        self._stop = threading.Event()
        try:
            self._root = psutil.Process(pid)
        except psutil.NoSuchProcess:
            self._root = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        psutil = self._psutil
        if self._root is None:
            return
        procs, listed = [self._root], 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now - listed >= TREE_EVERY:
                try:
                    procs = [self._root, *self._root.children(recursive=True)]
                except psutil.Error:
                    pass
                listed = now
            total = 0
            for p in procs:
                rss = _rss(p)
                total += rss
                self.single = max(self.single, rss)
            self.total = max(self.total, total)
            self._stop.wait(RSS_EVERY)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss(process) -> int:
    """A process's resident set in bytes (0 once it is gone): its /proc statm where
    there is one (one read; psutil's ``memory_info`` checks the process first and
    costs several times as much), else psutil's."""
    try:
        with open(f"/proc/{process.pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return 0
    except (OSError, ValueError, IndexError):
        return 0
    try:
        return process.memory_info().rss
    except Exception:  # noqa: BLE001 - psutil.Error: the process is gone
        return 0


def compile_bytecode(*folders: str) -> None:
    """Write the bytecode of every module under ``folders`` (``compileall``; a module
    whose bytecode is current is left alone).

    A row's processes import the project, and Megatron's checkout, from source. Where
    ``PYTHONDONTWRITEBYTECODE`` is set, Python never caches what it compiles, so every
    worker process the large build starts (the small one runs in memory) would compile
    the whole package again (about 2 CPU s each, measured on a 300 MB build): a cost no installed package has
    (``pip install`` compiles it) that lands in the marginal rate.
    """
    import compileall

    for folder in folders:
        if folder and os.path.isdir(folder):
            compileall.compile_dir(folder, quiet=1, workers=0)


def measure(cmd: list, env: dict | None = None) -> dict:
    """Run ``cmd``; return wall seconds, peak tree RSS (bytes) and stdout.

    Each command starts with nothing left to write back: what an earlier one wrote
    (datatrove's output, a build's index files) is flushed first, outside the timing.
    """
    if hasattr(os, "sync"):
        os.sync()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    rss = TreeRss(proc.pid)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    rss.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return {"wall": wall, "peak_rss": rss.total, "stdout": out}


def ensure_corpus(work: str, mb: float) -> str:
    path = os.path.join(work, f"corpus_{mb:g}mb.jsonl")
    if not os.path.exists(path):
        sys.path.insert(0, HERE)
        from make_corpus import generate

        print(f"[bench] generating {path}", flush=True)
        generate(path + ".tmp", mb)
        os.replace(path + ".tmp", path)
    return path


def repeat_corpus(work: str, corpus: str, times: int) -> str:
    path = os.path.join(work, f"x{times}_{os.path.basename(corpus)}")
    if not os.path.exists(path):
        with open(path + ".tmp", "wb") as out:
            for _ in range(times):
                with open(corpus, "rb") as f:
                    shutil.copyfileobj(f, out)
        os.replace(path + ".tmp", path)
    return path


def template(fields) -> str:
    """The job's template: the fields, a blank line between each two."""
    return "\n\n".join("{%s}" % f for f in fields)


def training_texts(corpus: str, fields=FIELDS, limit: int = 30_000_000):
    """The fields' values of the corpus's first ``limit`` bytes of lines (lines above
    100 kB left out): what the benchmark tokenizers are trained on."""
    seen = 0
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            if len(line) > 100_000:
                continue
            record = json.loads(line)
            yield from (record[f] for f in fields)
            seen += len(line)
            if seen > limit:
                return


def ensure_bpe(work: str, corpus: str, fields=FIELDS) -> tuple[str, str]:
    """A 32k byte-level BPE trained on the corpus; with padding (ours) and without (datatrove)."""
    path = os.path.join(work, "bpe32k.tokenizer.json")
    plain = os.path.join(work, "bpe32k.nopad.tokenizer.json")
    if not os.path.exists(path):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        print("[bench] training a 32k byte-level BPE", flush=True)
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=32000, special_tokens=["<pad>", "<unk>"],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)

        tok.train_from_iterator(training_texts(corpus, fields), trainer)
        tok.save(plain)
        tok.enable_padding(pad_id=0, pad_token="<pad>")
        tok.save(path)
    return path, plain


def ensure_sp_bpe(work: str, corpus: str, fields=FIELDS) -> str:
    """A 32k SentencePiece BPE ``.model`` trained on the corpus in Llama 2's settings (byte
    fallback, no normalization map, whitespace kept, digits split), with a pad piece."""
    path = os.path.join(work, "spbpe32k.model")
    if not os.path.exists(path):
        import io

        import sentencepiece as spm

        print("[bench] training a 32k SentencePiece BPE", flush=True)

        buffer = io.BytesIO()
        spm.set_random_generator_seed(0)
        spm.SentencePieceTrainer.train(
            sentence_iterator=(t for t in training_texts(corpus, fields) if t), model_writer=buffer, model_type="bpe", vocab_size=32000,
            byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
            split_digits=True, allow_whitespace_only_pieces=True, character_coverage=0.9995,
            input_sentence_size=300_000, shuffle_input_sentence=True, max_sentence_length=1 << 16,
            pad_id=3, minloglevel=2)
        with open(path + ".tmp", "wb") as f:
            f.write(buffer.getvalue())
        os.replace(path + ".tmp", path)
    return path


def ensure_datatrove(work: str) -> str:
    venv = os.path.join(work, "venv-datatrove")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        import tokenizers

        print("[bench] installing datatrove into its own venv", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "datatrove==0.10.1", "orjson",
                        f"tokenizers=={tokenizers.__version__}"], check=True)
    return python


def render_for_datatrove(work: str, corpus: str, parts: int = 8, fields=FIELDS) -> str:
    """The corpus as rendered documents, split into files (datatrove's unit of parallelism)."""
    folder = os.path.join(work, f"rendered_{os.path.basename(corpus)}")
    if os.path.isdir(folder):
        return folder
    os.makedirs(folder + ".tmp", exist_ok=True)
    outs = [open(os.path.join(folder + ".tmp", f"part_{i:02d}.jsonl"), "w", encoding="utf-8") for i in range(parts)]
    with open(corpus, encoding="utf-8") as f:
        for n, line in enumerate(f):
            if not line.strip():
                continue
            r = json.loads(line)
            text = template(fields).format(**r)
            outs[n % parts].write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
    for o in outs:
        o.close()
    os.replace(folder + ".tmp", folder)
    return folder


def job_file(work: str, name: str, corpus: str, kind: str, tokenizer: str, fields=FIELDS,
             accelerators: bool = True) -> tuple[str, str]:
    out = os.path.join(work, f"out_{name}")
    shutil.rmtree(out, ignore_errors=True)
    job = {
        "source": {"files": [corpus], "fields": [list(fields)], "templates": [template(fields)]},
        "tokenizer": {"type": kind, "files": [tokenizer]},
        "units": {"sizes": [SIZES], "build_batch": [1024]},
        "output": {"dir": out, "samples_per_shard": [16384]},
        "run": {"on_overflow": "extend", "on_template_unk": "continue", "on_bad_record": "abort",
                "accelerators": accelerators},
    }
    path = os.path.join(work, f"job_{name}.json")
    with open(path, "w") as f:
        json.dump(job, f)
    return path, out


def run_pipeline(work, name, corpus, kind, tokenizer, flags, fluent: bool = False, fields=FIELDS,
                 accelerators: bool = True, env: dict | None = None) -> dict:
    """One build in a fresh process: the CLI with ``flags``, or (``fluent``) a script
    calling the fluent API's ``run()`` with no runner, as a user's script would.
    ``env``: added to the build's environment."""
    path, out = job_file(work, name, corpus, kind, tokenizer, fields, accelerators)
    if fluent:
        m = measure([sys.executable, os.path.join(HERE, "fluent_build.py"), path], env=env)
    else:
        m = measure([sys.executable, "-m", "mintdim_beam.cli.commands", "build", path, *flags], env=env)
    with open(os.path.join(out, "stats.json")) as f:
        m["tokens"] = json.load(f)["total_tokens"]
    with open(os.path.join(out, "build_info.json")) as f:
        info = json.load(f)
    m["config"] = f"{info['runner']} {info.get('direct_running_mode')} x{info.get('direct_num_workers')}"
    shutil.rmtree(out, ignore_errors=True)
    return m


def row(label, m, tokens) -> str:
    return (f"{label:<34} {m['wall']:8.2f} s {tokens / m['wall'] / 1e6:8.2f} Mtok/s "
            f"{m['peak_rss'] / 2**20:9.0f} MiB")


def bench_tokenizer(args, work, corpus, kind, tokenizer, plain) -> None:
    print(f"\n== {kind}: {os.path.basename(tokenizer)} on {os.path.basename(corpus)} ==", flush=True)
    bare = measure([sys.executable, os.path.join(HERE, "bare_loop.py"), corpus, kind, tokenizer,
                    "--fields", ",".join(args.fields)],
                   env={"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    tokens = json.loads(bare["stdout"])["tokens"]
    print(row("(a) bare single-thread loop", bare, tokens), flush=True)
    results = {}
    for name, flags in (
        ("default", None),   # fluent API, run() with no runner
        ("in_memory", ["--direct_running_mode=in_memory", "--direct_num_workers=1"]),
        ("multi_process_2", ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]),
    ):
        m = run_pipeline(work, f"{kind}_{name}", corpus, kind, tokenizer, flags or [], fluent=flags is None,
                         fields=args.fields)
        results[name] = m
        note = "" if m["tokens"] == tokens else f"  (tokens written {m['tokens']} != {tokens})"
        print(row(f"(b) pipeline {name} [{m['config']}]", m, tokens) + note, flush=True)
    dt = None
    if kind == "hf_json" and not args.skip_datatrove:
        python = ensure_datatrove(work)
        docs = render_for_datatrove(work, corpus, fields=args.fields)
        out = os.path.join(work, "out_datatrove")
        shutil.rmtree(out, ignore_errors=True)
        dt = measure([python, os.path.join(HERE, "datatrove_job.py"), docs, out, plain, "--workers", "2"])
        shutil.rmtree(out, ignore_errors=True)
        print(row("(c) datatrove DocumentTokenizer x2", dt, tokens), flush=True)
    best = results["default"]
    over_bare = bare["wall"] / best["wall"]
    print(f"ratio (b default)/(a) = {over_bare:.2f}x", flush=True)
    floor = TARGET_OVER_BARE[kind]
    print(f"target (b default)/(a) >= {floor}x: {_verdict(over_bare >= floor)}", flush=True)
    if dt is not None:
        over_dt = dt["wall"] / best["wall"]
        print(f"ratio (b default)/(c) = {over_dt:.2f}x", flush=True)
        print(f"target (b default)/(c) >= {TARGET_OVER_DATATROVE}x: {_verdict(over_dt >= TARGET_OVER_DATATROVE)}",
              flush=True)
    peak = max(m["peak_rss"] for m in results.values())
    print(f"target peak RSS < 2 GiB: {_verdict(peak < 2 * 2**30)} ({peak / 2**20:.0f} MiB at most)", flush=True)



def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def scaling_verdicts(factor: float, time_ratio: float, rss_ratio: float) -> list[str]:
    """The scaling targets, for ``factor`` times the data (time and RSS ratios x_big/x1)."""
    low, high = factor * (1 - TARGET_SCALING_TOLERANCE), factor * (1 + TARGET_SCALING_TOLERANCE)
    if time_ratio < low:
        timing = "faster than linear (a fixed start-up and tail weigh more at x1)"
    else:
        timing = _verdict(time_ratio <= high)
    return [f"target time x{low:.2f}-x{high:.2f}: {timing}",
            f"target RSS within +{TARGET_RSS_GROWTH:.0%}: {_verdict(rss_ratio <= 1 + TARGET_RSS_GROWTH)}"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    parser.add_argument("--tokenizers", default="sp,bpe")
    parser.add_argument("--sp-model", default=DEFAULT_SP)
    parser.add_argument("--skip-datatrove", action="store_true")
    parser.add_argument("--scaling", action="store_true", help="also run the corpus x1 and x4")
    parser.add_argument("--corpus", help="use this JSONL instead of the generated corpus; --scaling then "
                                         "repeats it 4 times")
    parser.add_argument("--fields", default=",".join(FIELDS),
                        help="the records' text fields, comma-separated (default: %(default)s); "
                             "the template joins them with a blank line")
    parser.add_argument("--scaling-corpus", metavar="F",
                        help="with --scaling: this corpus of four times the size instead of the corpus "
                             "repeated (e.g. a 400 MB --recombine corpus: no sample repeats at x4 either)")
    args = parser.parse_args(argv)
    args.fields = tuple(args.fields.split(","))
    os.makedirs(args.work, exist_ok=True)
    import platform

    print(f"[bench] python {platform.python_version()}, {os.cpu_count()} cpus, {platform.processor() or platform.machine()}"
          "; the targets are set for a 100 MB corpus on 2 cores")
    corpus = os.path.abspath(args.corpus) if args.corpus else ensure_corpus(args.work, args.mb)
    kinds = args.tokenizers.split(",")
    if "sp" in kinds:
        if not os.path.exists(args.sp_model):
            sys.exit(f"SentencePiece model not found: {args.sp_model} (pass --sp-model)")
        bench_tokenizer(args, args.work, corpus, "sentencepiece", args.sp_model, args.sp_model)
    if "bpe" in kinds:
        path, plain = ensure_bpe(args.work, corpus, args.fields)
        bench_tokenizer(args, args.work, corpus, "hf_json", path, plain)
    if args.scaling:
        if args.scaling_corpus:
            big = os.path.abspath(args.scaling_corpus)
        else:
            big = ensure_corpus(args.work, args.mb * 4) if not args.corpus else repeat_corpus(args.work, corpus, 4)
        kind, tok = (("sentencepiece", args.sp_model) if "sp" in kinds
                     else ("hf_json", ensure_bpe(args.work, corpus, args.fields)[0]))
        print(f"\n== scaling: default pipeline, {kind} ==", flush=True)
        one = run_pipeline(args.work, "scale_x1", corpus, kind, tok, [], fluent=True, fields=args.fields)
        four = run_pipeline(args.work, "scale_x4", big, kind, tok, [], fluent=True, fields=args.fields)
        mb, big_mb = os.path.getsize(corpus) / 1e6, os.path.getsize(big) / 1e6
        print(f"x1 {mb:.0f} MB: {one['wall']:7.2f} s {one['peak_rss'] / 2**20:7.0f} MiB   "
              f"x{big_mb / mb:.0f} {big_mb:.0f} MB: {four['wall']:7.2f} s {four['peak_rss'] / 2**20:7.0f} MiB   "
              f"time x{four['wall'] / one['wall']:.2f}  RSS x{four['peak_rss'] / one['peak_rss']:.2f}")
        for line in scaling_verdicts(big_mb / mb, four["wall"] / one["wall"], four["peak_rss"] / one["peak_rss"]):
            print(line)


if __name__ == "__main__":
    main()
