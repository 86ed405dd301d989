"""Tokenizer adapters: SentencePiece ``.model`` and Hugging Face ``tokenizer.json``.

Pure code: an adapter is built from the file's bytes (the Beam layer reads them through
``FileSystems``), so the same code loads a tokenizer from a local disk, ``gs://`` or
``s3://``. The tokenizer file is the single source of truth (spec, "Tokenizer
contract"): unk and pad ids come from the library object, never from MintDim-side vocab
parsing, and nothing is added around the text (no BOS/EOS/CLS/SEP).

A ``hf_json`` entry may name the folder holding a ``tokenizer.json``; the special tokens
the file does not configure are read from the companion files beside it, and a
vocabulary that provably cannot emit an unknown token needs none (``unk_id`` None):
``special_tokens`` (DESIGN.md §8). Every adapter knows its special tokens by role and by
content (:attr:`Tokenizer.special`), for the template's ``{@NAME}`` segments.

A ``tokenizer.json`` may configure padding and truncation for its original use. Exact
encoding needs both off, so the adapter switches them off on its own in-memory copy,
after reading the configured pad id; the user's file is never written.

Only the libraries' public APIs are used here. The exact accelerators of
``mintdim_beam.tokenization.accel`` (byte-level BPE word by word, gigatoken, the
SentencePiece UNK audit) are taken when ``accelerators`` is on and their probes pass,
and give the same results.
"""

from __future__ import annotations

import json
import os
import threading
from array import array
from collections import abc
from itertools import chain
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from mintdim_beam.errors import TokenDTypeCapacityError, TokenizerSpecialTokenError, TokenizerValidationError
from mintdim_beam.errors import tokenizer_messages as TM
from mintdim_beam.tokenization.long_texts import LONG_TEXT_CHARS, PieceEncoder, cuttable
from mintdim_beam.format.shard_format import UINT16, UINT16_MAX, UINT32, UINT32_MAX, TokenStorage  # noqa: F401 (re-exported)
from mintdim_beam.tokenization import accel
from mintdim_beam.tokenization import special_tokens as ST
from mintdim_beam.tokenization.special_tokens import SpecialToken, SpecialTokens, TokenizerFiles
from mintdim_beam.tokenization.sp_model import read_model
from mintdim_beam.tokenization.unk_rows import CharColumn

_UNSET = object()

SENTENCEPIECE = "sentencepiece"
HF_JSON = "hf_json"

#: Extension each tokenizer kind accepts (spec: "Supported formats").
EXTENSIONS = {SENTENCEPIECE: ".model", HF_JSON: ".json"}


def select_storage(vocab_size: int) -> TokenStorage:
    """Pick the smallest dtype whose magic value cannot collide with a token id (the
    ids' dtype; a dataset's slots may be wider: ``shard_format.slot_storage``)."""
    if vocab_size <= UINT16_MAX:
        return UINT16
    if vocab_size <= UINT32_MAX:
        return UINT32
    raise TokenDTypeCapacityError(vocab_size=vocab_size)


def kind_matches_path(kind: str, path: str) -> bool:
    """True when ``path`` has the extension the tokenizer ``kind`` reads."""
    return os.path.splitext(path)[1].lower() == EXTENSIONS[kind]


def check_kind_of_path(kind: str, path: str) -> None:
    """Raise the user's error when ``path`` is not named as a tokenizer of ``kind``:
    named as the other kind (it cannot be loaded as declared), or as neither. A
    ``hf_json`` entry that does not end in ``.json`` names a model folder
    (``special_tokens.names_folder``); the launcher checks that it holds a tokenizer.json."""
    if kind_matches_path(kind, path):
        return
    extension = os.path.splitext(path)[1].lower()
    if extension in EXTENSIONS.values():
        raise TokenizerValidationError.unloadable(path, kind, "named_as_other", extension)
    if ST.names_folder(kind, path):
        return
    raise TokenizerValidationError.unsupported_format(path)


