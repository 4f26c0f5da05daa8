"""Builders for hostile inputs: PDFs written object by object, .docx packages with bombs inside.

Nothing binary is committed: every hostile file a test reads is made here, small
on disk (a PDF that inflates to 400 MB is about 400 KB), with what it contains
visible in code.
"""

from __future__ import annotations

import io
import zipfile
import zlib

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def raw_pdf(objects: list[bytes], *, root: int = 1) -> bytes:
    """A PDF whose objects 1..n have the bodies ``objects``, with a correct xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def stream(data: bytes, extra: bytes = b"") -> bytes:
    """A stream object body holding ``data`` (``extra`` goes into its dictionary)."""
    return b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def text_ops(text: str) -> bytes:
    """A content stream that shows ``text`` in Helvetica (font resource /F1)."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % escaped.encode("latin-1")


def page_tree_dag(levels: int = 6, fanout: int = 10, text: str = "grease the pump") -> bytes:
    """A 1.4 KB PDF whose page tree reuses one node ``fanout`` times per level: fanout**levels pages."""
    objects: list[bytes] = [b"", FONT, stream(text_ops(text)), b""]  # 1 catalog, 2 font, 3 content, 4 page
    child, count = 4, 1
    for level in range(levels):
        count *= fanout
        kids = b" ".join(b"%d 0 R" % child for _ in range(fanout))
        objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count))
        child = 5 + level
    objects[0] = b"<< /Type /Catalog /Pages %d 0 R >>" % child
    objects[3] = (b"<< /Type /Page /Parent 5 0 R /MediaBox [0 0 612 792] "
                  b"/Resources << /Font << /F1 2 0 R >> >> /Contents 3 0 R >>")
    return raw_pdf(objects)


def deflate_repeated(head: bytes, filler: bytes, size: int) -> bytes:
    """zlib data of ``head`` then ``size`` bytes of ``filler``, compressed piece by piece (no big buffer)."""
    compressor = zlib.compressobj(9)
    parts = [compressor.compress(head)]
    block = (filler * (2**20 // len(filler) + 1))[: 2**20]
    left = size
    while left > 0:
        parts.append(compressor.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts.append(compressor.flush())
    return b"".join(parts)


def one_page_pdf(contents: bytes, extra: bytes = b"") -> bytes:
    """A one-page PDF whose content stream object holds ``contents`` (``extra``: its dictionary entries)."""
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
        b"/Contents 5 0 R >>",
        FONT,
        stream(contents, extra),
    ])


def inflate_bomb_pdf(inflated: int, text: str = "bomb") -> bytes:
    """A one-page PDF whose Flate content stream inflates to ``inflated`` bytes (about inflated/1000 on disk)."""
    return one_page_pdf(deflate_repeated(text_ops(text) + b"\n", b" ", inflated), b"/Filter /FlateDecode ")


def text_pdf(pages: list[str], *, compress: bool = True) -> bytes:
    """A plain, valid PDF with one page per string, written object by object."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", FONT]
    kids = []
    for text in pages:
        content = text_ops(text)
        body = stream(zlib.compress(content), b"/Filter /FlateDecode ") if compress else stream(content)
        objects.append(body)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       b"/Contents %d 0 R >>" % len(objects))
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(pages))
    return raw_pdf(objects)


def _minimal_docx_parts() -> dict[str, bytes]:
    import docx

    buffer = io.BytesIO()
    docx.Document().save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_with_body(body_xml_chunks, *, repeat: int = 1) -> bytes:
    """A .docx whose ``word/document.xml`` body is the chunks (bytes), the whole list written ``repeat`` times.

    The XML is streamed into the zip, so a body of hundreds of megabytes never sits in memory.
    """
    parts = _minimal_docx_parts()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            if name != "word/document.xml":
                archive.writestr(name, data)
        with archive.open("word/document.xml", "w", force_zip64=True) as handle:
            handle.write(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                         b'<w:document xmlns:w="%s"><w:body>' % W.encode())
            block = b"".join(body_xml_chunks)
            for _ in range(repeat):
                handle.write(block)
            handle.write(b"</w:body></w:document>")
    return out.getvalue()


def paragraph_xml(text: str) -> bytes:
    return b"<w:p><w:r><w:t>%s</w:t></w:r></w:p>" % text.encode()


def docx_xml_bomb(paragraphs: int, text: str = "grease the pump bearing every 500 hours") -> bytes:
    """A .docx with ``paragraphs`` identical paragraphs: ~70 bytes of XML each, ~1000x smaller zipped."""
    return docx_with_body([paragraph_xml(text)] * 1000, repeat=max(1, paragraphs // 1000))
