"""Bilingual message texts of MintDim errors, kept in one place.

Every error of the spec prints an English block and a Vietnamese block with the same
facts. Keeping the wording here, apart from the error classes, lets the two languages
be reviewed side by side and keeps `errors.py` about facts rather than phrasing.

A message is a title followed by paragraphs separated by one blank line, exactly as the
spec prints it; a bullet list is one paragraph with one `• ` item per line. The helpers
below build each paragraph as an English/Vietnamese pair so a fact can never appear in
one language and be forgotten in the other.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

BULLET = "• "
PARAGRAPH_BREAK = "\n\n"


class Text(NamedTuple):
    """One paragraph in both languages, so both blocks are always built together."""

    en: str
    vi: str


def same(text: str) -> Text:
    """A paragraph that reads the same in both blocks (paths, code identifiers)."""
    return Text(text, text)


def labeled(label: Text, value_en: object, value_vi: object | None = None) -> Text:
    """`Label: value` in both languages; the value is shared unless a translation is given."""
    en = str(value_en)
    vi = en if value_vi is None else str(value_vi)
    return Text(f"{label.en} {en}", f"{label.vi} {vi}")


def bullets(items_en: Iterable[object], items_vi: Iterable[object] | None = None) -> Text:
    """A bullet-list paragraph; the items are shared unless translated items are given."""
    en_items = [str(item) for item in items_en]
    vi_items = en_items if items_vi is None else [str(item) for item in items_vi]
    return Text(
        "\n".join(BULLET + item for item in en_items),
        "\n".join(BULLET + item for item in vi_items),
    )


def bullet_pairs(items: Iterable[Text]) -> Text:
    """A bullet-list paragraph from items that are already translated pairs."""
    items = list(items)
    return bullets([item.en for item in items], [item.vi for item in items])


def words(items: Iterable[object]) -> str:
    """Space-separated list, as the spec prints field names and keys."""
    return " ".join(str(item) for item in items)


def number_en(value: int) -> str:
    """English grouping: 5,000,000,000."""
    return f"{value:,}"


def number_vi(value: int) -> str:
    """Vietnamese grouping: 5.000.000.000."""
    return f"{value:,}".replace(",", ".")


def plural_en(count: object, singular: str, plural: str) -> str:
    """English noun agreeing with `count`; Vietnamese nouns do not inflect."""
    return singular if count == 1 else plural


def render(error_name: str, title: Text, paragraphs: Sequence[Text]) -> tuple[str, str]:
    """Build the English and Vietnamese blocks: `Name: title`, then blank-line paragraphs.

    A paragraph that is empty in one language is left out of that block only; the spec
    has notes (such as the closing line of PipelineValidationError) that exist in one
    language alone.
    """
    en = PARAGRAPH_BREAK.join([f"{error_name}: {title.en}", *(p.en for p in paragraphs if p.en)])
    vi = PARAGRAPH_BREAK.join([f"{error_name}: {title.vi}", *(p.vi for p in paragraphs if p.vi)])
    return en, vi


# ---------------------------------------------------------------------------
# Shared labels
# ---------------------------------------------------------------------------

FILE = Text("File:", "File:")
FILES = Text("Files:", "Các file:")
LINE = Text("Line:", "Dòng:")
FIELD = Text("Field:", "Field:")
REASON = Text("Reason:", "Lý do:")
PROBLEM = Text("Problem:", "Vấn đề:")
RULES = Text("Rules:", "Quy tắc:")
RULE = Text("Rule:", "Quy tắc:")
FIX = Text("Fix:", "Cách sửa:")
DIRECTORY = Text("Directory:", "Thư mục:")
SUPPORTS = Text("MintDim supports:", "MintDim hỗ trợ:")

# ---------------------------------------------------------------------------
# PipelineValidationError
# ---------------------------------------------------------------------------

PIPELINE_INCOMPLETE = Text(
    "Pipeline configuration is incomplete.",
    "Pipeline chưa được cấu hình đầy đủ.",
)
PIPELINE_MISSING = Text("Missing:", "Thiếu:")
PIPELINE_MISSING_NOTE = Text("", "Thiếu cấu hình nào thì báo thiếu cấu hình đó.")
PIPELINE_INVALID = Text(
    "Invalid pipeline configuration.",
    "Cấu hình pipeline không hợp lệ.",
)

# ---------------------------------------------------------------------------
# MintDimFileNotFoundError
# ---------------------------------------------------------------------------

FILE_NOT_FOUND = Text("Required file was not found.", "Không tìm thấy file cần dùng.")
FILE_NOT_FOUND_CONTEXT = Text("Context:", "Ngữ cảnh:")
FILE_NOT_FOUND_PATH = Text("Missing file:", "File thiếu:")
FILE_NOT_REGULAR = Text("Required path is not a regular file.", "Đường dẫn cần dùng không phải là file thường.")
FILE_NOT_REGULAR_PATH = Text("Path:", "Đường dẫn:")
FILE_NOT_REGULAR_FOUND = Text("Found:", "Tìm thấy:")
#: What a path that is not a readable regular file turned out to be (``MintDimFileNotFoundError.not_a_file``).
FILE_KINDS = {
    "directory": Text("a directory", "một thư mục"),
    "fifo": Text("a named pipe (FIFO): reading it would wait forever",
                 "một named pipe (FIFO): đọc nó sẽ chờ mãi mãi"),
    "char_device": Text("a character device", "một thiết bị ký tự"),
    "block_device": Text("a block device", "một thiết bị khối"),
    "socket": Text("a socket", "một socket"),
    "unreadable": Text("a file this user cannot read", "một file mà người dùng này không đọc được"),
    "other": Text("not a regular file", "không phải file thường"),
}

# ---------------------------------------------------------------------------
# SourceParseError / SampleSchemaError
# ---------------------------------------------------------------------------

SOURCE_PARSE = Text("JSONL line could not be parsed.", "Không parse được dòng JSONL.")

# TokenizerFailedError
TOKENIZER_FAILED = Text("The tokenizer library failed while encoding a sample.",
                        "Thư viện tokenizer bị lỗi khi encode một sample.")
TOKENIZER_FILE = Text("Tokenizer:", "Tokenizer:")
TOKENIZER_FAILED_FIX = Text("check the tokenizer file (its pre-tokenizer pattern) with this line's text, or "
                            "use another tokenizer; skip the line with on_bad_record does not apply.",
                            "hãy kiểm tra file tokenizer (pattern pre-tokenizer của nó) với nội dung dòng này, "
                            "hoặc dùng tokenizer khác; on_bad_record không bỏ qua được lỗi này.")

# DiskFullError
DISK_FULL = Text("No space left on the device while the build wrote its output; nothing was published.",
                 "Thiết bị hết dung lượng trong lúc build ghi output; không có gì được publish.")
DISK_FREE = Text("Free bytes now:", "Số byte còn trống:")
DISK_FULL_FIX = Text("free space (the build needs about its input's size twice, for staging and output) or "
                     "choose an output on a larger disk, then build into a new directory.",
                     "hãy giải phóng dung lượng (build cần khoảng gấp đôi kích thước input, cho staging và "
                     "output) hoặc chọn output trên đĩa lớn hơn, rồi build vào thư mục mới.")

# InputChangedError
INPUT_CHANGED = Text("An input file changed while the build read it; nothing was published.",
                     "Một file input đã thay đổi trong lúc build đang đọc; không có gì được publish.")
INPUT_CHANGED_SIZES = Text("Sizes:", "Kích thước:")
INPUT_CHANGED_SIZES_TEXT = Text("{listed_size} bytes when the build planned it, {size_now} bytes since",
                                "{listed_size} byte khi build lập kế hoạch, {size_now} byte sau đó")
INPUT_CHANGED_FIX = Text("build from files that no writer changes during the build (a finished file or a "
                         "snapshot), then run the build again.",
                         "hãy build từ các file không bị ghi trong lúc build (file đã ghi xong hoặc một bản "
                         "snapshot), rồi chạy lại build.")
SOURCE_LOOKS_COMPRESSED = Text(
    "the file looks {compression}-compressed (it starts with {compression}'s magic bytes), "
    "but its name has no compressed extension, so it was read as plain JSONL",
    "file trông như đã nén {compression} (bắt đầu bằng magic bytes của {compression}), "
    "nhưng tên file không có đuôi nén nên bị đọc như JSONL thường",
)
SOURCE_TRUNCATED = Text(
    "the {compression} data ends before its compressed stream does (a truncated file?); "
    "it cannot be read from this line on",
    "dữ liệu {compression} kết thúc trước khi luồng nén kết thúc (file bị cắt cụt?); "
    "không đọc được từ dòng này trở đi",
)
SOURCE_CORRUPT = Text(
    "the {compression} data is corrupt ({detail}); it cannot be read from this line on",
    "dữ liệu {compression} bị hỏng ({detail}); không đọc được từ dòng này trở đi",
)
SOURCE_BAD_COMPRESSED_FIX = Text(
    "copy or download the file again and check it (for example gzip -t, zstd -t, xz -t, bzip2 -t).",
    "sao chép hoặc tải lại file và kiểm tra nó (ví dụ gzip -t, zstd -t, xz -t, bzip2 -t).",
)
SOURCE_LOOKS_COMPRESSED_FIX = Text(
    "rename the file to end in {extension} (it is then decompressed while read), "
    "or decompress it.",
    "đổi tên file cho có đuôi {extension} (khi đó file được giải nén lúc đọc), "
    "hoặc giải nén file.",
)

SAMPLE_MISSING_FIELDS = Text(
    "JSONL sample is missing declared fields.",
    "Sample JSONL thiếu field đã khai báo.",
)
SAMPLE_DECLARED = Text("Declared fields:", "Field đã khai báo:")
SAMPLE_MISSING = Text("Missing fields:", "Field bị thiếu:")
SAMPLE_AVAILABLE = Text("Available keys:", "Key hiện có:")

SAMPLE_WRONG_TYPE = Text(
    "JSONL sample field has an unsupported value type.",
    "Field của sample JSONL có kiểu giá trị không được hỗ trợ.",
)
SAMPLE_WRONG_TYPE_REASON = Text(
    "field value must be a string, got {type_name}",
    "giá trị field phải là string, hiện tại là {type_name}",
)

# Machine-readable reasons written to bad_record_index.jsonl (English only by design).
REASON_MISSING_FIELDS = "missing fields: {missing}"
REASON_WRONG_TYPE = "field value must be a string: {field}"

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
TOKENIZER_TYPE_HINT = Text(" (did you mean {close!r}?)", " (có phải ý bạn là {close!r}?)")

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

# ---------------------------------------------------------------------------
# 1-or-N mapping errors
# ---------------------------------------------------------------------------


class MappingText(NamedTuple):
    """Wording of one "Received N input files but M <things>." error."""

    noun_en: str
    nouns_en: str
    noun_vi: str
    shared: Text
    per_file: Text


MAPPING_TITLE = Text(
    "Received {files} input {file_word} but {got} {noun}.",
    "Nhận {files} file đầu vào nhưng có {got} {noun}.",
)

MAPPINGS = {
    "TokenizerMappingError": MappingText(
        "tokenizer",
        "tokenizers",
        "tokenizer",
        Text("1 tokenizer shared across all files", "1 tokenizer dùng chung cho tất cả file"),
        Text("N tokenizers for N files", "N tokenizer cho N file"),
    ),
    "FieldMappingError": MappingText(
        "field config",
        "field configs",
        "cấu hình fields",
        Text(
            "1 field config shared across all files",
            "1 cấu hình fields dùng chung cho tất cả file",
        ),
        Text("N field configs for N files", "N cấu hình fields cho N file"),
    ),
    "TemplateMappingError": MappingText(
        "template",
        "templates",
        "template",
        Text("1 template shared across all files", "1 template dùng chung cho tất cả file"),
        Text("N templates for N files", "N template cho N file"),
    ),
    "UnitMappingError": MappingText(
        "unit config",
        "unit configs",
        "cấu hình unit",
        Text(
            "1 unit config shared across all files",
            "1 cấu hình unit dùng chung cho tất cả file",
        ),
        Text("N unit configs for N input files", "N cấu hình unit cho N file đầu vào"),
    ),
    "OutputMappingError": MappingText(
        "output directory",
        "output directories",
        "thư mục output",
        Text("1 shared output directory", "1 thư mục output dùng chung"),
        Text("N output directories for N input files", "N thư mục output cho N file đầu vào"),
    ),
}

OUTPUT_INCONSISTENT = Text(
    "Input files sharing an output directory must share tokenizer, sequence_template, "
    "sizes and samples_per_shard.",
    "Các file đầu vào dùng chung một thư mục output phải dùng chung tokenizer, "
    "sequence_template, sizes và samples_per_shard.",
)
OUTPUT_DIFFERS = Text("Differs in:", "Khác nhau ở:")

# ---------------------------------------------------------------------------
# Template errors
# ---------------------------------------------------------------------------

TEMPLATE_SOURCE_FILE = Text("Source file:", "File nguồn:")
TEMPLATE_DECLARATION = Text("API declaration for this file:", "Khai báo API cho file này:")
TEMPLATE_MISMATCH_FIELD = Text("Field causing template mismatch:", "Field gây lệch template:")
TEMPLATE_DECLARATION_VALUE = "fields = {fields!r} template = {template!r}"

TEMPLATE_UNDECLARED = Text(
    "template uses {{{field}}}, but fields does not declare it",
    "template dùng {{{field}}}, nhưng fields không khai báo field này",
)
TEMPLATE_UNUSED = Text(
    "fields declares this field, but template does not use {{{field}}}",
    "fields khai báo field này, nhưng template không dùng {{{field}}}",
)
TEMPLATE_EMPTY_PLACEHOLDER = Text(
    "template has an empty placeholder {}",
    "template có placeholder rỗng {}",
)
TEMPLATE_UNCLOSED_BRACE = Text(
    "template has an unbalanced '{', write '{{' for a literal brace",
    "template có '{' không được đóng, hãy viết '{{' cho dấu ngoặc literal",
)
TEMPLATE_UNOPENED_BRACE = Text(
    "template has an unbalanced '}', write '}}' for a literal brace",
    "template có '}' không có '{' tương ứng, hãy viết '}}' cho dấu ngoặc literal",
)

TEMPLATE_UNK = Text(
    "Template literal segments produce UNK when encoded by the tokenizer.",
    "Các đoạn literal của template tạo UNK khi được tokenizer encode.",
)
TEMPLATE_UNK_FILE_INDEX = Text("File index:", "Vị trí file:")
TEMPLATE_LABEL = Text("Template:", "Template:")
TEMPLATE_UNK_PROBLEM = Text(
    "template literal characters are not fully covered by tokenizer vocabulary",
    "ký tự literal trong template không được tokenizer vocabulary bao phủ đầy đủ",
)
TEMPLATE_UNK_FIX = Text(
    "adjust template literal characters, use a tokenizer that covers them, "
    "or run with an explicit template-UNK policy.",
    "chỉnh ký tự literal trong template, dùng tokenizer bao phủ các ký tự đó, "
    "hoặc chạy với template-UNK policy rõ ràng.",
)
# Not in the spec: the characters behind the UNK, and how to set the policy it names.
TEMPLATE_UNK_CHARS = Text("Characters that encode to UNK:", "Ký tự bị encode thành UNK:")
TEMPLATE_UNK_IN_LITERALS = Text("in literal segments", "trong các đoạn literal")
TEMPLATE_UNK_POLICY = Text(
    "Policy: --on-template-unk continue on the command line, on_template_unk: continue in "
    "the job file's run section, or .run(on_template_unk=\"continue\") in Python "
    "(every sample then carries the literal's UNK tokens).",
    "Policy: --on-template-unk continue trên dòng lệnh, on_template_unk: continue trong "
    "section run của job file, hoặc .run(on_template_unk=\"continue\") trong Python "
    "(khi đó mọi sample đều mang các token UNK của literal).",
)

# ---------------------------------------------------------------------------
# Unit errors
# ---------------------------------------------------------------------------

UNIT_INVALID = Text("Invalid unit config.", "Cấu hình unit không hợp lệ.")
UNIT_RULES = (
    Text("sizes must be positive integers", "sizes phải là các số nguyên dương"),
    Text("sizes must be sorted ascending", "sizes phải được sắp xếp tăng dần"),
    Text("build_batch must be a positive integer", "build_batch phải là số nguyên dương"),
)

UNIT_OVERFLOW = Text(
    "Sample token length exceeds max unit size.",
    "Độ dài token của sample vượt quá unit size lớn nhất.",
)
UNIT_OVERFLOW_SAMPLE = Text("Sample:", "Sample:")
UNIT_OVERFLOW_TOKEN_COUNT = Text("token_count:", "token_count:")
UNIT_OVERFLOW_MAX = Text("max_unit_size:", "max_unit_size:")
UNIT_OVERFLOW_FIXES = (
    Text("increase unit sizes", "tăng unit sizes"),
    Text(
        "or run with an overflow policy that truncates, skips, or prompts",
        "hoặc chạy với overflow policy để truncate, skip, hoặc prompt",
    ),
)
# Not in the spec: a sample that ``extend`` cannot hold, since no unit may pass the maximum.
UNIT_OVERFLOW_EXTEND_LIMIT = Text(
    "on_overflow extend adds a unit as long as the sample, and no unit may exceed "
    "max_unit_size tokens (the maximum unit size, 2^24)",
    "on_overflow extend thêm một unit dài bằng sample, nhưng không unit nào được vượt quá "
    "max_unit_size token (unit size tối đa, 2^24)",
)
UNIT_OVERFLOW_EXTEND_FIXES = (
    Text("cut or drop such samples: --on-overflow truncate or --on-overflow skip",
         "cắt hoặc bỏ các sample như vậy: --on-overflow truncate hoặc --on-overflow skip"),
    Text("or split the document into shorter samples", "hoặc chia tài liệu thành các sample ngắn hơn"),
)
# Not in the spec: where the overflow policy is set (this project has no prompt).
UNIT_OVERFLOW_POLICY = Text(
    "Policy: --on-overflow truncate (or skip, extend) on the command line, on_overflow: truncate "
    "in the job file's run section, or .run(on_overflow=\"truncate\") in Python.",
    "Policy: --on-overflow truncate (hoặc skip, extend) trên dòng lệnh, on_overflow: truncate "
    "trong section run của job file, hoặc .run(on_overflow=\"truncate\") trong Python.",
)

# ---------------------------------------------------------------------------
# Output errors
# ---------------------------------------------------------------------------

OUTPUT_NOT_EMPTY = Text(
    "Output directory already exists and is not empty.",
    "Thư mục output đã tồn tại và không rỗng.",
)
OUTPUT_USE_NEW = Text("Use a new output directory.", "Hãy dùng thư mục output mới.")

OUTPUT_UNUSABLE = Text("Output directory cannot be used.", "Không dùng được thư mục output.")
#: Why (``OutputValidationError.unusable``): the problem, then the fix.
OUTPUT_UNUSABLE_REASONS = {
    "dangling_link": (
        Text("it is a symbolic link to a missing target: {detail}",
             "đây là symbolic link trỏ tới đích không tồn tại: {detail}"),
        Text("remove the link or create its target directory.",
             "hãy xoá link hoặc tạo thư mục đích của nó."),
    ),
    "not_directory": (
        Text("it exists and is not a directory: {detail}", "đường dẫn đã tồn tại và không phải thư mục: {detail}"),
        Text("choose another output directory.", "hãy chọn thư mục output khác."),
    ),
    "not_writable": (
        Text("this user cannot create or write it: {detail}", "người dùng này không tạo hoặc ghi được: {detail}"),
        Text("choose a directory you can write, or fix its permissions.",
             "hãy chọn thư mục có quyền ghi, hoặc sửa quyền của thư mục."),
    ),
    "shared_writable": (
        Text("another user can write it, and could swap the build's staged files: {detail}",
             "người dùng khác có quyền ghi vào đó và có thể tráo các file staging của bản build: {detail}"),
        Text("build into a directory only you can write (chmod go-w, or a new directory of your own).",
             "hãy build vào thư mục chỉ bạn có quyền ghi (chmod go-w, hoặc một thư mục mới của riêng bạn)."),
    ),
    "inside_staging": (
        Text("it lies inside a build's staging folder {detail}, which that build removes once it publishes",
             "đường dẫn nằm trong thư mục staging {detail} của một bản build, thư mục này bị xoá khi build publish"),
        Text("choose a directory outside any .mintdim-staging folder.",
             "hãy chọn thư mục nằm ngoài mọi thư mục .mintdim-staging."),
    ),
    "latest_not_file": (
        Text("as a versioned root its LATEST must be a file naming the latest build, and it is not: {detail}",
             "là versioned root thì LATEST của nó phải là file ghi id của bản build mới nhất, nhưng không phải: "
             "{detail}"),
        Text("remove or rename that path, or choose another versioned root.",
             "hãy xoá hoặc đổi tên đường dẫn đó, hoặc chọn versioned root khác."),
    ),
    "dataset_as_root": (
        Text("it is a published dataset ({detail}), so it cannot also be a versioned root",
             "đây là một dataset đã publish ({detail}), nên không thể đồng thời là versioned root"),
        Text("choose another versioned root, or build without --versioned into a new directory.",
             "hãy chọn versioned root khác, hoặc build không có --versioned vào một thư mục mới."),
    ),
}

OUTPUT_OVERLAP = Text(
    "Output directories must not overlap.",
    "Các thư mục output không được chồng lên nhau.",
)
OUTPUT_OVERLAPS_WITH = Text("Overlaps with:", "Chồng lên:")
OUTPUT_OVERLAP_RELATIONS = {
    "same": Text("both paths are the same directory: {resolved}",
                 "hai đường dẫn là cùng một thư mục: {resolved}"),
    "inside": Text("the second directory is inside the first ({resolved})",
                   "thư mục thứ hai nằm bên trong thư mục thứ nhất ({resolved})"),
}
OUTPUT_OVERLAP_FIX = Text(
    "give each output a directory of its own, none inside another; to share one output, "
    "list the same path.",
    "hãy dùng cho mỗi output một thư mục riêng, không thư mục nào nằm trong thư mục khác; muốn "
    "dùng chung một output thì ghi cùng một đường dẫn.",
)
OUTPUT_HOLDS_INPUT = Text(
    "An output directory must not hold the build's own input or tokenizer files.",
    "Thư mục output không được chứa file đầu vào hoặc file tokenizer của chính build.",
)
OUTPUT_HOLDS_INPUT_FIX = Text(
    "move the file out of the output directory, or choose another output directory.",
    "hãy chuyển file ra khỏi thư mục output, hoặc chọn thư mục output khác.",
)

OUTPUT_CLAIMED = Text(
    "Output directory belongs to another build.",
    "Thư mục output thuộc về một build khác.",
)
OUTPUT_CLAIMED_BY = Text("Claimed by:", "Được giữ bởi:")
OUTPUT_CLAIMED_OWNER = Text(
    "build {owner} (host {host}, process {pid}, started {started_at})",
    "build {owner} (máy {host}, tiến trình {pid}, bắt đầu lúc {started_at})",
)
OUTPUT_CLAIMED_STATUS = Text("Status:", "Trạng thái:")
OUTPUT_CLAIMED_STATUSES = {
    "running": Text("that process is still running on this host",
                    "tiến trình đó vẫn đang chạy trên máy này"),
    "gone": Text("that process is no longer running on this host: the build was killed or crashed",
                 "tiến trình đó không còn chạy trên máy này: build đã bị dừng hoặc bị lỗi"),
    "unknown": Text("it may still be running (it was started on another host)",
                    "build đó có thể vẫn đang chạy (nó được chạy trên máy khác)"),
    "unreadable": Text("its claim file is empty or unreadable (a build stopped as it claimed the directory)",
                       "file claim của nó rỗng hoặc không đọc được (một build đã dừng ngay khi claim thư mục)"),
    "released": Text("this build's launcher released its claim (the build was interrupted or failed), so its "
                     "workers must not publish",
                     "launcher của build này đã trả claim (build bị dừng hoặc thất bại), nên các worker không "
                     "được publish"),
    "replaced": Text("it replaced this build's claim (object stores cannot claim a directory atomically)",
                     "build đó đã thay claim của build này (object store không claim thư mục một cách nguyên tử được)"),
}
OUTPUT_CLAIMED_RULE = Text(
    "One output directory belongs to one build. If that build is still running, wait for it or "
    "use another directory. If it was stopped or failed (UNIT_BUILD_FAILED.md in its units), "
    "nothing in the directory can be trusted: delete the directory and build again.",
    "Mỗi thư mục output chỉ thuộc về một build. Nếu build đó vẫn đang chạy, hãy chờ nó xong hoặc "
    "dùng thư mục khác. Nếu build đó đã bị dừng hoặc thất bại (có UNIT_BUILD_FAILED.md trong các "
    "unit), không thể tin dữ liệu trong thư mục: hãy xoá thư mục rồi build lại.",
)

# ---------------------------------------------------------------------------
# TokenDTypeCapacityError
# ---------------------------------------------------------------------------

DTYPE_CAPACITY = Text(
    "Tokenizer vocabulary size is too large for the token dtypes supported by MintDim.",
    "Kích thước vocabulary của tokenizer quá lớn so với token dtype MintDim hỗ trợ.",
)
DTYPE_VOCAB_SIZE = Text("Tokenizer vocab_size:", "Tokenizer vocab_size:")
DTYPE_SUPPORTED = Text("Supported token dtypes:", "Token dtype được hỗ trợ:")
DTYPE_LIMIT = Text("{dtype}: max vocab_size {limit}", "{dtype}: vocab_size tối đa {limit}")
DTYPE_LIMITS = (("uint16", 0xFFFF), ("uint32", 0xFFFFFFFF))
DTYPE_FIXES = (
    Text("use a tokenizer with a smaller vocabulary", "dùng tokenizer có vocabulary nhỏ hơn"),
    Text(
        "or use a MintDim version that supports a wider token dtype",
        "hoặc dùng phiên bản MintDim hỗ trợ token dtype rộng hơn",
    ),
)

# ---------------------------------------------------------------------------
# SamplesPerShardError
# ---------------------------------------------------------------------------

SAMPLES_PER_SHARD_INVALID = Text(
    "Invalid samples_per_shard.",
    "samples_per_shard không hợp lệ.",
)
SAMPLES_PER_SHARD_NOT_POSITIVE = Text(
    "samples_per_shard[{index}] must be a positive int, got {value}",
    "samples_per_shard[{index}] phải là số nguyên dương, hiện tại là {value}",
)
SAMPLES_PER_SHARD_ARITY = Text(
    "Received {files} input {file_word} but {got} samples_per_shard {entry_word}",
    "Nhận {files} file đầu vào nhưng có {got} entries samples_per_shard",
)
SAMPLES_PER_SHARD_RULES = (
    Text(
        "each samples_per_shard[i] is a positive int",
        "mỗi samples_per_shard[i] phải là số nguyên dương",
    ),
    Text(
        "len(samples_per_shard) == 1 or len(samples_per_shard) == file_count",
        "len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số lượng file",
    ),
)

# ---------------------------------------------------------------------------
# StorageAccessError
# ---------------------------------------------------------------------------

STORAGE_UNREACHABLE = Text(
    "Storage could not be reached with the options given.",
    "Không truy cập được storage với các option đã cho.",
)
STORAGE_PATH = Text("Path:", "Đường dẫn:")
STORAGE_FIXES = {
    "endpoint": Text(
        "the S3 endpoint did not answer: check --s3_endpoint_url (scheme, host and port)",
        "S3 endpoint không phản hồi: kiểm tra --s3_endpoint_url (scheme, host và port)",
    ),
    "credentials": Text(
        "the S3 keys were refused or missing: check --s3_access_key_id and --s3_secret_access_key "
        "(and --s3_session_token for temporary keys)",
        "S3 từ chối key hoặc thiếu key: kiểm tra --s3_access_key_id và --s3_secret_access_key "
        "(và --s3_session_token nếu dùng key tạm thời)",
    ),
    "region": Text(
        "the bucket lives in another region: check --s3_region_name",
        "bucket nằm ở region khác: kiểm tra --s3_region_name",
    ),
    "bucket": Text(
        "the bucket does not exist: check the path (and --s3_endpoint_url if it points at the wrong store)",
        "bucket không tồn tại: kiểm tra đường dẫn (và --s3_endpoint_url nếu nó trỏ sai storage)",
    ),
    "gcs": Text(
        "check --project and the Google credentials of the launcher and the workers "
        "(GOOGLE_APPLICATION_CREDENTIALS, or gcloud auth application-default login)",
        "kiểm tra --project và Google credentials của launcher và các worker "
        "(GOOGLE_APPLICATION_CREDENTIALS, hoặc gcloud auth application-default login)",
    ),
}

# ---------------------------------------------------------------------------
# Reading a dataset back: ReaderError, ReportError, DatasetAccessError
# ---------------------------------------------------------------------------
# One line per language: where (the dataset, then the file, shard, record or line),
# then what is wrong. `{detail}` is a problem made of parts (several checks failing on
# one record, the problems of a manifest), joined before the error is built. A
# template that names `{path}`, `{file}` or `{shard}` places it itself, so the
# location is not put in front of it again.

#: Where in a dataset: ``{where}`` is a file or shard path relative to the dataset.
READ_AT_RECORD = Text("{where} record {record}", "{where} bản ghi {record}")
READ_AT_ROW = Text("{where} record {record} (sample {sample_id}, sample_index.jsonl line {line})",
                   "{where} bản ghi {record} (sample {sample_id}, sample_index.jsonl dòng {line})")
READ_AT_LINE = Text("{where} line {line}", "{where} dòng {line}")

#: What is wrong, by key (``ReaderError(kind, ...)`` and the parts of a ``{detail}``).
READ_PROBLEMS = {
    # files
    "file_not_found": Text("file not found", "không tìm thấy file"),
    "not_json": Text("not valid JSON ({why})", "không phải JSON hợp lệ ({why})"),
    "unreadable": Text("cannot be read ({why})", "không đọc được ({why})"),
    "unit_not_directory": Text(
        "cannot be read (Not a directory; a unit directory holds its shard files)",
        "không đọc được (không phải thư mục; thư mục unit chứa các file shard của nó)"),
    # manifest.json and length_field.json
    "no_manifest": Text("no manifest.json; not a published mintdim output",
                        "không có manifest.json; đây không phải output mintdim đã publish"),
    "no_manifest_failed": Text(
        "no manifest.json; not a published mintdim output (the build failed: see {unit}/UNIT_BUILD_FAILED.md)",
        "không có manifest.json; đây không phải output mintdim đã publish (build đã thất bại: xem "
        "{unit}/UNIT_BUILD_FAILED.md)"),
    "failure_marker": Text(
        "UNIT_BUILD_FAILED.md beside manifest.json: a build failed in this directory, so it is not a finished "
        "dataset; rebuild it into an empty directory",
        "có UNIT_BUILD_FAILED.md cạnh manifest.json: một build đã thất bại trong thư mục này, nên đây không phải "
        "dataset hoàn chỉnh; hãy build lại vào một thư mục rỗng"),
    "not_objects": Text("manifest.json and length_field.json must hold JSON objects",
                        "manifest.json và length_field.json phải chứa JSON object"),
    "token_dtype": Text("token_dtype must be uint16 or uint32, got {got}",
                        "token_dtype phải là uint16 hoặc uint32, hiện tại là {got}"),
    "metadata": Text("{detail}", "{detail}"),
    "lf_magic": Text("length_field.json magic is {got}, {dtype} needs {want}",
                     "magic trong length_field.json là {got}, {dtype} cần {want}"),
    "lf_template": Text("length_field.json sequence_template must be a non-empty list of names",
                        "sequence_template trong length_field.json phải là list tên không rỗng"),
    "template_differs": Text("manifest.json sequence_template differs from length_field.json",
                             "sequence_template trong manifest.json khác với length_field.json"),
    "storage_differs": Text(
        "manifest.json token_storage {storage} differs from length_field.json ({dtype}, {magic})",
        "token_storage {storage} trong manifest.json khác với length_field.json ({dtype}, {magic})"),
    "tokenizer_int": Text(
        "manifest.json tokenizer.{key} must be an integer of at least {least}, got {got}",
        "tokenizer.{key} trong manifest.json phải là số nguyên không nhỏ hơn {least}, hiện tại là {got}"),
    "pad_id": Text("pad id: length_field.json says {lf}, manifest.json says {manifest}",
                   "pad id: length_field.json ghi {lf}, manifest.json ghi {manifest}"),
    "sizes": Text("manifest.json units.sizes must be ascending positive integers, got {got}",
                  "units.sizes trong manifest.json phải là các số nguyên dương tăng dần, hiện tại là {got}"),
    "sizes_wrap": Text(
        "unit size {size} does not fit {dtype} header slots (at most {top}): its lengths would have wrapped; "
        "rebuild the dataset",
        "unit size {size} không vừa slot header {dtype} (tối đa {top}): độ dài của nó sẽ bị tràn số; "
        "hãy build lại dataset"),
    "samples_per_shard": Text(
        "manifest.json output.samples_per_shard must be a positive integer, got {got}",
        "output.samples_per_shard trong manifest.json phải là số nguyên dương, hiện tại là {got}"),
    "section": Text("manifest.json {key} must be a JSON object, got {got}",
                    "{key} trong manifest.json phải là JSON object, hiện tại là {got}"),
    "manifest_shape": Text("must hold a JSON object with a units object",
                           "phải chứa một JSON object có object units"),
    # stats.json and the shard files of each unit, checked at open
    "no_stats": Text("no stats.json; it counts each unit's samples and shards",
                     "không có stats.json; file này đếm sample và shard của từng unit"),
    "stats_units": Text("stats.json has no units object counting each unit's samples",
                        "stats.json không có object units đếm sample của từng unit"),
    "stats_samples": Text("stats.json units.{unit}.samples must be a count, got {got}",
                          "units.{unit}.samples trong stats.json phải là một số đếm, hiện tại là {got}"),
    "unit_failed": Text("a failure marker in a published unit; rebuild the dataset",
                        "có marker thất bại trong một unit đã publish; hãy build lại dataset"),
    "shard_files": Text(
        "{file} holds {count} shard files, but its {samples} samples (stats.json) at samples_per_shard={sps} fill "
        "{want} (shard_000000.bin to {last}): shards were deleted, added or renamed",
        "{file} chứa {count} file shard, nhưng {samples} sample của nó (stats.json) với samples_per_shard={sps} "
        "lấp đầy {want} shard (shard_000000.bin đến {last}): shard đã bị xoá, thêm hoặc đổi tên"),
    "shard_files_none": Text(
        "{file} holds {count} shard files, but its {samples} samples (stats.json) at samples_per_shard={sps} fill "
        "{want} (none): shards were deleted, added or renamed",
        "{file} chứa {count} file shard, nhưng {samples} sample của nó (stats.json) với samples_per_shard={sps} "
        "lấp đầy {want} shard (không có shard nào): shard đã bị xoá, thêm hoặc đổi tên"),
    "shard_same_file": Text(
        "is the same file as {other} (a link to it, or a hard link): each shard holds records of its own",
        "là cùng một file với {other} (một link tới nó, hoặc hard link): mỗi shard chứa các bản ghi riêng của nó"),
    # checksums
    "no_checksums": Text(
        "manifest.json records no checksums (built before they were recorded); open it without checksums=True",
        "manifest.json không ghi checksum (dataset được build trước khi có checksum); hãy mở nó mà không dùng "
        "checksums=True"),
    "sums_missing": Text("SHA256SUMS is missing (manifest.json records its sha256)",
                         "thiếu SHA256SUMS (manifest.json ghi sha256 của nó)"),
    "no_sum_line": Text("SHA256SUMS has no line for this file", "SHA256SUMS không có dòng nào cho file này"),
    "sha_differs": Text("sha256 is {got}, {recorder} records {want} (the file changed after the build)",
                        "sha256 là {got}, {recorder} ghi {want} (file đã bị thay đổi sau khi build)"),
    # sample_index.jsonl
    "no_index": Text("no sample_index.jsonl ({why})", "không có sample_index.jsonl ({why})"),
    "index_rows": Text(
        "sample_index.jsonl has {got} rows for unit {unit}, stats.json counts {want} samples there (rows deleted "
        "or the index replaced)",
        "sample_index.jsonl có {got} dòng cho unit {unit}, nhưng stats.json đếm {want} sample ở đó (dòng đã bị "
        "xoá hoặc index đã bị thay)"),
    "index_extra_unit": Text(
        "sample_index.jsonl has rows for unit {unit}, which manifest.json units.sizes {sizes} does not hold",
        "sample_index.jsonl có dòng cho unit {unit}, nhưng units.sizes {sizes} trong manifest.json không có unit này"),
    "index_duplicate": Text("sample_index.jsonl lines {first} and {second} both describe sample {sample_id}",
                            "dòng {first} và dòng {second} của sample_index.jsonl cùng mô tả sample {sample_id}"),
    "index_stray": Text(
        "not one of the files manifest.json names for {index} ({named}): a copy or a leftover the reader would "
        "not read; remove it, or rebuild the dataset",
        "không thuộc các file mà manifest.json ghi cho {index} ({named}): một bản sao hoặc file sót lại mà "
        "reader sẽ không đọc; hãy xoá nó, hoặc build lại dataset"),
    "index_order": Text(
        "sample_id {sample_id} follows sample_id {previous}: rows are written in ascending sample_id (lines "
        "swapped, moved or edited)",
        "sample_id {sample_id} đứng sau sample_id {previous}: các dòng được ghi theo sample_id tăng dần (các dòng "
        "đã bị đổi chỗ, di chuyển hoặc sửa)"),
    "row": Text("{detail}", "{detail}"),
    "row_not_json": Text("not valid JSON", "không phải JSON hợp lệ"),
    "row_blank": Text("blank line: the build never writes one (a line was inserted or the file edited)",
                      "dòng trống: build không bao giờ ghi dòng trống (một dòng đã bị chèn vào hoặc file đã bị sửa)"),
    "row_not_object": Text("row is not a JSON object", "dòng không phải JSON object"),
    "row_int": Text("{key} must be a non-negative integer below 2**63, got {got}",
                    "{key} phải là số nguyên không âm nhỏ hơn 2**63, hiện tại là {got}"),
    "row_source_file": Text("source_file must be a string", "source_file phải là string"),
    "row_hash": Text("hash must be 64 lowercase hex digits, got {got}",
                     "hash phải gồm 64 chữ số hex viết thường, hiện tại là {got}"),
    "row_shard_path": Text("shard_path must look like unit_<size>/shard_NNNNNN.bin, got {got}",
                           "shard_path phải có dạng unit_<size>/shard_NNNNNN.bin, hiện tại là {got}"),
    "row_shard_number": Text("shard_path {shard_path}: shard number above 2**31 - 1",
                             "shard_path {shard_path}: số thứ tự shard lớn hơn 2**31 - 1"),
    "row_shard_unit": Text("shard_path {shard_path} is not in unit_{unit}",
                           "shard_path {shard_path} không nằm trong unit_{unit}"),
    "row_empty_fields": Text("empty_fields must be a list", "empty_fields phải là list"),
    # shards and records
    "shard_missing": Text("shard file not found", "không tìm thấy file shard"),
    "shard_not_file": Text("not a regular file (a shard is a file of records)",
                           "không phải file thường (shard là một file chứa các bản ghi)"),
    "shard_truncated": Text(
        "{size} bytes is not a whole number of {record_bytes}-byte records (truncated or corrupt shard)",
        "{size} byte không phải là một số nguyên lần bản ghi {record_bytes} byte (shard bị cắt cụt hoặc bị hỏng)"),
    "shard_records": Text(
        "{shard} holds {got} records, but sample_index.jsonl places {want} there ({samples} samples in unit "
        "{unit}, {sps} per shard)",
        "{shard} chứa {got} bản ghi, nhưng sample_index.jsonl đặt {want} bản ghi ở đó ({samples} sample trong "
        "unit {unit}, {sps} sample mỗi shard)"),
    "extra_shard": Text(
        "{shard} exists, but sample_index.jsonl places none of unit {unit}'s {count} samples there",
        "{shard} tồn tại, nhưng sample_index.jsonl không đặt sample nào trong {count} sample của unit {unit} ở đó"),
    "record_range": Text("{shard} record {record} out of range (shard holds {count} records)",
                         "{shard} bản ghi {record} nằm ngoài phạm vi (shard chứa {count} bản ghi)"),
    "record": Text("{detail}", "{detail}"),
    "magic": Text("magic is {got:#x}, expected {want:#x}", "magic là {got:#x}, đúng ra phải là {want:#x}"),
    "over_unit": Text("segment lengths {lengths} sum to {total} > unit size {unit}",
                      "tổng độ dài các segment {lengths} là {total} > unit size {unit}"),
    "token_count": Text("segment lengths {lengths} sum to {total}, sample_index.jsonl says token_count {count}",
                        "tổng độ dài các segment {lengths} là {total}, nhưng sample_index.jsonl ghi token_count "
                        "{count}"),
    "empty_segment": Text("{segment} ({name}) holds {count} tokens", "{segment} ({name}) chứa {count} token"),
    "empty_filled": Text("segment {detail}, but sample_index.jsonl lists it in empty_fields",
                         "segment {detail}, nhưng sample_index.jsonl liệt kê nó trong empty_fields"),
    "vocab": Text("token id {id} at payload position {at} is >= the vocabulary size {vocab} (manifest.json)",
                  "token id {id} ở vị trí payload {at} >= kích thước vocabulary {vocab} (manifest.json)"),
    "pad_tail": Text("payload slot {slot} holds {got} after the {total} written tokens, expected the pad id {pad}",
                     "slot payload {slot} chứa {got} sau {total} token đã ghi, đúng ra phải là pad id {pad}"),
    "misplaced": Text(
        "records of unit {unit} are in ascending sample_id, so sample {sample} (number {rank} of the unit) belongs "
        "at {at} record {at_record}; the index row points elsewhere (rows swapped or edited)",
        "các bản ghi của unit {unit} được xếp theo sample_id tăng dần, nên sample {sample} (thứ {rank} trong unit) "
        "phải nằm ở {at} bản ghi {at_record}; dòng index lại trỏ tới chỗ khác (các dòng bị đổi chỗ hoặc bị sửa)"),
    "not_shard_path": Text("not a shard path (unit_<size>/shard_NNNNNN.bin)",
                           "không phải đường dẫn shard (unit_<size>/shard_NNNNNN.bin)"),
    "no_unit": Text("no unit {unit} in {path}; units: {units}", "không có unit {unit} trong {path}; các unit: {units}"),
    # exports
    "export_order": Text(
        "unit {unit}'s shards hold other samples than sample_index.jsonl puts there (from sample {sample_id})",
        "các shard của unit {unit} chứa sample khác với những gì sample_index.jsonl đặt ở đó (từ sample "
        "{sample_id})"),
    "export_extra": Text(
        "unit {unit}'s shards hold sample {sample_id} beyond the samples sample_index.jsonl lists",
        "các shard của unit {unit} chứa sample {sample_id}, nằm ngoài các sample mà sample_index.jsonl liệt kê"),
    "export_dtype": Text("sample {sample_id} holds token id {id}, which does not fit {dtype}",
                         "sample {sample_id} chứa token id {id}, không vừa kiểu {dtype}"),
    "target_exists": Text("{file} already exists; remove it or pass --overwrite",
                          "{file} đã tồn tại; hãy xoá nó hoặc dùng --overwrite"),
    # the HTML report
    "no_matplotlib": Text(
        "the HTML report draws its charts with matplotlib: pip install 'mintdim-beam[report]' (or pip install "
        "matplotlib)",
        "report HTML vẽ biểu đồ bằng matplotlib: pip install 'mintdim-beam[report]' (hoặc pip install "
        "matplotlib)"),
    # the consumer commands (verify, inspect, plan, report, export)
    "no_directory": Text("mintdim-beam {command}: no such directory: {paths}",
                         "mintdim-beam {command}: không có thư mục này: {paths}"),
    "command_failed": Text("mintdim-beam {command}: {why}", "mintdim-beam {command} thất bại: {why}"),
    "shard_needs_record": Text("mintdim-beam {command}: --shard needs --record K",
                               "mintdim-beam {command}: --shard cần đi kèm --record K"),
    "bad_record_sample": Text(
        "mintdim-beam {command}: sample {sample_id} ({where}) is a bad record with no shard record: {error}: {why}",
        "mintdim-beam {command}: sample {sample_id} ({where}) là bad record, không có bản ghi nào trong shard: "
        "{error}: {why}"),
    "dropped_sample": Text(
        "mintdim-beam {command}: sample {sample_id} ({where}) was dropped by the overflow policy ({action}, "
        "{count} tokens)",
        "mintdim-beam {command}: sample {sample_id} ({where}) đã bị overflow policy loại bỏ ({action}, "
        "{count} token)"),
    "no_sample": Text(
        "mintdim-beam {command}: sample {sample_id} has no record in {path} (written sample ids: {first}..{last})",
        "mintdim-beam {command}: sample {sample_id} không có bản ghi nào trong {path} (các sample id đã ghi: "
        "{first}..{last})"),
    "no_sample_written": Text(
        "mintdim-beam {command}: sample {sample_id} has no record in {path} (written sample ids: none)",
        "mintdim-beam {command}: sample {sample_id} không có bản ghi nào trong {path} (không có sample nào được "
        "ghi)"),
    "sizes_not_integers": Text("mintdim-beam {command}: --sizes must be comma-separated integers, got {got}",
                               "mintdim-beam {command}: --sizes phải là các số nguyên cách nhau bởi dấu phẩy, "
                               "hiện tại là {got}"),
    "sizes_not_ascending": Text("mintdim-beam {command}: --sizes must be ascending positive integers, got {got}",
                                "mintdim-beam {command}: --sizes phải là các số nguyên dương tăng dần, hiện tại "
                                "là {got}"),
    "plan_needs_k": Text("mintdim-beam {command}: give -k K: there are no current sizes to take the count from",
                         "mintdim-beam {command}: hãy cho -k K: không có sizes hiện tại để lấy số lượng unit"),
    # an error re-raised from its text alone (a DataLoader worker's): the text holds both blocks
    "relayed": Text("{text}", "lỗi được chuyển tiếp từ một tiến trình khác; nội dung gốc, bằng cả hai ngôn ngữ, "
                              "nằm trong khối [english]"),
}


def read_text(kind: str, /, **facts: object) -> Text:
    """The ``READ_PROBLEMS`` wording of ``kind`` with ``facts`` filled in, in both languages.

    A ``detail`` fact is a `Text` (or its two strings) and fills each block with its own
    language."""
    template = READ_PROBLEMS[kind]
    detail = facts.get("detail")
    en = dict(facts, detail=detail[0]) if detail is not None else facts
    vi = dict(facts, detail=detail[1]) if detail is not None else facts
    return Text(template.en.format(**en), template.vi.format(**vi))


def joined(parts: Iterable[Text], separator: str = "; ") -> Text:
    """Paragraph parts joined the same way in both languages."""
    parts = list(parts)
    return Text(separator.join(p.en for p in parts), separator.join(p.vi for p in parts))