class Positions(abc.Sequence):
    """Token positions per text, kept as one array: ``self[i]`` is text ``i``'s list.

    What the encoder hands :meth:`Tokenizer.unk_column_at`: millions of UNK tokens in
    a block of a script the model cannot spell, whose positions are rarely needed one by
    one (only for texts that take the protos), so they stay numpy until then.
    ``local``: every position, text after text; ``bounds``: where each text's positions
    begin in ``local``.
    """

    def __init__(self, local: np.ndarray, bounds: np.ndarray):
        self.local, self.bounds = local, bounds

    def __len__(self) -> int:
        return len(self.bounds)

    def __getitem__(self, i: int) -> list:
        if not 0 <= i < len(self.bounds):
            raise IndexError(i)
        end = self.bounds[i + 1] if i + 1 < len(self.bounds) else len(self.local)
        return self.local[self.bounds[i]:end].tolist()

    def counts(self) -> np.ndarray:
        return np.diff(self.bounds, append=len(self.local))


def _counts(positions) -> np.ndarray:
    """Positions per text, of a :class:`Positions` or any sequence of sequences."""
    if isinstance(positions, Positions):
        return positions.counts()
    return np.fromiter(map(len, positions), np.int64, len(positions))


class Tokenizer:
    """Common interface of the two adapters.

    ``encode_batch`` returns token ids as one flat integer array plus per-text lengths
    (int64): batches stay in numpy from the tokenizer to the shard bytes. The ids are
    int32 where the library hands them over so (SentencePiece, the word encoder), half
    the bytes of int64 for every later pass over them.
    """

    kind: str
    path: str
    vocab_size: int
    #: None when the vocabulary provably cannot emit an unknown token (DESIGN.md §8).
    unk_id: Optional[int]
    pad_id: int
    storage: TokenStorage
    special: SpecialTokens

    def special_token(self, name: str) -> Optional[SpecialToken]:
        """The token of a ``{@NAME}`` segment (``bos``, ``eos``, ``pad``, ``unk``, or a
        special/added token's exact content), or None."""
        return self.special.find(name)

    @property
    def eos_id(self) -> Optional[int]:
        """The end-of-sequence token's id, when the tokenizer names one (a Megatron
        export's end-of-document token); the build never adds it."""
        found = self.special.find("eos")
        return None if found is None else int(found.id)

    def encode_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        flat, _ = self.encode_batch([text])
        return flat.tolist()

    def prepare(self) -> None:
        """Do now the set-up an adapter would otherwise do on first use."""

    def unk_substrings(self, text: str) -> list[str]:
        """The exact substrings of ``text`` behind each UNK token, in token order."""
        if self.unk_id is None:
            return []
        positions = [k for k, i in enumerate(self.encode(text)) if i == self.unk_id]
        return self.unk_substrings_at([text], [positions])

    def unk_substrings_at(self, texts: Sequence[str], positions: Sequence[Sequence[int]]) -> list[str]:
        """Source substrings of the tokens at ``positions[i]`` of ``texts[i]``, flattened.

        The caller already knows where the UNK tokens are (from the ids), so only those
        tokens' offsets are looked up, in one tokenizer call for all texts.
        """
        raise NotImplementedError

    def unk_column_at(self, texts: Sequence[str], positions: Sequence[Sequence[int]]) -> CharColumn:
        """:meth:`unk_substrings_at` as a :class:`CharColumn` (what the encoder keeps)."""
        return CharColumn.of(self.unk_substrings_at(texts, positions))

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError

    def token_id(self, content: str) -> Optional[int]:
        """The id of the one token whose text is exactly ``content`` (a special, added
        or ordinary token), or None when there is none."""
        raise NotImplementedError

    def describe(self) -> dict:
        """Tokenizer block of ``manifest.json``."""
        return {
            "type": self.kind,
            "path": self.path,
            "vocab_size": self.vocab_size,
            "unk_id": self.unk_id,
            "pad_id": self.pad_id,
        }


def _flatten(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), lengths
    # One C-level pass over every id (half the time of one array per list).
    flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=total)
    return flat, lengths


