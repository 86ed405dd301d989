"""Texts of the errors about the tokenizer, English beside Vietnamese: its file, its
special tokens, the no-UNK proof, template text it cannot encode and a library that
fails on a sample; the labels they share with the build's other errors are in
:mod:`.build_messages`."""

from __future__ import annotations

from mintdim_beam.errors.bilingual import Text

# ---------------------------------------------------------------------------
# Tokenizer errors
# ---------------------------------------------------------------------------

TOKENIZER_INVALID = Text(
    "Invalid tokenizer configuration.",
    "Cấu hình tokenizer không hợp lệ.",
)
TOKENIZER_COMPONENT = Text("Component:", "Thành phần:")
TOKENIZER_RULES = (
    Text(
        "tokenizer.files must be a list of tokenizer file paths",
        "tokenizer.files phải là list các đường dẫn file tokenizer",
    ),
    Text(
        "each tokenizer file path must be a string",
        "mỗi đường dẫn file tokenizer phải là string",
    ),
    Text(
        "unk_id and pad_id are loaded from the tokenizer library",
        "unk_id và pad_id được lấy từ thư viện tokenizer",
    ),
)

TOKENIZER_UNSUPPORTED = Text(
    "Unsupported tokenizer format.",
    "Định dạng tokenizer chưa được hỗ trợ.",
)
TOKENIZER_SUPPORTED_FORMATS = Text("Supported formats:", "Các định dạng hiện hỗ trợ:")
TOKENIZER_FORMATS = ("sentencepiece (.model)", "huggingface tokenizer (.json)")
TOKENIZER_TYPES = ("sentencepiece", "hf_json")    # the values of tokenizer.type

TOKENIZER_TYPE_VALUE = Text(
    "tokenizer.type is {value}{hint}; it must be one of: {choices}",
    "tokenizer.type là {value}{hint}; giá trị hợp lệ: {choices}",
)

TOKENIZER_UNLOADABLE = Text(
    "Tokenizer file cannot be loaded.",
    "Không thể nạp file tokenizer.",
)
TOKENIZER_DECLARED = Text("Declared type:", "Loại đã khai báo:")
#: ``tokenizer.type`` -> the format it reads, as ``TOKENIZER_FORMATS`` names it.
TOKENIZER_FORMAT_OF = {"sentencepiece": "sentencepiece (.model)", "hf_json": "huggingface tokenizer (.json)"}
#: Why a tokenizer file cannot be loaded; ``{detail}`` is the parser's own words.
TOKENIZER_LOAD_PROBLEMS = {
    "empty": Text("the file is empty (0 bytes)", "file rỗng (0 byte)"),
    "not_sentencepiece": Text(
        "SentencePiece cannot read it as a model: the file is truncated, damaged or not a .model file",
        "SentencePiece không đọc được file này như một model: file bị cắt cụt, bị hỏng hoặc không phải file .model"),
    "not_utf8": Text("it is not UTF-8 text ({detail}), so it is not a tokenizer.json",
                     "file không phải văn bản UTF-8 ({detail}), nên không phải tokenizer.json"),
    "not_json": Text("it is not valid JSON ({detail})", "file không phải JSON hợp lệ ({detail})"),
    "not_tokenizer": Text("it is JSON but not a Hugging Face tokenizer ({detail})",
                          "file là JSON nhưng không phải tokenizer Hugging Face ({detail})"),
    "no_model": Text('it is JSON without a "model" section, so not a Hugging Face tokenizer',
                     'file là JSON nhưng không có mục "model", nên không phải tokenizer Hugging Face'),
    "named_as_other": Text(
        "its name ends in {extension}, the other format's extension: declare it under the tokenizer type "
        "that reads {extension} files, or rename it",
        "tên file kết thúc bằng {extension}, phần mở rộng của định dạng còn lại: hãy khai báo nó trong loại "
        "tokenizer đọc file {extension}, hoặc đổi tên file"),
}
#: What the file's bytes are instead, when they read as the other format.
TOKENIZER_LOOKS_LIKE = {
    "sentencepiece": Text(
        "the file is a SentencePiece model: declare it under tokenizer sentencepiece, with a .model name",
        "file này là một model SentencePiece: hãy khai báo nó trong tokenizer sentencepiece, với tên file .model"),
    "hf_json": Text(
        "the file is a Hugging Face tokenizer.json: declare it under tokenizer hf_json, with a .json name",
        "file này là một tokenizer.json của Hugging Face: hãy khai báo nó trong tokenizer hf_json, với tên file .json"),
}
TOKENIZER_LOAD_RULE = Text(
    "a tokenizer file must be whole, as its library saved it: a SentencePiece .model or a "
    "Hugging Face tokenizer.json",
    "file tokenizer phải nguyên vẹn, đúng như thư viện của nó đã lưu: file .model của SentencePiece "
    "hoặc tokenizer.json của Hugging Face",
)

