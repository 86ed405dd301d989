"""Errors about the tokenizer: its file, its special tokens, its vocabulary size, and
template text it cannot encode.

A separate module because these facts come from the tokenizer library, not from the
user's arguments or data, so the fix is on the tokenizer side (another file, another
model, a template without the offending literal); the messages say so.
"""

from __future__ import annotations

from typing import Any, Sequence

from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import build_messages as M
from mintdim_beam.errors import tokenizer_messages as TM
from mintdim_beam.errors.base import MintDimError, as_list, fact_dict


class TokenizerValidationError(MintDimError):
    """The tokenizer step is structurally wrong, or its file format is unsupported.

    The main form names the `component` at fault and the `problem`, followed by the
    spec's tokenizer rules; `unsupported_format(path)` lists the formats V1 reads.
    """

    _main_kind = "invalid"
    _variant_kinds = ("unsupported_format", "unloadable", "add_padding")

    def __init__(self, component: str, problem: str, problem_vi: str | None = None) -> None:
        """``problem_vi``: the problem in Vietnamese; without it the problem reads the same
        in both blocks, as the spec prints "tokenizer file path must be str, got int"."""
        facts = fact_dict(component=component, problem=problem)
        if problem_vi is not None:
            facts["problem_vi"] = problem_vi
        english, vietnamese = self._render(
            TM.TOKENIZER_INVALID,
            [
                B.labeled(TM.TOKENIZER_COMPONENT, facts["component"]),
                B.labeled(M.PROBLEM, facts["problem"], facts.get("problem_vi")),
                M.RULES,
                B.bullet_pairs(TM.TOKENIZER_RULES),
            ],
        )
        super().__init__(english, vietnamese, facts)

    @classmethod
    def unsupported_format(
        cls, path: str | None = None, tokenizer_type: Any = None
    ) -> "TokenizerValidationError":
        """The tokenizer file is neither a SentencePiece model nor a tokenizer.json.

        `tokenizer_type`, when given, is the unknown value of a job file's
        `tokenizer.type`; the message names it and the closest valid value.
        """
        extra = {} if tokenizer_type is None else {"tokenizer_type": tokenizer_type}
        facts = fact_dict(kind="unsupported_format", path=path, **extra)
        paragraphs = [] if facts["path"] is None else [B.labeled(M.FILE, facts["path"])]
        if tokenizer_type is not None:
            paragraphs.append(_tokenizer_type_text(facts["tokenizer_type"]))
        paragraphs += [TM.TOKENIZER_SUPPORTED_FORMATS, B.bullets(TM.TOKENIZER_FORMATS)]
        english, vietnamese = cls._render(TM.TOKENIZER_UNSUPPORTED, paragraphs)
        return cls._make(english, vietnamese, facts)


    @classmethod
    def unloadable(cls, path: str, tokenizer_type: str, problem: str, detail: str = "",
                   looks_like: str | None = None) -> "TokenizerValidationError":
        """The tokenizer file cannot be loaded as the declared ``tokenizer_type``.

        ``problem`` is a key of ``tokenizer_messages.TOKENIZER_LOAD_PROBLEMS`` (empty, truncated or
        damaged, not JSON, JSON but not a tokenizer, named as the other format);
        ``detail`` the parser's own words; ``looks_like`` the other type when the bytes
        read as that format, which the message then suggests.
        """
        facts = fact_dict(kind="unloadable", path=path, tokenizer_type=tokenizer_type, problem=problem,
                       detail=detail, looks_like=looks_like)
        said = TM.TOKENIZER_LOAD_PROBLEMS[problem]
        paragraphs = [
            B.labeled(M.FILE, facts["path"]),
            B.labeled(TM.TOKENIZER_DECLARED, TM.TOKENIZER_FORMAT_OF.get(tokenizer_type, tokenizer_type)),
            B.labeled(M.PROBLEM, said.en.format(detail=detail, extension=detail),
                      said.vi.format(detail=detail, extension=detail)),
        ]
        if looks_like in TM.TOKENIZER_LOOKS_LIKE:
            hint = TM.TOKENIZER_LOOKS_LIKE[looks_like]
            paragraphs.append(B.labeled(M.FIX, hint.en, hint.vi))
        paragraphs.append(B.labeled(M.RULE, TM.TOKENIZER_LOAD_RULE.en, TM.TOKENIZER_LOAD_RULE.vi))
        english, vietnamese = cls._render(TM.TOKENIZER_UNLOADABLE, paragraphs)
        return cls._make(english, vietnamese, facts)


    @classmethod
    def add_padding(cls, path: str, out: str, problem: str, token: str = "", detail: str = "",
                    candidates: Sequence[str] = ()) -> "TokenizerValidationError":
        """``mintdim-beam tokenizer add-padding`` wrote nothing: ``problem`` is a key of
        ``tokenizer_messages.TOKENIZER_ADD_PADDING_PROBLEMS``; ``candidates``: tokens that could pad."""
        facts = fact_dict(kind="add_padding", path=path, out=out, problem=problem, token=token, detail=detail,
                          candidates=list(candidates))
        listed = TM.TOKENIZER_ADD_PADDING_CANDIDATES.format(tokens=", ".join(repr(c) for c in facts["candidates"])) \
            if facts["candidates"] else B.Text("", "")
        said = TM.TOKENIZER_ADD_PADDING_PROBLEMS[problem].format(token=facts["token"], out=facts["out"],
                                                                detail=facts["detail"], candidates=listed)
        paragraphs = [
            B.labeled(M.FILE, facts["path"]),
            B.labeled(TM.TOKENIZER_ADD_PADDING_OUT, facts["out"]),
            B.labeled(M.PROBLEM, said.en, said.vi),
        ]
        english, vietnamese = cls._render(TM.TOKENIZER_ADD_PADDING, paragraphs)
        return cls._make(english, vietnamese, facts)


