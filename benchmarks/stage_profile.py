"""Where a build's CPU goes, stage by stage: a sampling profile of the default build.

    python benchmarks/stage_profile.py [--mb 300] [--tokenizer bpe|sp] [--rate 100]
                                       [--tree CHECKOUT] [--runs 1]
                                       [--corpus JSONL --bpe TOKENIZER_JSON]

Builds the generated corpus of ``--mb`` MB (``run.ensure_corpus``; the BPE is
``run.ensure_bpe``'s, trained on the 100 MB corpus), or ``--corpus`` (another JSONL
file with the same three fields, e.g. ``peers.py``'s real corpus, and with ``--bpe``
the BPE trained on it), with the default local
configuration (``fluent_build.py``: from 128 MiB, two worker processes), under py-spy
(``pip install py-spy``: a sampling profiler that reads the processes from outside, so
the build runs unchanged), and sorts every sample of the worker processes into the
build's stages by the innermost frame that names one (``STAGES``; a frame inside
``sample_lines`` is told apart by its source line). Each stage's share of the workers'
busy samples is printed with the CPU seconds it stands for (the share times the
workers' CPU seconds, read with psutil), so that two trees (``--tree``: another
checkout, imported through ``PYTHONPATH``, e.g. a ``git worktree`` of an older commit)
profiled in one session compare stage by stage. Start-up (imports, tokenizer loading
and gigatoken's probe) is a stage of its own: it does not grow with the data.
Sampling at ``--rate`` Hz costs the build a few per cent.
"""

from __future__ import annotations

import argparse
import collections
import linecache
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run as bench  # noqa: E402  (corpus, tokenizer, job files)

STARTUP = "start-up: imports, tokenizer load, probe"
#: (stage, test on one frame ``(function, file, line, source text)``), innermost frame
#: first; the first stage a frame matches is the sample's. Idle threads are left out.
STAGES = [
    ("idle", lambda f, p, s: f.startswith(("Condition.wait", "Event.wait", "_worker", "select", "channel_spin",
                                           "_serve", "Thread.run", "_wait_for_tstate_lock", "sleep"))),
    (STARTUP,
     lambda f, p, s: p.startswith("<frozen") or f.startswith(("load_tokenizers", "_load_and_probe",
                                                              "EncodeBlockFn.setup", "WriteOutputsFn.setup",
                                                              "HuggingFaceTokenizer.__init__", "load_files"))),
    ("tokenizer call", lambda f, p, s: (p.endswith("gigatoken_bpe.py") and f.startswith("GigatokenBPE._gigatoken"))
     or "sentencepiece" in p or f.startswith("HuggingFaceTokenizer._encode_whole")
     or (p.endswith("bpe_words.py") and "encode_batch(" in s and "self._tok" in s)),
    ("UNK audit", lambda f, p, s: p.endswith(("sp_unk.py", "unk_rows.py")) or "unk_column_at" in f),
    ("tokenizer glue: checks, caches, batches",
     lambda f, p, s: "tokenization/" in p or p.endswith(("text_cache.py",)) or f.startswith("BlockEncoder._encode")),
    ("parse: JSON", lambda f, p, s: p.endswith("sample_lines.py")
     and ("_LOADS" in s or "load_object" in s or "_get_fields, objs" in s            # objs: orjson, lazily
          or "_decode_fields" in s)),                                                  # msgspec
    ("parse: render + sha256", lambda f, p, s: p.endswith("sample_lines.py") and ("sha256" in s or "_render" in s)),
    ("parse: checks, fields, empty values", lambda f, p, s: p.endswith(("sample_lines.py", "chat_lines.py",
                                                                         "pair_lines.py"))),
    ("read input", lambda f, p, s: p.endswith(("line_blocks.py", "compressed.py")) or f.startswith("read_blocks")),
    ("layout: records, repeats", lambda f, p, s: p.endswith(("record_layout.py", "repeat_cache.py",
                                                             "block_result.py", "records.py"))),
    ("spill: block results to staging", lambda f, p, s: p.endswith(("spill_meta.py", "encode_stage.py"))),
    ("write: index rows", lambda f, p, s: p.endswith("indexes.py")),
    ("write: shards, duplicates", lambda f, p, s: p.endswith(("write_stage.py", "shard_format.py", "compose.py",
                                                              "finalize_stage.py", "publish.py"))),
    ("storage: file writes, reads, checksums", lambda f, p, s: "/storage/" in p),
    ("Beam, gRPC", lambda f, p, s: "apache_beam" in p or "grpc" in p),
]


