"""Paths a build refuses before any work: the error, exit status 2, nothing written.

* Outputs compared where they really are (symbolic links resolved): two outputs that
  are one directory, an output inside another (``A`` and ``A/unit_64``, or inside
  ``A/.mintdim-staging/``), an input or tokenizer inside an output
  (``OutputMappingError``). They used to be treated as separate directories.
* Inputs and tokenizers that are not regular files: a directory, a FIFO (the build used
  to wait for a writer forever), a device (``MintDimFileNotFoundError``).
* Outputs that cannot be used: a dangling symbolic link, an existing file, a path below
  a file, a directory this user cannot write (``OutputValidationError``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, TESTDATA, OutputDir, refused_by_cli, write_jsonl
from mintdim_beam.cli.commands import main

TOKENIZER = str(TESTDATA / "sp_unigram.model")
ROWS = [{"q": "Why do bees matter?", "a": "They pollinate crops."},
        {"q": "Bread", "a": "Yeast makes gas."}]


def _job(tmp_path: Path, *, files=None, tokenizer=TOKENIZER, outputs) -> str:
    files = files or [write_jsonl(tmp_path / "data.jsonl", ROWS)]
    out = outputs if isinstance(outputs, str) else list(outputs)
    text = (
        f"source:\n  files: {list(map(str, files))!r}\n  fields: [['q', 'a']]\n  templates: ['{{q}} {{a}}']\n"
        f"tokenizer:\n  sentencepiece: [{str(tokenizer)!r}]\n"
        "units:\n  sizes: [[16, 64]]\n  build_batch: [4]\n"
        f"output:\n  dir: {out!r}\n  samples_per_shard: [2]\n"
        "run:\n  on_overflow: truncate\n  on_template_unk: continue\n"
    )
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _refused(capsys, job: str, error: str, *facts: str) -> tuple[str, str]:
    return refused_by_cli(capsys, ["build", job], error, *facts)


def _tree(path: Path) -> list:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


# --------------------------------------------------------------------------- aliased and nested outputs


def test_two_outputs_that_are_one_directory_through_a_link(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    job = _job(tmp_path, files=[data, data], outputs=[str(tmp_path / "real"), str(tmp_path / "alias")])
    english, vietnamese = _refused(capsys, job, "OutputMappingError", str(tmp_path / "alias"))
    assert "Output directories must not overlap." in english
    assert f"both paths are the same directory: {tmp_path / 'real'}" in english
    assert "Các thư mục output không được chồng lên nhau." in vietnamese
    assert _tree(tmp_path / "real") == []
    # Not an overlap: one path spelled two ways is one shared output.
    job = _job(tmp_path, files=[data, data], outputs=[str(tmp_path / "real"), str(tmp_path / "x" / ".." / "real")])
    assert main(["build", job]) == 0
    out = OutputDir(tmp_path / "real")
    assert out.stats["total_samples"] == 4
    out.decoded()
    assert [p.name for p in (tmp_path / "real").iterdir() if p.name.startswith(".")] == []   # claim released


@pytest.mark.parametrize("inner", ["A/unit_64", "A/.mintdim-staging/x", "A/./b/../c"])
def test_an_output_inside_another_is_refused(tmp_path, capsys, inner):
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    job = _job(tmp_path, files=[data, data], outputs=[str(tmp_path / inner), str(tmp_path / "A")])
    english, _ = _refused(capsys, job, "OutputMappingError", f"Directory: {tmp_path / 'A'}")
    assert f"Overlaps with: {tmp_path / inner}" in english
    assert "the second directory is inside the first" in english
    assert not (tmp_path / "A").exists()


def test_an_output_inside_another_among_many(tmp_path, capsys):
    """``A-x`` sorts between ``A`` and ``A/b``; the overlap is still found."""
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    names = ["A", "A-x", "B", "A.y", "A/b", "C"]
    job = _job(tmp_path, files=[data] * len(names), outputs=[str(tmp_path / n) for n in names])
    english, _ = _refused(capsys, job, "OutputMappingError", f"Directory: {tmp_path / 'A'}",
                          f"Overlaps with: {tmp_path / 'A' / 'b'}")
    assert not any((tmp_path / n).exists() for n in names)


def test_an_output_inside_another_through_a_link(tmp_path, capsys):
    (tmp_path / "A").mkdir()
    (tmp_path / "elsewhere").symlink_to(tmp_path / "A")
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    job = _job(tmp_path, files=[data, data], outputs=[str(tmp_path / "A"), str(tmp_path / "elsewhere" / "sub")])
    _refused(capsys, job, "OutputMappingError", "the second directory is inside the first")
    assert _tree(tmp_path / "A") == []


def test_versioned_roots_inside_one_another(tmp_path, capsys):
    """``ROOT/<id>`` and ``ROOT/sub/<id>`` do not overlap, but the roots do."""
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    job = _job(tmp_path, files=[data, data], outputs=[str(tmp_path / "root"), str(tmp_path / "root" / "sub")])
    code = main(["build", job, "--versioned"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("[english] OutputMappingError: Output directories must not overlap.")
    assert "the second directory is inside the first" in err
    assert not (tmp_path / "root").exists()


def test_an_output_inside_another_builds_staging_is_refused(tmp_path, capsys):
    """Started beside a build of A, a job into A/.mintdim-staging/x passed every check
    (its own outputs do not overlap) and published where A's build cleans up."""
    out = tmp_path / "A" / ".mintdim-staging" / "x"
    english, vietnamese = _refused(capsys, _job(tmp_path, outputs=str(out)), "OutputValidationError",
                                   f"Directory: {out}", "it lies inside a build's staging folder .mintdim-staging")
    assert "nằm trong thư mục staging .mintdim-staging" in vietnamese
    assert not (tmp_path / "A").exists()


