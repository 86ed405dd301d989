"""Shared fixtures and helpers for every test folder.

The suite has one folder per layer of testing, and markers follow the folders
(``pytest_collection_modifyitems`` below; ``pyproject.toml`` registers them):

* ``unit/``: pure code (errors, format, tokenization, core, storage, reader parts) with
  no Beam; milliseconds to seconds. A unit test that is the first to import
  ``apache_beam`` fails (``pytest tests/unit`` checks every one of them).
* ``transforms/``: the Beam layer's DoFns and transforms, on ``TestPipeline``.
* ``e2e/``: full builds, the command line, readers on built datasets; all ``slow``.
* ``remote/``: moto's S3, Dask, GCS, the portable runner, scale-out; ``slow`` and
  ``remote``. A test elsewhere that asks for a remote fixture is ``remote`` too.

``pytest -m "not slow"`` is the fast lane (unit and transforms, less the few marked
``slow`` by hand); ``pytest -q`` runs everything. ``runners`` is reserved for tests on
real Flink/Spark/Prism engines, which skip when the tools are absent.

Helpers (importable as ``from conftest import ...``):

* ``write_jsonl(path, rows_or_raw_lines, ...)`` writes a JSONL file; dict/list/number
  items are JSON-encoded, ``str`` items are written as raw line text and ``bytes`` items
  as raw line bytes, so tests can write broken lines, CRLF endings, a BOM, blank lines
  and a last line without a newline.
* ``build_and_compare(tmp_path, ...)`` runs the Beam pipeline and the independent
  reference implementation (``tests/reference.py``) on the same inputs and asserts that
  every contract file is byte-identical; when the reference says the build must fail,
  it checks that the pipeline raises the same error class for the same file and line,
  and re-raises the pipeline's error.
* ``OutputDir`` decodes a published output directory from its bytes (numpy), without
  any code from ``mintdim_beam``.
* ``DirectTokenizer`` encodes text straight through the tokenizer libraries.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
TESTDATA = TESTS_DIR / "testdata"
#: The demo job's files, shipped as package data (``mintdim-beam demo``).
DEMO_DIR = REPO_ROOT / "mintdim_beam" / "demo"
#: ``../shared/realdata`` seen from the repository root; absent on most machines.
REALDATA = REPO_ROOT.parent / "shared" / "realdata"
#: The test folders, one per layer of the suite (docs/architecture.md, *Tests*).
FOLDERS = ("unit", "transforms", "e2e", "remote", "runners")

# This file and ``reference.py`` (``from conftest import ...``), the test data's helpers
# (``import textgen``), and each test folder, so that a test module can import another
# one's helpers (``from test_reader import make_dataset``) wherever either lives.
for _path in (TESTS_DIR, TESTDATA, *(TESTS_DIR / name for name in FOLDERS)):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from reference import ReferenceBuildError, build_reference, parse_template  # noqa: E402
# moto's S3 server, a GCS prefix and a local Dask cluster, for a test in any folder.
from remote_fixtures import dask_cluster, gs_remote, remote, s3_remote  # noqa: E402,F401

#: Files an output directory holds besides the contract files the reference builds.
NON_CONTRACT_FILES = {"manifest.json", "build_info.json"}
INDEX_FILES = ("sample_index.jsonl", "duplicate_index.jsonl", "unk_index.jsonl",
               "overflow_index.jsonl", "bad_record_index.jsonl")


def input_sizes(config) -> dict:
    """``{path: size}`` of a config's local inputs, as the launcher lists them."""
    return {f.path: os.path.getsize(f.path) for f in config.files}


def input_files(config) -> list:
    """``(path, size, compressed)`` of a config's local inputs, for ``busy_blocks``."""
    from mintdim_beam.format.inputs import is_compressed

    return [(f.path, os.path.getsize(f.path), is_compressed(f.path)) for f in config.files]


def quiet(*_args, **_kwargs):
    """``echo`` that prints nothing."""


# --------------------------------------------------------------------------- markers

#: Tests that ask for one of these fixtures reach a remote store or a cluster.
REMOTE_FIXTURES = {"s3_remote", "gs_remote", "remote", "dask_cluster", "dask_address"}


