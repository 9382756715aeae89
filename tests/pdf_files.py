"""PDFs made in the tests themselves (no files shipped): text pages with a text layer, built by hand."""

from __future__ import annotations


def make_pdf(pages: list[list[str]], encrypt: bool = False, size: tuple[int, int] = (612, 792)) -> bytes:
    """A PDF whose page i shows the text lines ``pages[i]`` (Helvetica, 14 pt) with a text layer, built by hand."""
    n = len(pages)
    font = 3 + 2 * n
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    for i, lines in enumerate(pages):
        shown = " ".join("(" + s.replace("(", "\\(").replace(")", "\\)") + ") Tj T*" for s in lines)
        data = f"BT /F1 14 Tf 72 {size[1] - 72} Td 18 TL {shown} ET".encode("latin-1")
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {size[0]} {size[1]}] "
            f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {4 + 2 * i} 0 R >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    if encrypt:  # the standard security handler with a user password nobody knows
        objs.append(b"<< /Filter /Standard /V 1 /R 2 /O <" + b"00" * 32 + b"> /U <" + b"11" * 32 + b"> /P -4 >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for k, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % k + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    enc = b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (len(objs), b"ab" * 16, b"ab" * 16) if encrypt else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, enc, xref)
    return bytes(out)
