"""Error classes: exact spec text, structured fields, JSON and pickle round trips.

The expected texts below are copied verbatim from the spec's "message errors" section;
the facts passed to each constructor are the spec's example facts.
"""

import json
import pickle

import pytest

from mintdim_beam import errors as E
from mintdim_beam.errors import bilingual as B
from mintdim_beam.errors import read_messages as R
from mintdim_beam.errors import MintDimError, error_from_dict

# ---------------------------------------------------------------------------
# Spec texts
# ---------------------------------------------------------------------------

SPEC_PIPELINE_INCOMPLETE = r"""[english] PipelineValidationError: Pipeline configuration is incomplete.

Missing:

• source.files
• source.fields
• source.templates
• tokenizer
• units.sizes
• units.build_batch
• output.dir
• output.samples_per_shard

[vietnam] PipelineValidationError: Pipeline chưa được cấu hình đầy đủ.

Thiếu:

• source.files
• source.fields
• source.templates
• tokenizer
• units.sizes
• units.build_batch
• output.dir
• output.samples_per_shard

Thiếu cấu hình nào thì báo thiếu cấu hình đó."""


SPEC_FILE_NOT_FOUND = r"""[english] MintDimFileNotFoundError: Required file was not found.

Context: source

Missing file: ./data/train.jsonl

[vietnam] MintDimFileNotFoundError: Không tìm thấy file cần dùng.

Ngữ cảnh: source

File thiếu: ./data/train.jsonl"""


SPEC_SOURCE_PARSE = r"""[english] SourceParseError: JSONL line could not be parsed.

File: ./data/alpaca.jsonl

Line: 18291

Reason: invalid JSON syntax

[vietnam] SourceParseError: Không parse được dòng JSONL.

File: ./data/alpaca.jsonl

Dòng: 18291

Lý do: invalid JSON syntax"""


SPEC_SAMPLE_MISSING_FIELDS = r"""[english] SampleSchemaError: JSONL sample is missing declared fields.

File: ./data/alpaca.jsonl

Line: 18291

Declared fields: instruction input output

Missing fields: input

Available keys: instruction output metadata

[vietnam] SampleSchemaError: Sample JSONL thiếu field đã khai báo.

File: ./data/alpaca.jsonl

Dòng: 18291

Field đã khai báo: instruction input output

Field bị thiếu: input

Key hiện có: instruction output metadata"""


SPEC_TOKENIZER_INVALID = r"""[english] TokenizerValidationError: Invalid tokenizer configuration.

Component: files

Problem: tokenizer file path must be str, got int

Rules:

• tokenizer.files must be a list of tokenizer file paths
• each tokenizer file path must be a string
• unk_id and pad_id are loaded from the tokenizer library

[vietnam] TokenizerValidationError: Cấu hình tokenizer không hợp lệ.

Thành phần: files

Vấn đề: tokenizer file path must be str, got int

Quy tắc:

• tokenizer.files phải là list các đường dẫn file tokenizer
• mỗi đường dẫn file tokenizer phải là string
• unk_id và pad_id được lấy từ thư viện tokenizer"""


SPEC_TOKENIZER_SPECIAL_TOKEN = r"""[english] TokenizerSpecialTokenError: Tokenizer library did not expose a required special token.

Tokenizer: ./tokenizer/tokenizer.model

Special token: pad_id

Problem: missing pad_id

Rule: MintDim uses tokenizer-provided special token ids only; do not declare unk_id/pad_id manually.

[vietnam] TokenizerSpecialTokenError: Thư viện tokenizer không cung cấp special token bắt buộc.

Tokenizer: ./tokenizer/tokenizer.model

Special token: pad_id

Vấn đề: missing pad_id

Quy tắc: MintDim chỉ dùng special token id do tokenizer cung cấp; không khai báo unk_id/pad_id thủ công."""


SPEC_TOKENIZER_UNSUPPORTED = r"""[english] TokenizerValidationError: Unsupported tokenizer format.

Supported formats:

• sentencepiece (.model)
• huggingface tokenizer (.json)

[vietnam] TokenizerValidationError: Định dạng tokenizer chưa được hỗ trợ.

Các định dạng hiện hỗ trợ:

• sentencepiece (.model)
• huggingface tokenizer (.json)"""


SPEC_TOKENIZER_MAPPING = r"""[english] TokenizerMappingError: Received 3 input files but 2 tokenizers.

MintDim supports:

• 1 tokenizer shared across all files
• N tokenizers for N files

[vietnam] TokenizerMappingError: Nhận 3 file đầu vào nhưng có 2 tokenizer.

MintDim hỗ trợ:

• 1 tokenizer dùng chung cho tất cả file
• N tokenizer cho N file"""


SPEC_FIELD_MAPPING = r"""[english] FieldMappingError: Received 3 input files but 2 field configs.

MintDim supports:

• 1 field config shared across all files
• N field configs for N files

[vietnam] FieldMappingError: Nhận 3 file đầu vào nhưng có 2 cấu hình fields.

MintDim hỗ trợ:

• 1 cấu hình fields dùng chung cho tất cả file
• N cấu hình fields cho N file"""


SPEC_TEMPLATE_MAPPING = r"""[english] TemplateMappingError: Received 3 input files but 2 templates.

MintDim supports:

• 1 template shared across all files
• N templates for N files

[vietnam] TemplateMappingError: Nhận 3 file đầu vào nhưng có 2 template.

MintDim hỗ trợ:

• 1 template dùng chung cho tất cả file
• N template cho N file"""


SPEC_TEMPLATE_UNDECLARED_PLACEHOLDER = r"""[english] TemplateFieldMismatchError: Source file: ./data/train.jsonl

API declaration for this file: fields = ['instruction', 'input', 'output'] template = '{instruction}\n\n{prompt}\n\n{output}'

Field causing template mismatch: prompt Reason: template uses {prompt}, but fields does not declare it

[vietnam] TemplateFieldMismatchError: File nguồn: ./data/train.jsonl

Khai báo API cho file này: fields = ['instruction', 'input', 'output'] template = '{instruction}\n\n{prompt}\n\n{output}'

Field gây lệch template: prompt Lý do: template dùng {prompt}, nhưng fields không khai báo field này"""


