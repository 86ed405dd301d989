"""Independent, single-process reference implementation of the MintDim unit build.

This module is a test oracle: the test-suite runs the Beam pipeline and this
function on the same inputs and compares the output files byte for byte.

It deliberately shares no code with ``mintdim_beam`` and does not use Apache
Beam. It follows ``DESIGN.md`` (sections 4, 5 and 8) and ``docs/decisions.md``
literally, with plain loops and one sample at a time; clarity wins over speed.

Section 8 here: a hf_json tokenizer may be a folder holding ``tokenizer.json``; beside a
file named ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``
name the special tokens the file does not configure; a vocabulary that covers every
byte needs no unk (``unk_id`` null); ``{@NAME}`` template segments are one token each,
rendered (and hashed) as the token's text; a literal spelling a special token's text
without encoding to its id is a TemplateTokenizerError.

Section 9 here (``chat=``): a conversation's messages are rendered by their roles'
templates into ``max_messages`` slots of (prefix, content, suffix) segments named
``message<i>.<part>``; ``roles`` follow the spec's keys in sample rows,
``cut_messages`` in truncated overflow rows, ``unk_messages``/``unk_roles`` in UNK rows.
Preference pairs (``pairs=``): every line is two samples, chosen then rejected
(``pair_id`` = sample_id // 2, ``pair_role``), in the unit that fits the longer, each
truncated to max(sizes) when the pair overflows; a pair whose two written payloads are
equal is "collapsed" (two overflow rows) or a PairCollapseError.

Public API:

    build_reference(files=..., fields=..., templates=..., tokenizer_kind=...,
                    tokenizer_files=..., sizes=..., samples_per_shard=...,
                    output_dirs=..., on_overflow="abort",
                    on_bad_record="abort", on_template_unk="continue")
        -> {output_dir: {relative_path: file_bytes}}

    ReferenceBuildError(error_class_name, file, line)
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

__all__ = ["ReferenceBuildError", "build_reference", "parse_template"]

LITERAL_NAME = "token_template"
INDEX_FILES = (
    "sample_index.jsonl",
    "duplicate_index.jsonl",
    "unk_index.jsonl",
    "overflow_index.jsonl",
    "bad_record_index.jsonl",
)


# --------------------------------------------------------------------------- errors


class ReferenceBuildError(Exception):
    """The build must fail; ``args == (error_class_name, file, line)``."""

    def __init__(self, error_class_name, file=None, line=None, reason=None):
        super().__init__(error_class_name, file, line)
        self.error_class_name = error_class_name
        self.file = file
        self.line = line
        self.reason = reason

    @property
    def error_class(self):
        return self.error_class_name

    def __str__(self):
        text = f"{self.error_class_name} at {self.file}:{self.line}"
        if self.reason:
            text += f" ({self.reason})"
        return text


# --------------------------------------------------------------------------- json helpers


def _json_file(obj) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _jsonl(rows) -> bytes:
    out = []
    for row in rows:
        out.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    return "".join(out).encode("utf-8")


def _reject_constant(name):
    # NaN, Infinity and -Infinity are not JSON.
    raise ValueError(f"not JSON: {name}")


# --------------------------------------------------------------------------- templates


def parse_template(template, source_file=None):
    """Split a template into segments: a list of ("literal", text) / ("field", name) /
    ("special", NAME) for ``{@NAME}``.

    ``{{`` -> ``{``, ``}}`` -> ``}``, ``{name}`` -> placeholder (raw text between the
    braces). Empty ``{}`` or an unbalanced brace -> TemplateFieldMismatchError.
    Empty literals are dropped.
    """
    segments = []
    literal = ""
    i = 0
    while i < len(template):
        ch = template[i]
        if ch == "{":
            if template[i + 1:i + 2] == "{":
                literal += "{"
                i += 2
                continue
            end = template.find("}", i + 1)
            if end == -1:
                raise ReferenceBuildError("TemplateFieldMismatchError", source_file, None,
                                          "unbalanced '{'")
            name = template[i + 1:end]
            if name == "":
                raise ReferenceBuildError("TemplateFieldMismatchError", source_file, None,
                                          "empty placeholder {}")
            if "{" in name:
                raise ReferenceBuildError("TemplateFieldMismatchError", source_file, None,
                                          "unbalanced '{'")
            if name == "@":
                raise ReferenceBuildError("TemplateFieldMismatchError", source_file, None,
                                          "empty special token {@}")
            if literal:
                segments.append(("literal", literal))
                literal = ""
            if name.startswith("@"):
                segments.append(("special", name[1:]))
            else:
                segments.append(("field", name))
            i = end + 1
        elif ch == "}":
            if template[i + 1:i + 2] == "}":
                literal += "}"
                i += 2
                continue
            raise ReferenceBuildError("TemplateFieldMismatchError", source_file, None,
                                      "unbalanced '}'")
        else:
            literal += ch
            i += 1
    if literal:
        segments.append(("literal", literal))
    return segments


def _sequence_template(segments):
    names = []
    for kind, value in segments:
        if kind == "literal":
            names.append(LITERAL_NAME)
        elif kind == "special":
            names.append("@" + value)
        else:
            names.append(value)
    return names


# --------------------------------------------------------------------------- tokenizers


def _varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data):
    """(field number, wire type, value) of a protobuf message, read by hand: varints as
    ints, length-delimited fields as bytes."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at:at + size], at + size
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _user_defined_pieces(model):
    """(id, piece) of the USER_DEFINED (type 4) pieces of a SentencePiece model: field 1
    of ModelProto is a piece, whose field 1 is its text and field 3 its type."""
    found, index = [], 0
    for number, wire, value in _fields(model):
        if number != 1 or wire != 2:
            continue
        piece, kind = "", 1
        for inner, _, item in _fields(value):
            if inner == 1:
                piece = item.decode("utf-8")
            elif inner == 3:
                kind = item
        if kind == 4:
            found.append((index, piece))
        index += 1
    return found


