"""The base of every MintDim error: bilingual text, structured facts, JSON and pickle.

Separate from the error classes themselves (`config_errors`, `tokenizer_errors`,
`data_errors`) because every one of them builds on the same machinery: facts
normalised to JSON values, one constructor per message variant recorded as `kind`,
and a pickle form that rebuilds the same class with the same text in another process.
The catalogue of every class, and rebuilding one by name from JSON, is `errors`.
"""

from __future__ import annotations

import copy
import inspect
import numbers
import os
from typing import Any, ClassVar, Mapping, Sequence

from mintdim_beam.errors import bilingual as B

# Public error classes by name, filled as each class is defined, so `errors.error_from_dict`
# can rebuild the right class.
REGISTRY: dict[str, type["MintDimError"]] = {}


def plain_value(value: Any) -> Any:
    """Turn a fact into a JSON value, so an error survives the trip to the launcher.

    Rendering always uses the normalised value, so a rebuilt error prints exactly the
    same text as the original (a tuple of fields, for example, is shown as the list it
    becomes after JSON).
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (os.PathLike, bytes)):
        return os.fsdecode(value)
    if isinstance(value, Mapping):
        return {str(key): plain_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(item) for item in value]
    return repr(value)


def fact_dict(**facts: Any) -> dict[str, Any]:
    """Normalised facts of one error, in the order they were given."""
    return {key: plain_value(value) for key, value in facts.items()}


def as_list(value: Any) -> Any:
    """A lone string where a list is expected is one item, not a list of characters."""
    return [value] if isinstance(value, (str, bytes, os.PathLike)) else value


class MintDimError(Exception):
    """Base of every MintDim error: bilingual text plus the structured facts behind it.

    Catching `MintDimError` catches every spec error; the CLI prints `str(err)` without a
    traceback. Subclasses build their text from facts; the base constructor is for
    errors that carry ready-made text.

    Classes with several message variants record which one in the fact `kind`, so the
    exact variant is rebuilt from JSON.
    """

    english: str
    vietnamese: str
    fields: dict[str, Any]

    # `kind` recorded by the main constructor of classes that have variants.
    _main_kind: ClassVar[str | None] = None
    # Alternate constructors (classmethods) that `error_from_dict` may call by `kind`.
    _variant_kinds: ClassVar[tuple[str, ...]] = ()
    # Facts whose name would shadow a base attribute are exposed under another name.
    _attr_aliases: ClassVar[dict[str, str]] = {}

    # Beam re-creates a failing DoFn's exception as `type(exn)(args[0] + note)` unless it
    # is already tagged; that would either lose the class (constructors take facts, not
    # a message) or, for one-argument errors, bury the message inside a fact. Marking
    # every MintDim error as tagged keeps the original error and its facts intact.
    _tagged_with_step: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            REGISTRY[cls.__name__] = cls

    def __init__(
        self, english: str, vietnamese: str, fields: Mapping[str, Any] | None = None
    ) -> None:
        self._init_error(english, vietnamese, dict(fields or {}))

    def _init_error(self, english: str, vietnamese: str, fields: dict[str, Any]) -> None:
        if self._main_kind is not None and "kind" not in fields:
            fields = {"kind": self._main_kind, **fields}
        self.english = english
        self.vietnamese = vietnamese
        self.fields = fields
        for key, value in fields.items():
            setattr(self, self._attr_aliases.get(key, key), value)
        Exception.__init__(self, str(self))

    @classmethod
    def _make(cls, english: str, vietnamese: str, fields: dict[str, Any]) -> "MintDimError":
        """Instance for an alternate constructor, bypassing the main constructor."""
        err = cls.__new__(cls)
        err._init_error(english, vietnamese, fields)
        return err

    @classmethod
    def _render(cls, title: B.Text, paragraphs: Sequence[B.Text]) -> tuple[str, str]:
        return B.render(cls.__name__, title, paragraphs)

    def __str__(self) -> str:
        return "[english] " + self.english + "\n\n[vietnam] " + self.vietnamese

    def __repr__(self) -> str:
        facts = ", ".join(f"{key}={value!r}" for key, value in self.fields.items())
        return f"{type(self).__name__}({facts})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form: `{"error": ClassName, "fields": {...}}`."""
        return {"error": type(self).__name__, "fields": copy.deepcopy(self.fields)}

    @classmethod
    def _from_fields(cls, fields: Mapping[str, Any]) -> "MintDimError":
        """Rebuild through the constructor that made the error, chosen by `kind`."""
        kind = fields.get("kind")
        if kind is None or kind == cls._main_kind:
            build = cls
        elif kind in cls._variant_kinds:
            build = getattr(cls, kind)
        else:
            raise ValueError(f"unknown kind {kind!r} for {cls.__name__}")
        params = inspect.signature(build).parameters
        return build(**{key: value for key, value in fields.items() if key in params})

    def __reduce__(self) -> tuple[Any, ...]:
        if type(self) is MintDimError:
            return (MintDimError, (self.english, self.vietnamese, self.fields))
        # The class travels by reference (module and name), so unpickling imports the
        # module that defines it, and the error is rebuilt from its facts as from JSON.
        return (_rebuild, (type(self), copy.deepcopy(self.fields)))


def _rebuild(cls: type[MintDimError], fields: dict[str, Any]) -> MintDimError:
    """Unpickle an error: the same class, through the constructor that made it."""
    return cls._from_fields(fields)
