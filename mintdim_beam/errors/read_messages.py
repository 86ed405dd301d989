"""Texts of reading a built dataset back, English beside Vietnamese.

The problems the reader, the report and the consumer commands find in a published
dataset (`read_errors`), by key, and `read_text` to fill one in.
"""

from __future__ import annotations

from mintdim_beam.errors.bilingual import Text

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
    # a versioned root (ROOT/LATEST naming ROOT/<build-id>/)
    "latest_not_id": Text(
        "holds {got!r}, not a build id: a versioned root's LATEST names the folder of its latest build",
        "chứa {got!r}, không phải build id: LATEST của một versioned root ghi tên thư mục của bản build mới nhất"),
    "latest_unpublished": Text(
        "names build {build_id}, which is not a published dataset (no {build_id}/manifest.json: removed, or "
        "its build failed)",
        "ghi build {build_id}, nhưng đây không phải dataset đã publish (không có {build_id}/manifest.json: đã bị "
        "xoá, hoặc build của nó đã thất bại)"),
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
    "unk_id": Text("unk id: length_field.json says {lf}, manifest.json says {manifest} (a dataset built "
                   "with a tokenizer that cannot emit UNK has null in both)",
                   "unk id: length_field.json ghi {lf}, manifest.json ghi {manifest} (dataset build bằng tokenizer "
                   "không thể sinh UNK có null ở cả hai)"),
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
    "row_roles": Text("roles must be a list of at most {most} role names (strings), got {got}",
                      "roles phải là list gồm tối đa {most} tên role (string), hiện tại là {got}"),
    "row_roles_names": Text("roles: the index names more than {most} distinct roles, more than a reader codes",
                            "roles: index ghi hơn {most} role khác nhau, nhiều hơn số reader mã hoá được"),
    "row_pair_keys": Text("{has} without {lacks}: a preference pair's rows carry both",
                          "có {has} nhưng thiếu {lacks}: các dòng của một cặp preference có cả hai"),
    "row_pair_role": Text("pair_role must be one of {roles}, got {got}",
                          "pair_role phải là một trong {roles}, hiện tại là {got}"),
    # a chat output (DESIGN.md §9)
    "chat_layout": Text("not a consistent chat output: {detail}", "không phải output chat nhất quán: {detail}"),
    "index_roles_missing": Text(
        "no roles: every row of a chat output lists the roles of its sample's messages",
        "không có roles: mọi dòng của output chat đều liệt kê role của các message trong sample"),
    "index_roles_many": Text("roles lists {count} messages, more than the {most} message slots of a record",
                             "roles liệt kê {count} message, nhiều hơn {most} slot message của một bản ghi"),
    "index_role_unknown": Text("role {role!r} is not among the roles manifest.json declares ({roles})",
                               "role {role!r} không thuộc các role mà manifest.json khai báo ({roles})"),
    "roles_slots": Text(
        "message slot {slot} holds {count} tokens, but the sample's roles in sample_index.jsonl list {listed} "
        "messages: the header and the roles disagree",
        "slot message {slot} chứa {count} token, nhưng roles của sample trong sample_index.jsonl chỉ liệt kê "
        "{listed} message: header và roles không khớp nhau"),
    "not_pairs": Text(
        "preference_pairs needs a preference-pair output (rows with pair_id and pair_role); this dataset has none",
        "preference_pairs cần một output cặp preference (các dòng có pair_id và pair_role); dataset này không có"),
    "pair_broken": Text(
        "pair {pair_id}: {problem}; every pair is a chosen and a rejected record in one unit",
        "cặp {pair_id}: {problem}; mỗi cặp là một bản ghi chosen và một bản ghi rejected trong cùng một unit"),
    "not_chat": Text(
        "loss_roles needs a chat output (messages with roles); this dataset's segments are {segments}: "
        "use loss_segments",
        "loss_roles cần một output chat (các message có role); các segment của dataset này là {segments}: "
        "hãy dùng loss_segments"),
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
    # the end-of-document token of a Megatron export (--append-eod)
    "eod_no_tokenizer": Text(
        "mintdim-beam {command}: --append-eod takes its token from the tokenizer, and {tokenizer} cannot be "
        "loaded ({why}); give the tokenizer file with --tokenizer PATH",
        "mintdim-beam {command}: --append-eod lấy token từ tokenizer, nhưng không nạp được {tokenizer} ({why}); "
        "hãy chỉ ra file tokenizer bằng --tokenizer PATH"),
    "eod_tokenizer_differs": Text(
        "mintdim-beam {command}: tokenizer {tokenizer} has {key} {got}, manifest.json says {want}: it is not "
        "the tokenizer the dataset was built with",
        "mintdim-beam {command}: tokenizer {tokenizer} có {key} là {got}, nhưng manifest.json ghi {want}: đây "
        "không phải tokenizer đã dùng để build dataset"),
    "eod_no_eos": Text(
        "mintdim-beam {command}: tokenizer {tokenizer} names no end-of-sequence token; give the end token's "
        "exact text with --eod-token NAME (such as </s> or <|endoftext|>)",
        "mintdim-beam {command}: tokenizer {tokenizer} không có token kết thúc chuỗi (end-of-sequence); hãy cho "
        "nội dung chính xác của token kết thúc bằng --eod-token NAME (ví dụ </s> hoặc <|endoftext|>)"),
    "eod_unknown_token": Text(
        "mintdim-beam {command}: {token!r} is not one token of {tokenizer}; --eod-token takes a token's exact "
        "text (such as </s> or <|endoftext|>)",
        "mintdim-beam {command}: {token!r} không phải là một token của {tokenizer}; --eod-token nhận nội dung "
        "chính xác của một token (ví dụ </s> hoặc <|endoftext|>)"),
    "target_exists": Text("mintdim-beam {command}: {file} already exists; remove it or pass --overwrite "
                          "(overwrite=True in Python)",
                          "mintdim-beam {command}: {file} đã tồn tại; hãy xoá nó hoặc dùng --overwrite "
                          "(overwrite=True trong Python)"),
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


# ---------------------------------------------------------------------------
# verify's warnings: what a training job would find, in a dataset that is not damaged
# ---------------------------------------------------------------------------
#: ``{where}`` is ``file:line (sample N)``; ``{roles}`` the loss roles.
WARN_NO_LOSS_ROLE = Text(
    "{where}: no message of role {roles}, so no loss position with loss_roles={roles}",
    "{where}: không có message nào có role {roles}, nên không có vị trí loss nào với loss_roles={roles}")
WARN_LOSS_TRUNCATED = Text(
    "{where}: truncation left no token of its {roles} messages (parts {parts}), so no loss position",
    "{where}: việc cắt bớt không để lại token nào của các message {roles} (phần {parts}), nên không có vị trí "
    "loss nào")
WARN_LOSS_EMPTY = Text(
    "{where}: its {roles} messages hold no token in parts {parts}, so no loss position",
    "{where}: các message {roles} của nó không có token nào ở phần {parts}, nên không có vị trí loss nào")
WARN_MORE = Text("... and {count} more samples without a loss position",
                 "... và {count} sample khác không có vị trí loss nào")
WARN_ROLE_ABSENT = Text("loss role {role!r} is not a role of this dataset (its roles: {roles}); left out",
                        "loss role {role!r} không phải role của dataset này (các role: {roles}); đã bỏ qua")
WARN_NOT_CHAT = Text("--loss-roles {roles}: not a chat output, no loss roles to check",
                     "--loss-roles {roles}: không phải output chat, không có loss role nào để kiểm tra")