class _SentencePieceTokenizer:
    def __init__(self, path):
        import sentencepiece

        self.path = path
        self.files = [path]
        self.sp = sentencepiece.SentencePieceProcessor(model_file=path)
        self.unk_id = self.sp.unk_id()
        if self.unk_id is None or self.unk_id < 0:
            raise ReferenceBuildError("TokenizerSpecialTokenError", path, None, "missing unk_id")
        self.pad_id = self.sp.pad_id()
        if self.pad_id is None or self.pad_id < 0:
            raise ReferenceBuildError("TokenizerSpecialTokenError", path, None, "missing pad_id")
        self.vocab_size = self.sp.get_piece_size()
        # {@bos} ... are the model's own ids; {@<piece>} a control or unknown piece.
        self.roles = {}
        for role, token_id in (("bos", self.sp.bos_id()), ("eos", self.sp.eos_id()),
                               ("pad", self.pad_id), ("unk", self.unk_id)):
            if token_id is not None and token_id >= 0:
                self.roles[role] = (token_id, self.sp.id_to_piece(token_id))
        self.controls = {}
        for token_id in range(self.vocab_size):
            if self.sp.is_control(token_id) or self.sp.is_unknown(token_id):
                self.controls[self.sp.id_to_piece(token_id)] = token_id
        self.by_content = dict(self.controls)
        with open(path, "rb") as handle:
            for token_id, piece in _user_defined_pieces(handle.read()):
                self.by_content.setdefault(piece, token_id)

    def encode(self, text):
        """Return (ids, spans): spans[k] is the source substring of token k."""
        ids = list(self.sp.encode(text, out_type=int))
        try:
            proto = self.sp.encode(text, out_type="immutable_proto")
        except ValueError:  # sentencepiece >= 0.2.1 only offers "proto"
            proto = self.sp.encode(text, out_type="proto")
        pieces = list(proto.pieces)
        assert [p.id for p in pieces] == ids, "SentencePiece proto/int encodings differ"
        raw = text.encode("utf-8")
        spans = []
        for piece in pieces:
            # begin/end are UTF-8 byte offsets into the segment text.
            spans.append(raw[piece.begin:piece.end].decode("utf-8", errors="replace"))
        return ids, spans


def _gpt2_byte_chars():
    """The byte-level BPE alphabet: byte -> the character that stands for it."""
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    chars = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + n)
            n += 1
    return chars


def _covers_every_text(spec):
    """DESIGN.md section 8: a vocabulary without unk is accepted when it provably cannot
    meet an unknown character: byte fallback with all 256 <0xNN> pieces, or a byte-level
    BPE holding the symbol of every byte that UTF-8 text can contain (0xC0, 0xC1 and
    0xF5..0xFF never occur)."""
    model = spec.get("model") or {}
    vocab = model.get("vocab")
    if isinstance(vocab, list):
        pieces = {entry[0] for entry in vocab}
    else:
        pieces = set(vocab or {})
    if model.get("byte_fallback"):
        return all("<0x%02X>" % b in pieces for b in range(256))
    pre = spec.get("pre_tokenizer") or {}
    if pre.get("type") == "Sequence":
        steps = pre.get("pretokenizers") or []
        pre = steps[-1] if steps else {}
    if model.get("type") != "BPE" or pre.get("type") != "ByteLevel":
        return False
    if model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        return False
    chars = _gpt2_byte_chars()
    return all(chars[b] in pieces for b in range(256) if b not in (0xC0, 0xC1) and b < 0xF5)


def _companion_roles(path, tokenizer_file):
    """{role: content} named by tokenizer_config.json / special_tokens_map.json beside a
    file named tokenizer.json (a string or {"content": ...}); and the companions read."""
    roles, read = {}, []
    if os.path.basename(tokenizer_file) != "tokenizer.json":
        return roles, read
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        companion = os.path.join(os.path.dirname(tokenizer_file), name)
        if not os.path.isfile(companion):
            continue
        read.append(companion)
        with open(companion, "r", encoding="utf-8") as handle:
            config = json.load(handle)
        for role in ("bos", "eos", "pad", "unk"):
            value = config.get(role + "_token")
            if isinstance(value, dict):
                value = value.get("content")
            if not isinstance(value, str):
                continue
            if role in roles and roles[role] != value:
                raise ReferenceBuildError("TokenizerSpecialTokenError", path, None,
                                          f"{role}_token named twice, differently")
            roles.setdefault(role, value)
    return roles, read