SPEC_TEMPLATE_UNUSED_FIELD = r"""[english] TemplateFieldMismatchError: Source file: ./data/train.jsonl

API declaration for this file: fields = ['instruction', 'input', 'output'] template = '{instruction}\n\n{output}'

Field causing template mismatch: input Reason: fields declares this field, but template does not use {input}

[vietnam] TemplateFieldMismatchError: File nguồn: ./data/train.jsonl

Khai báo API cho file này: fields = ['instruction', 'input', 'output'] template = '{instruction}\n\n{output}'

Field gây lệch template: input Lý do: fields khai báo field này, nhưng template không dùng {input}"""


SPEC_TEMPLATE_TOKENIZER = r"""[english] TemplateTokenizerError: Template literal segments produce UNK when encoded by the tokenizer.

File index: 0

Template: '{a}\n\n{b}'

Problem: template literal characters are not fully covered by tokenizer vocabulary

Fix: adjust template literal characters, use a tokenizer that covers them, or run with an explicit template-UNK policy.

Policy: --on-template-unk continue on the command line, on_template_unk: continue in the job file's run section, or .run(on_template_unk="continue") in Python (every sample then carries the literal's UNK tokens).

[vietnam] TemplateTokenizerError: Các đoạn literal của template tạo UNK khi được tokenizer encode.

Vị trí file: 0

Template: '{a}\n\n{b}'

Vấn đề: ký tự literal trong template không được tokenizer vocabulary bao phủ đầy đủ

Cách sửa: chỉnh ký tự literal trong template, dùng tokenizer bao phủ các ký tự đó, hoặc chạy với template-UNK policy rõ ràng.

Policy: --on-template-unk continue trên dòng lệnh, on_template_unk: continue trong section run của job file, hoặc .run(on_template_unk="continue") trong Python (khi đó mọi sample đều mang các token UNK của literal)."""


SPEC_UNIT_MAPPING = r"""[english] UnitMappingError: Received 3 input files but 2 unit configs.

MintDim supports:

• 1 unit config shared across all files
• N unit configs for N input files

[vietnam] UnitMappingError: Nhận 3 file đầu vào nhưng có 2 cấu hình unit.

MintDim hỗ trợ:

• 1 cấu hình unit dùng chung cho tất cả file
• N cấu hình unit cho N file đầu vào"""


SPEC_OUTPUT_MAPPING = r"""[english] OutputMappingError: Received 3 input files but 2 output directories.

MintDim supports:

• 1 shared output directory
• N output directories for N input files

[vietnam] OutputMappingError: Nhận 3 file đầu vào nhưng có 2 thư mục output.

MintDim hỗ trợ:

• 1 thư mục output dùng chung
• N thư mục output cho N file đầu vào"""


SPEC_UNIT_VALIDATION = r"""[english] UnitValidationError: Invalid unit config.

Rules:

• sizes must be positive integers
• sizes must be sorted ascending
• build_batch must be a positive integer

[vietnam] UnitValidationError: Cấu hình unit không hợp lệ.

Quy tắc:

• sizes phải là các số nguyên dương
• sizes phải được sắp xếp tăng dần
• build_batch phải là số nguyên dương"""


SPEC_UNIT_OVERFLOW = r"""[english] UnitOverflowError: Sample token length exceeds max unit size.

Sample: ./data/alpaca.jsonl:18291

token_count: 417

max_unit_size: 320

Fix:

• increase unit sizes
• or run with an overflow policy that truncates, skips, or extends

Policy: --on-overflow truncate (or skip, extend) on the command line, on_overflow: truncate in the job file's run section, or .run(on_overflow="truncate") in Python.

[vietnam] UnitOverflowError: Độ dài token của sample vượt quá unit size lớn nhất.

Sample: ./data/alpaca.jsonl:18291

token_count: 417

max_unit_size: 320

Cách sửa:

• tăng unit sizes
• hoặc chạy với overflow policy để truncate, skip, hoặc extend

Policy: --on-overflow truncate (hoặc skip, extend) trên dòng lệnh, on_overflow: truncate trong section run của job file, hoặc .run(on_overflow="truncate") trong Python."""


SPEC_OUTPUT_VALIDATION = r"""[english] OutputValidationError: Output directory already exists and is not empty.

Directory: ./artifacts/token_shards

Use a new output directory.

[vietnam] OutputValidationError: Thư mục output đã tồn tại và không rỗng.

Thư mục: ./artifacts/token_shards

Hãy dùng thư mục output mới."""


SPEC_TOKEN_DTYPE_CAPACITY = r"""[english] TokenDTypeCapacityError: Tokenizer vocabulary size is too large for the token dtypes supported by MintDim.

Tokenizer vocab_size: 5,000,000,000

Supported token dtypes:

• uint16: max vocab_size 65,535
• uint32: max vocab_size 4,294,967,295

Fix:

• use a tokenizer with a smaller vocabulary
• or use a MintDim version that supports a wider token dtype

[vietnam] TokenDTypeCapacityError: Kích thước vocabulary của tokenizer quá lớn so với token dtype MintDim hỗ trợ.

Tokenizer vocab_size: 5.000.000.000

Token dtype được hỗ trợ:

• uint16: vocab_size tối đa 65.535
• uint32: vocab_size tối đa 4.294.967.295

Cách sửa:

• dùng tokenizer có vocabulary nhỏ hơn
• hoặc dùng phiên bản MintDim hỗ trợ token dtype rộng hơn"""


SPEC_SAMPLES_PER_SHARD_NOT_POSITIVE = r"""[english] SamplesPerShardError: Invalid samples_per_shard.

Problem: samples_per_shard[0] must be a positive int, got 0

Rules:

• each samples_per_shard[i] is a positive int
• len(samples_per_shard) == 1 or len(samples_per_shard) == file_count

[vietnam] SamplesPerShardError: samples_per_shard không hợp lệ.

Vấn đề: samples_per_shard[0] phải là số nguyên dương, hiện tại là 0

Quy tắc:

• mỗi samples_per_shard[i] phải là số nguyên dương
• len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số lượng file"""