# Not in the spec: ``mintdim-beam tokenizer add-padding`` (the cli's tokenizer tools).
TOKENIZER_ADD_PADDING = Text(
    "The padded copy of the tokenizer was not written.",
    "Bản sao có padding của tokenizer chưa được ghi.",
)
TOKENIZER_ADD_PADDING_OUT = Text("Copy:", "Bản sao:")
#: Why ``add-padding`` wrote nothing; ``{token}``, ``{out}``, ``{detail}`` are facts.
TOKENIZER_ADD_PADDING_PROBLEMS = {
    "no_token": Text("{token!r} is not a token of this tokenizer, and the padding must name one of its own "
                     "tokens (ids come from the tokenizer, never from the job).{candidates}",
                     "{token!r} không phải token của tokenizer này, mà padding phải chỉ tới một token có sẵn "
                     "của nó (id lấy từ tokenizer, không bao giờ từ job).{candidates}"),
    "has_padding": Text("it already configures padding with {detail}; a build pads with that, nothing to add",
                        "file đã cấu hình padding với {detail}; build sẽ pad bằng token đó, không cần thêm"),
    "out_exists": Text("{out} already exists; give a new path (the copy never overwrites a file)",
                       "{out} đã tồn tại; hãy cho một đường dẫn mới (bản sao không bao giờ ghi đè file)"),
    "not_hf": Text("it is not a Hugging Face tokenizer.json ({detail})",
                   "file không phải tokenizer.json của Hugging Face ({detail})"),
}
TOKENIZER_ADD_PADDING_CANDIDATES = Text(" Tokens that could pad: {tokens}.", " Các token có thể dùng để pad: {tokens}.")

TOKENIZER_SPECIAL = Text(
    "Tokenizer library did not expose a required special token.",
    "Thư viện tokenizer không cung cấp special token bắt buộc.",
)
TOKENIZER_LABEL = Text("Tokenizer:", "Tokenizer:")
SPECIAL_TOKEN_LABEL = Text("Special token:", "Special token:")
TOKENIZER_SPECIAL_RULE = Text(
    "MintDim uses tokenizer-provided special token ids only; "
    "do not declare unk_id/pad_id manually.",
    "MintDim chỉ dùng special token id do tokenizer cung cấp; "
    "không khai báo unk_id/pad_id thủ công.",
)

# Not in the spec: what to do about a missing special token, after its Problem line.
# ``{path}`` is the tokenizer file, ``{token}`` a token of it that could serve, ``{copy}``
# where the padded copy would go, ``{candidates}`` the tokens that could serve.
SPECIAL_FIX_PAD_HF = Text(
    "the tokenizer.json has no padding section, and no tokenizer_config.json or special_tokens_map.json "
    "beside it names a pad_token. Write a copy that pads with one of its own tokens and point "
    "tokenizer.files at the copy:\n    mintdim-beam tokenizer add-padding {path} --pad-token {token} {copy}\n"
    "or, in a model folder, add \"pad_token\": \"{token}\" to the tokenizer_config.json beside it.{candidates}",
    "tokenizer.json không có mục padding, và không có tokenizer_config.json hay special_tokens_map.json "
    "nào bên cạnh khai báo pad_token. Hãy ghi một bản sao dùng một token có sẵn của nó để pad, rồi trỏ "
    "tokenizer.files tới bản sao đó:\n    mintdim-beam tokenizer add-padding {path} --pad-token {token} {copy}\n"
    "hoặc, trong một thư mục model, thêm \"pad_token\": \"{token}\" vào tokenizer_config.json bên cạnh.{candidates}",
)
SPECIAL_PAD_CANDIDATES = Text(" Tokens of this tokenizer that could pad: {tokens}.",
                              " Các token của tokenizer này có thể dùng để pad: {tokens}.")
