"""The ``mintdim-beam`` command line: ``build JOB.yaml``, ``demo OUT_DIR``, the flag check,
``--version``, ``--help`` and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import DEMO_DIR, DirectTokenizer, OutputDir, expected_segments, write_jsonl
from mintdim_beam.cli.commands import main


def _job_yaml(tok_path: str, *, sections=("source", "tokenizer", "units", "output", "run"),
              on_overflow="abort") -> str:
    parts = {
        "source": ('source:\n'
                   '  files: ["./data/a.jsonl", "./data/b.jsonl"]\n'
                   '  fields: [["q", "a"]]\n'
                   '  templates: ["{q}\\n{a}"]\n'),
        "tokenizer": f'tokenizer:\n  sentencepiece: ["{tok_path}"]\n',
        "units": 'units:\n  sizes: [[8, 32]]\n  build_batch: [4]\n',
        "output": 'output:\n  dir: ["./out/a", "./out/b"]\n  samples_per_shard: [2]\n',
        "run": f'run:\n  on_overflow: {on_overflow}\n  on_template_unk: abort\n',
    }
    return "".join(parts[s] for s in sections)


@pytest.fixture
def job_dir(tmp_path, monkeypatch, tok):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "data" / "a.jsonl", [
        {"q": "Why do bees matter?", "a": "They pollinate crops."},
        {"q": "Tides?", "a": "The Moon pulls on the oceans, so the water rises and falls twice a "
                             "day along most coasts of the world."},
    ])
    write_jsonl(tmp_path / "data" / "b.jsonl", [{"q": "Bread", "a": "Yeast makes gas."}])
    return tmp_path


def test_build_job_file(job_dir, tok, capsys):
    """A job file builds; a policy flag on the command line overrides the job's run section."""
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model")), encoding="utf-8")
    # Beam pipeline options (the build's own --encode_threads among them) pass the check.
    code = main(["build", "job.yaml", "--on-overflow", "truncate", "--runner", "DirectRunner",
                 "--encode_threads", "2", "--direct_num_workers=1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    for name, n in (("a", 2), ("b", 1)):
        out = OutputDir(job_dir / "out" / name)
        assert out.stats["total_samples"] == n
        out.check_layout()
        out.decoded()
        assert f"output=./out/{name}" in captured.out
    a = OutputDir(job_dir / "out" / "a")
    assert [r["source_file"] for r in a.samples] == ["./data/a.jsonl"] * 2
    assert a.manifest["policies"]["on_overflow"] == "truncate"
    overflow = a.jsonl("overflow_index.jsonl")
    assert [(o["sample_id"], o["action"]) for o in overflow] == [(1, "truncate")]


def test_bad_job_missing_section(job_dir, tok, capsys):
    sections = ("source", "tokenizer", "output", "run")  # no units
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model"), sections=sections),
                                      encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in captured.err
    assert "[english] PipelineValidationError" in captured.err
    assert "[vietnam] PipelineValidationError" in captured.err
    assert "units.sizes" in captured.err
    assert not (job_dir / "out").exists()


def test_unknown_tokenizer_type_is_named(job_dir, tok, capsys):
    text = _job_yaml(tok("sp_unigram.model")).replace(
        f'tokenizer:\n  sentencepiece: ["{tok("sp_unigram.model")}"]\n',
        f'tokenizer:\n  type: sentencepeice\n  files: ["{tok("sp_unigram.model")}"]\n')
    (job_dir / "job.yaml").write_text(text, encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    english, vietnamese = captured.err.split("[vietnam]")
    assert "[english] TokenizerValidationError: Unsupported tokenizer format." in english
    assert ("tokenizer.type is 'sentencepeice' (did you mean 'sentencepiece'?); "
            "it must be one of: sentencepiece, hf_json") in english
    assert "tokenizer.type là 'sentencepeice' (có phải ý bạn là 'sentencepiece'?)" in vietnamese
    assert not (job_dir / "out").exists()


def test_missing_job_file(tmp_path, capsys):
    code = main(["build", str(tmp_path / "nope.yaml")])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err
    assert "[english] MintDimFileNotFoundError" in captured.err and "nope.yaml" in captured.err


def test_build_job_with_bad_record_exits_2(job_dir, tok, capsys):
    """An error raised while the Beam pipeline runs is printed like a launch-time one."""
    with open(job_dir / "data" / "b.jsonl", "a", encoding="utf-8") as f:
        f.write('{"q": "broken"\n')
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model"), on_overflow="truncate"),
                                      encoding="utf-8")
    code = main(["build", "job.yaml"])
    captured = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in captured.err
    english, vietnamese = captured.err.split("[vietnam]")
    assert "[english] SourceParseError" in english
    assert "./data/b.jsonl" in english and "./data/b.jsonl" in vietnamese
    assert "invalid JSON syntax" in english
    assert not (job_dir / "out" / "a" / "manifest.json").exists()


def test_demo(tmp_path, capsys):
    if not DEMO_DIR.is_dir() or not list(DEMO_DIR.glob("*.jsonl")):
        pytest.skip("mintdim_beam/demo/ has no data yet")
    out_dir = tmp_path / "demo"
    code = main(["demo", str(out_dir)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    outputs = sorted(p.parent for p in out_dir.rglob("manifest.json"))
    assert len(outputs) >= 1
    total = 0
    for path in outputs:
        out = OutputDir(path)
        out.check_layout()
        decoded = out.decoded()
        total += out.stats["total_samples"]
        assert len(decoded) == out.stats["total_samples"] == len(out.samples)
        assert out.stats["total_tokens"] == sum(r["token_count"] for r in out.samples)
        # a few records are exactly the direct encoding of their segments (the demo uses
        # on_overflow="extend", so no record is truncated)
        tok = out.manifest["tokenizer"]
        direct = DirectTokenizer(tok["type"], tok["path"])
        sources = out.manifest["source"]
        for row in out.samples[::25]:
            index = sources["files"].index(row["source_file"])
            lines = Path(row["source_file"]).read_text(encoding="utf-8").splitlines()
            record = json.loads(lines[row["source_line"] - 1])
            template = sources["templates"][index]
            assert decoded[row["sample_id"]] == expected_segments(direct, template, record)
    assert total > 0
    # the demo data's documented features (mintdim_beam/demo/README.md)
    inst = OutputDir(out_dir / "instructions")
    assert inst.stats["total_samples"] == 300
    assert inst.stats["duplicate_groups"] == 4 and inst.stats["duplicate_samples"] == 9
    assert [[s["source_line"] for s in d["samples"]] for d in inst.jsonl("duplicate_index.jsonl")] == [
        [13, 62], [41, 153, 224], [103, 245], [183, 296]]
    assert [u["source_line"] for u in inst.jsonl("unk_index.jsonl")] == [138]
    assert OutputDir(out_dir / "chat_vi").stats["total_samples"] == 100


def test_the_command_exits_with_mains_status(job_dir, tok):
    """``python -m mintdim_beam.cli.commands`` (the console script's entry): 0 after a build, 2 on
    a bad job, with the build's output complete before the quick exit."""
    import subprocess
    import sys

    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model"), on_overflow="truncate"),
                                      encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", "build", "job.yaml"],
                          capture_output=True, text=True, cwd=job_dir)
    assert done.returncode == 0, done.stderr
    assert "[unit-build] done output=./out/a" in done.stdout
    out = OutputDir(job_dir / "out" / "a")
    assert out.stats["total_samples"] == 2
    out.check_layout()
    (job_dir / "bad.yaml").write_text(_job_yaml(tok("sp_unigram.model"), sections=("source", "run")),
                                      encoding="utf-8")
    failed = subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", "build", "bad.yaml"],
                            capture_output=True, text=True, cwd=job_dir)
    assert failed.returncode == 2
    assert "[english] PipelineValidationError" in failed.stderr and "Traceback" not in failed.stderr


# --------------------------------------------------------------------------- flags, help, exit codes

@pytest.mark.parametrize("argv, wrong, suggested", [
    (["build", "job.yaml", "--on-overlfow", "truncate"], "--on-overlfow", "--on-overflow"),
    (["build", "job.yaml", "--on_overflow=truncate"], "--on_overflow", "--on-overflow"),
    (["build", "job.yaml", "--runer", "DirectRunner"], "--runer", "--runner"),
    (["build", "job.yaml", "--encode_thread", "2"], "--encode_thread", "--encode_threads"),
    (["demo", "out", "--direct_num_worker=2"], "--direct_num_worker", "--direct_num_workers"),
    (["plan", "job.yaml", "--multple", "8"], "--multple", "--multiple"),
    (["verify", "out", "--max-problem", "3"], "--max-problem", "--max-problems"),
])
def test_an_unknown_flag_is_a_usage_error_that_names_it(job_dir, tok, capsys, argv, wrong, suggested):
    """Beam drops flags it does not know: a typo'd policy used to vanish and the build ran
    on the default. Now nothing runs, and the message names the flag and the closest one."""
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model")), encoding="utf-8")
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 64
    assert err.splitlines()[-1].endswith(f": error: unknown option {wrong}; did you mean {suggested}?")
    assert "Traceback" not in err
    assert not (job_dir / "out").exists()


def test_other_stray_arguments_are_usage_errors(job_dir, tok, capsys):
    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model")), encoding="utf-8")
    cases = {
        ("build", "job.yaml", "extra"): "unexpected argument 'extra'",
        ("build", "job.yaml", "-x"): "unknown option -x",
        ("build", "job.yaml", "--direct_num_workers=many"): "argument --direct_num_workers: invalid int value: 'many'",
        ("build", "job.yaml", "--on-overflow", "cut"): "argument --on-overflow: invalid choice: 'cut'",
        ("build",): "the following arguments are required: JOB",
        ("verify", "out", "--runner", "DataflowRunner"): "option --runner is a Beam pipeline option, which this "
                                                        "command does not use",
        ("plan", "out", "--direct_num_workers=2"): "option --direct_num_workers is a Beam pipeline option",
        ("frobnicate",): "invalid choice: 'frobnicate'",
        (): "the following arguments are required: COMMAND",
    }
    for argv, message in cases.items():
        assert main(list(argv)) == 64, argv
        err = capsys.readouterr().err
        assert message in err.splitlines()[-1], (argv, err)
        assert "Traceback" not in err
    assert not (job_dir / "out").exists()


def test_flags_of_beam_its_extras_and_the_build_are_known():
    """Every option of the installed Beam, its runner extras (Dask) and the build's own
    passes; file-system options pass where a dataset is only read."""
    from mintdim_beam.cli import flags
    from mintdim_beam.cli.commands import build_parser

    _, parsers = build_parser()
    beam = ["--runner", "FlinkRunner", "--flink_master=localhost:8081", "--sdk_worker_parallelism", "2",
            "--temp_location", "gs://b/tmp", "--no_pipeline_type_check", "--experiments=a,b", "--encode_threads=3"]
    assert flags.check_flags(parsers["build"], beam, flags.BEAM) == beam
    pytest.importorskip("distributed")
    assert flags.check_flags(parsers["build"], ["--dask_npartitions", "8"], flags.BEAM) == ["--dask_npartitions", "8"]
    fs = ["--s3_endpoint_url", "http://localhost:9000", "--s3_access_key_id=k"]
    assert flags.check_flags(parsers["verify"], fs, flags.FILESYSTEM) == fs


def test_version():
    import subprocess
    import sys

    import apache_beam

    from mintdim_beam.version import __version__

    done = subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.startswith(f"mintdim-beam {__version__} (apache-beam {apache_beam.__version__}, Python ")


def _help_entries(text: str, section: str) -> list:
    """The entries of one section of argparse's help: (names, description) pairs."""
    lines = text.split(f"\n{section}:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    entries = []
    for line in lines:
        if line.startswith("  ") and not line.startswith("                "):
            names, _, description = line.strip().partition("  ")
            entries.append([names, description.strip()])
        else:
            entries[-1][1] = (entries[-1][1] + " " + line.strip()).strip()
    return entries


@pytest.mark.parametrize("command", ["build", "demo", "verify", "inspect", "plan", "report", "export"])
def test_every_option_in_help_has_a_description_and_its_default(command, capsys):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":func:" not in text and ":class:" not in text   # plain text, no RST
    assert "exit status:" in text and "64   usage error" in text
    options = _help_entries(text, "options")
    assert len(options) >= 3
    for names, description in options:
        if names.startswith("-h, --help"):
            continue
        assert description, names
        assert "(default: " in description or "(required" in description, (names, description)
    positionals = _help_entries(text, "positional arguments")
    assert positionals and all(description for _, description in positionals), positionals


def test_verify_of_a_missing_directory_is_an_error_not_a_finding(tmp_path, capsys):
    code = main(["verify", str(tmp_path / "no_such_dir")])
    err = capsys.readouterr().err
    assert code == 2
    missing = tmp_path / "no_such_dir"
    assert err.strip() == (f"[english] DatasetAccessError: mintdim-beam verify: no such directory: {missing}\n\n"
                           f"[vietnam] DatasetAccessError: mintdim-beam verify: không có thư mục này: {missing}")


def test_usage_errors_exit_64_from_the_installed_command(job_dir, tok):
    import subprocess
    import sys

    (job_dir / "job.yaml").write_text(_job_yaml(tok("sp_unigram.model")), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", "build", "job.yaml", "--on-overlfow",
                           "truncate"], capture_output=True, text=True, cwd=job_dir)
    assert done.returncode == 64
    assert done.stderr.splitlines()[-1] == ("mintdim-beam build: error: unknown option --on-overlfow; "
                                            "did you mean --on-overflow?")
    assert "WARNING" not in done.stderr and not (job_dir / "out").exists()



def test_log_level_before_or_after_the_command():
    from mintdim_beam.cli.commands import build_parser

    parser, _ = build_parser()
    assert parser.parse_known_args(["--log-level", "INFO", "verify", "d"])[0].log_level == "INFO"
    assert parser.parse_known_args(["verify", "d", "--log-level", "DEBUG"])[0].log_level == "DEBUG"
    assert parser.parse_known_args(["verify", "d"])[0].log_level == "ERROR"


@pytest.mark.parametrize("argv", [["--log-level", "bogus", "verify", "d"], ["build", "job.yaml", "--log-level=VERBOSE"]])
def test_an_unknown_log_level_is_a_usage_error(capsys, argv):
    """``--log-level bogus`` used to fall back to ERROR without a word."""
    assert main(argv) == 64
    err = capsys.readouterr().err
    assert "argument --log-level: invalid level" in err and "choose from DEBUG, INFO, WARNING, ERROR, CRITICAL" in err
    assert main(["verify", "--log-level", "debug", "--help"]) == 0


def test_demo_help_names_the_demos_own_policies(capsys):
    assert main(["demo", "--help"]) == 0
    options = dict(_help_entries(capsys.readouterr().out, "options"))
    assert options["--on-overflow {abort,truncate,skip,extend}"].endswith("(default: extend)")
    assert options["--on-bad-record {abort,skip}"].endswith("(default: skip)")


def test_a_reader_that_stops_early_is_not_an_error(tmp_path):
    """``mintdim-beam inspect ... | head``: the closed pipe ends the command quietly, exit 0."""
    import subprocess
    import sys

    out = tmp_path / "demo"
    assert main(["demo", str(out), "--quiet"]) == 0
    proc = subprocess.Popen([sys.executable, "-m", "mintdim_beam.cli.commands", "inspect", str(out / "instructions"),
                             "--sample-id", "3", "--ids"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()               # the reader is gone before the command writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception ignored" not in err
