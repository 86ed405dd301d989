"""Texts of the build's errors, English beside Vietnamese.

The wording of every error a build raises (the configuration, the tokenizer, the input
files and records, the output directories, the stores), kept apart from the error
classes (`config_errors`, `tokenizer_errors`, `data_errors`) so the two languages are
reviewed side by side and the classes are about facts rather than phrasing. The
problems the launcher finds in a declared job, which these errors carry, are
`job_messages`; the texts of reading a built dataset back are `read_messages`. Each
text is a `bilingual.Text` pair; a template names its facts as ``{placeholders}``, the
same in both languages.
"""

from __future__ import annotations

from typing import NamedTuple

from mintdim_beam.errors.bilingual import Text

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
#: Put after an unknown name (a tokenizer type, a job file's section or key) when one is close.
DID_YOU_MEAN = Text(" (did you mean {close!r}?)", " (có phải ý bạn là {close!r}?)")

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

# DiskFullError
DISK_FULL = Text("No space left on the device while the build wrote its output; nothing was published.",
                 "Thiết bị hết dung lượng trong lúc build ghi output; không có gì được publish.")
DISK_FREE = Text("Free bytes now:", "Số byte còn trống:")
DISK_NEEDED = Text("Bytes the write needed:", "Số byte cần ghi:")
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
TEMPLATE_EMPTY_SPECIAL = Text(
    "template has an empty special token {@}, write {@eos} (a role) or {@<content>} (a token's text)",
    "template có special token rỗng {@}, hãy viết {@eos} (một vai trò) hoặc {@<content>} (nội dung một token)",
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
# Not in the spec: ``{@NAME}`` segments (DESIGN.md §8).
TEMPLATE_SPECIAL_MISSING = Text(
    "Template special-token segment names a token the tokenizer does not have.",
    "Đoạn special token của template chỉ tới một token mà tokenizer không có.",
)
TEMPLATE_SEGMENT_LABEL = Text("Segment:", "Đoạn:")
TEMPLATE_SPECIAL_NO_NAMED = Text(
    "the tokenizer defines no {name} token",
    "tokenizer không định nghĩa token {name}",
)
TEMPLATE_SPECIAL_NO_CONTENT = Text(
    "no special or added token of the tokenizer has the content {content!r}",
    "không có special token hay added token nào của tokenizer có nội dung {content!r}",
)
TEMPLATE_SPECIAL_HAS = Text("Special tokens it has:", "Các special token nó có:")
TEMPLATE_SPECIAL_NONE = Text("none", "không có")
TEMPLATE_SPECIAL_FIX = Text(
    "name a token the tokenizer has ({{@bos}}, {{@eos}}, {{@pad}}, {{@unk}} or {{@<content>}} of a special or "
    "added token), or write the text as a literal.",
    "hãy chỉ tới token mà tokenizer có ({{@bos}}, {{@eos}}, {{@pad}}, {{@unk}} hoặc {{@<content>}} (nội dung) của một "
    "special token hay added token), hoặc viết đoạn đó thành literal.",
)
TEMPLATE_LOOKALIKE = Text(
    "Template literal spells a special token but does not encode to it.",
    "Literal của template viết ra một special token nhưng không được encode thành token đó.",
)
TEMPLATE_LITERAL_LABEL = Text("Literal:", "Literal:")
TEMPLATE_LOOKALIKE_TOKEN = Text("Special token:", "Special token:")
TEMPLATE_LOOKALIKE_ENCODES = Text("Literal encodes to ids:", "Literal được encode thành các id:")
TEMPLATE_LOOKALIKE_PROBLEM = Text(
    "the tokenizer reads this text as ordinary characters, so every sample would hold a lookalike of "
    "the token (other ids) instead of the token itself",
    "tokenizer đọc đoạn này như ký tự thường, nên mọi sample sẽ chứa một bản nhái của token (các id khác) "
    "thay vì chính token đó",
)
TEMPLATE_LOOKALIKE_FIX = Text(
    "write {segment} where the token belongs; the literal text is never turned into it.",
    "hãy viết {segment} ở chỗ cần token đó; đoạn literal không bao giờ được chuyển thành token.",
)
TEMPLATE_LOOKALIKE_RULE = Text(
    "a literal that spells a special token is refused whatever on_template_unk says.",
    "literal viết ra một special token luôn bị từ chối, bất kể on_template_unk là gì.",
)
# Not in the spec: asked (on_template_unk prompt, at a terminal) before the error is raised;
# each block is shown beside its language's tag, one line of the question a line.
TEMPLATE_UNK_QUESTION = Text(
    "Static-text tokens will be UNK in every encoded sample.\nContinue building?",
    "Token của static-text sẽ là UNK ở mọi sample.\nTiếp tục build?",
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
# The spec's second line offers "prompts": this project's on_overflow has no prompt
# (DESIGN.md §3), so the line names the policies it has.
UNIT_OVERFLOW_FIXES = (
    Text("increase unit sizes", "tăng unit sizes"),
    Text(
        "or run with an overflow policy that truncates, skips, or extends",
        "hoặc chạy với overflow policy để truncate, skip, hoặc extend",
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
# BuildLimitError: the guard rails checked before publishing (DESIGN.md §8)
# ---------------------------------------------------------------------------

LIMIT_NO_SAMPLES = Text(
    "Output received no sample; nothing was published.",
    "Output không nhận được sample nào; không có gì được publish.",
)
LIMIT_SAMPLES_READ = Text("Samples read:", "Số sample đã đọc:")
LIMIT_SAMPLES_READ_TEXT = Text("{samples} (non-blank lines of the output's input files)",
                               "{samples} (các dòng không trống trong các file input của output)")
LIMIT_BAD = Text("Bad records:", "Bad record:")
LIMIT_BAD_SKIPPED = Text("{bad} (left out by on_bad_record skip)", "{bad} (bị bỏ qua bởi on_bad_record skip)")
LIMIT_OVERFLOW = Text("Dropped as overflow:", "Bị loại do overflow:")
LIMIT_OVERFLOW_SKIPPED = Text("{dropped} (left out by on_overflow skip)", "{dropped} (bị bỏ qua bởi on_overflow skip)")
#: What to do, for each reason an output can be left without samples.
LIMIT_NO_SAMPLES_FIXES = {
    "no_lines": Text(
        "check source.files: the output's input files hold no JSONL record (empty files, or a pattern that "
        "matched the wrong files)",
        "kiểm tra source.files: các file input của output không chứa record JSONL nào (file rỗng, hoặc pattern "
        "khớp nhầm file)"),
    "bad_records": Text(
        "run with --on-bad-record abort to see the first bad record with its file and line, and fix the input "
        "or source.fields",
        "chạy với --on-bad-record abort để xem bad record đầu tiên cùng file và dòng của nó, rồi sửa input hoặc "
        "source.fields"),
    "overflow": Text(
        "samples longer than the largest unit were dropped: raise units.sizes, or use --on-overflow truncate "
        "or extend",
        "các sample dài hơn unit lớn nhất đã bị loại: tăng units.sizes, hoặc dùng --on-overflow truncate "
        "hoặc extend"),
}

LIMIT_BAD_RECORDS = Text(
    "Bad records exceed max_bad_records; nothing was published.",
    "Số bad record vượt quá max_bad_records; không có gì được publish.",
)
LIMIT_BAD_OF = Text("{bad} of {samples} samples read ({share})", "{bad} trên {samples} sample đã đọc ({share})")
LIMIT_LABEL = Text("Limit:", "Giới hạn:")
LIMIT_BAD_COUNT = Text("max_bad_records {limit} (at most {allowed} bad records)",
                       "max_bad_records {limit} (tối đa {allowed} bad record)")
LIMIT_BAD_FRACTION = Text("max_bad_records {limit} (at most {allowed} of {samples} samples)",
                          "max_bad_records {limit} (tối đa {allowed} trên {samples} sample)")
LIMIT_BAD_FIX = Text(
    "run with --on-bad-record abort to see the first bad record with its file and line, fix the input, or "
    "raise the limit: --max-bad-records on the command line, max_bad_records in the job file's run section, "
    "or .run(max_bad_records=...) in Python.",
    "chạy với --on-bad-record abort để xem bad record đầu tiên cùng file và dòng của nó, sửa input, hoặc "
    "nâng giới hạn: --max-bad-records trên dòng lệnh, max_bad_records trong section run của job file, "
    "hoặc .run(max_bad_records=...) trong Python.",
)

LIMIT_UNK = Text(
    "UNK tokens exceed max_unk_fraction; nothing was published.",
    "Số token UNK vượt quá max_unk_fraction; không có gì được publish.",
)
LIMIT_UNK_TOKENS = Text("UNK tokens:", "Token UNK:")
LIMIT_UNK_OF = Text("{unk} of {tokens} written tokens ({share}), in {samples} samples",
                    "{unk} trên {tokens} token đã ghi ({share}), trong {samples} sample")
LIMIT_UNK_ALLOWED = Text("max_unk_fraction {limit} (at most {allowed} UNK tokens)",
                         "max_unk_fraction {limit} (tối đa {allowed} token UNK)")
LIMIT_UNK_FIX = Text(
    "use a tokenizer whose vocabulary covers the text (a build without the limit, into another directory, "
    "lists each UNK's characters in unk_index.jsonl), or raise the limit: --max-unk-fraction on the command "
    "line, max_unk_fraction in the job file's run section, or .run(max_unk_fraction=...) in Python.",
    "dùng tokenizer có vocabulary bao phủ văn bản (một lần build không có giới hạn, vào thư mục khác, sẽ liệt "
    "kê ký tự của từng UNK trong unk_index.jsonl), hoặc nâng giới hạn: --max-unk-fraction trên dòng lệnh, "
    "max_unk_fraction trong section run của job file, hoặc .run(max_unk_fraction=...) trong Python.",
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
# StoreRequestError
# ---------------------------------------------------------------------------

STORE_FAILED = Text(
    "The store kept failing a request; the build stopped and published nothing.",
    "Storage liên tục báo lỗi cho một request; build đã dừng và không publish gì.",
)
STORE_REQUEST = Text("Request:", "Request:")
STORE_REQUEST_TEXT = Text("{operation} {path} ({api})", "{operation} {path} ({api})")
STORE_ANSWER = Text("Store answered:", "Storage trả lời:")
STORE_ANSWER_TEXT = Text("{status} {code}: {reason}", "{status} {code}: {reason}")
STORE_NO_ANSWER = Text("no answer ({code}: {reason})", "không có trả lời ({code}: {reason})")
STORE_ATTEMPTS = Text("Attempts:", "Số lần thử:")
STORE_ATTEMPTS_TEXT = Text("{attempts}, the retry budget of one request (docs/decisions.md)",
                           "{attempts}, giới hạn số lần thử của một request (docs/decisions.md)")
STORE_CLAIM = Text("Claim:", "Claim:")
STORE_CLAIM_STATES = {
    "released": Text("released; UNIT_BUILD_FAILED.md in the units says the publish failed",
                     "đã được trả; UNIT_BUILD_FAILED.md trong các unit ghi rằng publish thất bại"),
    "left": Text("could not be removed, the store failed that too: delete {claim_path} (and the directory) "
                 "before building into it again",
                 "không xoá được vì storage cũng báo lỗi: hãy xoá {claim_path} (và cả thư mục) trước khi "
                 "build lại vào đó"),
}
STORE_FIX = Text(
    "check the store (the answer above is its own), then build again into a new directory; "
    "nothing in this one can be trusted: delete it.",
    "kiểm tra storage (câu trả lời ở trên là của chính storage), rồi build lại vào thư mục mới; "
    "không thể tin dữ liệu trong thư mục này: hãy xoá nó.",
)