SPEC_SAMPLES_PER_SHARD_ARITY = r"""[english] SamplesPerShardError: Invalid samples_per_shard.

Problem: Received 3 input files but 2 samples_per_shard entries

Rules:

• each samples_per_shard[i] is a positive int
• len(samples_per_shard) == 1 or len(samples_per_shard) == file_count

[vietnam] SamplesPerShardError: samples_per_shard không hợp lệ.

Vấn đề: Nhận 3 file đầu vào nhưng có 2 entries samples_per_shard

Quy tắc:

• mỗi samples_per_shard[i] phải là số nguyên dương
• len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số lượng file"""


# ---------------------------------------------------------------------------
# Spec examples
# ---------------------------------------------------------------------------

FIELDS = ["instruction", "input", "output"]
SPEC_CASES = {
    "pipeline_incomplete": (
        lambda: E.PipelineValidationError(
            missing=[
                "source.files",
                "source.fields",
                "source.templates",
                "tokenizer",
                "units.sizes",
                "units.build_batch",
                "output.dir",
                "output.samples_per_shard",
            ]
        ),
        SPEC_PIPELINE_INCOMPLETE,
    ),
    "file_not_found": (
        lambda: E.MintDimFileNotFoundError(context="source", path="./data/train.jsonl"),
        SPEC_FILE_NOT_FOUND,
    ),
    "source_parse": (
        lambda: E.SourceParseError(
            file="./data/alpaca.jsonl", line=18291, reason="invalid JSON syntax"
        ),
        SPEC_SOURCE_PARSE,
    ),
    "sample_missing_fields": (
        lambda: E.SampleSchemaError(
            file="./data/alpaca.jsonl",
            line=18291,
            declared=FIELDS,
            missing=["input"],
            available=["instruction", "output", "metadata"],
        ),
        SPEC_SAMPLE_MISSING_FIELDS,
    ),
    "tokenizer_invalid": (
        lambda: E.TokenizerValidationError(
            component="files", problem="tokenizer file path must be str, got int"
        ),
        SPEC_TOKENIZER_INVALID,
    ),
    "tokenizer_special_token": (
        lambda: E.TokenizerSpecialTokenError(
            tokenizer="./tokenizer/tokenizer.model",
            special_token="pad_id",
            problem="missing pad_id",
        ),
        SPEC_TOKENIZER_SPECIAL_TOKEN,
    ),
    "tokenizer_unsupported": (
        lambda: E.TokenizerValidationError.unsupported_format(),
        SPEC_TOKENIZER_UNSUPPORTED,
    ),
    "tokenizer_mapping": (lambda: E.TokenizerMappingError(files=3, got=2), SPEC_TOKENIZER_MAPPING),
    "field_mapping": (lambda: E.FieldMappingError(files=3, got=2), SPEC_FIELD_MAPPING),
    "template_mapping": (lambda: E.TemplateMappingError(files=3, got=2), SPEC_TEMPLATE_MAPPING),
    "template_undeclared_placeholder": (
        lambda: E.TemplateFieldMismatchError.undeclared_placeholder(
            file="./data/train.jsonl",
            fields=FIELDS,
            template="{instruction}\n\n{prompt}\n\n{output}",
            field="prompt",
        ),
        SPEC_TEMPLATE_UNDECLARED_PLACEHOLDER,
    ),
    "template_unused_field": (
        lambda: E.TemplateFieldMismatchError.unused_field(
            file="./data/train.jsonl",
            fields=FIELDS,
            template="{instruction}\n\n{output}",
            field="input",
        ),
        SPEC_TEMPLATE_UNUSED_FIELD,
    ),
    "template_tokenizer": (
        lambda: E.TemplateTokenizerError(file_index=0, template="{a}\n\n{b}", literals=["\n\n"]),
        SPEC_TEMPLATE_TOKENIZER,
    ),
    "unit_mapping": (lambda: E.UnitMappingError(files=3, got=2), SPEC_UNIT_MAPPING),
    "output_mapping": (lambda: E.OutputMappingError(files=3, got=2), SPEC_OUTPUT_MAPPING),
    "unit_validation": (lambda: E.UnitValidationError(), SPEC_UNIT_VALIDATION),
    "unit_overflow": (
        lambda: E.UnitOverflowError(
            file="./data/alpaca.jsonl", line=18291, token_count=417, max_unit_size=320
        ),
        SPEC_UNIT_OVERFLOW,
    ),
    "output_validation": (
        lambda: E.OutputValidationError(directory="./artifacts/token_shards"),
        SPEC_OUTPUT_VALIDATION,
    ),
    "token_dtype_capacity": (
        lambda: E.TokenDTypeCapacityError(vocab_size=5_000_000_000),
        SPEC_TOKEN_DTYPE_CAPACITY,
    ),
    "samples_per_shard_not_positive": (
        lambda: E.SamplesPerShardError.not_positive(index=0, value=0),
        SPEC_SAMPLES_PER_SHARD_NOT_POSITIVE,
    ),
    "samples_per_shard_arity": (
        lambda: E.SamplesPerShardError.arity(files=3, got=2),
        SPEC_SAMPLES_PER_SHARD_ARITY,
    ),
}

