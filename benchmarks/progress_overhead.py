"""What the progress display costs: the same build with and without ``--quiet``.

The display is a launcher thread that lists the output's spill directory every half
second and reads each finished block's ``progress.json`` once; each block writes that
file (about 60 bytes) after its spill. This builds one generated corpus through the
command line on the default local runner, alternating quiet and shown builds, stderr
piped (so the display prints its plain lines), and prints each build's wall time, the
progress lines it printed and the closing summary line.

    python benchmarks/progress_overhead.py [--mb 20] [--rounds 2] [--block-size 1048576]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests" / "testdata" / "sp_unigram.model"


def _corpus(path: Path, mb: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "testdata"))
    import textgen

    rng, size = random.Random(7), 0
    with open(path, "wb") as f:
        while size < mb * 1_000_000:
            for row in textgen.instruction_records(rng, 1000):
                line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
                f.write(line)
                size += len(line)


def _build(job: Path, quiet: bool) -> tuple[float, list, str]:
    cmd = [sys.executable, "-m", "mintdim_beam.cli.commands", "build", str(job)] + (["--quiet"] if quiet else [])
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
    wall = time.perf_counter() - started
    shown = [line for line in done.stderr.splitlines() if line.startswith("[unit-build] ")]
    summary = next(line for line in done.stdout.splitlines() if line.startswith("[unit-build] finished"))
    return wall, shown, summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--block-size", type=int, default=1 << 20)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mintdim-progress-"))
    try:
        data = work / "corpus.jsonl"
        _corpus(data, args.mb)
        walls: dict = {True: [], False: []}
        for r in range(args.rounds):
            for quiet in (True, False):
                out = work / f"out-{r}-{int(quiet)}"
                job = work / f"job-{r}-{int(quiet)}.json"
                job.write_text(json.dumps({
                    "source": {"files": [str(data)], "fields": [["instruction", "input", "output"]],
                               "templates": ["{instruction}\n{input}\n{output}"]},
                    "tokenizer": {"sentencepiece": [str(TOKENIZER)]},
                    "units": {"sizes": [[64, 128, 256]], "build_batch": [256]},
                    "output": {"dir": str(out), "samples_per_shard": [4096]},
                    "run": {"on_overflow": "truncate", "on_template_unk": "continue",
                            "block_size": args.block_size}}))
                wall, shown, summary = _build(job, quiet)
                walls[quiet].append(wall)
                print(f"round {r} {'quiet' if quiet else 'shown'}: {wall:.2f} s, {len(shown)} progress lines")
                for line in shown:
                    print("   ", line)
                print("   ", summary)
                shutil.rmtree(out)
        for quiet in (True, False):
            print(f"{'--quiet' if quiet else 'progress'}: best {min(walls[quiet]):.2f} s of {len(walls[quiet])}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
