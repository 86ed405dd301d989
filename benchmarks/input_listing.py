"""How often a build asks the store about its inputs: listings and HEADs on S3 (moto).

    python benchmarks/input_listing.py                 # 300 files, two layouts
    python benchmarks/input_listing.py --files 1000

A build needs each input's size for its checks, the choice of local mode, the progress
total and the block list. Every round of asking is, on a bucket, a folder listing
(1,000 objects a request) or, for folders with few of the inputs, a request or two per
file. Two builds of ``--files`` small JSONL files on moto's S3 server (in its own
process, started here), each with a local tokenizer and a local output so that the
requests counted are the inputs': one names the files by a pattern over one folder,
the other names them one by one, ten to a folder. Printed per build: the listings of
the input folders, the HEADs of input objects and the GETs of their bytes, from moto's
request log, and the wall time of ``run()`` (with the progress display, as by default:
its total is planned from the sizes too; it goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from finalize import BUCKET, TOKENIZER, start_moto  # noqa: E402


def run(files: list, out: str, options: list) -> float:
    from mintdim_beam import pipeline

    job = (pipeline("unit-build").source.jsonl(files=files, fields=[["instruction", "input", "output"]],
                                               templates=["{instruction}\n{input}\n{output}"])
           .tokenizer.sentencepiece(files=[str(TOKENIZER)]).units(sizes=[[64, 256]], build_batch=[64])
           .output.dir(out, samples_per_shard=[4096]))
    started = time.perf_counter()
    job.run(on_overflow="truncate", on_template_unk="continue", options=options, echo=lambda *a: None,
            quiet=False)   # the default: progress on stderr (its total is planned too)
    return time.perf_counter() - started


def input_requests(log_path: Path, skip: int, key: str) -> tuple:
    """``(lines read, listings, HEADs, GETs)`` of moto's log after ``skip`` lines, for
    objects below ``key`` (the one-key access probe is not a listing)."""
    import re

    lines = log_path.read_text(errors="replace").splitlines()
    listings = heads = gets = 0
    for line in lines[skip:]:
        found = re.search(r'"([A-Z]+) (/\S*) HTTP/', line)
        if not found:
            continue
        method, target = found.groups()
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        if "prefix" in query:
            listings += query["prefix"][0].startswith(key) and query.get("max-keys") != ["1"]
        elif parts.path.lstrip("/").startswith(f"{BUCKET}/{key}"):
            heads += method == "HEAD"
            gets += method == "GET"
    return len(lines), listings, heads, gets


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=300, help="input files (default 300)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mintdim-listing-") as tmp:
        tmp = Path(tmp)
        log_path = tmp / "moto.log"
        with open(log_path, "wb") as log:
            server, client, flags = start_moto(log)
            try:
                record = {"instruction": "Say hello", "input": "to the world", "output": "hello world"}
                body = "".join(json.dumps(dict(record, input=f"line {i}")) + "\n" for i in range(5)).encode()
                tag = uuid.uuid4().hex[:6]
                one_folder = [f"{tag}/in/part-{i:05d}.jsonl" for i in range(args.files)]
                spread = [f"{tag}/spread/{i // 10:04d}/part-{i:05d}.jsonl" for i in range(args.files)]
                for key in one_folder + spread:
                    client.put_object(Bucket=BUCKET, Key=key, Body=body)
                builds = [("pattern, one folder", [f"s3://{BUCKET}/{tag}/in/part-*.jsonl"], f"{tag}/in/"),
                          ("named, 10 a folder", [f"s3://{BUCKET}/{k}" for k in spread], f"{tag}/spread/")]
                for name, files, key in builds:
                    seen = input_requests(log_path, 0, key)[0]
                    wall = run(files, str(tmp / f"out-{len(name)}"), flags)
                    _, listings, heads, gets = input_requests(log_path, seen, key)
                    print(f"{args.files} files, {name:20s}  listings {listings:4d}  HEAD {heads:5d}  "
                          f"GET {gets:5d}  build {wall:6.1f} s", flush=True)
            finally:
                server.terminate()
                server.wait(timeout=30)


if __name__ == "__main__":
    main()