def folder_of(item) -> str:
    """``unit``, ``transforms``, ``e2e``, ``remote`` or ``runners``: the test folder ``item`` is in."""
    try:
        return Path(str(item.path)).resolve().relative_to(TESTS_DIR).parts[0]
    except (ValueError, IndexError):
        return ""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark by folder before ``-m`` selects: ``e2e``, ``remote`` and ``runners`` are
    ``slow``; ``remote`` (and any test using a remote fixture) is ``remote``;
    ``runners`` (real engines) is ``runners``."""
    for item in items:
        folder = folder_of(item)
        if folder in ("e2e", "remote", "runners"):
            item.add_marker(pytest.mark.slow)
        if folder == "runners":
            item.add_marker(pytest.mark.runners)
        if folder == "remote" or REMOTE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.remote)


@pytest.fixture(autouse=True)
def _unit_tests_load_no_beam(request):
    """A unit test must not need Beam: fail one that is the first to import it (seen
    when ``tests/unit`` runs alone; in a wider run another test has imported it first)."""
    if folder_of(request.node) != "unit" or "apache_beam" in sys.modules:
        yield
        return
    yield
    if "apache_beam" in sys.modules:
        pytest.fail(f"{request.node.nodeid} imported apache_beam: it belongs in tests/transforms or "
                    f"tests/e2e, not tests/unit", pytrace=False)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def testdata() -> Path:
    return TESTDATA


@pytest.fixture(scope="session")
def tok():
    """``tok("sp_unigram.model")`` -> absolute path of a test tokenizer as ``str``."""

    def path(name: str) -> str:
        p = TESTDATA / name
        assert p.exists(), f"missing test tokenizer {p}"
        return str(p)

    return path


@pytest.fixture(scope="session")
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.skip(f"real third-party data not available ({REALDATA})")
    return REALDATA


# --------------------------------------------------------------------------- writing inputs


def run_in_threads(work, count: int) -> None:
    """``work(k)`` for ``k < count``, each on its own thread, all at once; waits for all."""
    import threading

    threads = [threading.Thread(target=work, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def write_jsonl(path, rows_or_raw_lines, *, newline="\n", final_newline=True, bom=False) -> str:
    """Write a JSONL file and return its path as ``str``.

    ``dict``/``list``/scalars are JSON-encoded (``ensure_ascii=False``); ``str`` items are
    raw line text, ``bytes`` items raw line bytes. Lines are joined with ``newline``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sep = newline.encode("utf-8")
    chunks = []
    for item in rows_or_raw_lines:
        if isinstance(item, bytes):
            chunks.append(item)
        elif isinstance(item, str):
            chunks.append(item.encode("utf-8"))
        else:
            chunks.append(json.dumps(item, ensure_ascii=False).encode("utf-8"))
    data = sep.join(chunks)
    if final_newline and chunks:
        data += sep
    if bom:
        data = b"\xef\xbb\xbf" + data
    path.write_bytes(data)
    return str(path)


# --------------------------------------------------------------------------- running


def _resolve_dirs(tmp_path, output_dirs):
    def one(d):
        return d if os.path.isabs(d) else os.path.join(str(tmp_path), d)

    if isinstance(output_dirs, str):
        return one(output_dirs)
    return [one(d) for d in output_dirs]


def run_pipeline(*, files, fields=None, templates=None, tokenizer_kind, tokenizer_files, sizes,
                 samples_per_shard, output_dirs, on_overflow="abort", on_bad_record="abort",
                 on_template_unk="abort", build_batch=(3,), block_size=None, options=None,
                 runner=None, accelerators=None, index_layout=None, chat=None, pairs=None, on_pair_collapse=None):
    """Run the fluent API once, printing nothing; ``chat``: the keyword arguments of
    ``source.chat`` instead of fields and templates."""
    from mintdim_beam import pipeline

    if pairs is not None:
        job = pipeline("unit-build").source.pairs(files=files, templates=templates, chat=chat, **pairs)
    elif chat is not None:
        job = pipeline("unit-build").source.chat(files=files, **chat)
    else:
        job = pipeline("unit-build").source.jsonl(files=files, fields=fields, templates=templates)
    if tokenizer_kind == "sentencepiece":
        job = job.tokenizer.sentencepiece(files=tokenizer_files)
    else:
        job = job.tokenizer.hf_json(files=tokenizer_files)
    job = job.units(sizes=sizes, build_batch=list(build_batch))
    job = job.output.dir(output_dirs, samples_per_shard=samples_per_shard)
    kwargs = dict(on_overflow=on_overflow, on_template_unk=on_template_unk,
                  on_bad_record=on_bad_record, echo=quiet)
    if on_pair_collapse is not None:
        kwargs["on_pair_collapse"] = on_pair_collapse
    if block_size is not None:
        kwargs["block_size"] = block_size
    if options is not None:
        kwargs["options"] = options
    if runner is not None:
        kwargs["runner"] = runner
    if accelerators is not None:
        kwargs["accelerators"] = accelerators
    if index_layout is not None:
        kwargs["index_layout"] = index_layout
    return job.run(**kwargs)


