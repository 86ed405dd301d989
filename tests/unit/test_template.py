"""Template parsing and rendering (pure)."""

import pytest

from mintdim_beam.format.template import FieldTypeError, Segment, TemplateSyntaxError, parse_template, placeholders, render_value, sequence_template


def test_segments_in_order_with_literals_named_token_template():
    segs = parse_template("{instruction}\n\n{input}\n\n{output}")
    assert segs == (
        Segment(True, "instruction"), Segment(False, "\n\n"), Segment(True, "input"),
        Segment(False, "\n\n"), Segment(True, "output"),
    )
    assert sequence_template(segs) == ["instruction", "token_template", "input", "token_template", "output"]


def test_doubled_braces_are_literal_and_empty_literals_are_dropped():
    segs = parse_template("{{x}}: {a}{b} }}")
    assert segs == (Segment(False, "{x}: "), Segment(True, "a"), Segment(True, "b"), Segment(False, " }"))


def test_field_used_twice_keeps_two_segments_and_one_placeholder():
    segs = parse_template("{q} / {q}")
    assert [s.name for s in segs] == ["q", "token_template", "q"]
    assert placeholders(segs) == ["q"]


def test_name_is_the_raw_text_between_braces():
    assert parse_template("{a:>3}")[0] == Segment(True, "a:>3")


@pytest.mark.parametrize("bad", ["{}", "{a", "a}", "{a{b}}", "x { y"])
def test_unbalanced_or_empty_braces_are_refused(bad):
    with pytest.raises(TemplateSyntaxError):
        parse_template(bad)


def test_render_values():
    assert render_value("f", "text") == "text"
    assert render_value("f", None) == ""
    assert render_value("f", 3) == "3"
    assert render_value("f", 2.5) == "2.5"
    assert render_value("f", True) == "true"
    with pytest.raises(FieldTypeError) as info:
        render_value("f", [1])
    assert (info.value.field, info.value.type_name) == ("f", "array")
    with pytest.raises(FieldTypeError) as info:
        render_value("f", {"a": 1})
    assert info.value.type_name == "object"