def _tokenizer_type_text(value: Any) -> B.Text:
    import difflib

    close = difflib.get_close_matches(str(value), TM.TOKENIZER_TYPES, n=1, cutoff=0.6)
    hint = B.Text("", "") if not close else M.DID_YOU_MEAN.format(close=close[0])
    choices = ", ".join(TM.TOKENIZER_TYPES)
    return B.Text(
        TM.TOKENIZER_TYPE_VALUE.en.format(value=repr(value), hint=hint.en, choices=choices),
        TM.TOKENIZER_TYPE_VALUE.vi.format(value=repr(value), hint=hint.vi, choices=choices),
    )


def _unk_chars_text(unk_chars: Sequence[str], literals: Sequence[str] | None) -> B.Text:
    """`'✓' (U+2713), '漢字' (U+6F22 U+5B57) in literal segments '\n✓ '`."""
    shown = ", ".join(
        f"{text!r} ({' '.join(f'U+{ord(ch):04X}' for ch in text)})" for text in unk_chars
    )
    where_en = where_vi = ""
    if literals:
        listed = ", ".join(repr(lit) for lit in literals)
        where_en = f" {M.TEMPLATE_UNK_IN_LITERALS.en} {listed}"
        where_vi = f" {M.TEMPLATE_UNK_IN_LITERALS.vi} {listed}"
    return B.labeled(M.TEMPLATE_UNK_CHARS, shown + where_en, shown + where_vi)


class TokenizerSpecialTokenError(MintDimError):
    """The tokenizer library does not provide a special token MintDim needs.

    Special-token ids (`unk_id`, `pad_id`) come from the tokenizer only, never from the
    user, so the fix is on the tokenizer side; the message says which token is missing
    and, when ``fix``/``fix_vi`` are given (``tokenizer_messages.SPECIAL_FIX_*``), exactly
    how to fix it, in a ``Fix:`` paragraph the spec's example does not have.
    """

    def __init__(self, tokenizer: str, special_token: str, problem: str,
                 fix: str | None = None, fix_vi: str | None = None) -> None:
        facts = fact_dict(tokenizer=tokenizer, special_token=special_token, problem=problem)
        if fix is not None:
            facts.update(fact_dict(fix=fix, fix_vi=fix if fix_vi is None else fix_vi))
        paragraphs = [
            B.labeled(TM.TOKENIZER_LABEL, facts["tokenizer"]),
            B.labeled(TM.SPECIAL_TOKEN_LABEL, facts["special_token"]),
            B.labeled(M.PROBLEM, facts["problem"]),
        ]
        if fix is not None:
            paragraphs.append(B.labeled(M.FIX, facts["fix"], facts["fix_vi"]))
        paragraphs.append(B.labeled(M.RULE, TM.TOKENIZER_SPECIAL_RULE.en, TM.TOKENIZER_SPECIAL_RULE.vi))
        english, vietnamese = self._render(TM.TOKENIZER_SPECIAL, paragraphs)
        super().__init__(english, vietnamese, facts)

    @classmethod
    def with_fix(cls, tokenizer: str, special_token: str, problem: str, fix: B.Text) -> "TokenizerSpecialTokenError":
        """The error with a ``Fix:`` paragraph in both languages."""
        return cls(tokenizer, special_token, problem, fix=fix.en, fix_vi=fix.vi)


