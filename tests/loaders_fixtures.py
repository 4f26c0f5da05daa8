"""Builders for loader test inputs: real PDFs and DOCX files generated on the fly.

No binary fixtures are committed; every file a loader test reads is made here
with fpdf2, pypdf and python-docx, so what each file contains is visible in code.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def pdf_bytes(pages: list[str], *, draw_only: bool = False) -> bytes:
    """A PDF with one page per string (Helvetica, latin-1 text).

    ``draw_only`` makes pages with a drawn rectangle and no text layer at all,
    like a scanned document.
    """
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_compression(True)
    for text in pages:
        pdf.add_page()
        if draw_only:
            pdf.set_fill_color(40, 40, 40)
            pdf.rect(20, 20, 120, 60, style="F")
        else:
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, text)
    return bytes(pdf.output())


def encrypted_pdf_bytes(pages: list[str], user_password: str, owner_password: str = "owner-secret") -> bytes:
    """The PDF of ``pages`` encrypted with AES-256 (``user_password`` may be empty)."""
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(pdf_bytes(pages)))
    writer = pypdf.PdfWriter(clone_from=reader)
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_bytes(blocks: list[str | list[list[str]]]) -> bytes:
    """A .docx whose body is ``blocks``: a string is a paragraph, a list of rows is a table."""
    import docx

    document = docx.Document()
    for block in blocks:
        if isinstance(block, str):
            document.add_paragraph(block)
        else:
            table = document.add_table(rows=len(block), cols=len(block[0]))
            for r, row in enumerate(block):
                for c, value in enumerate(row):
                    table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def zip_of_something_else() -> bytes:
    """A valid zip archive holding a CSV and a picture: what a misnamed .docx often is."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("data.csv", "a,b\n1,2\n")
        archive.writestr("pictures/photo.jpg", b"\xff\xd8\xff\xe0" + bytes(200))
    return out.getvalue()


def write(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` (creating folders) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
