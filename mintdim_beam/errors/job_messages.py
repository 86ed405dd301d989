"""Problems found in a declared job, English beside Vietnamese.

What the configuration (`core.config`), the job-file loader and the launcher
(`launch.api`, `launch.launcher`, `launch.preflight`, `launch.patterns`) and the
command line find wrong in what the user declared: an argument of the wrong type, a
job file that does not parse, a run option or a Beam flag out of range. They raise the
build's errors (`PipelineValidationError.invalid`, `UnitValidationError`,
`TokenizerValidationError`, `SamplesPerShardError`) with these texts as the problem and
its rules, one string per language; the errors' own titles and labels are
`build_messages`. Each text is a `bilingual.Text` whose ``{placeholders}`` are the same
facts in both languages, filled with `Text.format`.
"""

from __future__ import annotations

from mintdim_beam.errors.bilingual import Text

# ---------------------------------------------------------------------------
# Values and lists of the fluent API and the job file (core.config)
# ---------------------------------------------------------------------------

#: A policy or layout outside its choices; ``{choices}`` comma-separated.
ONE_OF = Text(
    "{name} must be one of {choices}, got {value!r}",
    "{name} phải là một trong {choices}, hiện tại là {value!r}",
)

#: A list-style setting (source.files, source.fields, ...) and what each item must be.
LIST_RULE = Text("{name} is a list of {items}", "{name} là list các {items}")
NOT_A_LIST = Text("{name} must be a list, got {type_name}", "{name} phải là một list, hiện tại là {type_name}")
LIST_ITEM = Text(
    "{name}[{index}] must be {items}, got {type_name}",
    "{name}[{index}] phải thuộc loại {items}, hiện tại là {type_name}",
)
#: The ``{items}`` of a list setting.
NON_EMPTY_PATHS = Text("non-empty path strings", "chuỗi đường dẫn không rỗng")
FIELD_NAME_LISTS = Text("lists of field names", "list tên field")
TEMPLATE_STRINGS = Text("template strings", "chuỗi template")

# units.sizes and units.build_batch (UnitValidationError); ``{maximum}`` is a grouped number.
SIZES_NOT_LISTS = Text(
    "sizes must be a list of lists of positive integers",
    "sizes phải là một list gồm các list số nguyên dương",
)
BUILD_BATCH_NOT_LIST = Text(
    "build_batch must be a list of positive integers",
    "build_batch phải là một list các số nguyên dương",
)
SIZES_NOT_POSITIVE = Text(
    "sizes must be positive integers, got {sizes}",
    "sizes phải là các số nguyên dương, hiện tại là {sizes}",
)
SIZES_NOT_ASCENDING = Text(
    "sizes must be sorted ascending, got {sizes}",
    "sizes phải được sắp xếp tăng dần, hiện tại là {sizes}",
)
UNIT_SIZE_TOO_LARGE = Text(
    "unit size {size} is above the maximum {maximum} tokens",
    "unit size {size} vượt quá giá trị tối đa {maximum} token",
)
BUILD_BATCH_NOT_POSITIVE = Text(
    "build_batch must be a positive integer, got {value!r}",
    "build_batch phải là số nguyên dương, hiện tại là {value!r}",
)
BUILD_BATCH_TOO_LARGE = Text(
    "build_batch {value} is above the maximum {maximum}",
    "build_batch {value} vượt quá giá trị tối đa {maximum}",
)

# output.samples_per_shard (SamplesPerShardError)
SAMPLES_PER_SHARD_NOT_LIST = Text(
    "samples_per_shard must be a list of positive ints, got {type_name} {value!r}",
    "samples_per_shard phải là một list các số nguyên dương, hiện tại là {type_name} {value!r}",
)
# The Vietnamese "{value}." (where the English has "{value},") is the text as it has always
# been printed: kept as it is while this wording only moves here.
SAMPLES_PER_SHARD_TOO_LARGE = Text(
    "samples_per_shard[{index}] is {value}, above the maximum {maximum}",
    "samples_per_shard[{index}] là {value}. vượt quá giá trị tối đa {maximum}",
)

# ---------------------------------------------------------------------------
# Run options (core.config)
# ---------------------------------------------------------------------------

