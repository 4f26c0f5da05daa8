"""bench/headings.py (the heading study of bench/chunk_study.py): section headings found in
Markdown, reStructuredText and numbered plain text, and the path in force at each chunk."""

from __future__ import annotations

from bench.headings import heading_paths, outline, piece_offsets, search_text

RST = """\
===============
Programming FAQ
===============

.. contents::

General Questions
=================

Yes. Several debuggers for Python are described below::

   # Primes < 1000
   print(primes)

Core Language
=============

Why am I getting an UnboundLocalError?
--------------------------------------

Because the variable is assigned in the function.
"""

MARKDOWN = """\
# Pump manual

Intro text.

## Maintenance

### Bearings

Grease the bearings every 500 hours.

```
# not a heading: a comment in a code block
```

## Safety
Wear gloves.
"""

PLAIN = """\
Chapter 2. Debian package management

This chapter is about packages.

2.1. Debian package management prerequisites

2.1.1. Package configuration

Configure it.

1. A numbered list item that ends like a sentence.

2.2. Basic package management operations

Run apt.
"""


def titles(text: str) -> list[tuple[str, ...]]:
    return [path for _, path in outline(text)]


def test_rst_titles_with_overline_and_underline_levels_in_order_of_first_use():
    assert titles(RST) == [
        ("Programming FAQ",),
        ("Programming FAQ", "General Questions"),
        ("Programming FAQ", "Core Language"),
        ("Programming FAQ", "Core Language", "Why am I getting an UnboundLocalError?"),
    ]


def test_markdown_atx_headings_outside_code_fences_and_indented_code():
    assert titles(MARKDOWN) == [
        ("Pump manual",),
        ("Pump manual", "Maintenance"),
        ("Pump manual", "Maintenance", "Bearings"),
        ("Pump manual", "Safety"),
    ]


def test_numbered_plain_text_titles_take_their_level_from_the_numbering():
    assert titles(PLAIN) == [
        ("Chapter 2. Debian package management",),
        ("Chapter 2. Debian package management", "2.1. Debian package management prerequisites"),
        ("Chapter 2. Debian package management", "2.1. Debian package management prerequisites",
         "2.1.1. Package configuration"),
        ("Chapter 2. Debian package management", "2.2. Basic package management operations"),
    ]


def test_chinese_chapter_title():
    assert titles("第 3 章 选择一个 Debian 发布版本\n\n有很多种不同的 Debian 发布版本。\n") == [
        ("第 3 章 选择一个 Debian 发布版本",)]


def test_text_without_headings_has_an_empty_outline():
    assert outline("Just a paragraph.\nAnd another line.\n") == []
    assert heading_paths("Just text.", [0]) == [""]


def test_heading_path_in_force_at_each_offset_and_the_title_leads():
    start = MARKDOWN.index("Grease")
    assert heading_paths(MARKDOWN, [0, start, MARKDOWN.index("Wear")]) == [
        "Pump manual", "Pump manual > Maintenance > Bearings", "Pump manual > Safety"]
    assert heading_paths("no headings here", [0], title="Report 2024") == ["Report 2024"]


def test_piece_offsets_follow_overlapping_pieces():
    text = "alpha beta gamma delta"
    assert piece_offsets(text, ["alpha beta", "beta gamma", "delta"]) == [0, 6, 17]


def test_search_text_puts_the_path_before_the_text():
    assert search_text("Grease them.", {"headings": "Pump manual > Bearings"}) == "Pump manual > Bearings\n\nGrease them."


def test_search_text_of_a_chunk_without_headings_is_its_text():
    assert search_text("some text", {}) == "some text"
    assert search_text("some text", None) == "some text"