class TemplateTokenizerError(MintDimError):
    """Literal (non-placeholder) text of a template encodes to UNK.

    The literal is repeated in every sample, so every sample would carry the same UNK;
    raised when the template-UNK policy is "abort". `literals` optionally records the
    offending literal segments for programmatic use; the message keeps the spec's text.

    Two variants are about the template and the tokenizer's special tokens, whatever
    the template-UNK policy says: `special_missing` (a ``{@NAME}`` segment the tokenizer
    has no token for) and `lookalike` (a literal that spells a special token's text but
    does not encode to its id).
    """

    _variant_kinds = ("special_missing", "lookalike")

    def __init__(
        self,
        file_index: int,
        template: str,
        literals: Sequence[str] | None = None,
        unk_chars: Sequence[str] | None = None,
    ) -> None:
        extra = {} if unk_chars is None else {"unk_chars": as_list(unk_chars)}
        facts = fact_dict(
            file_index=file_index,
            template=template,
            literals=None if literals is None else as_list(literals),
            **extra,
        )
        paragraphs = [
            B.labeled(M.TEMPLATE_UNK_FILE_INDEX, facts["file_index"]),
            B.labeled(M.TEMPLATE_LABEL, repr(facts["template"])),
            B.labeled(M.PROBLEM, M.TEMPLATE_UNK_PROBLEM.en, M.TEMPLATE_UNK_PROBLEM.vi),
        ]
        if facts.get("unk_chars"):
            paragraphs.append(_unk_chars_text(facts["unk_chars"], facts["literals"]))
        paragraphs += [
            B.labeled(M.FIX, M.TEMPLATE_UNK_FIX.en, M.TEMPLATE_UNK_FIX.vi),
            M.TEMPLATE_UNK_POLICY,
        ]
        english, vietnamese = self._render(M.TEMPLATE_UNK, paragraphs)
        super().__init__(english, vietnamese, facts)

    @classmethod
    def special_missing(cls, file_index: int, template: str, tokenizer: str, segment: str,
                        available: Sequence[str] = ()) -> "TemplateTokenizerError":
        """``segment`` (``"@eos"``, ``"@<|im_end|>"``) names no token of ``tokenizer``;
        ``available``: how the tokenizer's special tokens are written (``{@eos} = '</s>' (2)``)."""
        facts = fact_dict(kind="special_missing", file_index=file_index, template=template,
                          tokenizer=tokenizer, segment=segment, available=as_list(list(available)))
        name = facts["segment"][1:]
        named = name in ("bos", "eos", "pad", "unk")
        problem = (M.TEMPLATE_SPECIAL_NO_NAMED.format(name=name) if named
                   else M.TEMPLATE_SPECIAL_NO_CONTENT.format(content=name))
        shown = facts["available"]
        paragraphs = [
            B.labeled(M.TEMPLATE_UNK_FILE_INDEX, facts["file_index"]),
            B.labeled(M.TEMPLATE_LABEL, repr(facts["template"])),
            B.labeled(TM.TOKENIZER_LABEL, facts["tokenizer"]),
            B.labeled(M.TEMPLATE_SEGMENT_LABEL, "{" + facts["segment"] + "}"),
            B.labeled(M.PROBLEM, problem.en, problem.vi),
            B.labeled(M.TEMPLATE_SPECIAL_HAS, ", ".join(shown) if shown else M.TEMPLATE_SPECIAL_NONE.en,
                      ", ".join(shown) if shown else M.TEMPLATE_SPECIAL_NONE.vi),
            B.labeled(M.FIX, M.TEMPLATE_SPECIAL_FIX.format().en, M.TEMPLATE_SPECIAL_FIX.format().vi),
        ]
        english, vietnamese = cls._render(M.TEMPLATE_SPECIAL_MISSING, paragraphs)
        return cls._make(english, vietnamese, facts)

    @classmethod
    def lookalike(cls, file_index: int, template: str, literal: str, token: str, token_id: int,
                  segment: str, ids: Sequence[int] = ()) -> "TemplateTokenizerError":
        """The literal segment ``literal`` holds ``token``'s text (id ``token_id``) but its
        ids (``ids``) do not hold that id; ``segment`` is how to write the token instead."""
        facts = fact_dict(kind="lookalike", file_index=file_index, template=template, literal=literal,
                          token=token, token_id=token_id, segment=segment, ids=list(ids))
        fix = M.TEMPLATE_LOOKALIKE_FIX.format(segment=facts["segment"])
        paragraphs = [
            B.labeled(M.TEMPLATE_UNK_FILE_INDEX, facts["file_index"]),
            B.labeled(M.TEMPLATE_LABEL, repr(facts["template"])),
            B.labeled(M.TEMPLATE_LITERAL_LABEL, repr(facts["literal"])),
            B.labeled(M.TEMPLATE_LOOKALIKE_TOKEN, f"{facts['token']!r} (id {facts['token_id']})"),
            B.labeled(M.TEMPLATE_LOOKALIKE_ENCODES, " ".join(map(str, facts["ids"]))),
            B.labeled(M.PROBLEM, M.TEMPLATE_LOOKALIKE_PROBLEM.en, M.TEMPLATE_LOOKALIKE_PROBLEM.vi),
            B.labeled(M.FIX, fix.en, fix.vi),
            B.labeled(M.RULE, M.TEMPLATE_LOOKALIKE_RULE.en, M.TEMPLATE_LOOKALIKE_RULE.vi),
        ]
        english, vietnamese = cls._render(M.TEMPLATE_LOOKALIKE, paragraphs)
        return cls._make(english, vietnamese, facts)