def _frame(text: str) -> tuple:
    """``(function, file, line)`` of a py-spy raw frame ``func (file:line)``."""
    func, _, where = text.rpartition(" (")
    path, _, line = where.rstrip(")").rpartition(":")
    return func, path, int(line) if line.isdigit() else 0


def _resolve(path: str, roots: list) -> str:
    """py-spy names files relative to a ``sys.path`` entry: the absolute path, for the
    source line."""
    if os.path.isabs(path):
        return path
    for root in roots:
        full = os.path.join(root, path)
        if os.path.exists(full):
            return full
    return path


def stages_of(raw: str, roots: list) -> collections.Counter:
    """Samples per stage of the worker processes in py-spy's raw output."""
    found = collections.Counter()
    memo: dict = {}
    with open(raw, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            # A worker's stack starts with its process and the processes above it.
            parts = stack.split(";")
            procs = [p for p in parts if p.startswith("process ")]
            if not any("local_workers" in p for p in procs):
                continue
            frames = parts[len(procs):]
            for text in frames:
                if text not in memo:
                    func, path, no = _frame(text)
                    full = _resolve(path, roots)
                    source = linecache.getline(full, no) if no and full.endswith(".py") else ""
                    memo[text] = next((name for name, test in STAGES if test(func, full, source)), None)
            # Start-up anywhere on the stack is start-up (the probe calls the tokenizer);
            # otherwise the innermost frame that names a stage.
            named = [memo[text] for text in reversed(frames) if memo[text] is not None]
            stage = STARTUP if STARTUP in named else (named[0] if named else "other")
            found[stage] += int(count)
    return found


def profile(args, tree: str, job: str, out: str) -> tuple:
    """One profiled build of ``job`` with ``tree`` first on ``PYTHONPATH``:
    ``(samples per stage, workers' CPU seconds, wall seconds)``."""
    import psutil

    shutil.rmtree(out, ignore_errors=True)
    handle, raw = tempfile.mkstemp(suffix=".txt")
    os.close(handle)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p)}
    os.sync()
    start = time.perf_counter()
    # Run from the work folder: a worker's ``python -m`` puts its folder first on
    # ``sys.path``, and from inside a checkout it would import that checkout instead.
    build = subprocess.Popen([sys.executable, os.path.join(HERE, "fluent_build.py"), job], env=env, cwd=args.work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)          # py-spy needs the interpreter up to attach
    spy = subprocess.Popen([args.py_spy, "record", "--nonblocking", "--subprocesses", "-r", str(args.rate),
                            "-f", "raw", "-o", raw, "--pid", str(build.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu: dict = {}
    parent = psutil.Process(build.pid)
    while build.poll() is None:
        try:
            for child in parent.children(recursive=True):
                try:
                    if "local_workers" in " ".join(child.cmdline()):
                        t = child.cpu_times()
                        cpu[child.pid] = t.user + t.system
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        time.sleep(0.05)
    wall = time.perf_counter() - start
    err = build.stderr.read()
    spy.wait()
    if build.returncode != 0:
        raise SystemExit(f"the build failed:\n{err[-2000:]}")
    if not os.path.exists(raw) or not os.path.getsize(raw):
        raise SystemExit(f"py-spy recorded nothing (exit status {spy.returncode}); as root, or with ptrace allowed?")
    roots = [tree] + [p for p in sys.path if p]
    found = stages_of(raw, roots)
    if args.keep_raw:
        os.makedirs(args.keep_raw, exist_ok=True)
        shutil.move(raw, os.path.join(args.keep_raw, f"{os.path.basename(tree)}-{int(start)}.txt"))
    else:
        os.remove(raw)
    return found, sum(cpu.values()), wall


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=300)
    parser.add_argument("--tokenizer", choices=("bpe", "sp"), default="bpe")
    parser.add_argument("--sp-model", default=bench.DEFAULT_SP)
    parser.add_argument("--corpus", help="a JSONL file to build instead of the generated corpus")
    parser.add_argument("--bpe", help="the BPE tokenizer.json for --tokenizer bpe (default: trained by run.py)")
    parser.add_argument("--rate", type=int, default=100, help="samples a second")
    parser.add_argument("--runs", type=int, default=1, help="profiles per tree, summed")
    parser.add_argument("--tree", action="append", help="a checkout to profile (repeatable; default: this one)")
    parser.add_argument("--work", default=os.path.join(HERE, ".work"))
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    parser.add_argument("--keep-raw", help="a folder to keep py-spy's raw samples in")
    args = parser.parse_args(argv)
    if shutil.which(args.py_spy) is None and not os.path.exists(args.py_spy):
        raise SystemExit("py-spy is needed: pip install py-spy")
    os.makedirs(args.work, exist_ok=True)
    corpus = os.path.abspath(args.corpus) if args.corpus else bench.ensure_corpus(args.work, args.mb)
    if args.tokenizer == "bpe":
        tokenizer = (os.path.abspath(args.bpe) if args.bpe
                     else bench.ensure_bpe(args.work, bench.ensure_corpus(args.work, 100))[0])
        kind = "hf_json"
    else:
        tokenizer, kind = os.path.abspath(args.sp_model), "sentencepiece"
    job, out = bench.job_file(args.work, f"profile_{args.tokenizer}", corpus, kind, tokenizer)
    trees = [os.path.abspath(t) for t in (args.tree or [bench.ROOT])]
    bench.compile_bytecode(*(os.path.join(t, "mintdim_beam") for t in trees))
    print(f"[profile] {os.path.basename(corpus)}, {args.tokenizer}, {args.rate} Hz, load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    results = []
    for run in range(args.runs):
        for tree in trees:       # interleaved, so that drift spreads over every tree
            found, cpu, wall = profile(args, tree, job, out)
            print(f"[profile] run {run + 1} {tree}: wall {wall:.2f} s, workers' CPU {cpu:.2f} s", flush=True)
            results.append((tree, found, cpu, wall))
    shutil.rmtree(out, ignore_errors=True)
    names = [name for name, _ in STAGES if name != "idle"] + ["other"]
    header = "| stage | " + " | ".join(f"{os.path.basename(t)}: share | CPU s" for t in trees) + " |"
    print("\n" + header + "\n|---|" + "---:|---:|" * len(trees))
    totals = {}
    for tree in trees:
        found = collections.Counter()
        cpu = 0.0
        for t, f, c, _ in results:
            if t == tree:
                found += f
                cpu += c
        busy = sum(v for k, v in found.items() if k != "idle") or 1
        totals[tree] = (found, busy, cpu / args.runs)
    for name in names:
        cells = []
        for tree in trees:
            found, busy, cpu = totals[tree]
            share = found.get(name, 0) / busy
            cells.append(f"{100 * share:.1f}% | {share * cpu:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    walls = {t: [w for tt, _, _, w in results if tt == t] for t in trees}
    print("| workers' CPU s (wall s) | " + " | ".join(
        f"100% | {totals[t][2]:.2f} ({min(walls[t]):.2f})" for t in trees) + " |")


if __name__ == "__main__":
    main()