# Variants the spec does not print, with their full expected text.
EXTRA_CASES = {
    "store_request_failed": (
        lambda: E.StoreRequestError("PUT", "s3://b/out/manifest.json", "PutObject", 500, "InternalError",
                                    "We encountered an internal error.", 4)
        .with_claim("left", "s3://b/out/.mintdim-claim.json"),
        """[english] StoreRequestError: The store kept failing a request; the build stopped and published nothing.

Request: PUT s3://b/out/manifest.json (PutObject)

Store answered: 500 InternalError: We encountered an internal error.

Attempts: 4, the retry budget of one request (docs/decisions.md)

Claim: could not be removed, the store failed that too: delete s3://b/out/.mintdim-claim.json (and the directory) before building into it again

Fix: check the store (the answer above is its own), then build again into a new directory; nothing in this one can be trusted: delete it.

[vietnam] StoreRequestError: Storage liên tục báo lỗi cho một request; build đã dừng và không publish gì.

Request: PUT s3://b/out/manifest.json (PutObject)

Storage trả lời: 500 InternalError: We encountered an internal error.

Số lần thử: 4, giới hạn số lần thử của một request (docs/decisions.md)

Claim: không xoá được vì storage cũng báo lỗi: hãy xoá s3://b/out/.mintdim-claim.json (và cả thư mục) trước khi build lại vào đó

Cách sửa: kiểm tra storage (câu trả lời ở trên là của chính storage), rồi build lại vào thư mục mới; không thể tin dữ liệu trong thư mục này: hãy xoá nó.""",
    ),
    "disk_full_needed": (
        lambda: E.DiskFullError("out/unit_16/shard_000000.bin", 4096, 1048576),
        """[english] DiskFullError: No space left on the device while the build wrote its output; nothing was published.

Path: out/unit_16/shard_000000.bin

Free bytes now: 4096

Bytes the write needed: 1048576

Fix: free space (the build needs about its input's size twice, for staging and output) or choose an output on a larger disk, then build into a new directory.

[vietnam] DiskFullError: Thiết bị hết dung lượng trong lúc build ghi output; không có gì được publish.

Đường dẫn: out/unit_16/shard_000000.bin

Số byte còn trống: 4096

Số byte cần ghi: 1048576

Cách sửa: hãy giải phóng dung lượng (build cần khoảng gấp đôi kích thước input, cho staging và output) hoặc chọn output trên đĩa lớn hơn, rồi build vào thư mục mới.""",
    ),
    "pipeline_invalid": (
        lambda: E.PipelineValidationError.invalid(
            problem="on_overflow must be one of abort, truncate, skip, extend, got 'drop'",
            rules=["on_overflow is one of abort, truncate, skip, extend"],
        ),
        """[english] PipelineValidationError: Invalid pipeline configuration.

Problem: on_overflow must be one of abort, truncate, skip, extend, got 'drop'

Rules:

• on_overflow is one of abort, truncate, skip, extend

[vietnam] PipelineValidationError: Cấu hình pipeline không hợp lệ.

Vấn đề: on_overflow must be one of abort, truncate, skip, extend, got 'drop'

Quy tắc:

• on_overflow is one of abort, truncate, skip, extend""",
    ),
    "pipeline_invalid_translated": (
        lambda: E.PipelineValidationError.invalid(
            problem="source.files must be a list, got str",
            rules=["source.files is a list of paths"],
            problem_vi="source.files phải là list, hiện tại là str",
            rules_vi=["source.files là list các đường dẫn"],
        ),
        """[english] PipelineValidationError: Invalid pipeline configuration.

Problem: source.files must be a list, got str

Rules:

• source.files is a list of paths

[vietnam] PipelineValidationError: Cấu hình pipeline không hợp lệ.

Vấn đề: source.files phải là list, hiện tại là str

Quy tắc:

• source.files là list các đường dẫn""",
    ),
    "pipeline_missing_one": (
        lambda: E.PipelineValidationError(missing=["tokenizer"]),
        """[english] PipelineValidationError: Pipeline configuration is incomplete.

Missing:

• tokenizer

[vietnam] PipelineValidationError: Pipeline chưa được cấu hình đầy đủ.

Thiếu:

• tokenizer

Thiếu cấu hình nào thì báo thiếu cấu hình đó.""",
    ),
    "sample_wrong_type": (
        lambda: E.SampleSchemaError.wrong_type(
            file="./data/alpaca.jsonl",
            line=7,
            declared=FIELDS,
            field="input",
            type_name="list",
        ),
        """[english] SampleSchemaError: JSONL sample field has an unsupported value type.

File: ./data/alpaca.jsonl

Line: 7

Field: input

Reason: field value must be a string, got list

[vietnam] SampleSchemaError: Field của sample JSONL có kiểu giá trị không được hỗ trợ.

File: ./data/alpaca.jsonl

Dòng: 7

Field: input

Lý do: giá trị field phải là string, hiện tại là list""",
    ),
    "tokenizer_unsupported_path": (
        lambda: E.TokenizerValidationError.unsupported_format(path="./tok/vocab.txt"),
        """[english] TokenizerValidationError: Unsupported tokenizer format.

File: ./tok/vocab.txt

Supported formats:

• sentencepiece (.model)
• huggingface tokenizer (.json)

[vietnam] TokenizerValidationError: Định dạng tokenizer chưa được hỗ trợ.

File: ./tok/vocab.txt

Các định dạng hiện hỗ trợ:

• sentencepiece (.model)
• huggingface tokenizer (.json)""",
    ),
    "tokenizer_unsupported_type": (
        lambda: E.TokenizerValidationError.unsupported_format(tokenizer_type="sentencepeice"),
        """[english] TokenizerValidationError: Unsupported tokenizer format.

tokenizer.type is 'sentencepeice' (did you mean 'sentencepiece'?); it must be one of: sentencepiece, hf_json

Supported formats:

• sentencepiece (.model)
• huggingface tokenizer (.json)

[vietnam] TokenizerValidationError: Định dạng tokenizer chưa được hỗ trợ.

tokenizer.type là 'sentencepeice' (có phải ý bạn là 'sentencepiece'?); giá trị hợp lệ: sentencepiece, hf_json

Các định dạng hiện hỗ trợ:

• sentencepiece (.model)
• huggingface tokenizer (.json)""",
    ),
    "template_tokenizer_chars": (
        lambda: E.TemplateTokenizerError(file_index=1, template="{a} | {b} ✓", literals=[" | ", " ✓"],
                                         unk_chars=["|", "✓"]),
        """[english] TemplateTokenizerError: Template literal segments produce UNK when encoded by the tokenizer.

File index: 1

Template: '{a} | {b} ✓'

Problem: template literal characters are not fully covered by tokenizer vocabulary

Characters that encode to UNK: '|' (U+007C), '✓' (U+2713) in literal segments ' | ', ' ✓'

Fix: adjust template literal characters, use a tokenizer that covers them, or run with an explicit template-UNK policy.

Policy: --on-template-unk continue on the command line, on_template_unk: continue in the job file's run section, or .run(on_template_unk="continue") in Python (every sample then carries the literal's UNK tokens).

[vietnam] TemplateTokenizerError: Các đoạn literal của template tạo UNK khi được tokenizer encode.

Vị trí file: 1

Template: '{a} | {b} ✓'

Vấn đề: ký tự literal trong template không được tokenizer vocabulary bao phủ đầy đủ

Ký tự bị encode thành UNK: '|' (U+007C), '✓' (U+2713) trong các đoạn literal ' | ', ' ✓'

Cách sửa: chỉnh ký tự literal trong template, dùng tokenizer bao phủ các ký tự đó, hoặc chạy với template-UNK policy rõ ràng.

Policy: --on-template-unk continue trên dòng lệnh, on_template_unk: continue trong section run của job file, hoặc .run(on_template_unk="continue") trong Python (khi đó mọi sample đều mang các token UNK của literal).""",
    ),
    "output_inconsistent": (
        lambda: E.OutputMappingError.inconsistent(
            directory="./out", files=["a.jsonl", "b.jsonl"], differs="sizes"
        ),
        """[english] OutputMappingError: Input files sharing an output directory must share \
tokenizer, sequence_template, sizes and samples_per_shard.

Directory: ./out

Files: a.jsonl b.jsonl

Differs in: sizes

[vietnam] OutputMappingError: Các file đầu vào dùng chung một thư mục output phải dùng \
chung tokenizer, sequence_template, sizes và samples_per_shard.

Thư mục: ./out

Các file: a.jsonl b.jsonl

Khác nhau ở: sizes""",
    ),
    "template_empty_placeholder": (
        lambda: E.TemplateFieldMismatchError.bad_syntax(
            file="./data/train.jsonl", fields=["a"], template="{a}{}", problem="{}"
        ),
        """[english] TemplateFieldMismatchError: Source file: ./data/train.jsonl

API declaration for this file: fields = ['a'] template = '{a}{}'

Field causing template mismatch: {} Reason: template has an empty placeholder {}

[vietnam] TemplateFieldMismatchError: File nguồn: ./data/train.jsonl

Khai báo API cho file này: fields = ['a'] template = '{a}{}'

Field gây lệch template: {} Lý do: template có placeholder rỗng {}""",
    ),
    "template_unclosed_brace": (
        lambda: E.TemplateFieldMismatchError.bad_syntax(
            file="./data/train.jsonl", fields=["a"], template="{a} {b", problem="{b"
        ),
        """[english] TemplateFieldMismatchError: Source file: ./data/train.jsonl

API declaration for this file: fields = ['a'] template = '{a} {b'

Field causing template mismatch: {b Reason: template has an unbalanced '{', write '{{' \
for a literal brace

[vietnam] TemplateFieldMismatchError: File nguồn: ./data/train.jsonl

Khai báo API cho file này: fields = ['a'] template = '{a} {b'

Field gây lệch template: {b Lý do: template có '{' không được đóng, hãy viết '{{' cho dấu \
ngoặc literal""",
    ),
    "template_unopened_brace": (
        lambda: E.TemplateFieldMismatchError.bad_syntax(
            file="./data/train.jsonl", fields=["a"], template="{a}}", problem="}"
        ),
        """[english] TemplateFieldMismatchError: Source file: ./data/train.jsonl

API declaration for this file: fields = ['a'] template = '{a}}'

Field causing template mismatch: } Reason: template has an unbalanced '}', write '}}' \
for a literal brace

[vietnam] TemplateFieldMismatchError: File nguồn: ./data/train.jsonl

Khai báo API cho file này: fields = ['a'] template = '{a}}'

Field gây lệch template: } Lý do: template có '}' không có '{' tương ứng, hãy viết '}}' \
cho dấu ngoặc literal""",
    ),
    "template_unclosed_brace_described": (
        lambda: E.TemplateFieldMismatchError.bad_syntax(
            file="./data/train.jsonl",
            fields=["a"],
            template="{a} {b",
            problem="unbalanced '{' at position 4",
        ),
        """[english] TemplateFieldMismatchError: Source file: ./data/train.jsonl

API declaration for this file: fields = ['a'] template = '{a} {b'

Field causing template mismatch: { Reason: template has an unbalanced '{', write '{{' \
for a literal brace

[vietnam] TemplateFieldMismatchError: File nguồn: ./data/train.jsonl

Khai báo API cho file này: fields = ['a'] template = '{a} {b'

Field gây lệch template: { Lý do: template có '{' không được đóng, hãy viết '{{' cho dấu \
ngoặc literal""",
    ),
    "template_custom_reason": (
        lambda: E.TemplateFieldMismatchError(
            file="./x.jsonl",
            fields=["a"],
            template="{a}",
            field="a",
            reason_en="custom reason",
            reason_vi="lý do riêng",
        ),
        """[english] TemplateFieldMismatchError: Source file: ./x.jsonl

API declaration for this file: fields = ['a'] template = '{a}'

Field causing template mismatch: a Reason: custom reason

[vietnam] TemplateFieldMismatchError: File nguồn: ./x.jsonl

Khai báo API cho file này: fields = ['a'] template = '{a}'

Field gây lệch template: a Lý do: lý do riêng""",
    ),
    "unit_validation_problem": (
        lambda: E.UnitValidationError(problem="sizes must be sorted ascending, got [64, 32]"),
        """[english] UnitValidationError: Invalid unit config.

Problem: sizes must be sorted ascending, got [64, 32]

Rules:

• sizes must be positive integers
• sizes must be sorted ascending
• build_batch must be a positive integer

[vietnam] UnitValidationError: Cấu hình unit không hợp lệ.

Vấn đề: sizes must be sorted ascending, got [64, 32]

Quy tắc:

• sizes phải là các số nguyên dương
• sizes phải được sắp xếp tăng dần
• build_batch phải là số nguyên dương""",
    ),
    "samples_per_shard_custom": (
        lambda: E.SamplesPerShardError("problem text", "vấn đề"),
        """[english] SamplesPerShardError: Invalid samples_per_shard.

Problem: problem text

Rules:

• each samples_per_shard[i] is a positive int
• len(samples_per_shard) == 1 or len(samples_per_shard) == file_count

[vietnam] SamplesPerShardError: samples_per_shard không hợp lệ.

Vấn đề: vấn đề

Quy tắc:

• mỗi samples_per_shard[i] phải là số nguyên dương
• len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số lượng file""",
    ),
    # reading a dataset back: one line per language, the location first
    "reader_record": (
        lambda: E.ReaderError("record", "out", shard="unit_16/shard_000002.bin", record=7, sample_id=40, line=41,
                              detail=B.joined([R.read_text("magic", got=0x12, want=0xFFFF),
                                               R.read_text("vocab", id=900, at=2, vocab=800)])),
        """[english] ReaderError: out: unit_16/shard_000002.bin record 7 (sample 40, sample_index.jsonl line 41): \
magic is 0x12, expected 0xffff; token id 900 at payload position 2 is >= the vocabulary size 800 (manifest.json)

[vietnam] ReaderError: out: unit_16/shard_000002.bin bản ghi 7 (sample 40, sample_index.jsonl dòng 41): \
magic là 0x12, đúng ra phải là 0xffff; token id 900 ở vị trí payload 2 >= kích thước vocabulary 800 (manifest.json)""",
    ),
    "reader_truncated_shard": (
        lambda: E.ReaderError("shard_truncated", "out", shard="unit_16/shard_000000.bin", size=100, record_bytes=36),
        """[english] ReaderError: out: unit_16/shard_000000.bin: 100 bytes is not a whole number of 36-byte records \
(truncated or corrupt shard)

[vietnam] ReaderError: out: unit_16/shard_000000.bin: 100 byte không phải là một số nguyên lần bản ghi 36 byte \
(shard bị cắt cụt hoặc bị hỏng)""",
    ),
    "reader_no_unit": (
        lambda: E.ReaderError("no_unit", "out", unit=8, units=[16, 32]),
        """[english] ReaderError: no unit 8 in out; units: [16, 32]

[vietnam] ReaderError: không có unit 8 trong out; các unit: [16, 32]""",
    ),
    "report_no_matplotlib": (
        lambda: E.ReportError("no_matplotlib"),
        """[english] ReportError: the HTML report draws its charts with matplotlib: \
pip install 'mintdim-beam[report]' (or pip install matplotlib)

[vietnam] ReportError: report HTML vẽ biểu đồ bằng matplotlib: \
pip install 'mintdim-beam[report]' (hoặc pip install matplotlib)""",
    ),
    "reader_no_manifest": (
        lambda: E.ReaderError("no_manifest", "out"),
        """[english] ReaderError: out: no manifest.json; not a published mintdim output

[vietnam] ReaderError: out: không có manifest.json; đây không phải output mintdim đã publish""",
    ),
    "dataset_access_missing": (
        lambda: E.DatasetAccessError("no_directory", command="verify", paths="a, b"),
        """[english] DatasetAccessError: mintdim-beam verify: no such directory: a, b

[vietnam] DatasetAccessError: mintdim-beam verify: không có thư mục này: a, b""",
    ),
    "dataset_access_failed": (
        lambda: E.DatasetAccessError("command_failed", command="report", why="[Errno 13] Permission denied: 'r.html'"),
        """[english] DatasetAccessError: mintdim-beam report: [Errno 13] Permission denied: 'r.html'

[vietnam] DatasetAccessError: mintdim-beam report thất bại: [Errno 13] Permission denied: 'r.html'""",
    ),
}