class SentencePieceTokenizer(Tokenizer):
    """``sentencepiece.SentencePieceProcessor`` loaded from the model proto bytes."""

    kind = SENTENCEPIECE

    def __init__(self, path: str, data: bytes, num_threads: int = -1, accelerators: bool = True):
        import sentencepiece as spm

        self.path = path
        self._num_threads = num_threads
        loaded = _load_sentencepiece(data, with_facts=True)
        if loaded is None:
            raise TokenizerValidationError.unloadable(
                path, SENTENCEPIECE, "empty" if not data else "not_sentencepiece",
                looks_like=HF_JSON if data and _hf_tokenizer(data) is not None else None)
        self._sp, facts = loaded
        sp = self._sp
        self.vocab_size = int(sp.get_piece_size())
        unk, pad = int(sp.unk_id()), int(sp.pad_id())
        if unk < 0 or unk >= self.vocab_size:
            why = ST.sp_unk_proof(sp, facts.byte_fallback)
            if why is not None:
                raise ST.no_unk_error(path, why)
            unk = None
        if pad < 0 or pad >= self.vocab_size:
            raise ST.no_pad_error(path, SENTENCEPIECE, [])
        self.unk_id, self.pad_id = unk, pad
        # The model's own ids by role; by content its control, unknown and user-defined pieces.
        named = {}
        for role, found in (("bos", sp.bos_id()), ("eos", sp.eos_id()), ("pad", pad), ("unk", unk)):
            if found is not None and 0 <= found < self.vocab_size:
                named[role] = SpecialToken(int(found), sp.id_to_piece(int(found)))
        by_content = {sp.id_to_piece(i): i for i in range(self.vocab_size) if sp.is_control(i) or sp.is_unknown(i)}
        for i, piece in facts.user_defined:
            by_content.setdefault(piece, i)
        control = {sp.id_to_piece(i): i for i in range(self.vocab_size) if sp.is_control(i) or sp.is_unknown(i)}
        self.special = SpecialTokens(named, dict(sorted(by_content.items(), key=lambda kv: kv[1])), {}, control)
        self.storage = select_storage(self.vocab_size)
        self._numpy_batches = _numpy_batches(self._sp)
        self._local = threading.local()
        self._pool_class = getattr(spm, "ThreadPool", None)
        self._runs = _UNSET if accelerators else None
        self._runs_lock = threading.Lock()
        # gigatoken for a BPE model in Llama 2's settings (accel.gigatoken_sp), else None.
        self._giga = accel.gigatoken_sp_encoder(sp, data, facts, self.library_batch, list(by_content),
                                                parallel=num_threads != 1) if accelerators else None

    @property
    def _unk_runs(self):
        """The UNK audit's accelerator for this model (``accel.sp_unk``), or None: UNK
        substrings come from the protos.

        Set up on first use (two thirds of loading a 32k model): the launcher loads
        the model to check the template and rarely needs it; workers call
        :meth:`prepare`.
        """
        if self._runs is _UNSET:
            with self._runs_lock:
                if self._runs is _UNSET:
                    from mintdim_beam.tokenization.accel import sentencepiece_unk_runs

                    self._runs = sentencepiece_unk_runs(self._sp, self._proto_unk_substrings)
        return self._runs

    @_unk_runs.setter
    def _unk_runs(self, runs) -> None:
        self._runs = runs

    def prepare(self) -> None:
        self._unk_runs  # noqa: B018 - set up now, not in the first encode call
        if self._giga is not None:
            self._giga.prepare()   # gigatoken's probe (accel.gigatoken_sp)

    def _thread_pool(self):
        """A one-thread SentencePiece pool per calling thread, kept across calls.

        Without one, every batch call starts (and joins) a C++ thread of its own, which
        doubles the cost of small batches. Only for single-threaded calls: a pool
        shared by concurrent callers would serialize them.
        """
        if self._num_threads != 1 or self._pool_class is None:
            return None
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = self._pool_class(1)
        return pool

    def encode_batch(self, texts):
        if self._giga is not None:
            return self._giga.encode_batch(list(texts))
        return self.library_batch(texts)

    def library_batch(self, texts):
        """``encode_batch`` by the library alone."""
        texts = list(texts)
        if not texts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self._numpy_batches:
            # One int32 array per text, joined once: less than Python lists cost (T5, one
            # thread: 5.5-6.1 s against 6.0-7.1 s per 100 MB; sentencepiece 0.2.1+).
            arrays = self._sp.encode(texts, return_type="numpy", num_threads=self._num_threads,
                                     thread_pool=self._thread_pool())
            lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
            flat = np.concatenate(arrays) if lengths.sum() else np.zeros(0, np.int32)
            return flat, lengths
        return _flatten(self._sp.encode(texts, out_type=int, num_threads=self._num_threads))

    def unk_substrings_at(self, texts, positions):
        return self.unk_column_at(texts, positions).tolist()

    def unk_column_at(self, texts, positions):
        """``positions`` must list every UNK token of each text (both callers do).

        A Unigram model takes the runs of unknown characters (``accel.sp_unk``), all texts at
        once; a text whose run count differs, and any other model, take the protos.
        """
        runs = self._unk_runs
        if runs is None:
            return CharColumn.of(self._proto_unk_substrings(texts, positions))
        texts = list(texts)
        found, owner = runs.column(texts)
        wanted = _counts(positions)
        redo = np.flatnonzero(np.bincount(owner, minlength=len(texts)) != wanted)
        if not len(redo):
            return found
        again = self._proto_unk_substrings([texts[i] for i in redo.tolist()], [positions[i] for i in redo.tolist()])
        kept = np.flatnonzero(~np.isin(owner, redo))
        owner = np.concatenate([owner[kept], np.repeat(redo, wanted[redo])])
        return CharColumn.concat([found.take(kept), CharColumn.of(again)]).take(np.argsort(owner, kind="stable"))

    def _proto_unk_substrings(self, texts, positions):
        # Serialized protos are produced in C++ (threaded) and parsed by upb; only the
        # UNK pieces are touched from Python. Proto offsets are UTF-8 byte offsets.
        from sentencepiece import sentencepiece_pb2

        protos = self._sp.encode(list(texts), out_type="serialized_proto", num_threads=self._num_threads)
        parse = sentencepiece_pb2.SentencePieceText.FromString
        out: list = []
        for text, proto, wanted in zip(texts, protos, positions):
            pieces = parse(proto).pieces
            raw = text.encode("utf-8")
            out.extend(raw[pieces[k].begin:pieces[k].end].decode("utf-8", errors="replace") for k in wanted)
        return out

    def decode(self, ids):
        return self._sp.decode([int(i) for i in ids])

    def token_id(self, content):
        found = int(self._sp.piece_to_id(content))    # the unknown token's id for any other text
        return found if 0 <= found < self.vocab_size and self._sp.id_to_piece(found) == content else None