INDEX_LAYOUT_RULE = Text(
    "run.index_layout: file (one file per index, default) | parts (sample_index/part-NNNNN.jsonl, "
    "... one part per input block, published without concatenating)",
    "run.index_layout: file (mỗi index một file, mặc định) | parts (sample_index/part-NNNNN.jsonl, "
    "... mỗi khối đầu vào một part, publish không cần nối file)",
)
ACCELERATORS_NOT_BOOL = Text(
    "accelerators must be true or false, got {value!r}",
    "accelerators phải là true hoặc false, hiện tại là {value!r}",
)
ACCELERATORS_RULE = Text(
    "run.accelerators: true | false (default true)",
    "run.accelerators: true | false (mặc định true)",
)
BLOCK_SIZE_RANGE = Text(
    "block_size must be an integer from {least} to {most} bytes, got {value!r}",
    "block_size phải là số nguyên từ {least} đến {most} byte, hiện tại là {value!r}",
)
BLOCK_SIZE_RULE = Text(
    "block_size is the byte size of the input blocks read by one worker",
    "block_size là số byte của mỗi khối đầu vào một worker đọc",
)
#: The guard rails of ``core.config.Limits`` (run.max_bad_records, run.max_unk_fraction).
MAX_BAD_RECORDS_VALUE = Text(
    "max_bad_records must be a count (an integer of at least 0) or a fraction of the samples read "
    "(a number from 0 to 1, such as 0.01), got {value!r}",
    "max_bad_records phải là một số đếm (số nguyên không nhỏ hơn 0) hoặc một tỉ lệ trên số sample đã đọc "
    "(một số từ 0 đến 1, ví dụ 0.01), hiện tại là {value!r}",
)
MAX_BAD_RECORDS_RULE = Text(
    "run.max_bad_records: N fails the build above N bad records, a fraction F (0 to 1) above F of the "
    "output's samples; default: no limit",
    "run.max_bad_records: N làm build thất bại khi có quá N bad record, một tỉ lệ F (0 đến 1) khi vượt quá F "
    "số sample của output; mặc định: không giới hạn",
)
MAX_UNK_FRACTION_VALUE = Text(
    "max_unk_fraction must be a number from 0 to 1 (UNK tokens / written tokens), got {value!r}",
    "max_unk_fraction phải là một số từ 0 đến 1 (số token UNK / số token đã ghi), hiện tại là {value!r}",
)
MAX_UNK_FRACTION_RULE = Text(
    "run.max_unk_fraction: F fails the build when more than F of an output's written tokens are UNK; "
    "default: no limit",
    "run.max_unk_fraction: F làm build thất bại khi hơn F số token đã ghi của một output là UNK; "
    "mặc định: không giới hạn",
)
RUN_FLAG_NOT_BOOL = Text(
    "run.{name} must be true or false (a YAML boolean, without quotes), got {value!r}",
    "run.{name} phải là true hoặc false (boolean YAML, không có dấu nháy), hiện tại là {value!r}",
)
#: ``{option}``: skip_unchanged, --build-id.
NEEDS_VERSIONED = Text(
    "{option} needs versioned output roots (--versioned or run.versioned: true)",
    "{option} cần output root có phiên bản (--versioned hoặc run.versioned: true)",
)
KEEP_VALUE = Text(
    "keep must be a whole number of builds, at least 1, got {value!r}",
    "keep phải là một số nguyên các bản build, ít nhất là 1, hiện tại là {value!r}",
)
KEEP_RULE = Text(
    "run.keep (--keep N): after a versioned build publishes, each root keeps its N newest complete builds "
    "and the one LATEST names, and removes its older complete builds; default: keep every build",
    "run.keep (--keep N): sau khi một bản build có phiên bản publish, mỗi root giữ N bản build hoàn chỉnh mới "
    "nhất và bản mà LATEST ghi, rồi xoá các bản build hoàn chỉnh cũ hơn; mặc định: giữ mọi bản build",
)
BUILD_ID_NOT_PLAIN = Text(
    "build id {build_id!r} is not a plain name",
    "build id {build_id!r} không phải là một tên đơn giản",
)
BUILD_ID_RULE = Text(
    "a build id is 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit, "
    "and not {latest}: it names ROOT/<build-id>/",
    "build id gồm 1 đến 128 chữ cái, chữ số, '.', '_' hoặc '-', bắt đầu bằng chữ cái hoặc chữ số, "
    "và khác {latest}: nó là tên của ROOT/<build-id>/",
)

# ---------------------------------------------------------------------------
# Job files and the fluent API's entry (core.config, launch.api)
# ---------------------------------------------------------------------------

#: ``{sections}``: each section with its keys, ``source (files, fields, templates), ...``.
JOB_SECTIONS_RULE = Text("job file sections: {sections}", "các section của job file: {sections}")
JOB_NOT_MAPPING = Text(
    "job file {path} must hold a mapping of sections",
    "job file {path} phải chứa một mapping các section",
)
#: ``{hint}``: `build_messages.DID_YOU_MEAN` filled in, or empty.
JOB_UNKNOWN_SECTION = Text(
    "unknown section {section!r} in {path}{hint}",
    "section không xác định {section!r} trong {path}{hint}",
)
JOB_SECTION_NOT_MAPPING = Text(
    "section {section!r} of {path} must be a mapping, got {type_name}",
    "section {section!r} của {path} phải là một mapping, hiện tại là {type_name}",
)
JOB_UNKNOWN_KEY = Text(
    "unknown key {key!r} in section {section!r} of {path}{hint}",
    "key không xác định {key!r} trong section {section!r} của {path}{hint}",
)
JOB_NOT_REGULAR = Text(
    "job file {path} is not a regular file",
    "job file {path} không phải là file thường",
)
JOB_NOT_UTF8 = Text(
    "job file {path} could not be read as UTF-8 text: {why}",
    "không đọc được job file {path} dưới dạng văn bản UTF-8: {why}",
)
JOB_UNPARSABLE = Text(
    "job file {path} could not be parsed: {why}",
    "không parse được job file {path}: {why}",
)
#: ``{given}``: the tokenizer keys given, comma-separated.
JOB_TOKENIZER_TWICE = Text(
    "job file {path}: the tokenizer section gives {given}; give either type and files, "
    "or one of {sentencepiece}: [...] and {hf_json}: [...]",
    "job file {path}: section tokenizer có {given}; chỉ dùng type và files, "
    "hoặc một trong {sentencepiece}: [...] và {hf_json}: [...]",
)
UNKNOWN_PIPELINE = Text("unknown pipeline {name!r}", "không có pipeline {name!r}")
PIPELINE_RULE = Text('pipeline("unit-build") is the only pipeline', 'pipeline("unit-build") là pipeline duy nhất')