ALL_CASES = {**SPEC_CASES, **EXTRA_CASES}


def _error_class_names():
    return [
        "PipelineValidationError",
        "MintDimFileNotFoundError",
        "SourceParseError",
        "SampleSchemaError",
        "TokenizerValidationError",
        "TokenizerSpecialTokenError",
        "TokenizerMappingError",
        "FieldMappingError",
        "TemplateMappingError",
        "TemplateFieldMismatchError",
        "TemplateTokenizerError",
        "UnitMappingError",
        "OutputMappingError",
        "UnitValidationError",
        "UnitOverflowError",
        "OutputValidationError",
        "TokenDTypeCapacityError",
        "SamplesPerShardError",
        "ReaderError",
        "ReportError",
        "DatasetAccessError",
        "StoreRequestError",
    ]


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_text_is_exact(name):
    make, expected = ALL_CASES[name]
    err = make()
    assert str(err) == expected
    assert str(err) == "[english] " + err.english + "\n\n[vietnam] " + err.vietnamese


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_blocks_start_with_class_name(name):
    err = ALL_CASES[name][0]()
    prefix = type(err).__name__ + ": "
    assert err.english.startswith(prefix)
    assert err.vietnamese.startswith(prefix)


def test_every_spec_class_is_exported_and_documented():
    for name in _error_class_names():
        cls = getattr(E, name)
        assert issubclass(cls, MintDimError)
        assert name in E.__all__
        assert cls.__doc__ and cls.__doc__.strip()
    assert E.__doc__ and MintDimError.__doc__


