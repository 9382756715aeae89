"""Hand-made two-column pages for the named-section tests (``test_sections_round5/7/8/10.py``): OCR-like
``(text, box)`` lines in two columns, a line as wide as its text."""

from __future__ import annotations

LEFT, RIGHT = (60, 560), (620, 1120)  # column x extents (a 60 px gutter)
H, PITCH = 20, 25


def prose(n: int, seed: int, last: str = "") -> list[str]:
    """``n`` ten-word lines of running text (``seed`` shifts the words); ``last`` ends the last line."""
    base = "the old pier was built by the town and the mill near the road grew along the quiet river bank".split()
    out = [" ".join(base[(seed + k * 5 + j) % len(base)] for j in range(10)) for k in range(n)]
    if last:
        out[-1] = out[-1].rsplit(" ", 3)[0] + " " + last
    return out


def column(col, items, top: float = 100.0) -> list:
    """``items``: (text, gap above in pixels[, x offset]); a line is as wide as its text (10 px a character, at most
    the column)."""
    boxes, y = [], top
    for text, gap, *dx in items:
        y += gap
        x0 = col[0] + (dx[0] if dx else 0)
        boxes.append((text, (x0, y, min(col[1], x0 + 10 * len(text)), y + H)))
        y += PITCH
    return boxes


def box(boxes, text):
    """The box of the line reading ``text``."""
    return next(b for t, b in boxes if t == text)


def covers(regions, box) -> bool:
    """Some region holds ``box``'s centre."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in regions)


def last_word_covered(boxes, name: str, answer_line: str) -> bool:
    """The structural evidence of "the last word of the section titled ``name``" holds the line ``answer_line``."""
    from arr_coc.reading.layout.structural_query import parse, resolve
    from arr_coc.reading.layout.structure import analyse

    ev = resolve(analyse(boxes), parse(f"What is the last word of the section titled '{name}'?"))
    assert ev is not None
    return covers(ev.regions, box(boxes, answer_line))