@pytest.mark.parametrize("case", ["LATEST is a directory", "root is a dataset"])
def test_a_versioned_root_that_cannot_be_one_is_refused_before_any_work(tmp_path, capsys, case):
    """A directory named LATEST in the root used to fail once the build was published
    (IsADirectoryError traceback, a stray LATEST.tmp-* file); a root that is a published
    dataset took the new build inside it, exit 0."""
    root = tmp_path / "root"
    job = _job(tmp_path, outputs=str(root))
    if case == "LATEST is a directory":
        (root / "LATEST").mkdir(parents=True)
        shown = f"its LATEST must be a file naming the latest build, and it is not: {root / 'LATEST'}"
        shown_vi = "thì LATEST của nó phải là file"
    else:
        assert main(["build", job]) == 0
        shown = f"it is a published dataset ({root / 'manifest.json'}), so it cannot also be a versioned root"
        shown_vi = "đây là một dataset đã publish"
    before = _tree(root)
    capsys.readouterr()
    code = main(["build", job, "--versioned", "--build-id", "b1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert err.startswith("[english] OutputValidationError: Output directory cannot be used.")
    assert f"Directory: {root}" in err and shown in err and shown_vi in err
    assert _tree(root) == before


@pytest.mark.parametrize("which", ["source", "tokenizer"])
def test_an_input_or_tokenizer_inside_an_output_is_refused(tmp_path, capsys, which):
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")       # found through the link too
    data = write_jsonl(tmp_path / "real" / "data.jsonl", ROWS) if which == "source" else None
    tokenizer = shutil.copy(TOKENIZER, tmp_path / "real" / "t.model") if which == "tokenizer" else TOKENIZER
    job = _job(tmp_path, files=[data] if data else None, tokenizer=tokenizer, outputs=str(tmp_path / "out"))
    english, vietnamese = _refused(capsys, job, "OutputMappingError", f"Directory: {tmp_path / 'out'}")
    assert "An output directory must not hold the build's own input or tokenizer files." in english
    assert f"Context: {which}" in english and f"Ngữ cảnh: {which}" in vietnamese
    assert _tree(tmp_path / "real") == [Path(data or tokenizer).name]


# --------------------------------------------------------------------------- inputs that are not files


@pytest.mark.parametrize("which", ["source", "tokenizer"])
@pytest.mark.parametrize("kind, found", [
    ("directory", "Found: a directory"),
    ("fifo", "Found: a named pipe (FIFO): reading it would wait forever"),
    ("device", "Found: a character device"),
])
def test_inputs_that_are_not_regular_files(tmp_path, which, kind, found):
    """Run as a command with a deadline: a FIFO used to block the build for good."""
    path = tmp_path / f"odd_{kind}.model"     # a tokenizer's name must say its kind
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/null")
    files = [str(path)] if which == "source" else None
    job = _job(tmp_path, files=files, tokenizer=str(path) if which == "tokenizer" else TOKENIZER,
               outputs=str(tmp_path / "out"))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "mintdim_beam.cli.commands", "build", job], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    english, vietnamese = done.stderr[done.stderr.index("[english]"):].split("[vietnam]")
    assert english.startswith("[english] MintDimFileNotFoundError: Required path is not a regular file.")
    assert f"Context: {which}" in english and f"Path: {path}" in english
    assert found in english
    assert "Đường dẫn cần dùng không phải là file thường." in vietnamese
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- outputs that cannot be used


def test_an_output_that_is_a_dangling_link(tmp_path, capsys):
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    english, vietnamese = _refused(capsys, _job(tmp_path, outputs=str(tmp_path / "out")), "OutputValidationError",
                                   f"{tmp_path / 'gone'}")
    assert "Output directory cannot be used." in english
    assert "it is a symbolic link to a missing target" in english
    assert "đây là symbolic link trỏ tới đích không tồn tại" in vietnamese
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize("output", ["file.txt", "file.txt/sub"])
def test_an_output_that_is_or_lies_below_a_file(tmp_path, capsys, output):
    (tmp_path / "file.txt").write_text("keep me")
    english, _ = _refused(capsys, _job(tmp_path, outputs=str(tmp_path / output)), "OutputValidationError",
                          f"{tmp_path / 'file.txt'}")
    assert "it exists and is not a directory" in english
    assert (tmp_path / "file.txt").read_text() == "keep me"


@pytest.fixture
def immutable_dir(tmp_path):
    """A directory nobody may write, root included (``chattr +i``); skips where unsupported."""
    locked = tmp_path / "locked"
    locked.mkdir()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(locked)],
                                                        capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available on this file system")
    try:
        yield locked
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)


@pytest.mark.parametrize("sub", ["out", "deeper/out", ""])
def test_an_output_the_user_cannot_write(tmp_path, capsys, immutable_dir, sub):
    out = immutable_dir / sub if sub else immutable_dir
    english, vietnamese = _refused(capsys, _job(tmp_path, outputs=str(out)), "OutputValidationError",
                                   f"Directory: {out}" if sub else f"{immutable_dir}")
    assert "this user cannot create or write it" in english
    assert "người dùng này không tạo hoặc ghi được" in vietnamese
    assert _tree(immutable_dir) == []
