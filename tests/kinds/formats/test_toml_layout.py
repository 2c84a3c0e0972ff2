"""A changed TOML multi-line string keeps the layout the person gave it."""

from __future__ import annotations

from trueup.kinds.formats import load

TEXT = """\
a = 1
description = \"\"\"
first line
second line
\"\"\"
path = '''
C:\\\\old
'''
b = 2
"""


def test_a_multiline_string_still_opens_on_its_own_line() -> None:
    document = load("toml", TEXT, origin="pyproject.toml")
    document.set(("description",), "new one\nnew two\n")
    document.set(("path",), "D:\\new\n")
    out = document.to_text()
    assert (
        out
        == "a = 1\ndescription = \"\"\"\nnew one\nnew two\n\"\"\"\npath = '''\nD:\\new\n'''\nb = 2\n"
    )
    assert load("toml", out, origin="x").get(()) == {
        "a": 1,
        "description": "new one\nnew two\n",
        "path": "D:\\new\n",
        "b": 2,
    }


def test_crlf_files_keep_their_line_break_after_the_quotes() -> None:
    document = load("toml", 'a = """\r\nx\r\n"""\r\n', origin="x.toml")
    document.set(("a",), "y\n")
    assert document.to_text().startswith('a = """\r\ny')