def _numpy_batches(sp) -> bool:
    """Whether this sentencepiece release encodes batches to numpy arrays, with a
    ``thread_pool`` of the caller's (0.2.1+)."""
    try:
        out = sp.encode(["a"], return_type="numpy", num_threads=1, thread_pool=None)
        return isinstance(out, list)
    except (TypeError, ValueError):
        return False


class HuggingFaceTokenizer(Tokenizer):
    """``tokenizers.Tokenizer`` loaded from ``tokenizer.json`` text."""

    kind = HF_JSON

    def __init__(self, path: str, data: bytes, word_encoder: bool = True, accelerators: bool = True,
                 companions: Optional[Mapping[str, bytes]] = None):
        """``word_encoder``: encode word by word where ``accel.bpe_words`` can (with
        ``accelerators`` on; otherwise only texts of ``LONG_TEXT_CHARS`` or more).
        ``companions``: path -> bytes of the ``tokenizer_config.json`` and
        ``special_tokens_map.json`` beside the file (``special_tokens.locate``)."""
        self.path = path
        tok = _hf_tokenizer(data)
        if tok is None:
            raise _hf_load_error(ST.main_file(HF_JSON, path), data)
        text = data.decode("utf-8")
        self.vocab_size = int(tok.get_vocab_size(with_added_tokens=True))
        named = ST.companion_tokens(path, companions or {})
        self.unk_id = _hf_unk_id(tok, text, path)
        padding = tok.padding
        added = tok.get_added_tokens_decoder()
        if padding and padding.get("pad_id") is not None:
            self.pad_id = int(padding["pad_id"])
            pad_content = padding.get("pad_token") or tok.id_to_token(self.pad_id) or ""
            pad = SpecialToken(self.pad_id, pad_content)
        elif "pad" in named:
            pad = self._companion(tok, path, "pad", named["pad"])
            if pad is None:
                content, where = named["pad"]
                fix = TM.SPECIAL_FIX_COMPANION_UNKNOWN.format(file=where, key="pad_token", content=content)
                raise TokenizerSpecialTokenError.with_fix(path, "pad_id", "missing pad_id", fix)
            self.pad_id = pad.id
        else:
            raise ST.no_pad_error(path, HF_JSON, ST.pad_candidates(added))
        roles = {"pad": pad}
        if self.unk_id is not None:
            roles["unk"] = SpecialToken(self.unk_id, tok.id_to_token(self.unk_id) or "")
        unresolved = {}
        for role in ("bos", "eos", "unk"):
            if role in named and role not in roles:
                found = self._companion(tok, path, role, named[role])
                if found is not None:
                    roles[role] = found
                else:
                    unresolved[role] = named[role]
        by_content = {t.content: i for i, t in sorted(added.items())}
        control = {t.content: i for i, t in sorted(added.items()) if t.special}
        self.special = SpecialTokens({r: roles[r] for r in ST.NAMED if r in roles}, by_content, unresolved,
                                     control)
        # Padding and truncation belong to the file's original use; exact encoding
        # needs both off (our copy only).
        tok.no_padding()
        tok.no_truncation()
        self._tok = tok
        max_id = max(tok.get_vocab(with_added_tokens=True).values(), default=0)
        self.storage = select_storage(max(self.vocab_size, max_id + 1))
        self._fast = hasattr(tok, "encode_batch_fast")
        self._words = None
        # A text of LONG_TEXT_CHARS or more is never given to the library whole when an
        # exact cut exists: its Encoding needs 100-180 bytes per byte of text. The word
        # encoder (byte-level BPE, accelerators on) encodes word by word; a tokenizer
        # that encodes per word after a local normalizer is cut at spaces (long_texts).
        self._long_words = None
        self._pieces = PieceEncoder(tok) if cuttable(tok) else None
        if accelerators:
            self._words, self._long_words = _hf_accelerators(tok, text, word_encoder)

    def prepare(self) -> None:
        prepare = getattr(self._words or self._long_words, "prepare", None)
        if prepare is not None:
            prepare()   # gigatoken's probe (accel.gigatoken_bpe), here, not in the first call

    def encode_batch(self, texts):
        """As the base class; a failure of the library (a Rust panic is a pyo3
        ``PanicException``) is a :class:`TokenizerPanic` naming the text it failed on."""
        texts = list(texts)
        try:
            return self._encode_batch(texts)
        except _NOT_THE_LIBRARY:
            raise
        except BaseException as exc:       # PanicException derives from BaseException
            raise _culprit(self._encode_batch, texts, exc) from None

    def _encode_batch(self, texts):
        if not texts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if (self._long_words is None and self._pieces is None) or max(map(len, texts)) < LONG_TEXT_CHARS:
            return self._encode_short(texts)
        # Every text's ids are appended to one C int array (ids are far below 2^31),
        # which numpy views without a copy: a long text's ids are written once, window
        # by window, and never joined to the others' in another copy.
        out = array("i")
        lengths = np.zeros(len(texts), np.int64)
        short = [i for i in range(len(texts)) if len(texts[i]) < LONG_TEXT_CHARS]
        parts: dict = {}
        if short:
            flat, some = self._encode_short([texts[i] for i in short])
            parts = dict(zip(short, np.split(flat, np.cumsum(some)[:-1])))
        for i, text in enumerate(texts):
            before = len(out)
            if i in parts:
                out.frombytes(parts.pop(i).astype(np.intc).tobytes())
            elif not (self._long_words is not None and self._long_words.append_long(text, out)):
                if self._pieces is not None:
                    self._pieces.append_ids(text, out)
                else:
                    out.frombytes(self._encode_whole([text])[0].astype(np.intc).tobytes())
            lengths[i] = len(out) - before
        return np.frombuffer(out, dtype=np.intc), lengths

    def _encode_short(self, texts):
        if self._words is not None:
            return self._words.encode_batch(texts)
        return self._encode_whole(texts)

    def _encode_whole(self, texts):
        encode = self._tok.encode_batch_fast if self._fast else self._tok.encode_batch
        return _flatten([e.ids for e in encode(texts, add_special_tokens=False)])

    def unk_substrings_at(self, texts, positions):
        # HF offsets are character offsets into the Python string.
        texts = list(texts)
        positions = list(positions)
        out: list = []
        whole = [i for i, t in enumerate(texts) if self._pieces is None or len(t) < LONG_TEXT_CHARS]
        encodings = dict(zip(whole, self._tok.encode_batch([texts[i] for i in whole], add_special_tokens=False)))
        for i, (text, wanted) in enumerate(zip(texts, positions)):
            if i not in encodings:
                out.extend(self._pieces.substrings_at(text, wanted))
                continue
            offsets = encodings[i].offsets
            out.extend(text[offsets[k][0]:offsets[k][1]] for k in wanted)
        return out

    def decode(self, ids):
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=False)

    @staticmethod
    def _companion(tok, path: str, role: str, named: tuple) -> Optional[SpecialToken]:
        """The token a companion file names for ``role``, if it is one of the tokenizer's."""
        content, where = named
        found = tok.token_to_id(content)
        return None if found is None else SpecialToken(int(found), content, where)

    def token_id(self, content):
        found = self._tok.token_to_id(content)
        return None if found is None else int(found)


