"""What a SentencePiece ``.model`` file declares, read with the protobuf runtime.

The SentencePiece library loads any prefix of a model that ends between two pieces: a
file cut short there holds fewer pieces and no trainer or normalizer settings, and
encodes text differently without a word of warning. Every model the trainer writes
holds both settings (they follow the pieces in the file), so a model without them is
refused as truncated. The UNK-audit accelerator (``accel.sp_unk``) reads the model
type, byte fallback and normalizer name here too, gigatoken's gate (``accel.gigatoken_sp``)
the normalizer's settings, and the adapter the user-defined pieces
(``{@<content>}`` template segments may name them; the library has no call that says
which pieces are user-defined).

The model is parsed against a message class declaring only those fields (numbers and
defaults as in ``sentencepiece_model.proto``); every other field is kept as an unknown
field. sentencepiece's own ``sentencepiece_model_pb2`` is not used because it may need a
newer protobuf runtime than the one installed (Beam pins its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

#: ``TrainerSpec.model_type`` of a Unigram and of a BPE model (sentencepiece_model.proto).
UNIGRAM = 1
BPE = 2
#: ``SentencePiece.Type`` of a user-defined piece (sentencepiece_model.proto).
USER_DEFINED = 4


@dataclass(frozen=True)
class ModelFacts:
    model_type: int          # TrainerSpec.model_type: 1 Unigram, 2 BPE, 3 word, 4 char
    byte_fallback: bool      # TrainerSpec.byte_fallback
    normalizer: str          # NormalizerSpec.name
    complete: bool           # both TrainerSpec and NormalizerSpec present
    user_defined: tuple = ()  # (id, piece) of every USER_DEFINED piece, in id order
    # How the normalizer treats text before the model sees it (NormalizerSpec, TrainerSpec):
    charsmap: bool = False   # a precompiled character map (NFKC and kin; "identity" has none)
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    whitespace_suffix: bool = False   # TrainerSpec.treat_whitespace_as_suffix


def read_model(data: bytes) -> Optional[ModelFacts]:
    """The facts of a serialized ``ModelProto``, or None if protobuf cannot parse it."""
    from google.protobuf.message import DecodeError

    model = _model_class()()
    try:
        model.ParseFromString(data)
    except DecodeError:
        return None
    user_defined = tuple((i, p.piece) for i, p in enumerate(model.pieces) if p.type == USER_DEFINED)
    norm = model.normalizer_spec
    return ModelFacts(model.trainer_spec.model_type, model.trainer_spec.byte_fallback, norm.name,
                      model.HasField("trainer_spec") and model.HasField("normalizer_spec"), user_defined,
                      charsmap=bool(norm.precompiled_charsmap),
                      remove_extra_whitespaces=norm.remove_extra_whitespaces,
                      escape_whitespaces=norm.escape_whitespaces,
                      whitespace_suffix=model.trainer_spec.treat_whitespace_as_suffix)


_MODEL_CLASS = None


def _model_class():
    """The message class of the ``ModelProto`` fields :func:`read_model` reads, built once."""
    global _MODEL_CLASS
    if _MODEL_CLASS is None:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        F = descriptor_pb2.FieldDescriptorProto
        proto = descriptor_pb2.FileDescriptorProto(name="mintdim_sentencepiece_model_subset.proto",
                                                   package="mintdim_sentencepiece", syntax="proto2")
        trainer = proto.message_type.add(name="TrainerSpec")
        trainer.field.add(name="model_type", number=3, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL,
                          default_value=str(UNIGRAM))
        trainer.field.add(name="byte_fallback", number=35, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
        trainer.field.add(name="treat_whitespace_as_suffix", number=24, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
        normalizer = proto.message_type.add(name="NormalizerSpec")
        normalizer.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        normalizer.field.add(name="precompiled_charsmap", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
        for name, number in (("remove_extra_whitespaces", 4), ("escape_whitespaces", 5)):
            normalizer.field.add(name=name, number=number, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL,
                                 default_value="true")
        piece = proto.message_type.add(name="SentencePiece")
        piece.field.add(name="piece", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
        piece.field.add(name="type", number=3, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, default_value="1")
        model = proto.message_type.add(name="ModelProto")
        model.field.add(name="pieces", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                        type_name=".mintdim_sentencepiece.SentencePiece")
        for name, number, kind in (("trainer_spec", 2, "TrainerSpec"), ("normalizer_spec", 3, "NormalizerSpec")):
            model.field.add(name=name, number=number, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                            type_name=f".mintdim_sentencepiece.{kind}")
        pool = descriptor_pool.DescriptorPool()
        pool.Add(proto)
        descriptor = pool.FindMessageTypeByName("mintdim_sentencepiece.ModelProto")
        get_class = getattr(message_factory, "GetMessageClass", None)
        if get_class is None:   # protobuf < 4.21
            get_class = message_factory.MessageFactory(pool).GetPrototype
        _MODEL_CLASS = get_class(descriptor)
    return _MODEL_CLASS