class TokenDTypeCapacityError(MintDimError):
    """The tokenizer's vocabulary does not fit uint32 next to the reserved magic value.

    Numbers are grouped the way each language writes them (5,000,000,000 in English,
    5.000.000.000 in Vietnamese), as in the spec.
    """

    def __init__(self, vocab_size: int) -> None:
        facts = fact_dict(vocab_size=vocab_size)
        size = facts["vocab_size"]
        limits = [
            B.Text(
                M.DTYPE_LIMIT.en.format(dtype=dtype, limit=B.number_en(limit)),
                M.DTYPE_LIMIT.vi.format(dtype=dtype, limit=B.number_vi(limit)),
            )
            for dtype, limit in M.DTYPE_LIMITS
        ]
        english, vietnamese = self._render(
            M.DTYPE_CAPACITY,
            [
                B.labeled(M.DTYPE_VOCAB_SIZE, B.number_en(size), B.number_vi(size)),
                M.DTYPE_SUPPORTED,
                B.bullet_pairs(limits),
                M.FIX,
                B.bullet_pairs(M.DTYPE_FIXES),
            ],
        )
        super().__init__(english, vietnamese, facts)


class TokenizerFailedError(MintDimError):
    """The tokenizer library failed on one sample's text (a Rust panic of a Hugging Face
    tokenizer whose pre-tokenizer regex backtracks catastrophically, for one). Named by
    the tokenizer and the sample's file and line; ``detail``: the library's own words."""

    def __init__(self, tokenizer: str, file: str, line: int, detail: str) -> None:
        facts = fact_dict(tokenizer=tokenizer, file=file, line=line, detail=detail)
        english, vietnamese = self._render(
            TM.TOKENIZER_FAILED,
            [
                B.labeled(TM.TOKENIZER_FILE, facts["tokenizer"]),
                B.labeled(M.FILE, facts["file"]),
                B.labeled(M.LINE, facts["line"]),
                B.labeled(M.REASON, facts["detail"]),
                B.labeled(M.FIX, TM.TOKENIZER_FAILED_FIX.en, TM.TOKENIZER_FAILED_FIX.vi),
            ],
        )
        super().__init__(english, vietnamese, facts)
