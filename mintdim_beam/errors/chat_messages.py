"""Chat sources and preference pairs: their problems, English beside Vietnamese.

What the ``chat`` declaration of a job (`core.chat_config`) and a conversation line
(`core.chat_lines`) can get wrong. The declaration's problems fill
`PipelineValidationError.invalid`; a line's fill `SampleSchemaError.chat` and its short
English ``reason`` in ``bad_record_index.jsonl``. Each `bilingual.Text` has the same
``{placeholders}`` in both languages.
"""

from __future__ import annotations

from mintdim_beam.errors.bilingual import Text

# ---------------------------------------------------------------------------
# The declaration (core.chat_config)
# ---------------------------------------------------------------------------

CHAT_RULE = Text(
    "source.chat: field (a list of messages), role_key (default 'role'), content_key (default 'content'), "
    "templates (role -> template with {content} once), max_messages (1 .. 4096); each one value, or a list "
    "of one per file",
    "source.chat: field (list các message), role_key (mặc định 'role'), content_key (mặc định 'content'), "
    "templates (role -> template có {content} đúng một lần), max_messages (1 .. 4096); mỗi key một giá trị, "
    "hoặc một list mỗi file một giá trị",
)
CHAT_AND_FIELDS = Text(
    "source declares both chat and fields/templates: a source is either a chat or fields with templates",
    "source khai báo cả chat lẫn fields/templates: một source hoặc là chat, hoặc là fields kèm templates",
)
CHAT_NOT_MAPPING = Text("source.chat must be a mapping, got {type_name}",
                        "source.chat phải là một mapping, hiện tại là {type_name}")
CHAT_UNKNOWN_KEY = Text("unknown key {key!r} in source.chat{hint}",
                        "key không xác định {key!r} trong source.chat{hint}")
CHAT_DID_YOU_MEAN = Text(" (did you mean {close!r}?)", " (có phải ý bạn là {close!r}?)")
CHAT_VALUE = Text("source.chat.{key} has an unusable value {value!r}",
                  "source.chat.{key} có giá trị không dùng được {value!r}")
CHAT_ARITY = Text("source.chat.{key} has {got} values for {files} files (give 1 or {files})",
                  "source.chat.{key} có {got} giá trị cho {files} file (hãy đưa 1 hoặc {files})")
CHAT_SAME_KEYS = Text("source.chat.role_key and content_key are both {key!r}",
                      "source.chat.role_key và content_key đều là {key!r}")
CHAT_MAX_MESSAGES = Text("source.chat.max_messages must be an integer from 1 to {maximum}, got {value!r}",
                         "source.chat.max_messages phải là số nguyên từ 1 đến {maximum}, hiện tại là {value!r}")
CHAT_TEMPLATE_TYPE = Text(
    "source.chat.templates of {file}: role {role!r} must be a non-empty string mapped to a template string",
    "source.chat.templates của {file}: role {role!r} phải là chuỗi không rỗng ứng với một chuỗi template",
)
CHAT_TEMPLATE_BAD = Text(
    "source.chat.templates of {file}: the template of role {role!r} ({template!r}) cannot be used: {problem}",
    "source.chat.templates của {file}: template của role {role!r} ({template!r}) không dùng được: {problem}",
)

# ---------------------------------------------------------------------------
# A conversation line (core.chat_lines): SampleSchemaError.chat
# ---------------------------------------------------------------------------

SAMPLE_CHAT = Text("JSONL conversation cannot be rendered.", "Không thể render hội thoại JSONL.")
MESSAGE = Text("Message:", "Message:")
CHAT_PROBLEM = Text("Problem:", "Vấn đề:")

#: Each problem: the English text is also the line's ``reason`` in bad_record_index.jsonl.
CHAT_NOT_LIST = Text("field {field!r} must be a list of messages, got {type_name}",
                     "field {field!r} phải là list các message, hiện tại là {type_name}")
CHAT_TOO_MANY = Text("conversation has {count} messages, more than max_messages {maximum}",
                     "hội thoại có {count} message, nhiều hơn max_messages {maximum}")