def test_mapping_title_uses_singular_for_one():
    err = E.TemplateMappingError(files=1, got=2)
    assert err.english.startswith(
        "TemplateMappingError: Received 1 input file but 2 templates."
    )
    assert err.vietnamese.startswith(
        "TemplateMappingError: Nhận 1 file đầu vào nhưng có 2 template."
    )


def test_samples_per_shard_value_shown_with_repr():
    err = E.SamplesPerShardError.not_positive(index=1, value="8")
    assert "Problem: samples_per_shard[1] must be a positive int, got '8'" in err.english
    assert "Vấn đề: samples_per_shard[1] phải là số nguyên dương, hiện tại là '8'" in (
        err.vietnamese
    )


# ---------------------------------------------------------------------------
# Structured fields
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_is_mintdim_error_with_json_fields(name):
    err = ALL_CASES[name][0]()
    assert isinstance(err, MintDimError)
    assert isinstance(err, Exception)
    assert isinstance(err.fields, dict)
    json.dumps(err.fields)
    with pytest.raises(type(err)):
        raise err


def test_fields_and_attributes():
    err = SPEC_CASES["source_parse"][0]()
    assert err.fields == {
        "file": "./data/alpaca.jsonl",
        "line": 18291,
        "reason": "invalid JSON syntax",
    }
    assert (err.file, err.line, err.reason) == ("./data/alpaca.jsonl", 18291, "invalid JSON syntax")

    err = SPEC_CASES["file_not_found"][0]()
    assert (err.context, err.path) == ("source", "./data/train.jsonl")

    err = SPEC_CASES["unit_overflow"][0]()
    assert err.fields == {
        "file": "./data/alpaca.jsonl",
        "line": 18291,
        "token_count": 417,
        "max_unit_size": 320,
    }
    assert (err.token_count, err.max_unit_size) == (417, 320)

    err = SPEC_CASES["token_dtype_capacity"][0]()
    assert err.vocab_size == 5_000_000_000

    err = SPEC_CASES["tokenizer_mapping"][0]()
    assert (err.files, err.got) == (3, 2)

    err = SPEC_CASES["tokenizer_special_token"][0]()
    assert (err.tokenizer, err.special_token, err.problem) == (
        "./tokenizer/tokenizer.model",
        "pad_id",
        "missing pad_id",
    )

    err = SPEC_CASES["template_tokenizer"][0]()
    assert err.fields == {"file_index": 0, "template": "{a}\n\n{b}", "literals": ["\n\n"]}

    err = SPEC_CASES["pipeline_incomplete"][0]()
    assert err.kind == "incomplete"
    assert err.missing[0] == "source.files"

    err = SPEC_CASES["output_validation"][0]()
    assert err.directory == "./artifacts/token_shards"


