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
