"""Finalize's share of a build: one worker publishing, against the whole build.

    python benchmarks/finalize.py                          # 1 GB in 500 files, local and S3 (moto)
    python benchmarks/finalize.py --mb 50 --files 500      # a quick run
    python benchmarks/finalize.py --mb 50 --no-s3 --layouts file
    python benchmarks/finalize.py --mb 100 --files 20 --block-size 8388608 --no-local
    python benchmarks/finalize.py --mb 20 --files 500 --no-local --layouts file --requests

The corpus is ``make_corpus.py``'s (seeded, long-tailed, ~2% duplicates, without its
1 MB pathological line; above 20 MB, 20 MB of it with its records' fields recombined
up to size, ``--recombine``), cut at line ends into ``--files`` files of about equal size
and named by one pattern. Each build runs with the default local runner, once per
index layout (``file``: the parts concatenated into one file per index; ``parts``:
renamed in place), first on local disk, then with inputs and output on ``s3://`` served
by moto (a local S3 in its own process, started here, memory-backed). Printed per
build: wall time of ``run()``, finalize's time (the ``finalize_ms`` counter the
finalize step reports), its share of the build, and the bytes of index files it
published (``--requests``: and the S3 requests the build made, by method, from moto's
request log). Builds are run in this process one after another; on a machine shared
with other work, wall times swing with the load.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests" / "testdata" / "sp_unigram.model"
BUCKET = "mintdim-bench"
SEED_MB = 20
KEYS = ["--s3_access_key_id=testing", "--s3_secret_access_key=testing", "--s3_region_name=us-east-1"]


def write_corpus(directory: Path, megabytes: float, files: int) -> str:
    """``make_corpus.py``'s corpus cut into ``files`` files; returns their pattern."""
    one = directory / "one.jsonl"
    make = [sys.executable, str(ROOT / "benchmarks" / "make_corpus.py")]
    if megabytes <= SEED_MB:
        subprocess.run([*make, str(one), "--mb", str(megabytes), "--no-pathological"], check=True,
                       stdout=subprocess.DEVNULL)
    else:   # generating is ~1 MB/s: a seed corpus, its records' fields recombined up to size
        seed = directory / "seed.jsonl"
        subprocess.run([*make, str(seed), "--mb", str(SEED_MB), "--no-pathological"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([*make, str(one), "--mb", str(megabytes), "--tile", str(seed), "--recombine"], check=True,
                       stdout=subprocess.DEVNULL)
        seed.unlink()
    parts = directory / "in"
    parts.mkdir()
    per = one.stat().st_size / files
    k, out, written = 0, None, 0
    with open(one, "rb") as f:
        for line in f:
            if out is None or (written >= per * (k + 1) and k < files - 1):
                if out is not None:
                    out.close()
                    k += 1
                out = open(parts / f"part-{k:05d}.jsonl", "wb")
            out.write(line)
            written += len(line)
    out.close()
    one.unlink()
    return str(parts / "part-*.jsonl")


def build(source: str, out: str, layout: str, options=None, block_size=None) -> dict:
    from mintdim_beam import pipeline

    job = (pipeline("unit-build").source.jsonl(files=[source], fields=[["instruction", "input", "output"]],
                                               templates=["{instruction}\n{input}\n{output}"])
           .tokenizer.sentencepiece(files=[str(TOKENIZER)]).units(sizes=[[64, 256, 1024]], build_batch=[256])
           .output.dir(out, samples_per_shard=[8192]))
    started = time.perf_counter()
    more = {} if block_size is None else {"block_size": block_size}
    result = job.run(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip",
                     index_layout=layout, options=options, echo=lambda *a: None, **more)
    wall = time.perf_counter() - started
    return {"wall": wall, "finalize": result.counters.get("finalize_ms", 0) / 1000,
            "samples": result.outputs[0].stats["total_samples"]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(log=None):
    """moto's S3 server in its own process; returns (process, boto3 client, Beam flags).
    ``log``: a file for the server's request log (one line a request)."""
    import boto3

    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    sink = subprocess.DEVNULL if log is None else log
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=sink, stderr=sink)
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    deadline = time.monotonic() + 30
    while True:
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except Exception:
            if time.monotonic() > deadline or server.poll() is not None:
                server.terminate()
                raise
            time.sleep(0.2)
    return server, client, [f"--s3_endpoint_url={endpoint}", *KEYS]


def index_bytes(out: str, client=None) -> int:
    """Bytes of the published index files (one file each, or their parts)."""
    if client is None:
        return sum(p.stat().st_size for p in Path(out).rglob("*.jsonl"))
    bucket, prefix = out[len("s3://"):].split("/", 1)
    total = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        total += sum(o["Size"] for o in page.get("Contents", []) if o["Key"].endswith(".jsonl"))
    return total


def count_requests(log_path: Path, skip: int) -> tuple:
    """``(lines read, {HTTP method: requests})`` of moto's request log after ``skip`` lines."""
    import re

    lines = log_path.read_text(errors="replace").splitlines()
    counts: dict = {}
    for line in lines[skip:]:
        found = re.search(r'"([A-Z]+) /\S* HTTP/', line)
        if found:
            counts[found.group(1)] = counts.get(found.group(1), 0) + 1
    return len(lines), counts


def report(where: str, layout: str, found: dict, nbytes: int) -> None:
    share = found["finalize"] / found["wall"] if found["wall"] else 0.0
    print(f"{where:5s} {layout:5s}  build {found['wall']:7.1f} s  finalize {found['finalize']:6.2f} s "
          f"({share:6.1%})  index files {nbytes / 1e6:8.1f} MB  samples {found['samples']}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1000.0, help="corpus size in MB (default 1000)")
    parser.add_argument("--files", type=int, default=500, help="input files (default 500)")
    parser.add_argument("--layouts", default="file,parts", help="index layouts to build (default file,parts)")
    parser.add_argument("--no-s3", dest="s3", action="store_false", help="only the local builds")
    parser.add_argument("--no-local", dest="local", action="store_false", help="only the S3 builds")
    parser.add_argument("--block-size", type=int, help="input block size (default: the build's, 4 MiB; on S3 "
                                                       "an index part of 5 MiB or more is copied server-side)")
    parser.add_argument("--work", help="working directory (default: a temporary one, removed after)")
    parser.add_argument("--requests", action="store_true", help="count the S3 requests of each S3 build "
                                                                 "(from moto's request log)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    layouts = args.layouts.split(",")

    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        tmp = Path(tmp)
        started = time.perf_counter()
        pattern = write_corpus(tmp, args.mb, args.files)
        inputs = sorted(Path(pattern).parent.glob("*.jsonl"))
        size = sum(p.stat().st_size for p in inputs)
        print(f"corpus: {len(inputs)} files, {size / 1e6:.1f} MB, written in {time.perf_counter() - started:.1f} s; "
              f"{os.cpu_count()} cores", flush=True)
        if args.local:
            for layout in layouts:
                out = str(tmp / f"out-{layout}")
                report("local", layout, build(pattern, out, layout, block_size=args.block_size), index_bytes(out))
        if args.s3:
            log_path = tmp / "moto.log"
            log = open(log_path, "wb") if args.requests else None
            server, client, flags = start_moto(log)
            try:
                for p in inputs:
                    client.upload_file(str(p), BUCKET, f"in/{p.name}")
                for layout in layouts:
                    out = f"s3://{BUCKET}/out-{layout}"
                    seen = count_requests(log_path, 0)[0] if log else 0
                    found = build(f"s3://{BUCKET}/in/part-*.jsonl", out, layout, options=flags,
                                  block_size=args.block_size)
                    report("s3", layout, found, index_bytes(out, client))
                    if log:
                        log.flush()
                        _, counts = count_requests(log_path, seen)
                        detail = ", ".join(f"{m} {n}" for m, n in sorted(counts.items(), key=lambda kv: -kv[1]))
                        print(f"      {layout:5s}  S3 requests {sum(counts.values())} ({detail}; "
                              f"{sum(counts.values()) / len(inputs):.1f} an input file)", flush=True)
            finally:
                server.terminate()
                server.wait(timeout=30)
                if log:
                    log.close()


if __name__ == "__main__":
    main()