CHAT_MESSAGE_NOT_OBJECT = Text("message {index} must be an object, got {type_name}",
                               "message {index} phải là một object, hiện tại là {type_name}")
CHAT_MESSAGE_KEY = Text("message {index} has no {key!r} key (keys: {keys})",
                        "message {index} không có key {key!r} (các key: {keys})")
CHAT_ROLE_NOT_STRING = Text("message {index}: role must be a string, got {type_name}",
                            "message {index}: role phải là string, hiện tại là {type_name}")
CHAT_ROLE_UNKNOWN = Text("message {index}: role {role!r} has no template (roles: {roles})",
                         "message {index}: role {role!r} không có template (các role: {roles})")
CHAT_CONTENT_TYPE = Text("message {index}: content must be a string, got {type_name}",
                         "message {index}: content phải là string, hiện tại là {type_name}")

# ---------------------------------------------------------------------------
# Preference pairs (core.chat_config, core.pair_lines)
# ---------------------------------------------------------------------------

PAIRS_RULE = Text(
    "source.pairs: prompt (optional), chosen, rejected: the fields of a line holding the shared prompt and the "
    "two completions, each one name or a list of one per file; with templates holding {completion} (and "
    "{prompt} when declared), or with chat (the fields hold lists of messages); on_overflow abort, truncate "
    "or skip",
    "source.pairs: prompt (không bắt buộc), chosen, rejected: các field của một dòng chứa prompt chung và "
    "hai completion, mỗi key một tên hoặc một list mỗi file một tên; kèm templates có {completion} (và "
    "{prompt} khi có khai báo), hoặc kèm chat (các field chứa list message); on_overflow abort, truncate "
    "hoặc skip",
)
PAIRS_NOT_MAPPING = Text("source.pairs must be a mapping, got {type_name}",
                         "source.pairs phải là một mapping, hiện tại là {type_name}")
PAIRS_UNKNOWN_KEY = Text("unknown key {key!r} in source.pairs", "key không xác định {key!r} trong source.pairs")
PAIRS_VALUE = Text("source.pairs.{key} has an unusable value {value!r}",
                   "source.pairs.{key} có giá trị không dùng được {value!r}")
PAIRS_AND_FIELDS = Text(
    "source declares both pairs and fields: a pair source's fields are its prompt, chosen and rejected",
    "source khai báo cả pairs lẫn fields: field của một source cặp là prompt, chosen và rejected của nó",
)
PAIRS_SAME_FIELD = Text("source.pairs names one field twice: {fields}",
                        "source.pairs đặt tên một field hai lần: {fields}")
PAIRS_EXTEND = Text(
    "on_overflow 'extend' cannot keep a pair's two records in one unit: use truncate or skip",
    "on_overflow 'extend' không giữ được hai bản ghi của một cặp trong cùng một unit: hãy dùng truncate hoặc skip",
)
PAIR_NOT_MESSAGES = Text("field {field!r} must be a list of messages (or one message), got {type_name}",
                         "field {field!r} phải là list các message (hoặc một message), hiện tại là {type_name}")

# PairCollapseError: a pair whose two records are the same tokens once written.
PAIR_COLLAPSED = Text(
    "Preference pair has identical chosen and rejected records once written.",
    "Cặp preference có bản ghi chosen và rejected giống hệt nhau khi ghi ra.",
)
PAIR_COLLAPSED_DETAIL = Text(
    "Both records hold the same {tokens} tokens (after truncation to unit {unit} when the pair overflowed): a "
    "trainer would learn nothing from the pair.",
    "Cả hai bản ghi có cùng {tokens} token (sau khi cắt về unit {unit} nếu cặp bị tràn): trainer sẽ không học "
    "được gì từ cặp này.",
)
PAIR_COLLAPSED_FIX = Text(
    "Fix: set run.on_pair_collapse: skip to leave such pairs out (each gets an overflow_index row with action "
    "'collapsed'), or use larger unit sizes.",
    "Cách sửa: đặt run.on_pair_collapse: skip để bỏ các cặp như vậy (mỗi bản ghi có một dòng overflow_index với "
    "action 'collapsed'), hoặc dùng unit size lớn hơn.",
)