def test_sample_schema_reason():
    missing = E.SampleSchemaError(
        file="f.jsonl", line=3, declared=["a", "b", "c"], missing=["a", "c"], available=["b"]
    )
    assert missing.kind == "missing_fields"
    assert missing.reason == "missing fields: a c"
    assert missing.declared == ["a", "b", "c"]
    assert missing.missing == ["a", "c"]
    assert missing.available == ["b"]

    wrong = E.SampleSchemaError.wrong_type(
        file="f.jsonl", line=3, declared=["a"], field="a", type_name="dict"
    )
    assert wrong.kind == "wrong_type"
    assert wrong.reason == "field value must be a string: a"
    assert (wrong.field, wrong.type_name) == ("a", "dict")


def test_source_parse_reason_is_free_text():
    err = E.SourceParseError(file="f.jsonl", line=1, reason="JSON value is not an object")
    assert err.reason == "JSON value is not an object"
    assert "Lý do: JSON value is not an object" in err.vietnamese


def test_template_mismatch_fields():
    err = SPEC_CASES["template_undeclared_placeholder"][0]()
    assert err.kind == "undeclared_placeholder"
    assert err.fields["fields"] == FIELDS
    assert err.declared_fields == FIELDS
    assert err.template == "{instruction}\n\n{prompt}\n\n{output}"
    assert err.field == "prompt"
    assert err.reason_en == "template uses {prompt}, but fields does not declare it"


def test_variant_kinds():
    assert E.TokenizerValidationError("files", "x").kind == "invalid"
    assert E.TokenizerValidationError.unsupported_format("t.txt").path == "t.txt"
    assert E.OutputMappingError(files=3, got=2).kind == "count"
    inconsistent = EXTRA_CASES["output_inconsistent"][0]()
    assert inconsistent.kind == "inconsistent"
    assert inconsistent.files == ["a.jsonl", "b.jsonl"]
    assert inconsistent.differs == "sizes"
    not_positive = SPEC_CASES["samples_per_shard_not_positive"][0]()
    assert (not_positive.kind, not_positive.index, not_positive.value) == ("not_positive", 0, 0)
    arity = SPEC_CASES["samples_per_shard_arity"][0]()
    assert (arity.kind, arity.files, arity.got) == ("arity", 3, 2)


def test_bad_syntax_accepts_parser_descriptions():
    empty = E.TemplateFieldMismatchError.bad_syntax(
        file="f", fields=["a"], template="{a}{}", problem="empty placeholder '{}' at position 3"
    )
    assert empty.field == "{}"
    assert empty.problem == "empty placeholder '{}' at position 3"
    assert empty.reason_en == "template has an empty placeholder {}"
    unopened = E.TemplateFieldMismatchError.bad_syntax(
        file="f", fields=["a"], template="{a}}", problem="unbalanced '}' at position 3"
    )
    assert unopened.field == "}"
    assert unopened.reason_en.startswith("template has an unbalanced '}'")


def test_tuples_are_stored_as_lists():
    err = E.TemplateFieldMismatchError.unused_field(
        file="./data/train.jsonl",
        fields=("instruction", "input", "output"),
        template="{instruction}\n\n{output}",
        field="input",
    )
    assert str(err) == SPEC_TEMPLATE_UNUSED_FIELD
    assert err.declared_fields == FIELDS


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_dict_round_trip_through_json(name):
    err = ALL_CASES[name][0]()
    data = err.to_dict()
    assert data == {"error": type(err).__name__, "fields": err.fields}
    rebuilt = error_from_dict(json.loads(json.dumps(data, ensure_ascii=False)))
    assert type(rebuilt) is type(err)
    assert str(rebuilt) == str(err)
    assert rebuilt.fields == err.fields


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_pickle_round_trip(name):
    err = ALL_CASES[name][0]()
    rebuilt = pickle.loads(pickle.dumps(err))
    assert type(rebuilt) is type(err)
    assert str(rebuilt) == str(err)
    assert rebuilt.fields == err.fields
    assert rebuilt.args == err.args


