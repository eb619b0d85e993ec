"""Derive dump variants from the real excerpt in code (never hand-written pages)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
from pathlib import Path

PAGE_RE = re.compile(rb"  <page>.*?</page>\n", re.DOTALL)


def read_xml(path: Path) -> bytes:
    with open(path, "rb") as handle:
        magic = handle.read(3)
    if magic == b"BZh":
        return bz2.decompress(path.read_bytes())
    return path.read_bytes()


def split_dump(xml: bytes) -> tuple[bytes, list[bytes], bytes]:
    """(header up to the first page, page elements, footer)."""
    pages = PAGE_RE.findall(xml)
    first = xml.index(pages[0])
    last = xml.rindex(pages[-1]) + len(pages[-1])
    return xml[:first], pages, xml[last:]


def page_with_title(pages: list[bytes], title: str) -> bytes:
    needle = f"<title>{title}</title>".encode()
    return next(p for p in pages if needle in p)


def field(page: bytes, name: str) -> str:
    return re.search(rb"<%s>(.*?)</%s>" % (name.encode(), name.encode()), page, re.DOTALL).group(1).decode()


def set_field(page: bytes, name: str, value: str) -> bytes:
    tag = name.encode()
    return re.sub(
        rb"<%s>.*?</%s>" % (tag, tag),
        b"<%s>%s</%s>" % (tag, value.encode(), tag),
        page,
        count=1,
        flags=re.DOTALL,
    )


def set_text(page: bytes, text: bytes) -> bytes:
    return re.sub(
        rb"(<text[^>]*>).*?(</text>)",
        lambda m: m.group(1) + text + m.group(2),
        page,
        count=1,
        flags=re.DOTALL,
    )


def write_dump(path: Path, xml: bytes, compression: str = "none", streams: int = 1) -> Path:
    """Write ``xml`` plain, gz, xz, or bz2 (``streams`` > 1 gives a multistream bz2)."""
    if compression == "bz2":
        step = max(1, len(xml) // streams + 1)
        path.write_bytes(b"".join(bz2.compress(xml[i : i + step]) for i in range(0, len(xml), step)))
    elif compression == "gzip":
        path.write_bytes(gzip.compress(xml))
    elif compression == "xz":
        path.write_bytes(lzma.compress(xml))
    else:
        path.write_bytes(xml)
    return path


def write_multistream(path: Path, xml: bytes, pages_per_stream: int = 100) -> Path:
    """A Wikipedia-style multistream bz2: the header alone, then ``pages_per_stream`` pages per stream."""
    header, pages, footer = split_dump(xml)
    groups = [b"".join(pages[i : i + pages_per_stream]) for i in range(0, len(pages), pages_per_stream)]
    path.write_bytes(b"".join(bz2.compress(part) for part in [header, *groups, footer]))
    return path