def _hf_accelerators(tok, text: str, word_encoder: bool) -> tuple:
    """(encoder of short texts or None, encoder of long texts or None) for an HF
    tokenizer with accelerators on: gigatoken where it is installed and its probe passes
    (``accel.gigatoken_bpe``; on its own threads where ``word_encoder`` is off), falling
    back to the word encoder (``accel.bpe_words``) or the library."""
    from mintdim_beam.tokenization.accel import bpe_word_encoder, gigatoken_encoder

    words = bpe_word_encoder(tok, text)
    fast = gigatoken_encoder(tok, text, fallback=words if word_encoder else None,
                             parallel=not word_encoder, long_fallback=words)
    if fast is not None:
        return fast, fast
    return (words if word_encoder else None), words


def _load_sentencepiece(data: bytes, with_facts: bool = False):
    """A ``SentencePieceProcessor`` of the model ``data`` (with ``with_facts``, and its
    ``sp_model.ModelFacts``), or None if it holds no model."""
    import sentencepiece as spm

    if not data:    # the library would make an empty processor, not fail
        return None
    try:
        sp = spm.SentencePieceProcessor(model_proto=data)
    except (RuntimeError, OSError, ValueError):     # the library's parse failures
        return None
    # The library also loads a file cut between two pieces (``sp_model``).
    facts = read_model(data)
    if not (sp.get_piece_size() > 0 and facts is not None and facts.complete):
        return None
    return (sp, facts) if with_facts else sp


