"""A build through the fluent API with ``run()``'s default local configuration.

This is how a user's script (and the issue's check) builds: ``mintdim_beam.pipeline``,
no runner and no Beam flags, so ``run()`` picks the local runner's mode itself. The
job's fields come from a job file written by ``run.py`` (the same job the CLI rows
build), so the rows compare like with like. Prints the outputs and the local
configuration ``run()`` chose, as JSON.

    python benchmarks/fluent_build.py JOB.json
"""

from __future__ import annotations

import json
import sys


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    with open(args[0], encoding="utf-8") as f:
        job = json.load(f)
    import mintdim_beam

    src, tok, units, out, run = job["source"], job["tokenizer"], job["units"], job["output"], job["run"]
    declared = (
        mintdim_beam.pipeline("unit-build")
        .source.jsonl(files=src["files"], fields=src["fields"], templates=src["templates"])
        .units(sizes=units["sizes"], build_batch=units["build_batch"])
        .output.dir(out["dir"], samples_per_shard=out["samples_per_shard"])
    )
    kind = getattr(declared.tokenizer, tok["type"])
    result = kind(files=tok["files"]).run(
        on_overflow=run["on_overflow"], on_template_unk=run["on_template_unk"],
        on_bad_record=run["on_bad_record"], accelerators=run.get("accelerators", True), echo=lambda line: None)
    info = result.build_info
    print(json.dumps({"outputs": result.output_dirs, "runner": info.get("runner"),
                      "direct_running_mode": info.get("direct_running_mode"),
                      "direct_num_workers": info.get("direct_num_workers")}))


if __name__ == "__main__":
    main()