class _HFTokenizer:
    def __init__(self, path):
        from tokenizers import Tokenizer

        self.path = path
        tokenizer_file = path if path.lower().endswith(".json") else os.path.join(path, "tokenizer.json")
        tok = Tokenizer.from_file(tokenizer_file)
        padding = tok.padding
        with open(tokenizer_file, "r", encoding="utf-8") as handle:
            spec = json.load(handle)
        companions, read = _companion_roles(path, tokenizer_file)
        self.files = [tokenizer_file] + read
        model = spec.get("model") or {}
        unk_id = None
        if model.get("type") == "Unigram":
            value = model.get("unk_id")
            if isinstance(value, int) and not isinstance(value, bool):
                unk_id = value
        else:
            unk_token = model.get("unk_token")
            if unk_token is not None:
                unk_id = tok.token_to_id(unk_token)
        if unk_id is None and not _covers_every_text(spec):
            raise ReferenceBuildError("TokenizerSpecialTokenError", path, None, "missing unk_id")
        if padding and padding.get("pad_id") is not None:
            pad_id, pad_text = padding["pad_id"], padding.get("pad_token")
        elif "pad" in companions and tok.token_to_id(companions["pad"]) is not None:
            pad_text = companions["pad"]
            pad_id = tok.token_to_id(pad_text)
        else:
            raise ReferenceBuildError("TokenizerSpecialTokenError", path, None, "missing pad_id")
        self.unk_id = unk_id
        self.pad_id = pad_id
        self.roles = {"pad": (pad_id, pad_text)}
        if unk_id is not None:
            self.roles["unk"] = (unk_id, tok.id_to_token(unk_id))
        for role in ("bos", "eos", "unk"):
            if role not in self.roles and role in companions:
                found = tok.token_to_id(companions[role])
                if found is not None:
                    self.roles[role] = (found, companions[role])
        added = sorted(spec.get("added_tokens") or [], key=lambda t: t["id"])
        self.by_content = {t["content"]: t["id"] for t in added}
        self.controls = {t["content"]: t["id"] for t in added if t.get("special")}
        tok.no_padding()
        tok.no_truncation()
        self.tok = tok
        self.vocab_size = tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text):
        enc = self.tok.encode(text, add_special_tokens=False)
        ids = list(enc.ids)
        # offsets are character offsets into the segment text.
        spans = [text[start:end] for start, end in enc.offsets]
        return ids, spans


def _special(tokenizer, name, path):
    """(id, text) of a {@NAME} segment: a role, or a special/added token's content."""
    if name in ("bos", "eos", "pad", "unk"):
        found = tokenizer.roles.get(name)
    elif name in tokenizer.by_content:
        found = (tokenizer.by_content[name], name)
    else:
        found = None
    if found is None:
        raise ReferenceBuildError("TemplateTokenizerError", path, None, f"no token for {{@{name}}}")
    return found


def _load_tokenizer(kind, path):
    if kind == "sentencepiece":
        return _SentencePieceTokenizer(path)
    if kind == "hf_json":
        return _HFTokenizer(path)
    raise ReferenceBuildError("TokenizerValidationError", path, None, f"unknown kind {kind!r}")


def _token_dtype(vocab_size):
    """-> (dtype name, numpy little-endian dtype, magic, bytes per token)."""
    if vocab_size <= 0xFFFF:
        return "uint16", "<u2", 0xFFFF, 2
    if vocab_size <= 0xFFFFFFFF:
        return "uint32", "<u4", 0xFFFFFFFF, 4
    raise ReferenceBuildError("TokenDTypeCapacityError", None, None, f"vocab_size {vocab_size}")


# --------------------------------------------------------------------------- records


def _decompress(path, data):
    """The content of a file whose name says it is compressed (by extension)."""
    import bz2
    import gzip
    import lzma
    import zlib

    name = path.lower()
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".bz2"):
        return bz2.decompress(data)
    if name.endswith((".xz", ".lzma")):
        return lzma.decompress(data)
    if name.endswith(".deflate"):
        return zlib.decompress(data)
    if name.endswith((".zst", ".zstd")):
        import io

        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    return data


