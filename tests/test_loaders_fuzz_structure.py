"""Structure-aware fuzzing (issue 14): PDF object graphs, .docx XML, HTML, CSV and YAML anchors.

The byte fuzzer (test_loaders_fuzz.py) damages valid files; these build inputs
from each format's own pieces, which is how the failures of issue 14 were found
(a page tree that is a DAG, a stream that inflates without end, a cell over the
field limit, nested YAML aliases). The property is the rule of that issue: every
input loads or raises :class:`~akasha.errors.LoaderError` (a spec:
:class:`~akasha.errors.SpecError`) naming the file, within a time bound, and the
process survives. PDFium only ever sees these inputs in the guarded worker
process, so a native crash shows up as a LoaderLimitError, not a dead test run.

All slow: ``pytest -m slow tests/test_loaders_fuzz_structure.py`` (a few minutes).
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akasha.errors import LoaderError, SpecError
from akasha.loaders import LoaderLimits, load_file
from akasha.loaders.pdf import available_engines, load_pdf
from akasha.types import Document
from hostile_fixtures import W, docx_with_body, raw_pdf, stream

pytestmark = pytest.mark.slow

LIMITS = LoaderLimits(max_inflated_mb=4, max_pages=200, max_chars=200_000, timeout=20, max_memory_mb=1024)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
PATH = Path("/nonexistent/fuzz")


def check(name: str, data: bytes, **options) -> None:
    """Loads into non-empty Documents naming the path, or raises LoaderError naming it.

    A reader that hangs is stopped by ``LIMITS.timeout`` (a LoaderError); how fast refusals are
    is measured by bench/hostile_refusals.py, not asserted here."""
    path = PATH / name
    try:
        documents = load_file(path, data, limits=LIMITS, **options)
    except LoaderError as error:
        assert error.path == str(path) and error.reason
    else:
        assert documents and all(isinstance(d, Document) and d.text.strip() for d in documents)
        assert all(d.metadata["source"] == str(path) for d in documents)


# -- PDF object graphs ----------------------------------------------------------------------

names = st.sampled_from([b"/Type", b"/Pages", b"/Page", b"/Kids", b"/Count", b"/Contents", b"/Resources", b"/Font",
                         b"/F1", b"/Length", b"/Filter", b"/FlateDecode", b"/ASCIIHexDecode", b"/Parent",
                         b"/MediaBox", b"/Subtype", b"/Image", b"/XObject", b"/Encrypt", b"/ObjStm", b"/N"])


@st.composite
def pdf_values(draw, depth: int = 0, objects: int = 8) -> bytes:
    kinds = ["int", "ref", "name", "string", "real", "bool"] + (["array", "dict"] if depth < 3 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return str(draw(st.sampled_from([0, 1, -1, 2, 7, 10**6, 2**31, -(2**40)]))).encode()
    if kind == "ref":
        return b"%d 0 R" % draw(st.integers(0, objects + 2))
    if kind == "name":
        return draw(names)
    if kind == "string":
        text = draw(st.binary(max_size=12)).replace(b"\\", b"").replace(b"(", b"").replace(b")", b"")
        return b"(" + text + b")"
    if kind == "real":
        return draw(st.sampled_from([b"0.5", b"1e308", b"-0.0", b"NaN", b"612"]))
    if kind == "bool":
        return draw(st.sampled_from([b"true", b"false", b"null"]))
    if kind == "array":
        return b"[" + b" ".join(draw(st.lists(pdf_values(depth + 1, objects), max_size=5))) + b"]"
    pairs = draw(st.lists(st.tuples(names, pdf_values(depth + 1, objects)), max_size=5))
    return b"<< " + b" ".join(k + b" " + v for k, v in pairs) + b" >>"


@st.composite
def content_streams(draw) -> bytes:
    ops = []
    for _ in range(draw(st.integers(0, 6))):
        text = draw(st.text(alphabet="abcdefgh ()\\\xe9", max_size=20)).encode("latin-1")
        ops.append(draw(st.sampled_from([
            b"BT /F1 12 Tf 72 720 Td (" + text.replace(b"(", b"").replace(b")", b"").replace(b"\\", b"") + b") Tj ET",
            b"BT /F1 12 Tf [(a) -250 (b)] TJ ET", b"q 1 0 0 1 0 0 cm Q", b"/F9 99 Tf", b"(unterminated Tj",
            b"BT " * 20, b"1 2 3 4 re f", b"/X1 Do",
        ])))
    data = b"\n".join(ops)
    encoding = draw(st.sampled_from(["plain", "flate", "flate-bomb", "hex", "wrong"]))
    if encoding == "flate":
        return stream(zlib.compress(data), b"/Filter /FlateDecode ")
    if encoding == "flate-bomb":
        size = draw(st.sampled_from([2**20, 3 * 2**20, 6 * 2**20]))  # around the 4 MB test limit
        return stream(zlib.compress(data + b" " * size, 9), b"/Filter /FlateDecode ")
    if encoding == "hex":
        return stream(data.hex().encode() + b">", b"/Filter /ASCIIHexDecode ")
    if encoding == "wrong":  # a Length that lies
        return b"<< /Length %d >>\nstream\n" % draw(st.integers(0, 10**9)) + data + b"\nendstream"
    return stream(data)


@st.composite
def pdf_documents(draw) -> bytes:
    count = draw(st.integers(5, 10))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    # objects 3-5 start as a sound page (font, text content, page), so many cases get as far as extraction
    kids = draw(st.lists(st.sampled_from([5, 5, 5, *range(3, count + 2)]), min_size=0, max_size=6))  # DAGs, loops
    claimed = draw(st.sampled_from([len(kids), len(kids), 0, 1, 10**6, -3, 2**33]))
    objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), claimed))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    text = draw(st.text(alphabet="abcdefgh xyz", min_size=1, max_size=30)).encode()
    content = b"BT /F1 12 Tf 72 720 Td (" + text + b") Tj ET"
    objects.append(stream(zlib.compress(content), b"/Filter /FlateDecode ") if draw(st.booleans()) else stream(content))
    objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                   b"/Contents %d 0 R >>" % draw(st.sampled_from([4, 4, *range(1, count + 2)])))
    for number in range(6, count + 2):
        shape = draw(st.sampled_from(["page", "pages", "content", "font", "value"]))
        if shape == "page":
            objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
                           b"/Contents %d 0 R >>" % (draw(st.integers(1, count + 2)), draw(st.integers(1, count + 2))))
        elif shape == "pages":
            inner = draw(st.lists(st.integers(1, count + 1), max_size=4))
            objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
                b" ".join(b"%d 0 R" % k for k in inner), draw(st.integers(-1, 10**7))))
        elif shape == "content":
            objects.append(draw(content_streams()))
        elif shape == "font":
            objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
        else:
            objects.append(draw(pdf_values(0, count)))
    data = raw_pdf(objects)
    if draw(st.booleans()):  # a damaged xref or trailer on top
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + draw(st.binary(max_size=8)) + data[at + draw(st.integers(0, 16)) :]
    return data


@SETTINGS
@given(data=pdf_documents())
def test_fuzz_pdf_object_graphs_in_the_worker(data):
    for engine in available_engines():
        check("graph.pdf", data, engine=engine)


@SETTINGS
@given(data=pdf_documents())
def test_fuzz_pdf_object_graphs_in_process_with_pypdf(data):
    path = PATH / "graph.pdf"
    try:
        documents = load_pdf(path, data, engine="pypdf", limits=LIMITS)
    except LoaderError as error:
        assert error.path == str(path)
    else:
        assert all(d.text.strip() for d in documents)


# -- .docx XML ------------------------------------------------------------------------------


@st.composite
def docx_xml(draw, depth: int = 0) -> bytes:
    text = draw(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="<&\x00"),
                        max_size=15)).encode("utf-8", "ignore")
    kinds = ["p", "p", "p", "r", "t", "tab", "br", "junk", "entity"] + (
        ["tbl", "tbl", "sdt", "hyperlink", "p-nested"] if depth < 4 else [])
    kind = draw(st.sampled_from(kinds))
    inner = b"".join(draw(st.lists(docx_xml(depth + 1), max_size=3))) if depth < 4 else b""
    if kind == "p":
        return b"<w:p>" + inner + b"<w:r><w:t>" + text + b"</w:t></w:r></w:p>"
    if kind == "p-nested":
        return b"<w:p><w:p>" + inner + b"</w:p></w:p>"
    if kind == "r":
        return b"<w:r>" + inner + b"</w:r>"
    if kind == "t":
        return b"<w:t xml:space=\"preserve\">" + text + b"</w:t>"
    if kind == "tab":
        return b"<w:tab/>"
    if kind == "br":
        return b"<w:br/>"
    if kind == "entity":
        return draw(st.sampled_from([b"&amp;", b"&#x41;", b"&gt;", b"&amp;", b"&#0;", b"&#xD800;", b"&lol;"]))
    if kind == "junk":
        return draw(st.sampled_from([b"<w:unknown a='1'/>", b"<x:y xmlns:x='urn:x'/>", b"<!-- c -->", b"<w:p",
                                     b"</w:r>", b"<![CDATA[x]]>", b"<?pi x?>", b"<w:bookmarkStart/>",
                                     b"<w:proofErr/>", b"<w:rPr><w:b/></w:rPr>"]))
    if kind == "tbl":
        cells = b"".join(b"<w:tc><w:tcPr><w:gridSpan w:val=\"%d\"/><w:vMerge/></w:tcPr>" % draw(st.integers(-1, 99)) + inner
                         + b"<w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc>" for _ in range(draw(st.integers(0, 3))))
        rows = b"".join(b"<w:tr>" + cells + b"</w:tr>" for _ in range(draw(st.integers(0, 3))))
        return b"<w:tbl><w:tblGrid><w:gridCol/></w:tblGrid>" + rows + b"</w:tbl>"
    if kind == "sdt":
        return b"<w:sdt><w:sdtContent>" + inner + b"</w:sdtContent></w:sdt>"
    return b"<w:hyperlink r:id=\"rId99\" xmlns:r=\"urn:r\">" + inner + b"</w:hyperlink>"


@SETTINGS
@given(body=st.lists(docx_xml(), min_size=0, max_size=6), doctype=st.booleans(), repeat=st.sampled_from([1, 1, 50]))
def test_fuzz_docx_xml(body, doctype, repeat):
    chunks = list(body)
    if doctype:  # entity declarations (XXE, billion laughs) must stay inert
        chunks.insert(0, b"")
    data = docx_with_body(chunks, repeat=repeat)
    if doctype:
        data = _with_doctype(data)
    check("fuzz.docx", data)


def _with_doctype(data: bytes) -> bytes:
    import io
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            if item.filename == "word/document.xml":
                body = body.replace(
                    b"?>\n", b'?>\n<!DOCTYPE w:document [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">'
                    b'<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n', 1)
                body = body.replace(b"<w:body>", b"<w:body><w:p><w:r><w:t>&lol2;&xxe;</w:t></w:r></w:p>", 1)
            target.writestr(item, body)
    return out.getvalue()


# -- HTML -----------------------------------------------------------------------------------

TAGS = ["p", "div", "script", "style", "table", "tr", "td", "br", "title", "svg", "noscript", "template", "li", "h1"]


@st.composite
def html_pages(draw) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["open", "close", "text", "meta", "comment", "entity", "cdata", "junk"]))
        if kind == "open":
            parts.append(f"<{draw(st.sampled_from(TAGS))} class='{draw(st.text(max_size=4))}'>")
        elif kind == "close":
            parts.append(f"</{draw(st.sampled_from(TAGS))}>")
        elif kind == "text":
            parts.append(draw(st.text(max_size=30)))
        elif kind == "meta":
            label = draw(st.sampled_from(["utf-8", "utf-16", "cp037", "shift_jis", "x-user-defined", "bogus", "utf-7",
                                          "iso-2022-jp", "utf-32", "latin1"]))
            parts.append(f'<meta charset="{label}">')
        elif kind == "comment":
            parts.append(draw(st.sampled_from(["<!-- x -->", "<!--", "-->", "<!DOCTYPE html>", "<!x>"])))
        elif kind == "entity":
            parts.append(draw(st.sampled_from(["&amp;", "&#0;", "&#x110000;", "&#xD800;", "&nosuch;", "&#65;"])))
        elif kind == "cdata":
            parts.append("<![CDATA[ a < b ]]>")
        else:
            parts.append(draw(st.sampled_from(["<", ">", "</", "<p <p>", "<a href='x", "<\x00>", "\ufeff"])))
    text = "".join(parts)
    encoding = draw(st.sampled_from(["utf-8", "utf-16", "cp1252", "shift_jis", "gb18030"]))
    return text.encode(encoding, "replace")


@SETTINGS
@given(data=html_pages(), suffix=st.sampled_from([".html", ".htm"]))
def test_fuzz_html_structure(data, suffix):
    check("page" + suffix, data)


# -- CSV ------------------------------------------------------------------------------------


@st.composite
def csv_tables(draw) -> bytes:
    delimiter = draw(st.sampled_from([",", ";", "\t", "|", ":"]))
    rows = []
    for _ in range(draw(st.integers(0, 20))):
        cells = []
        for _ in range(draw(st.integers(0, 6))):
            kind = draw(st.sampled_from(["word", "quoted", "newline", "huge", "quotes", "empty", "crafted"]))
            if kind == "word":
                cells.append(draw(st.text(alphabet="abc123 -", max_size=10)))
            elif kind == "quoted":
                cells.append('"' + draw(st.text(alphabet='ab,;"', max_size=8)).replace('"', '""') + '"')
            elif kind == "newline":
                cells.append('"line one\nline two"')
            elif kind == "huge":
                cells.append("x" * draw(st.sampled_from([1000, 140_000, 300_000])))
            elif kind == "quotes":
                cells.append('"' * draw(st.integers(1, 5)))
            elif kind == "crafted":  # the pattern that made the sniffer quadratic
                cells.append(draw(st.sampled_from([',"', ",'", 'a,"b', ', "'])) * draw(st.sampled_from([10, 2000, 20_000])))
            else:
                cells.append("")
        rows.append(delimiter.join(cells))
    text = "\n".join(rows)
    return (draw(st.sampled_from(["", "\ufeff"])) + text).encode(draw(st.sampled_from(["utf-8", "utf-16", "cp1252"])),
                                                                   "replace")


@SETTINGS
@given(data=csv_tables())
def test_fuzz_csv_structure(data):
    check("table.csv", data)


# -- YAML anchors ---------------------------------------------------------------------------


@st.composite
def yaml_with_anchors(draw) -> str:
    lines = []
    anchors: list[str] = []
    for number in range(draw(st.integers(0, 12))):
        width = draw(st.integers(1, 12))
        if anchors and draw(st.booleans()):
            items = ", ".join(f"*{draw(st.sampled_from(anchors))}" for _ in range(width))
        else:
            items = ", ".join([draw(st.sampled_from(["lol", "1", "null", "{a: 1}", "'x'"]))] * width)
        style = draw(st.sampled_from(["list", "map", "merge"]))
        if style == "map" and anchors:
            body = "{" + ", ".join(f"k{i}: *{draw(st.sampled_from(anchors))}" for i in range(width)) + "}"
        elif style == "merge" and anchors:
            body = "{<<: *" + draw(st.sampled_from(anchors)) + ", extra: 1}"
        else:
            body = f"[{items}]"
        lines.append(f"a{number}: &a{number} {body}")
        anchors.append(f"a{number}")
    target = f"*{draw(st.sampled_from(anchors))}" if anchors else "RAGPipeline"
    place = draw(st.sampled_from(["kind", "top_k", "name", "section", "none"]))
    kind = target if place == "kind" else "RAGPipeline"
    name = target if place == "name" else "demo"
    retrieval = f"{{top_k: {target}}}" if place == "top_k" else "{top_k: 3}"
    section = target if place == "section" else "{provider: hash}"
    lines += [f"kind: {kind}", f"metadata: {{name: {name}}}",
              f"spec: {{embeddings: {section}, vector_store: {{backend: memory}}, retrieval: {retrieval}}}"]
    return "\n".join(lines) + "\n"


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=yaml_with_anchors())
def test_fuzz_yaml_anchors(tmp_path_factory, text):
    from akasha.spec import load_spec_file

    path = tmp_path_factory.mktemp("yaml") / "spec.yaml"
    path.write_text(text)
    try:
        load_spec_file(path)  # an alias bomb's refusal speed: python -m bench.hostile_inputs
    except SpecError as error:
        assert str(path) in str(error) and len(str(error)) < 1000