SPECIAL_FIX_PAD_SP = Text(
    "a SentencePiece model gets its pad piece when it is trained: train it with a pad id "
    "(spm_train --pad_id=N, or SentencePieceTrainer.train(..., pad_id=N)), or use a tokenizer that has one.",
    "model SentencePiece có pad piece khi được train: hãy train với pad id "
    "(spm_train --pad_id=N, hoặc SentencePieceTrainer.train(..., pad_id=N)), hoặc dùng tokenizer có pad.",
)
SPECIAL_FIX_UNK = Text(
    "the model declares no unknown token and its vocabulary does not prove that every text can be "
    "encoded ({why}), so characters it cannot spell would vanish without a trace. Name one of its tokens "
    "as the model's unk_token in the tokenizer.json, or use a tokenizer that covers every byte (byte-level "
    "BPE with all byte symbols, or byte fallback with all 256 <0xNN> pieces), which needs no unknown token.",
    "model không khai báo token unknown và vocabulary của nó không chứng minh được mọi văn bản đều "
    "encode được ({why}), nên các ký tự nó không biểu diễn được sẽ mất đi không dấu vết. Hãy khai báo một "
    "token của nó làm unk_token của model trong tokenizer.json, hoặc dùng tokenizer bao phủ mọi byte "
    "(byte-level BPE đủ mọi ký hiệu byte, hoặc byte fallback đủ 256 piece <0xNN>), loại này không cần token unknown.",
)
#: Why a vocabulary without an unknown token is not proven to encode every text (``{why}`` above).
NO_UNK_WHY = {
    "not_bytes": Text("it is neither byte-level nor byte fallback",
                      "nó không phải byte-level cũng không có byte fallback"),
    "byte_symbols": Text("its byte-level alphabet lacks {count} byte symbols, e.g. byte {example}",
                         "bảng chữ byte-level thiếu {count} ký hiệu byte, ví dụ byte {example}"),
    "byte_pieces": Text("byte fallback lacks {count} of the 256 <0xNN> pieces, e.g. {example}",
                        "byte fallback thiếu {count} trong 256 piece <0xNN>, ví dụ {example}"),
    "affixes": Text("its BPE model adds a subword prefix or suffix, so single bytes are not whole tokens",
                    "model BPE thêm tiền tố hoặc hậu tố subword, nên byte đơn lẻ không phải là token"),
}
SPECIAL_FIX_COMPANION_UNKNOWN = Text(
    "{file} names {key} {content!r}, which is not a token of the tokenizer.json: name one of its tokens there.",
    "{file} khai báo {key} là {content!r}, nhưng đó không phải token của tokenizer.json: hãy khai báo một token có sẵn.",
)
SPECIAL_FIX_COMPANIONS_DIFFER = Text(
    "tokenizer_config.json names {key} {first!r} and special_tokens_map.json names {second!r}; Hugging Face "
    "loaders of different versions take different ones: make both name the same token.",
    "tokenizer_config.json khai báo {key} là {first!r} còn special_tokens_map.json khai báo {second!r}; các phiên "
    "bản loader Hugging Face khác nhau chọn khác nhau: hãy để cả hai cùng khai báo một token.",
)

# TokenizerFailedError
TOKENIZER_FAILED = Text("The tokenizer library failed while encoding a sample.",
                        "Thư viện tokenizer bị lỗi khi encode một sample.")
TOKENIZER_FILE = Text("Tokenizer:", "Tokenizer:")
TOKENIZER_FAILED_FIX = Text("check the tokenizer file (its pre-tokenizer pattern) with this line's text, or "
                            "use another tokenizer; skip the line with on_bad_record does not apply.",
                            "hãy kiểm tra file tokenizer (pattern pre-tokenizer của nó) với nội dung dòng này, "
                            "hoặc dùng tokenizer khác; on_bad_record không bỏ qua được lỗi này.")