def _read_lines(path):
    """Yield (line_number, raw_bytes) with the BOM of line 1 and a trailing \\r removed."""
    with open(path, "rb") as handle:
        data = _decompress(path, handle.read())
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()  # the text after the final newline is not a line
    for number, raw in enumerate(pieces, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        yield number, raw


def _render_value(value):
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    raise TypeError("arrays and objects are not renderable")


MAX_JSON_DEPTH = 512  # docs/decisions.md: a line nesting deeper is a SourceParseError


def _nesting_depth(text):
    """Deepest nesting of arrays and objects, brackets inside strings not counted."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _parse_record(raw, declared_fields):
    """Return ("blank", None) | ("bad", (error, reason)) | ("ok", rendered values dict)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "bad", ("SourceParseError", "invalid UTF-8")
    if text.strip() == "":
        return "blank", None
    openers = text.count("[") + text.count("{")   # an upper bound of the depth
    if openers > MAX_JSON_DEPTH and _nesting_depth(text) > MAX_JSON_DEPTH:
        return "bad", ("SourceParseError", f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return "bad", ("SourceParseError", "invalid JSON syntax")
    if not isinstance(obj, dict):
        return "bad", ("SourceParseError", "JSON value is not an object")
    unique_fields = list(dict.fromkeys(declared_fields))
    missing = [name for name in unique_fields if name not in obj]
    if missing:
        return "bad", ("SampleSchemaError", "missing fields: " + " ".join(missing))
    for name in unique_fields:
        if isinstance(obj[name], (list, dict)):
            return "bad", ("SampleSchemaError", "field value must be a string: " + name)
    values = {name: _render_value(obj[name]) for name in unique_fields}
    for value in values.values():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:   # a lone surrogate from a \u escape (docs/decisions.md)
            return "bad", ("SourceParseError", "invalid UTF-8")
    return "ok", values


# --------------------------------------------------------------------------- main entry


def _pick(values, index, count, error_name):
    values = list(values)
    if len(values) == 1:
        return values[0]
    if len(values) == count:
        return values[index]
    raise ReferenceBuildError(error_name, None, None,
                              f"received {count} input files but {len(values)} entries")


def _type_name(value):
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}[type(value)]


def _parse_chat(raw, chat):
    """Like _parse_record for a conversation: ("ok", [(role, content), ...])."""
    status, obj = _parse_record(raw, [])
    if status != "ok":
        return status, obj
    obj = json.loads(raw.decode("utf-8"))
    field = chat["field"]
    role_key, content_key = chat.get("role_key", "role"), chat.get("content_key", "content")
    if field not in obj:
        return "bad", ("SampleSchemaError", "missing fields: " + field)
    messages = obj[field]
    if not isinstance(messages, list):
        return "bad", ("SampleSchemaError",
                       f"field {field!r} must be a list of messages, got {_type_name(messages)}")
    if len(messages) > chat["max_messages"]:
        return "bad", ("SampleSchemaError", f"conversation has {len(messages)} messages, more than "
                                            f"max_messages {chat['max_messages']}")
    found = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return "bad", ("SampleSchemaError", f"message {i} must be an object, got {_type_name(message)}")
        for key in (role_key, content_key):
            if key not in message:
                return "bad", ("SampleSchemaError", f"message {i} has no {key!r} key (keys: {list(message)})")
        role, content = message[role_key], message[content_key]
        if not isinstance(role, str):
            return "bad", ("SampleSchemaError", f"message {i}: role must be a string, got {_type_name(role)}")
        if role not in chat["templates"]:
            return "bad", ("SampleSchemaError",
                           f"message {i}: role {role!r} has no template (roles: {list(chat['templates'])})")
        if content is None:
            content = ""
        if not isinstance(content, str):
            return "bad", ("SampleSchemaError",
                           f"message {i}: content must be a string, got {_type_name(content)}")
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            return "bad", ("SourceParseError", "invalid UTF-8")
        found.append((role, content))
    return "ok", found


def _chat_segments(cfg, tokenizer):
    """Role -> (prefix (ids, spans, text), suffix (ids, spans, text)), each literal encoded
    on its own and each special one token (its text as its span)."""
    table = {}
    for role, template in cfg["chat"]["templates"].items():
        segments = parse_template(template, cfg["path"])
        at = [k for k, (kind, _) in enumerate(segments) if kind == "field"]
        assert len(at) == 1 and segments[at[0]] == ("field", "content"), template
        parts = []
        for piece in (segments[:at[0]], segments[at[0] + 1:]):
            ids, spans, text = [], [], ""
            for kind, value in piece:
                if kind == "special":
                    token_id, token_text = _special(tokenizer, value, tokenizer.path)
                    ids.append(token_id)
                    spans.append(token_text)
                    text += token_text
                else:
                    got, got_spans = tokenizer.encode(value)
                    ids += got
                    spans += got_spans
                    text += value
            parts.append((ids, spans, text))
        table[role] = parts
    return table


def build_reference(*, files, fields=None, templates=None, tokenizer_kind, tokenizer_files, sizes,
                    samples_per_shard, output_dirs, on_overflow="abort",
                    on_bad_record="abort", on_template_unk="continue", chat=None, pairs=None,
                    on_pair_collapse="abort"):
    """Build every contract-fixed output file in memory.

    Returns ``{output_dir: {relative_path: bytes}}``. ``unit_<size>/EMPTY_UNIT.md`` maps
    to ``b""`` (only its existence is part of the contract). Raises ReferenceBuildError
    when the build must fail.
    """
    if on_overflow not in ("abort", "truncate", "skip", "extend"):
        raise ValueError(f"on_overflow={on_overflow!r}")
    if on_bad_record not in ("abort", "skip"):
        raise ValueError(f"on_bad_record={on_bad_record!r}")
    if on_template_unk not in ("abort", "continue", "prompt"):
        raise ValueError(f"on_template_unk={on_template_unk!r}")

    files = list(files)
    count = len(files)
    if isinstance(output_dirs, str):
        output_dirs = [output_dirs]

    # ---- 1. resolve the per-file configuration (1-or-N broadcast)
    tokenizers = {}  # path -> loaded tokenizer
    file_cfgs = []
    for index, path in enumerate(files):
        pair = None
        if pairs is not None:
            pair = {key: _pick(value if isinstance(value, list) else [value], index, count,
                               "PipelineValidationError") for key, value in pairs.items()}
            if on_overflow == "extend":
                raise ReferenceBuildError("PipelineValidationError", None, None, "extend with pairs")
        if chat is not None:
            # each key: one value for every file, or a list of one per file
            per_file = {key: _pick(value if isinstance(value, list) else [value], index, count,
                                   "PipelineValidationError") for key, value in chat.items()}
            m = per_file["max_messages"]
            names = [f"message{i}.{part}" for i in range(m) for part in ("prefix", "content", "suffix")]
        cfg = {
            "index": index,
            "path": path,
            "chat": per_file if chat is not None else None,
            "pair": pair,
            "fields": names if chat is not None else (
                (["prompt", "completion"] if pair.get("prompt") else ["completion"]) if pair is not None
                else list(_pick(fields, index, count, "FieldMappingError"))),
            "template": "{content}" if chat is not None else _pick(templates, index, count, "TemplateMappingError"),
            "tokenizer_path": _pick(tokenizer_files, index, count, "TokenizerMappingError"),
            "sizes": list(_pick(sizes, index, count, "UnitMappingError")),
            "samples_per_shard": _pick(samples_per_shard, index, count, "SamplesPerShardError"),
            "output_dir": _pick(output_dirs, index, count, "OutputMappingError"),
        }
        segments = parse_template(cfg["template"], path)
        placeholders = {value for kind, value in segments if kind == "field"}
        if chat is None and placeholders != set(cfg["fields"]):
            raise ReferenceBuildError("TemplateFieldMismatchError", path, None,
                                      "template placeholders differ from fields")
        cfg["segments"] = segments
        cfg["sequence_template"] = _sequence_template(segments)
        if chat is not None:
            cfg["segments"] = []
            cfg["sequence_template"] = list(cfg["fields"])
            for template in per_file["templates"].values():
                cfg["segments"] += parse_template(template, path)
        file_cfgs.append(cfg)

    # ---- 2. tokenizers (unk/pad ids, vocab size, dtype)
    for cfg in file_cfgs:
        tok_path = cfg["tokenizer_path"]
        if tok_path not in tokenizers:
            tokenizers[tok_path] = _load_tokenizer(tokenizer_kind, tok_path)
        tokenizer = tokenizers[tok_path]
        cfg["tokenizer"] = tokenizer
        cfg["dtype"] = _token_dtype(tokenizer.vocab_size)

    # ---- 3. outputs: files grouped by normalised path, in declared order
    outputs = {}  # normalised path -> {"key": first declared string, "files": [cfg...]}
    for cfg in file_cfgs:
        norm = os.path.normpath(cfg["output_dir"])
        if norm not in outputs:
            outputs[norm] = {"key": cfg["output_dir"], "files": []}
        outputs[norm]["files"].append(cfg)
    def tokenizer_bytes(cfg):
        found = []
        for name in cfg["tokenizer"].files:
            with open(name, "rb") as handle:
                found.append((os.path.basename(name), handle.read()))
        return found

    for group in outputs.values():
        first = group["files"][0]
        first_bytes = tokenizer_bytes(first)
        for cfg in group["files"][1:]:
            same_tokenizer = tokenizer_bytes(cfg) == first_bytes
            if (not same_tokenizer
                    or cfg["sequence_template"] != first["sequence_template"]
                    or cfg["sizes"] != first["sizes"]
                    or cfg["samples_per_shard"] != first["samples_per_shard"]):
                raise ReferenceBuildError("OutputMappingError", cfg["path"], None,
                                          "files sharing an output differ in config")

    # ---- 4. template literals: tokenized once per file config (preflight); special
    #         segments are one token each, whatever on_template_unk says
    for cfg in file_cfgs:
        tokenizer = cfg["tokenizer"]
        literal_tokens = {}
        special_tokens = {}
        template_has_unk = False
        for kind, value in cfg["segments"]:
            if kind == "special":
                special_tokens[value] = _special(tokenizer, value, tokenizer.path)
        for kind, value in cfg["segments"]:
            if kind == "literal" and value not in literal_tokens:
                ids, spans = tokenizer.encode(value)
                literal_tokens[value] = (ids, spans)
                # docs/decisions.md: control tokens, and roles written as control tokens are
                controls = dict(tokenizer.controls)
                controls.update({text: token_id for token_id, text in tokenizer.roles.values()
                                 if text and len(text) >= 3 and text[0] + text[-1] in ("<>", "[]")})
                for text, token_id in controls.items():
                    if text and text in value and ids.count(token_id) < value.count(text):
                        raise ReferenceBuildError("TemplateTokenizerError", None, None,
                                                  f"literal {value!r} spells {text!r}")
                if tokenizer.unk_id is not None and tokenizer.unk_id in ids:
                    template_has_unk = True
        cfg["literal_tokens"] = literal_tokens
        cfg["special_tokens"] = special_tokens
        if template_has_unk and on_template_unk != "continue":
            # "prompt" without a TTY aborts as well.
            raise ReferenceBuildError("TemplateTokenizerError", None, None,
                                      f"file index {cfg['index']}")

    # ---- 5. read every file in declared order; one sample at a time
    next_sample_id = {norm: 0 for norm in outputs}
    samples = {norm: [] for norm in outputs}  # good samples in sample_id order
    bad_rows = {norm: [] for norm in outputs}
    for cfg in file_cfgs:
        norm = os.path.normpath(cfg["output_dir"])
        tokenizer = cfg["tokenizer"]
        max_declared = max(cfg["sizes"])
        for line_number, raw in _read_lines(cfg["path"]):
            if cfg["pair"] is not None:
                status, payload = _parse_pair(raw, cfg)
                records = payload if status == "ok" else [None, None]
            else:
                if cfg["chat"] is not None:
                    status, payload = _parse_chat(raw, cfg["chat"])
                else:
                    status, payload = _parse_record(raw, cfg["fields"])
                records = [payload]
            if status == "blank":
                continue
            for item, pair_role in zip(records, ("chosen", "rejected") if cfg["pair"] is not None else (None,)):
                _read_sample(cfg, norm, status, item if status == "ok" else payload, line_number, pair_role,
                             next_sample_id, samples, bad_rows, on_bad_record, on_overflow, max_declared, tokenizer)
    return _outputs(outputs, samples, bad_rows, on_overflow, on_pair_collapse)


def _parse_pair(raw, cfg):
    """("ok", [chosen sample values, rejected sample values]) of one pair line."""
    status, obj = _parse_record(raw, [])
    if status != "ok":
        return status, obj
    obj = json.loads(raw.decode("utf-8"))
    pair = cfg["pair"]
    declared = [pair[k] for k in ("prompt", "chosen", "rejected") if pair.get(k)]
    missing = [k for k in declared if k not in obj]
    if missing:
        return "bad", ("SampleSchemaError", "missing fields: " + " ".join(missing))
    found = []
    for key in (pair["chosen"], pair["rejected"]):
        if cfg["chat"] is not None:
            messages = []
            for name in ([pair["prompt"]] if pair.get("prompt") else []) + [key]:
                value = obj[name]
                value = [value] if isinstance(value, dict) else value
                if not isinstance(value, list):
                    return "bad", ("SampleSchemaError", f"field {name!r} must be a list of messages (or one "
                                                        f"message), got {_type_name(value)}")
                messages.append(value)
            line = json.dumps({"m": sum(messages, [])}).encode("utf-8")
            status, values = _parse_chat(line, dict(cfg["chat"], field="m"))
            if status != "ok":
                return status, values
            found.append((values, len(messages[0]) if pair.get("prompt") else 0))
        else:
            names = ([pair["prompt"]] if pair.get("prompt") else []) + [key]
            for name in names:
                if isinstance(obj[name], (list, dict)):
                    return "bad", ("SampleSchemaError", "field value must be a string: " + name)
            values = dict(zip(cfg["fields"], (_render_value(obj[name]) for name in names)))
            for value in values.values():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return "bad", ("SourceParseError", "invalid UTF-8")
            found.append((values, [n for n in names if obj[n] in ("", None)]))
    return "ok", found


def _read_sample(cfg, norm, status, payload, line_number, pair_role, next_sample_id, samples, bad_rows,
                 on_bad_record, on_overflow, max_declared, tokenizer):
    """One sample of a line (a pair line has two): its id, and its sample or bad row."""
    sample_id = next_sample_id[norm]
    next_sample_id[norm] += 1
    if status == "bad":
        error, reason = payload
        if on_bad_record == "abort":
            raise ReferenceBuildError(error, cfg["path"], line_number, reason)
        bad_rows[norm].append({"sample_id": sample_id, "source_file": cfg["path"], "source_line": line_number,
                               "error": error, "reason": reason})
        return
    more = None
    values = payload
    if pair_role is not None:
        values, more = payload
    seg_ids, seg_spans, rendered = [], [], ""
    sample = {"sample_id": sample_id, "source_file": cfg["path"], "source_line": line_number}
    if cfg["chat"] is not None:
        table = cfg.setdefault("role_table", _chat_segments(cfg, tokenizer))
        empty_fields = []
        for i, (role, content) in enumerate(values):
            prefix, suffix = table[role]
            ids, spans = tokenizer.encode(content)
            for part_ids, part_spans in ((prefix[0], prefix[1]), (ids, spans), (suffix[0], suffix[1])):
                seg_ids.append(list(part_ids))
                seg_spans.append(list(part_spans))
            rendered += prefix[2] + content + suffix[2]
            if content == "":
                empty_fields.append(f"message{i}.content")
        for _ in range(cfg["chat"]["max_messages"] - len(values)):
            seg_ids += [[], [], []]
            seg_spans += [[], [], []]
        sample["roles"] = [role for role, _ in values]
        if pair_role is not None:
            sample["prompt_messages"] = more
    else:
        for kind, value in cfg["segments"]:
            if kind == "literal":
                text = value
                ids, spans = cfg["literal_tokens"][value]
            elif kind == "special":
                # docs/decisions.md: a special segment renders as its token's text
                token_id, text = cfg["special_tokens"][value]
                ids, spans = [token_id], [text]
            else:
                text = values[value]
                ids, spans = tokenizer.encode(text)
            rendered += text
            seg_ids.append(list(ids))
            seg_spans.append(list(spans))
        empty_fields = more if pair_role is not None else [
            name for name in dict.fromkeys(cfg["fields"]) if values[name] == ""]
    if pair_role is not None:
        sample["pair_id"] = sample_id // 2
        sample["pair_role"] = pair_role
    token_count = sum(len(ids) for ids in seg_ids)
    if token_count > max_declared and on_overflow == "abort":
        raise ReferenceBuildError("UnitOverflowError", cfg["path"], line_number,
                                  f"token_count {token_count} > {max_declared}")
    sample.update({"hash": hashlib.sha256(rendered.encode("utf-8")).hexdigest(), "seg_ids": seg_ids,
                   "seg_spans": seg_spans, "token_count": token_count, "empty_fields": empty_fields})
    samples[norm].append(sample)


def _outputs(outputs, samples, bad_rows, on_overflow, on_pair_collapse):
    """---- 6. one output directory at a time"""
    result = {}
    for norm, group in outputs.items():
        first = group["files"][0]
        if first["chat"] is not None:
            first = dict(first, chat_roles=list(dict.fromkeys(
                role for cfg in group["files"] for role in cfg["chat"]["templates"])))
        result[group["key"]] = _build_output(
            first, samples[norm], bad_rows[norm], on_overflow, on_pair_collapse)
    return result


def _truncated(seg_ids, seg_spans, keep_total):
    new_ids, new_spans, remaining = [], [], keep_total
    for ids, spans in zip(seg_ids, seg_spans):
        keep = min(len(ids), remaining)
        new_ids.append(ids[:keep])
        new_spans.append(spans[:keep])
        remaining -= keep
    return new_ids, new_spans


def _place_pairs(samples, declared, on_overflow, on_pair_collapse):
    """Pairs (two consecutive samples, one pair_id): one unit for both, the one that fits
    the longer; an overflowing pair is truncated or skipped as a whole; a pair whose two
    written payloads are equal is collapsed."""
    max_declared = max(declared)
    written, rows = [], []
    for a, b in zip(samples[0::2], samples[1::2]):
        assert a["pair_id"] == b["pair_id"] and (a["pair_role"], b["pair_role"]) == ("chosen", "rejected")
        longest = max(a["token_count"], b["token_count"])
        placed = []
        pair_rows = []
        for sample in (a, b):
            seg_ids, seg_spans = sample["seg_ids"], sample["seg_spans"]
            if longest > max_declared:
                row = {"sample_id": sample["sample_id"], "source_file": sample["source_file"],
                       "source_line": sample["source_line"], "token_count": sample["token_count"],
                       "max_unit_size": max_declared, "action": on_overflow}
                if on_overflow == "truncate":
                    new_ids, new_spans = _truncated(seg_ids, seg_spans, max_declared)
                    if "roles" in sample:
                        row["cut_messages"] = [
                            i for i in range(len(sample["roles"]))
                            if sum(map(len, new_ids[3 * i:3 * i + 3])) < sum(map(len, seg_ids[3 * i:3 * i + 3]))]
                    seg_ids, seg_spans = new_ids, new_spans
                pair_rows.append(row)
                unit = max_declared
            else:
                unit = min(size for size in declared if size >= longest)
            placed.append({"sample": sample, "unit": unit, "seg_ids": seg_ids, "seg_spans": seg_spans})
        if longest > max_declared and on_overflow == "skip":
            rows += pair_rows
            continue
        payloads = [sum(p["seg_ids"], []) for p in placed]
        if payloads[0] == payloads[1]:
            if on_pair_collapse == "abort":
                raise ReferenceBuildError("PairCollapseError", a["source_file"], a["source_line"], "collapsed")
            for k, sample in enumerate((a, b)):
                rows.append({"sample_id": sample["sample_id"], "source_file": sample["source_file"],
                             "source_line": sample["source_line"], "token_count": sample["token_count"],
                             "max_unit_size": max_declared, "action": "collapsed"})
                if pair_rows and "cut_messages" in pair_rows[k]:     # what truncation cut, if it did
                    rows[-1]["cut_messages"] = pair_rows[k]["cut_messages"]
            continue
        rows += pair_rows
        written += placed
    return written, rows


def _build_output(cfg, samples, bad_rows, on_overflow, on_pair_collapse="abort"):
    tokenizer = cfg["tokenizer"]
    dtype_name, np_dtype, magic, bytes_per_token = cfg["dtype"]
    pad_id = tokenizer.pad_id
    unk_id = tokenizer.unk_id
    declared = list(cfg["sizes"])
    max_declared = max(declared)
    unit_sizes = list(declared)  # grows with on_overflow="extend"
    per_shard = cfg["samples_per_shard"]
    sequence_template = cfg["sequence_template"]

    # -- unit assignment and overflow policy, in sample_id order
    written = []  # dicts: sample, unit, seg_ids (written), seg_spans (written)
    overflow_rows = []
    if cfg.get("pair") is not None:
        written, overflow_rows = _place_pairs(samples, declared, on_overflow, on_pair_collapse)
    for sample in (samples if cfg.get("pair") is None else []):
        count = sample["token_count"]
        seg_ids = sample["seg_ids"]
        seg_spans = sample["seg_spans"]
        if count <= max_declared:
            unit = min(size for size in declared if size >= count)
        else:
            row = {
                "sample_id": sample["sample_id"],
                "source_file": sample["source_file"],
                "source_line": sample["source_line"],
                "token_count": count,
                "max_unit_size": max_declared,
                "action": on_overflow,
            }
            if on_overflow == "skip":
                overflow_rows.append(row)
                continue
            if on_overflow == "truncate":
                unit = max_declared
                remaining = max_declared
                new_ids, new_spans = [], []
                for ids, spans in zip(seg_ids, seg_spans):
                    keep = min(len(ids), remaining)
                    new_ids.append(ids[:keep])
                    new_spans.append(spans[:keep])
                    remaining -= keep
                if "roles" in sample:   # the messages truncation shortened
                    row["cut_messages"] = [
                        i for i in range(len(sample["roles"]))
                        if sum(len(x) for x in new_ids[3 * i:3 * i + 3]) < sum(len(x) for x in seg_ids[3 * i:3 * i + 3])]
                seg_ids, seg_spans = new_ids, new_spans
            elif on_overflow == "extend":
                if count > max(unit_sizes):
                    unit_sizes.append(count)
                    unit = count
                else:
                    unit = min(size for size in unit_sizes if size >= count)
                row["new_unit_size"] = unit
            else:  # "abort" was raised while reading
                raise AssertionError("overflow with on_overflow='abort'")
            overflow_rows.append(row)
        written.append({"sample": sample, "unit": unit, "seg_ids": seg_ids,
                        "seg_spans": seg_spans})
    if not written:
        # DESIGN.md section 8: a build whose output receives no sample fails.
        raise ReferenceBuildError("BuildLimitError", None, None, "the output received no sample")

    unit_sizes = sorted(unit_sizes)
    # DESIGN.md section 5: a slot holds every value written to it, and a length header
    # can be as large as its unit; a largest unit (declared or reached by extend) above
    # 65,535 therefore means uint32 slots, whatever the vocabulary needs.
    if max(unit_sizes) > 0xFFFF:
        dtype_name, np_dtype, magic, bytes_per_token = "uint32", "<u4", 0xFFFFFFFF, 4
    files = {}

    # -- shards, sample_index and unk_index
    sample_rows = {}  # sample_id -> row
    unk_rows = []
    unit_stats = {}
    total_shards = 0
    for unit in unit_sizes:
        members = [w for w in written if w["unit"] == unit]  # ascending sample_id
        shard_count = 0
        tokens = 0
        pads = 0
        for start in range(0, len(members), per_shard):
            chunk = members[start:start + per_shard]
            shard_path = f"unit_{unit}/shard_{shard_count:06d}.bin"
            blob = b""
            for position, item in enumerate(chunk):
                payload = []
                for ids in item["seg_ids"]:
                    payload.extend(ids)
                written_count = len(payload)
                record = [magic] + [len(ids) for ids in item["seg_ids"]]
                record += payload + [pad_id] * (unit - written_count)
                assert len(record) == 1 + len(sequence_template) + unit
                assert max(record[1:]) <= magic, "a value that does not fit its slot"
                blob += np.array(record, dtype=np_dtype).tobytes()
                tokens += written_count
                pads += unit - written_count
                sample = item["sample"]
                sample_rows[sample["sample_id"]] = {
                    "sample_id": sample["sample_id"],
                    "hash": sample["hash"],
                    "token_count": written_count,
                    "unit_size": unit,
                    "source_file": sample["source_file"],
                    "source_line": sample["source_line"],
                    "shard_path": shard_path,
                    "empty_fields": sample["empty_fields"],
                    "shard_record": position,
                }
                for key in ("roles", "prompt_messages", "pair_id", "pair_role"):
                    if key in sample:
                        sample_rows[sample["sample_id"]][key] = sample[key]
                positions, field_indices, chars = [], [], []
                offset = 0
                for segment_index, (ids, spans) in enumerate(
                        zip(item["seg_ids"], item["seg_spans"])):
                    for k, token in enumerate(ids):
                        if unk_id is not None and token == unk_id:
                            positions.append(offset + k)
                            field_indices.append(segment_index)
                            chars.append(spans[k])
                    offset += len(ids)
                if positions:
                    unk_rows.append({
                        "sample_id": sample["sample_id"],
                        "hash": sample["hash"],
                        "source_file": sample["source_file"],
                        "source_line": sample["source_line"],
                        "unk_count": len(positions),
                        "unk_positions": positions,
                        "unk_field_indices": field_indices,
                        "unk_chars": chars,
                    })
                    if "roles" in sample:
                        unk_rows[-1]["unk_messages"] = [j // 3 for j in field_indices]
                        unk_rows[-1]["unk_roles"] = [sample["roles"][j // 3] for j in field_indices]
            files[shard_path] = blob
            shard_count += 1
        if not members and unit in declared:
            files[f"unit_{unit}/EMPTY_UNIT.md"] = b""
        slots = len(members) * unit
        unit_stats[str(unit)] = {
            "samples": len(members),
            "tokens": tokens,
            "pad_tokens": pads,
            "padding_ratio": (pads / slots) if slots else 0.0,
            "shards": shard_count,
        }
        total_shards += shard_count

    sample_index = [sample_rows[key] for key in sorted(sample_rows)]
    unk_rows.sort(key=lambda row: row["sample_id"])

    # -- duplicates: every rendered sample (overflow-skipped included, bad records not)
    by_hash = {}
    for sample in samples:
        by_hash.setdefault(sample["hash"], []).append(sample)
    duplicate_rows = []
    for digest, members in by_hash.items():
        if len(members) < 2:
            continue
        duplicate_rows.append({
            "hash": digest,
            "count": len(members),
            "samples": [
                {"sample_id": m["sample_id"], "source_file": m["source_file"],
                 "source_line": m["source_line"]}
                for m in members
            ],
        })
    duplicate_rows.sort(key=lambda row: row["samples"][0]["sample_id"])

    # -- summary files
    histogram = {str(unit): unit_stats[str(unit)]["samples"] for unit in unit_sizes}
    total_tokens = sum(stat["tokens"] for stat in unit_stats.values())
    total_pads = sum(stat["pad_tokens"] for stat in unit_stats.values())
    total_slots = sum(stat["samples"] * int(size) for size, stat in unit_stats.items())
    stats = {
        "total_samples": len(sample_index),
        "total_tokens": total_tokens,
        "token_dtype": dtype_name,
        "bytes_per_token": bytes_per_token,
        "duplicate_groups": len(duplicate_rows),
        "duplicate_samples": sum(row["count"] for row in duplicate_rows),
        "samples_with_unk": len(unk_rows),
        "unk_tokens": sum(row["unk_count"] for row in unk_rows),
        "unit_distribution": dict(histogram),
        "pad_tokens": total_pads,
        "padding_ratio": (total_pads / total_slots) if total_slots else 0.0,
        "bad_records": len(bad_rows),
        "overflow_samples": len(overflow_rows),
        "shards": total_shards,
        "units": unit_stats,
    }
    length_field = {
        "magic": magic,
        "sequence_template": sequence_template,
        "token_dtype": dtype_name,
        "pad_token_id": pad_id,
    }
    if unk_id is None:   # DESIGN.md section 8: null for a vocabulary that cannot emit UNK
        length_field["unk_token_id"] = None
    if cfg.get("chat") is not None:
        length_field["chat"] = {"max_messages": cfg["chat"]["max_messages"],
                                "message_parts": ["prefix", "content", "suffix"],
                                "roles": cfg["chat_roles"], "roles_key": "roles"}

    files["histogram.json"] = _json_file(histogram)
    files["stats.json"] = _json_file(stats)
    files["length_field.json"] = _json_file(length_field)
    files["sample_index.jsonl"] = _jsonl(sample_index)
    files["duplicate_index.jsonl"] = _jsonl(duplicate_rows)
    files["unk_index.jsonl"] = _jsonl(unk_rows)
    files["overflow_index.jsonl"] = _jsonl(overflow_rows)
    files["bad_record_index.jsonl"] = _jsonl(bad_rows)
    # SHA256SUMS: `sha256sum` lines for every data file (markers carry no data), by path
    data_files = sorted(name for name in files if not name.endswith(".md"))
    files["SHA256SUMS"] = "".join(f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n"
                                  for name in data_files).encode("utf-8")
    return files
