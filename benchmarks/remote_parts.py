"""Requests and seconds of the commands that read an ``index_layout: parts`` dataset on S3.

    python benchmarks/remote_parts.py                  # ~300 parts per index
    python benchmarks/remote_parts.py --parts 100 --commands verify,reader

A dataset of one input cut into ``--parts`` blocks (hence as many parts of each
per-block index) is built locally with ``index_layout: parts``, uploaded to moto's S3
server (its own process, started here, memory-backed), and read back by ``verify``,
``inspect``, ``plan``, ``report``, ``export`` (megatron, to a local prefix) and the
reader (``open_output`` then every sample), each in a fresh process as a user runs it.
Printed per command: its wall time and the HTTP requests the server answered while it
ran (counted from the server's request log, one line a request), and requests per
part. Wall times include the process start and Beam's import, and swing with the
machine's load.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTDATA = ROOT / "tests" / "testdata"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from finalize import BUCKET, start_moto  # noqa: E402  (moto's S3 server, as the finalize benchmark starts it)
COMMANDS = ("verify", "inspect", "plan", "report", "export", "reader")

READER = """
import sys
from mintdim_beam.reader import open_output
ds = open_output(sys.argv[1], options=sys.argv[2:])
print(len(ds), sum(s.token_count for s in ds))
"""


def build_local(directory: Path, parts: int) -> str:
    """A parts dataset of about ``parts`` blocks; returns its directory."""
    sys.path.insert(0, str(TESTDATA))
    import json

    import textgen
    from mintdim_beam import pipeline

    rows = textgen.instruction_records(random.Random(5), parts * 12)
    source = directory / "in.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    block = max(1024, source.stat().st_size // parts)
    out = directory / "out"
    job = (pipeline("unit-build").source.jsonl(files=[str(source)], fields=[["instruction", "input", "output"]],
                                               templates=["{instruction}\n{input}\n{output}"])
           .tokenizer.sentencepiece(files=[str(TESTDATA / "sp_unigram.model")]).units(sizes=[[48, 96, 192]], build_batch=[64])
           .output.dir(str(out), samples_per_shard=[512]))
    job.run(on_overflow="truncate", on_template_unk="continue", on_bad_record="skip", index_layout="parts",
            block_size=block, echo=lambda *a: None, quiet=True)
    return str(out)


def requests_logged(log: Path) -> int:
    """Requests the server answered so far (werkzeug logs one ``"METHOD path HTTP/1.1"``
    line each)."""
    return sum(1 for line in log.read_text(errors="replace").splitlines() if '" ' in line and "HTTP/1." in line)


def upload(client, local: str, remote: str) -> int:
    bucket, prefix = remote[len("s3://"):].split("/", 1)
    count = 0
    for p in sorted(Path(local).rglob("*")):
        if p.is_file():
            client.put_object(Bucket=bucket, Key=f"{prefix}/{p.relative_to(local).as_posix()}", Body=p.read_bytes())
            count += 1
    return count


def argv_of(command: str, dataset: str, tmp: Path, flags: list) -> list:
    cli = [sys.executable, "-m", "mintdim_beam.cli.commands"]
    return {
        "verify": [*cli, "verify", dataset, *flags],
        "inspect": [*cli, "inspect", dataset, "--sample-id", "7", *flags],
        "plan": [*cli, "plan", dataset, *flags],
        "report": [*cli, "report", dataset, "-o", str(tmp / "report.html"), *flags],
        "export": [*cli, "export", dataset, str(tmp / f"mg-{time.monotonic_ns()}"), "--format", "megatron", *flags],
        "reader": [sys.executable, "-c", READER, dataset, *flags],
    }[command]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", type=int, default=300, help="blocks, hence parts per index (default 300)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="commands to run (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mintdim-remote-parts-") as tmp_name:
        tmp = Path(tmp_name)
        started = time.perf_counter()
        local = build_local(tmp, args.parts)
        parts = len(list(Path(local, "sample_index").glob("part-*.jsonl")))
        print(f"built {parts} parts per index in {time.perf_counter() - started:.1f} s", flush=True)
        log = tmp / "moto.log"
        server, client, flags = start_moto(open(log, "wb"))
        try:
            dataset = f"s3://{BUCKET}/parts/out"
            print(f"uploaded {upload(client, local, dataset)} objects", flush=True)
            for command in args.commands.split(","):
                before = requests_logged(log)
                started = time.perf_counter()
                done = subprocess.run(argv_of(command, dataset, tmp, flags), capture_output=True, text=True)
                wall = time.perf_counter() - started
                time.sleep(0.5)     # the server's last log lines
                count = requests_logged(log) - before
                status = "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr[-300:]}"
                print(f"{command:8s} {wall:7.1f} s  {count:6d} requests  {count / parts:6.1f} per part  {status}",
                      flush=True)
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