def test_to_dict_is_a_copy():
    err = SPEC_CASES["pipeline_incomplete"][0]()
    err.to_dict()["fields"]["missing"].append("extra")
    assert "extra" not in err.missing


def test_error_from_dict_rejects_unknown_class():
    with pytest.raises(ValueError):
        error_from_dict({"error": "ValueError", "fields": {}})
    with pytest.raises(ValueError):
        error_from_dict({"error": "SampleSchemaError", "fields": {"kind": "__init__"}})


def test_base_error_with_ready_text_pickles():
    err = MintDimError("Base: english", "Base: vietnamese", {"n": 1})
    assert str(err) == "[english] Base: english\n\n[vietnam] Base: vietnamese"
    rebuilt = pickle.loads(pickle.dumps(err))
    assert type(rebuilt) is MintDimError
    assert str(rebuilt) == str(err)
    assert rebuilt.fields == {"n": 1}


def test_beam_does_not_rewrap_errors():
    # Beam rebuilds untagged DoFn exceptions as type(exn)(message), which constructors
    # taking facts cannot accept; tagged exceptions are re-raised unchanged.
    assert getattr(E.UnitValidationError(), "_tagged_with_step", False) is True


def test_reading_errors_keep_where_they_happened():
    """A reader error keeps the shard, record and sample it names, as facts that survive
    pickling (a data loader's worker process) and JSON."""
    err = EXTRA_CASES["reader_record"][0]()
    assert isinstance(err, MintDimError)
    assert (err.kind, err.path, err.shard, err.record, err.sample_id, err.line) == (
        "record", "out", "unit_16/shard_000002.bin", 7, 40, 41)
    assert err.reason == err.english[len("ReaderError: "):]
    rebuilt = pickle.loads(pickle.dumps(err))
    assert (rebuilt.shard, rebuilt.record, rebuilt.sample_id) == (err.shard, err.record, err.sample_id)
    with pytest.raises(TypeError, match="unknown kind"):
        E.ReaderError("no_such_problem", "out")


# ---------------------------------------------------------------------------
# Wording: the *_messages modules
# ---------------------------------------------------------------------------

import pkgutil
import string
import unicodedata
from pathlib import Path

import mintdim_beam
import mintdim_beam.errors

MESSAGE_MODULES = sorted(m.name for m in pkgutil.iter_modules(mintdim_beam.errors.__path__)
                         if m.name.endswith("_messages"))
# A text whose two blocks say different things on purpose: a relayed error's English
# block is the whole original text, its Vietnamese block a note pointing at it.
ONE_SIDED = {"read_messages.READ_PROBLEMS['relayed']"}


def _texts(value, label):
    """Every `Text` in a message module's value (a constant, a table, a tuple of rules)."""
    if isinstance(value, B.Text):
        yield label, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _texts(item, f"{label}[{key!r}]")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _texts(item, f"{label}[{i}]")


def _all_texts():
    import importlib

    for name in MESSAGE_MODULES:
        module = importlib.import_module(f"mintdim_beam.errors.{name}")
        for attr, value in vars(module).items():
            if not attr.startswith("_"):
                yield from _texts(value, f"{name}.{attr}")


def _placeholders(template: str):
    """The facts a template names (``{value!r}`` and ``{got:#x}`` name ``value``, ``got``);
    None for a text that is not a template (a literal brace, shown as it is)."""
    try:
        return {field.split(".")[0].split("[")[0]
                for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError:
        return None


def test_message_modules_are_found():
    assert {"build_messages", "job_messages", "read_messages"} <= set(MESSAGE_MODULES)
    assert len(dict(_all_texts())) > 250


def test_every_message_pair_names_the_same_placeholders_in_both_languages():
    """A fact filled into one block only would be missing from the other. English alone
    inflects nouns (`plural_en`), so an English ``{..._word}`` has no Vietnamese twin."""
    wrong = []
    for label, text in _all_texts():
        en, vi = _placeholders(text.en), _placeholders(text.vi)
        if label in ONE_SIDED:
            continue
        if en is None or vi is None:
            if (en is None) != (vi is None):
                wrong.append((label, text))
            continue
        if {name for name in en if not name.endswith("_word")} != vi:
            wrong.append((label, en, vi))
    assert wrong == []


def _vietnamese_letters() -> set:
    """Every letter of the Vietnamese alphabet that is not plain ASCII, both cases."""
    tones = "\u0300\u0301\u0303\u0309\u0323"    # grave, acute, tilde, hook above, dot below
    vowels = "aăâeêioôơuưy"
    letters = set("ăâđêôơư") | {unicodedata.normalize("NFC", v + t) for v in vowels for t in tones}
    return letters | {letter.upper() for letter in letters}


def test_vietnamese_is_written_only_in_the_message_modules():
    """Every English/Vietnamese text has one home, `mintdim_beam/errors/*_messages.py`: a
    Vietnamese wording anywhere else in the package (an inline ``problem_vi=``) would be
    out of reach of the pair checks above."""
    letters = _vietnamese_letters()
    package = Path(mintdim_beam.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("errors/") and path.stem.endswith("_messages"):
            continue
        text = unicodedata.normalize("NFC", path.read_text(encoding="utf-8"))
        for number, line in enumerate(text.splitlines(), 1):
            if any(ch in letters for ch in line):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []


def test_text_format_fills_each_block_in_its_own_language():
    template = B.Text("{name} is above the maximum {maximum} ({why!r})", "{name} vượt quá {maximum} ({why!r})")
    filled = template.format(name="build_batch", maximum=B.number(1 << 20), why=B.Text("en", "vi"))
    assert filled == B.Text("build_batch is above the maximum 1,048,576 ('en')",
                            "build_batch vượt quá 1.048.576 ('vi')")