def list_output_files(out_dir) -> dict:
    """``{relpath: bytes}`` of every file below ``out_dir`` (POSIX separators)."""
    out_dir = Path(out_dir)
    found = {}
    for p in sorted(out_dir.rglob("*")):
        if p.is_file():
            found[p.relative_to(out_dir).as_posix()] = p.read_bytes()
    return found


def _describe_difference(name, got: bytes, want: bytes) -> str:
    if name.endswith((".json", ".jsonl")):
        diff = difflib.unified_diff(
            want.decode("utf-8", "replace").splitlines(),
            got.decode("utf-8", "replace").splitlines(),
            "reference/" + name, "pipeline/" + name, lineterm="", n=1)
        return "\n".join(list(diff)[:40])
    n = min(len(got), len(want))
    first = next((i for i in range(n) if got[i] != want[i]), n)
    return (f"{name}: {len(got)} bytes (pipeline) vs {len(want)} bytes (reference); "
            f"first difference at byte {first}")


def compare_output_dir(out_dir, expected: dict) -> None:
    """Assert ``out_dir`` holds exactly the reference files (plus the two non-contract ones)."""
    got = list_output_files(out_dir)
    extra = sorted(set(got) - set(expected) - NON_CONTRACT_FILES)
    missing = sorted(set(expected) - set(got))
    assert not missing, f"{out_dir}: files missing: {missing}"
    assert not extra, f"{out_dir}: unexpected files: {extra}"
    assert "manifest.json" in got, f"{out_dir}: manifest.json missing"
    problems = []
    for name, want in sorted(expected.items()):
        if name.endswith("EMPTY_UNIT.md"):
            continue  # only its existence is part of the contract
        if got[name] != want:
            problems.append(_describe_difference(name, got[name], want))
    assert not problems, f"{out_dir}: files differ from the reference:\n" + "\n\n".join(problems)


def build_and_compare(tmp_path, *, files, fields=None, templates=None, tokenizer_kind, tokenizer_files,
                      sizes, samples_per_shard, output_dirs, on_overflow="abort",
                      on_bad_record="abort", on_template_unk="abort", build_batch=(3,),
                      block_size=None, options=None, chat=None, pairs=None, on_pair_collapse=None):
    """Run the pipeline and the reference on the same inputs; assert identical output.

    ``output_dirs`` (a string or a list) may be relative: they are then placed under
    ``tmp_path``. Returns the pipeline's ``BuildResult``. If the reference build fails,
    the pipeline must raise the same error class for the same file and line; that error
    is re-raised so tests can ``pytest.raises`` it.
    """
    output_dirs = _resolve_dirs(tmp_path, output_dirs)
    ref_error = None
    expected = None
    try:
        expected = build_reference(
            files=files, fields=fields, templates=templates, tokenizer_kind=tokenizer_kind,
            tokenizer_files=tokenizer_files, sizes=sizes, samples_per_shard=samples_per_shard,
            output_dirs=output_dirs, on_overflow=on_overflow, on_bad_record=on_bad_record,
            on_template_unk=on_template_unk, chat=chat, pairs=pairs,
            on_pair_collapse=on_pair_collapse or "abort")
    except ReferenceBuildError as exc:
        ref_error = exc

    from mintdim_beam.errors import MintDimError

    kwargs = dict(files=files, fields=fields, templates=templates, tokenizer_kind=tokenizer_kind,
                  tokenizer_files=tokenizer_files, sizes=sizes,
                  samples_per_shard=samples_per_shard, output_dirs=output_dirs,
                  on_overflow=on_overflow, on_bad_record=on_bad_record,
                  on_template_unk=on_template_unk, build_batch=build_batch,
                  block_size=block_size, options=options, chat=chat, pairs=pairs,
                  on_pair_collapse=on_pair_collapse)
    if ref_error is not None:
        try:
            run_pipeline(**kwargs)
        except MintDimError as err:
            assert type(err).__name__ == ref_error.error_class_name, (
                f"pipeline raised {type(err).__name__}, reference expects {ref_error}")
            if ref_error.file is not None and ref_error.line is not None:
                assert (getattr(err, "file", None), getattr(err, "line", None)) == (
                    ref_error.file, ref_error.line), (
                    f"pipeline error at {getattr(err, 'file', None)}:{getattr(err, 'line', None)}, "
                    f"reference expects {ref_error}")
            raise
        pytest.fail(f"pipeline succeeded but the reference build fails: {ref_error}")

    result = run_pipeline(**kwargs)
    assert sorted(os.path.normpath(o.path) for o in result.outputs) == sorted(
        os.path.normpath(d) for d in expected), "BuildResult.outputs do not match the outputs"
    by_norm = {os.path.normpath(d): files_ for d, files_ in expected.items()}
    for out in result.outputs:
        compare_output_dir(out.path, by_norm[os.path.normpath(out.path)])
        stats = json.loads((Path(out.path) / "stats.json").read_bytes())
        assert out.stats == stats
        shard_files = sorted(k for k in by_norm[os.path.normpath(out.path)] if k.endswith(".bin"))
        assert len(out.shards) == len(shard_files) == stats["shards"]
    return result