# ---------------------------------------------------------------------------
# Beam options and input patterns (launch.launcher, launch.preflight, launch.patterns)
# ---------------------------------------------------------------------------

OPTIONS_TYPE = Text(
    "options must be a list of Beam flags or a PipelineOptions, got {type_name}",
    "options phải là một list các Beam flag hoặc một PipelineOptions, hiện tại là {type_name}",
)
OPTIONS_RULE = Text(
    "options: list of Beam flags such as ['--direct_num_workers=2'], or PipelineOptions",
    "options: list các Beam flag, ví dụ ['--direct_num_workers=2'], hoặc PipelineOptions",
)
UNKNOWN_RUNNER = Text(
    "--runner {name} is not a runner Beam knows",
    "--runner {name} không phải là runner mà Beam biết",
)
RUNNER_RULE = Text(
    "--runner: a Beam runner name (DataflowRunner, FlinkRunner, SparkRunner, PortableRunner, "
    "DaskRunner, ...), the module path of a PipelineRunner subclass, or leave it out for the "
    "local runner",
    "--runner: tên một runner của Beam (DataflowRunner, FlinkRunner, SparkRunner, "
    "PortableRunner, DaskRunner, ...), đường dẫn module của một lớp con PipelineRunner, "
    "hoặc bỏ trống để dùng runner cục bộ",
)
ENCODE_THREADS = Text(
    "--encode_threads must be a positive integer, got {value}",
    "--encode_threads phải là số nguyên dương, hiện tại là {value}",
)
ENCODE_THREADS_RULE = Text(
    "--encode_threads: a positive integer, or leave it out for the default",
    "--encode_threads: một số nguyên dương, hoặc bỏ trống để dùng giá trị mặc định",
)
LOCAL_WORKERS = Text(
    "--direct_num_workers must be 0 (one per core) or a positive integer, got {workers}",
    "--direct_num_workers phải là 0 (mỗi lõi một worker) hoặc một số nguyên dương, nhận được {workers}",
)
LOCAL_WORKERS_RULE = Text(
    "--direct_num_workers: 0 (one per core) or a positive integer",
    "--direct_num_workers: 0 (mỗi lõi một worker) hoặc một số nguyên dương",
)
NO_FILE_SYSTEM = Text(
    "no file system for {scheme}:// here, so {path} cannot be read or written",
    "không có file system cho {scheme}:// ở đây, nên không thể đọc hay ghi {path}",
)
FILE_SYSTEM_RULES = (
    Text(
        "gs:// needs pip install 'mintdim-beam[gcp]', s3:// needs 'mintdim-beam[aws]'",
        "gs:// cần pip install 'mintdim-beam[gcp]', s3:// cần 'mintdim-beam[aws]'",
    ),
    Text(
        "a local file is named by its path, without file://",
        "file cục bộ được ghi bằng đường dẫn của nó, không có file://",
    ),
)
MATCHED_TWICE = Text(
    "{path} is matched by two entries of source.files, {first!r} and {second!r}, "
    "so its samples would be read twice",
    "{path} khớp với hai mục của source.files, {first!r} và {second!r}, "
    "nên các mẫu của nó sẽ bị đọc hai lần",
)
MATCHED_TWICE_RULE = Text(
    "a file that a pattern matches must not be matched or named by another entry of "
    "source.files: narrow the patterns so that each file is matched once",
    "một file đã khớp với một pattern không được khớp hoặc được nêu lại bởi mục khác "
    "của source.files: thu hẹp các pattern để mỗi file chỉ khớp một lần",
)

# A portable runner whose job server or binary cannot be had (launcher.check_runner_service).
RUNNER_SERVICE_UNAVAILABLE = Text(
    "--runner {name}: {what} cannot be had: {reason}",
    "--runner {name}: không lấy được {what}: {reason}",
)
RUNNER_SERVICE_RULE = Text(
    "{flag}: a local path to it (tools/fetch_runners.sh caches one), or a machine that can download it; "
    "or --job_endpoint of a job service already running",
    "{flag}: đường dẫn cục bộ tới nó (tools/fetch_runners.sh lưu sẵn một bản), hoặc một máy tải được nó; "
    "hoặc --job_endpoint của một job service đang chạy",
)
