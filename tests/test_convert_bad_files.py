"""Text converters refuse a broken or hostile file with a one-line error naming the
file (and the line, for markup nested past a bound), instead of crashing, losing the
rest of the file or running for minutes."""

from pathlib import Path

import pytest

from ingestion.convert import ConversionError, convert_file
from ingestion.convert.html import convert_html
from ingestion.convert.markdown import convert_markdown


@pytest.mark.parametrize(
    "name, payload, reason, message",
    [
        ("blob.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary", "blob.md: binary content in a text file (NUL bytes)"),
        ("latin.md", b"caf\xe9 au lait", "not_utf8", "latin.md: not UTF-8 (byte 0xe9 at offset 3)"),
        ("empty.rst", b"", "empty", "empty.rst: the file is empty"),
        ("only.md", b"```{toctree}\na\n```\n", "no_text", "only.md: no text left after conversion (only markup)"),
        ("table.xlsx", b"PK", "unsupported", "table.xlsx: unsupported file type '.xlsx'"),
    ],
)
def test_bad_files_raise_one_line_errors(tmp_path: Path, name, payload, reason, message):
    path = tmp_path / name
    path.write_bytes(payload)
    with pytest.raises(ConversionError) as info:
        convert_file(path)
    assert info.value.reason == reason
    assert str(info.value) == message


def test_markdown_nested_past_the_parser_limit_fails_instead_of_losing_the_rest():
    """markdown-it stopped reading at 20 levels without a word: a 30-level list lost the
    rest of its file, which was still stored. Now 100 levels of markup are read, deeper
    fails the file naming the line."""
    nested = "".join("  " * i + f"- item {i}\n" for i in range(30)) + "\n# After\n\nafter text\n"
    blocks = convert_markdown(nested).blocks
    assert [(b.text, b.headings) for b in blocks[-1:]] == [("after text", ("After",))]
    assert blocks[0].text.count("item") == 30
    assert [b.text for b in convert_markdown("> " * 99 + "deep\n\n# After\n\nafter\n").blocks] == ["deep", "after"]
    with pytest.raises(ConversionError) as info:
        convert_markdown("# Deep\n\n" + "> " * 120 + "quoted\n\n# After\n\nlost\n")
    assert (info.value.reason, str(info.value)) == (
        "broken", "lists or quotes nested too deeply at line 3 (over 100 levels of markup)")


def test_html_nested_too_deeply_fails_naming_the_file_and_line(tmp_path):
    """A bare RecursionError ended a page of 1,000 nested divs; now over 500 levels fail
    the file as Markdown does, and both messages name the file."""
    ok = "<html><body>\n<h1>Deep</h1>\n" + "<div>" * 400 + "deep text" + "</div>" * 400 + "\n</body></html>\n"
    assert [b.text for b in convert_html(ok).blocks] == ["deep text"]
    page = tmp_path / "deep.html"
    page.write_text("<html><body>\n<h1>Deep</h1>\n<p>Intro.</p>\n" + "<div>\n" * 1000 + "x" + "</div>" * 1000,
                    encoding="utf-8")
    with pytest.raises(ConversionError) as info:
        convert_file(page)
    assert (info.value.reason, str(info.value)) == (
        "broken", "deep.html: elements nested too deeply at line 504 (over 500 levels)")  # the 501st div
    notes = tmp_path / "deep.md"
    notes.write_text("# Deep\n\n" + "> " * 120 + "quoted\n", encoding="utf-8")
    with pytest.raises(ConversionError) as info:
        convert_file(notes)
    assert (info.value.reason, str(info.value)) == (
        "broken", "deep.md: lists or quotes nested too deeply at line 3 (over 100 levels of markup)")


def test_directives_nested_past_twenty_levels_fail_the_file_naming_the_line():
    """Each directive's body is parsed again on its own: 400 nested fences took 13 s and
    then a bare RecursionError ('crashed')."""
    def nested(levels):
        opening = "".join(":" * (levels - i + 3) + "{note}\n" for i in range(levels))
        return "# Top\n\nIntro.\n\n" + opening + "deep\n" + "".join(":" * (i + 4) + "\n" for i in range(levels))

    assert [b.text for b in convert_markdown(nested(20)).blocks] == ["Intro.", "**Note:** " * 20 + "deep"]
    for levels in (21, 400):
        with pytest.raises(ConversionError) as info:
            convert_markdown(nested(levels))
        assert (info.value.reason, str(info.value)) == (
            "broken", "directives nested too deeply at line 5 (over 20 levels)")


def test_csv_table_cell_over_the_csv_limit_fails_naming_the_line():
    with pytest.raises(ConversionError) as info:
        convert_markdown('# T\n\n```{csv-table}\n:header: a, b\n\n1, "' + "x" * 131_073 + '"\n```\n')
    assert (info.value.reason, str(info.value)) == (
        "broken", "{csv-table} at line 3: field larger than field limit (131072)")


def test_rst_nested_past_pythons_stack_fails_the_file(tmp_path):
    page = tmp_path / "deep.rst"
    page.write_text("".join(" " * i + "para\n\n" for i in range(300)), encoding="utf-8")
    with pytest.raises(ConversionError) as info:
        convert_file(page)
    assert (info.value.reason, str(info.value)) == (
        "broken", "deep.rst: block quotes or directives nested too deeply for Python's stack")


def test_rst_role_and_directive_names_are_found_in_one_pass():
    """Role names were found by a regex trying each ':' as a start, rescanning the run
    after it (20,000 ':a' took 90 s); directive lines by '^\\s*', which crossed newlines."""
    from ingestion.convert.rst import _DIRECTIVE_USE, _role_names

    text = "x:py:meth:`a` :ref:`b` ::c:`d` :1x:`e` " + ":a" * 100_000 + " :math:`f`"
    assert _role_names(text) == {"py:meth", "ref", "c", "math"}
    assert _DIRECTIVE_USE.findall("\n" * 100_000 + "  .. note:: x\n..\n   tab::\n") == ["note"]