def assert_same_outputs(dir_a, dir_b) -> None:
    """Two builds of the same job produced the same bytes (``build_info.json`` aside)."""
    a = {k: v for k, v in list_output_files(dir_a).items() if k != "build_info.json"}
    b = {k: v for k, v in list_output_files(dir_b).items() if k != "build_info.json"}
    assert sorted(a) == sorted(b)
    different = [k for k in a if a[k] != b[k]]
    assert not different, f"files differ between {dir_a} and {dir_b}: {different}"


def assert_nothing_published(out_dir) -> None:
    """A failed build left no published output (staging aside)."""
    out_dir = Path(out_dir)
    if not out_dir.exists():
        return
    assert not (out_dir / "manifest.json").exists()
    published = [p for p in out_dir.glob("unit_*/shard_*.bin")]
    assert not published, f"shards published by a failed build: {published}"
    for name in INDEX_FILES + ("stats.json", "histogram.json"):
        assert not (out_dir / name).exists(), f"{name} published by a failed build"


# --------------------------------------------------------------------------- decoding


def read_jsonl(path) -> list:
    data = Path(path).read_bytes().decode("utf-8")
    return [json.loads(line) for line in data.split("\n") if line]  # "\n" only: rows may hold U+2028


class OutputDir:
    """Independent reader of one published output directory."""

    def __init__(self, path):
        self.path = Path(path)
        self.length_field = self.json("length_field.json")
        self.manifest = self.json("manifest.json")
        self.stats = self.json("stats.json")
        self.histogram = self.json("histogram.json")
        dtype = self.length_field["token_dtype"]
        assert dtype in ("uint16", "uint32")
        self.dtype = np.dtype("<u2" if dtype == "uint16" else "<u4")
        self.magic = self.length_field["magic"]
        assert self.magic == (0xFFFF if dtype == "uint16" else 0xFFFFFFFF)
        self.pad = self.length_field["pad_token_id"]
        self.sequence_template = self.length_field["sequence_template"]
        self.n = len(self.sequence_template)
        self.samples = self.jsonl("sample_index.jsonl")
        self._shards = {}

    def json(self, name):
        return json.loads((self.path / name).read_bytes())

    def jsonl(self, name):
        return read_jsonl(self.path / name)

    def records(self, shard_path: str, unit: int) -> np.ndarray:
        if shard_path not in self._shards:
            data = np.fromfile(self.path / shard_path, dtype=self.dtype)
            slots = 1 + self.n + unit
            assert data.size % slots == 0, f"{shard_path}: {data.size} slots, record is {slots}"
            self._shards[shard_path] = data.reshape(-1, slots)
        return self._shards[shard_path]

    def decode(self, row) -> list:
        """Segments (lists of ints) of one sample_index row; checks magic, lengths, pad tail."""
        unit = row["unit_size"]
        rec = self.records(row["shard_path"], unit)[row["shard_record"]]
        assert int(rec[0]) == self.magic, f"bad magic in sample {row['sample_id']}"
        lengths = [int(x) for x in rec[1:1 + self.n]]
        used = sum(lengths)
        assert used == row["token_count"], (row, lengths)
        assert used <= unit
        payload = rec[1 + self.n:]
        assert len(payload) == unit
        tail = payload[used:]
        assert (tail == self.pad).all(), f"sample {row['sample_id']}: pad tail is not pad_id"
        segments, start = [], 0
        for length in lengths:
            segments.append([int(x) for x in payload[start:start + length]])
            start += length
        return segments

    def decoded(self) -> dict:
        """sample_id -> segments, for every row of sample_index.jsonl."""
        return {row["sample_id"]: self.decode(row) for row in self.samples}

    def check_layout(self) -> None:
        """Shards hold every unit's records in ascending sample_id, samples_per_shard each."""
        per_shard = self.manifest["output"]["samples_per_shard"]
        by_unit = {}
        for row in self.samples:
            by_unit.setdefault(row["unit_size"], []).append(row)
        sizes = [int(s) for s in self.histogram]
        assert sizes == sorted(sizes)
        for unit in sizes:
            rows = sorted(by_unit.get(unit, []), key=lambda r: r["sample_id"])
            assert self.histogram[str(unit)] == len(rows)
            unit_dir = self.path / f"unit_{unit}"
            shards = sorted(unit_dir.glob("shard_*.bin"))
            assert len(shards) == -(-len(rows) // per_shard)
            if not rows:
                assert not shards
            for rank, row in enumerate(rows):
                shard, record = divmod(rank, per_shard)
                assert row["shard_path"] == f"unit_{unit}/shard_{shard:06d}.bin"
                assert row["shard_record"] == record
            for k, shard in enumerate(shards):
                recs = self.records(f"unit_{unit}/{shard.name}", unit)
                want = min(per_shard, len(rows) - k * per_shard)
                assert recs.shape[0] == want


class DirectTokenizer:
    """Encode straight through the tokenizer library, as the contract requires."""

    def __init__(self, kind: str, path: str):
        self.kind = kind
        if kind == "sentencepiece":
            import sentencepiece as spm

            self._sp = spm.SentencePieceProcessor(model_file=path)
            self.unk_id = self._sp.unk_id()
            self.pad_id = self._sp.pad_id()
        else:
            from tokenizers import Tokenizer

            t = Tokenizer.from_file(path)
            self.pad_id = t.padding["pad_id"] if t.padding else None
            t.no_padding()
            t.no_truncation()
            self._hf = t
            model = json.loads(Path(path).read_text(encoding="utf-8"))["model"]
            if model["type"] == "Unigram":
                self.unk_id = model["unk_id"]
            else:
                self.unk_id = t.token_to_id(model["unk_token"]) if model.get("unk_token") else None

    def encode(self, text: str) -> list:
        if self.kind == "sentencepiece":
            return list(self._sp.encode(text, out_type=int))
        return list(self._hf.encode(text, add_special_tokens=False).ids)


def render(value) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value)


def segment_texts(template: str, row: dict) -> list:
    """Rendered text of each template segment for one JSON object."""
    return [value if kind == "literal" else render(row[value])
            for kind, value in parse_template(template)]


def expected_segments(tokenizer: DirectTokenizer, template: str, row: dict) -> list:
    return [tokenizer.encode(text) for text in segment_texts(template, row)]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def refused_by_cli(capsys, argv, error: str, *facts: str) -> tuple[str, str]:
    """Run ``mintdim-beam ARGV``; it must exit 2 without a traceback, with ``error`` heading
    both the English and the Vietnamese block and each fact in the English one. Returns
    the two blocks."""
    from mintdim_beam.cli.commands import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    english, vietnamese = err[err.index("[english]"):].split("[vietnam]")
    assert english.startswith(f"[english] {error}:"), err
    assert vietnamese.startswith(f" {error}:"), err
    for fact in facts:
        assert fact in english, (fact, err)
    return english, vietnamese