def _hf_tokenizer(data: bytes):
    """A ``tokenizers.Tokenizer`` of the ``tokenizer.json`` bytes ``data``, or None."""
    from tokenizers import Tokenizer as HFTokenizer

    try:
        return HFTokenizer.from_str(data.decode("utf-8"))
    except Exception:   # noqa: BLE001 - the library raises a bare Exception on bad JSON
        return None


def _hf_load_error(path: str, data: bytes) -> TokenizerValidationError:
    """Why ``data`` is not a ``tokenizer.json``, in the user's terms (called on failure
    only: it parses the file again to say where it breaks)."""
    from tokenizers import Tokenizer as HFTokenizer

    def error(problem: str, detail: str = "") -> TokenizerValidationError:
        other = SENTENCEPIECE if _load_sentencepiece(data) is not None else None
        return TokenizerValidationError.unloadable(path, HF_JSON, problem, detail, looks_like=other)

    if not data:
        return error("empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return error("not_utf8", f"byte 0x{data[exc.start]:02x} at offset {exc.start}")
    try:
        config = json.loads(text)
    except ValueError as exc:
        where = getattr(exc, "lineno", None)
        return error("not_json", f"{exc.msg}: line {exc.lineno}, column {exc.colno}" if where else str(exc))
    if not isinstance(config, dict) or "model" not in config:
        return error("no_model")
    try:
        HFTokenizer.from_str(text)
    except Exception as exc:  # noqa: BLE001 - the library's own words, as the detail
        return error("not_tokenizer", str(exc))
    return error("not_tokenizer", "the library could not load it")


def _hf_unk_id(tok, text: str, path: str) -> Optional[int]:
    """The unk id the model itself declares (BPE/WordPiece/WordLevel token, Unigram id);
    None for a model without one whose vocabulary provably cannot emit an unknown token
    (``special_tokens.hf_unk_proof``). A token that companion files call ``unk_token``
    does not count: the model never emits it for text it cannot spell."""
    unk_token = getattr(tok.model, "unk_token", None)
    unk_id = tok.token_to_id(unk_token) if unk_token else None
    config = None
    if unk_id is None:
        config = json.loads(text)
        model = config.get("model", {})
        if model.get("type") == "Unigram" and isinstance(model.get("unk_id"), int):
            unk_id = model["unk_id"]
    if unk_id is None:
        why = ST.hf_unk_proof(config)
        if why is not None:
            raise ST.no_unk_error(path, why)
        return None
    return int(unk_id)


def load_tokenizer(kind: str, path: str, data: bytes, threads: int = -1, accelerators: bool = True,
                   word_encoder: bool = True, companions: Optional[Mapping[str, bytes]] = None) -> Tokenizer:
    """Build the adapter of ``kind`` from the tokenizer file's bytes (``companions``: the
    bytes of a ``tokenizer.json``'s companion files, by path).

    ``threads`` is SentencePiece's own thread count per batch call (-1: its default);
    callers that run several encode calls at once pass 1. HF tokenizers share one
    process-wide thread pool whatever the callers do.

    ``accelerators``: take the exact accelerators of ``mintdim_beam.tokenization.accel`` where their
    probes pass (same output, less CPU); off, only the libraries' public APIs encode.
    ``word_encoder``: with accelerators on, whether a byte-level BPE ``tokenizer.json``
    may encode word by word (``accel.bpe_words``: less CPU, but on one core, where the
    tokenizer's own threads would use them all).
    """
    if kind == SENTENCEPIECE:
        return SentencePieceTokenizer(path, data, num_threads=threads, accelerators=accelerators)
    if kind == HF_JSON:
        return HuggingFaceTokenizer(path, data, word_encoder=accelerators and word_encoder,
                                    accelerators=accelerators, companions=companions)
    raise TokenizerValidationError.unsupported_format(path)


def read_tokenizer(kind: str, path: str, read_bytes: Callable[[str], bytes],
                   exists: Optional[Callable[[str], bool]] = None) -> tuple:
    """``(TokenizerFiles, {path: bytes})``: the files the entry ``path`` stands for (the
    tokenizer file, or a folder's ``tokenizer.json``, and the companions ``exists``
    finds beside it), read by ``read_bytes``."""
    files = ST.locate(kind, path, exists)
    return files, {p: read_bytes(p) for p in files.paths}


def tokenizer_digest(files: TokenizerFiles, contents: Mapping[str, bytes]) -> str:
    """The sha256 that identifies a tokenizer: its file's, or with companions, of the
    file's and each companion's name and sha256 (files sharing an output must agree)."""
    import hashlib

    main = hashlib.sha256(contents[files.main]).hexdigest()
    if not files.companions:
        return main
    parts = [main] + [f"{ST.basename(p)}:{hashlib.sha256(contents[p]).hexdigest()}" for p in files.companions]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def load_files(kind: str, path: str, files: TokenizerFiles, contents: Mapping[str, bytes], **options) -> Tokenizer:
    """:func:`load_tokenizer` of what :func:`read_tokenizer` read."""
    companions = {p: contents[p] for p in files.companions}
    return load_tokenizer(kind, path, contents[files.main], companions=companions, **options)


def open_tokenizer(kind: str, path: str, read_bytes: Callable[[str], bytes], threads: int = -1,
                   accelerators: bool = True, word_encoder: bool = True,
                   exists: Optional[Callable[[str], bool]] = None) -> Tokenizer:
    """The tokenizer entry ``path`` of ``kind`` (a file, or a folder holding a
    tokenizer.json), read by ``read_bytes`` and loaded by :func:`load_tokenizer` (same
    options): the one way the build, preflight and the readers load one. The caller
    passes the storage layer's ``read_bytes`` and ``exists`` (which finds the companion
    files), which this pure layer does not import, so a local, ``gs://`` or ``s3://``
    path loads alike."""
    files, contents = read_tokenizer(kind, path, read_bytes, exists)
    return load_files(kind, path, files, contents, threads=threads, accelerators=accelerators,
                      word_encoder=word_encoder)


#: What a tokenizer call may raise that is not the library failing.
_NOT_THE_LIBRARY = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError)


class TokenizerPanic(RuntimeError):
    """The tokenizer library failed on ``text`` (its own words in the message): the
    caller knows which sample the text is, and names it."""

    def __init__(self, text: str, detail: str):
        super().__init__(detail)
        self.text = text


def _culprit(encode, texts, exc: BaseException) -> "TokenizerPanic":
    """The first text of ``texts`` that ``encode`` fails on, alone (an error path: each
    text is tried once more); the batch's own error if none fails alone."""
    detail = f"{type(exc).__name__}: {str(exc).strip() or 'no message'}"
    for text in texts:
        try:
            encode([text])
        except _NOT_THE_LIBRARY:
            raise
        except BaseException as again:
            return TokenizerPanic(text, f"{type(again).__name__}: {str(again).strip() or 'no message'}")
    return TokenizerPanic(texts[0] if texts else "", detail)
