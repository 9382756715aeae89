"""A page's text lines on the model's device: line geometry, crops cut by one ``grid_sample``, CTC decoding.

The CPU path (``recognition.LineRecognizer``) cuts each detected line out of the page with OpenCV (a perspective
warp, then a resize to the recogniser's 48 px height), one line at a time, and decodes each line's CTC output on the
host. On a GPU that is a host round trip per line and per batch. This module does the same work as a few batched
tensor ops:

    quads (N, 4, 2) ──► line_geometry   the crops' sizes exactly as ``crop_quad`` computes them (numpy, host)
                   ──► page_to_crop     (N, 3, 3) homographies crop pixel -> page pixel (one batched solve)
                   ──► cut_lines        one ``grid_sample`` over the page: (N, 3, 48, W) normalised line images,
                                        each left-aligned and zero-padded to the page's widest line
                   ──► width_groups     the lines sorted by width in at most two groups, each cut to its widest
                                        line (a page's short fields are not padded to its longest table row)
                   ──► the network      one call per group (one or two a page)
                   ──► ctc_best_path    argmax, confidence and kept frames on the device; ONE copy back
                   ──► decode_lines     strings and character positions (``recognition``; on the host: a
                                        string is a host object)

The crop is sampled once, bicubic (``grid_sample(mode="bicubic")``, Keys' kernel with a = -0.75, the kernel of
OpenCV's ``INTER_CUBIC``), straight at the recogniser's resolution; OpenCV warps at the line's own resolution
(cubic), rounds to uint8 and resizes (bilinear). Both reproduce a linear intensity ramp exactly, so on a ramp they
differ only by OpenCV's two roundings (``tests/test_ocr_lines.py`` derives and checks that bound); on text they
differ by interpolation, which can change a recognised character (counted in ``benchmarks/ocr_device.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .recognition import (
    REC_HEIGHT,
    LineText,
    bundled_rec_model,
    decode_lines,
    gate_mask,
    latin_mask,
    letter_mask,
    load_rec_model,
)

ROTATE_RATIO = 1.5  # a crop at least this many times taller than wide is turned a quarter (as rapidocr does)


@dataclass(frozen=True)
class LineGeometry:
    """Where each line's crop comes from and how wide it is at the recogniser's height.

    Attributes:
        corners: (N, 4, 2) float32 page pixels of the detector's quad (top-left first, clockwise).
        size: (N, 2) int64 ``(w, h)`` of the upright crop as ``crop_quad`` computes it (before any quarter turn).
        tall: (N,) bool, the crop is turned a quarter (``np.rot90``) because ``h >= ROTATE_RATIO * w``.
        own: (N,) int64 width of each line at ``REC_HEIGHT`` px height (times ``squeeze``), as
            ``LineRecognizer._prepare`` computes it.
    """

    corners: np.ndarray
    size: np.ndarray
    tall: np.ndarray
    own: np.ndarray


def line_geometry(quads: np.ndarray, squeeze: float = 1.0) -> LineGeometry:
    """The crops' corners and sizes, computed as ``reader.crop_quad`` and ``LineRecognizer`` compute them.

    Args:
        quads: (N, 4, 2) corners in page pixels, clockwise from the top-left (the detector's order).
        squeeze: horizontal scale after resizing to ``REC_HEIGHT`` px height, in (0, 1].

    Returns:
        A ``LineGeometry`` of N lines.
    """
    q = np.asarray(quads, dtype=np.float32).reshape(-1, 4, 2)  # (N, 4, 2), float32 as crop_quad uses it
    side = np.linalg.norm(q - np.roll(q, -1, axis=1), axis=-1)  # (N, 4): |q0q1|, |q1q2|, |q2q3|, |q3q0|
    w = np.maximum(np.maximum(side[:, 0], side[:, 2]).astype(np.int64), 1)  # int() truncates, as crop_quad
    h = np.maximum(np.maximum(side[:, 3], side[:, 1]).astype(np.int64), 1)
    tall = h >= ROTATE_RATIO * w  # (N,)
    turned_w, turned_h = np.where(tall, h, w), np.where(tall, w, h)  # the crop the recogniser sees
    scaled = REC_HEIGHT * turned_w / np.maximum(turned_h, 1) * squeeze  # (N,) float64, as LineRecognizer
    own = np.maximum(1, np.ceil(scaled)).astype(np.int64)
    return LineGeometry(q, np.stack([w, h], axis=1), tall, own)


def page_to_crop(corners: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """(N, 3, 3) homographies from crop pixels to page pixels.

    ``crop_quad`` maps the quad onto the rectangle ``(0, 0), (w, 0), (w, h), (0, h)`` with
    ``cv2.getPerspectiveTransform`` and samples the page at the inverse map of each crop pixel; the inverse is the
    transform from that rectangle to the quad, solved here for all lines at once (the same 8 x 8 system).

    Args:
        corners: (N, 4, 2) float64 quad corners in page pixels (top-left first, clockwise).
        size: (N, 2) ``(w, h)`` of the crops.

    Returns:
        (N, 3, 3) float64: page ``(x, y, 1) ~ H @ (u, v, 1)`` for crop pixel ``(u, v)``.
    """
    n = corners.shape[0]
    w, h = size.to(corners).unbind(-1)  # (N,), (N,)
    zero = torch.zeros_like(w)
    x = torch.stack([zero, w, w, zero], -1)  # (N, 4) the rectangle's corners, as the quad's
    y = torch.stack([zero, zero, h, h], -1)  # (N, 4)
    X, Y = corners.unbind(-1)  # (N, 4), (N, 4)
    one, z4 = torch.ones_like(x), torch.zeros_like(x)
    rows_x = torch.stack([x, y, one, z4, z4, z4, -x * X, -y * X], -1)  # (N, 4, 8)
    rows_y = torch.stack([z4, z4, z4, x, y, one, -x * Y, -y * Y], -1)  # (N, 4, 8)
    a = torch.cat([rows_x, rows_y], 1)  # (N, 8, 8)
    b = torch.cat([X, Y], 1)  # (N, 8)
    coef = torch.linalg.solve(a, b)  # (N, 8)
    return torch.cat([coef, torch.ones_like(zero).unsqueeze(-1)], 1).reshape(n, 3, 3)


def cut_lines(page: torch.Tensor, geometry: LineGeometry, width: int | None = None) -> torch.Tensor:
    """Every line of a page as the recogniser's input, cut with one ``grid_sample``.

    Args:
        page: (3, H, W) the page in BGR channel order (as the PP-OCR models expect), values 0..255, any float dtype,
            on the device the recogniser runs on.
        geometry: the lines' ``line_geometry``.
        width: the batch's width (default: ``max(8, widest line)``, as ``LineRecognizer`` pads a batch).

    Returns:
        (N, 3, REC_HEIGHT, width) in [-1, 1]: each line at ``REC_HEIGHT`` px height and ``geometry.own`` px width,
        left-aligned, zero beyond its width, in ``page``'s dtype and device.
    """
    device, n = page.device, len(geometry.own)
    height_px, width_px = page.shape[1], page.shape[2]
    width = int(width if width is not None else max(8, int(geometry.own.max(initial=0))))
    size = torch.from_numpy(geometry.size).to(device, torch.float64)  # (N, 2) (w, h) of the upright crop
    hom = page_to_crop(torch.from_numpy(geometry.corners).to(device, torch.float64), size)  # (N, 3, 3)
    w, h = size.unbind(-1)  # (N,), (N,)
    tall = torch.from_numpy(geometry.tall).to(device)  # (N,)
    seen_w = torch.where(tall, h, w).unsqueeze(-1)  # (N, 1) the crop the recogniser sees (after the turn)
    seen_h = torch.where(tall, w, h).unsqueeze(-1)  # (N, 1)
    own = torch.from_numpy(geometry.own).to(device).unsqueeze(-1)  # (N, 1)
    # the target pixel (u, v) of a line at (own, 48) -> the seen crop's pixel, as cv2.resize's INTER_LINEAR
    # places it (half-pixel centres, clamped to the crop: replicated border)
    u = torch.arange(width, device=device, dtype=torch.float64).unsqueeze(0)  # (1, W)
    v = torch.arange(REC_HEIGHT, device=device, dtype=torch.float64).unsqueeze(0)  # (1, 48)
    sx = torch.minimum(((u + 0.5) * seen_w / own - 0.5).clamp(min=0), seen_w - 1).unsqueeze(1)  # (N, 1, W)
    sy = torch.minimum(((v + 0.5) * seen_h / REC_HEIGHT - 0.5).clamp(min=0), seen_h - 1).unsqueeze(2)  # (N, 48, 1)
    # np.rot90 of the upright crop C: seen[y, x] = C[x, w - 1 - y]
    turned = tall.view(n, 1, 1)
    cx = torch.where(turned, w.view(n, 1, 1) - 1 - sy, sx).expand(n, REC_HEIGHT, width)  # (N, 48, W)
    cy = torch.where(turned, sx, sy).expand(n, REC_HEIGHT, width)  # (N, 48, W)
    pts = torch.stack([cx, cy, torch.ones_like(cx)], -1)  # (N, 48, W, 3) upright-crop pixels
    mx, my, mz = torch.einsum("nij,nhwj->nhwi", hom, pts).unbind(-1)  # (N, 48, W) homogeneous page pixels
    # align_corners=True: the page's pixel centres at -1 .. 1
    gx = (mx / mz) * (2.0 / max(width_px - 1, 1)) - 1.0  # (N, 48, W)
    gy = (my / mz) * (2.0 / max(height_px - 1, 1)) - 1.0
    grid = torch.stack([gx, gy], -1).to(page.dtype)  # (N, 48, W, 2)
    # one image, N grids: the page is shared (expand, no copy) across the lines
    lines = F.grid_sample(page.unsqueeze(0).expand(n, -1, -1, -1), grid, mode="bicubic", padding_mode="border",
                          align_corners=True)  # (N, 3, 48, W)  # fmt: skip
    lines = lines.clamp(0, 255) / 127.5 - 1.0
    inside = (u < own).view(n, 1, 1, width)  # (N, 1, 1, W)
    return lines * inside.to(lines.dtype)


def width_groups(own: np.ndarray, max_groups: int = 2, min_saving: float = 0.25) -> list[np.ndarray]:
    """Lines grouped by width so that each group, padded to its widest line, wastes little of the network's work.

    Padding every line of a page to its widest one multiplies the recogniser's work by ``N * max(own) / sum(own)``
    (2.9x on the example invoice: 44 short fields padded to 22 table rows). The lines are sorted by width and cut into
    contiguous runs; for each number of groups up to ``max_groups`` the cut with the least padded area (``sum`` over
    groups of ``len * widest``) is found exactly (two groups: every cut in one vectorised step; more: dynamic
    programming over the sorted widths). One more group is taken only when it saves at least ``min_saving`` of the
    padded area of the fewer groups, since each group is one more network call (~140 kernel launches on a GPU).

    Args:
        own: (N,) each line's width at the recogniser's height.
        max_groups: at most this many groups (>= 1).
        min_saving: the share of padded area one more group must save, in [0, 1).

    Returns:
        The groups as arrays of indices into ``own``, each sorted by width (stable), widest group last; together
        every index exactly once. Empty for N = 0.
    """
    if max_groups < 1 or not 0.0 <= min_saving < 1.0:
        raise ValueError(f"max_groups must be >= 1 and min_saving in [0, 1), got {max_groups}, {min_saving}")
    order = np.argsort(np.asarray(own), kind="stable")
    w = np.asarray(own, dtype=np.int64)[order]
    n = len(w)
    if n == 0:
        return []
    if max_groups <= 2:  # the default: every cut in one vectorised step, O(N) (this runs on every page's OCR)
        one = n * int(w[-1])
        if max_groups == 1 or n == 1:
            return [order]
        at = np.arange(1, n)  # the first group is lines 0 .. at-1, the second at .. n-1
        two = at * w[at - 1] + (n - at) * w[-1]
        best = int(np.argmin(two))
        if two[best] > (1.0 - min_saving) * one:
            return [order]
        return [order[: best + 1], order[best + 1 :]]
    # more groups: cost[k][j], the least padded area of the first j sorted lines in k groups; cut[k][j], where its
    # last group starts. One (n + 1, n + 1) step a k (a few NumPy calls, not a Python loop a line)
    inf = np.iinfo(np.int64).max // 4
    cost = np.full((max_groups + 1, n + 1), inf, dtype=np.int64)
    cut = np.zeros((max_groups + 1, n + 1), dtype=np.int64)
    cost[0, 0] = 0
    idx = np.arange(n + 1)
    last = np.concatenate([[0], w])  # last[j]: the widest of the first j sorted lines
    span = (idx[None, :] - idx[:, None]) * last[None, :]  # [i, j]: lines i .. j-1 padded to w[j-1]
    valid = idx[:, None] < idx[None, :]  # a group holds at least one line
    for k in range(1, max_groups + 1):
        total = np.where(valid, np.minimum(cost[k - 1][:, None], inf) + span, inf)  # (i, j)
        cut[k] = np.argmin(total, axis=0)  # the first minimum, as a loop over i would keep
        cost[k] = np.minimum(total[cut[k], idx], inf)
    k = 1
    while k < max_groups and cost[k + 1, n] <= (1.0 - min_saving) * cost[k, n]:
        k += 1
    bounds, j = [n], n
    for kk in range(k, 0, -1):
        j = int(cut[kk, j])
        bounds.append(j)
    bounds = bounds[::-1]  # 0 = b0 < b1 < ... < bk = n
    return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def group_inputs(x: torch.Tensor, own: np.ndarray, max_groups: int = 2) -> list[tuple[np.ndarray, int, torch.Tensor]]:
    """The recogniser's calls for a page's cut lines: per ``width_groups`` group, its line indices, its width and its
    input, the group's rows of ``x`` cut to its widest line (exact: a crop's columns do not depend on the batch's
    width). One group is ``x`` itself, the lines in the page's order (no gather).

    Args:
        x: (N, 3, 48, W) the page's lines from ``cut_lines`` (W at least the widest line).
        own: (N,) each line's width (``LineGeometry.own``).
        max_groups: as ``width_groups``.
    """
    groups = width_groups(own, max_groups)
    if len(groups) <= 1:
        return [(np.arange(len(own)), int(x.shape[-1]), x)] if len(own) else []
    out = []
    for idx in groups:
        width = max(8, int(own[idx].max()))
        out.append((idx, width, x[torch.from_numpy(idx).to(x.device)][..., :width]))
    return out


def ctc_best_path(
    probs: torch.Tensor,
    latin: torch.Tensor | None = None,
    script_share: float = 0.1,
    letters: torch.Tensor | None = None,
    gate: torch.Tensor | None = None,
) -> torch.Tensor:
    """Greedy CTC on the device, packed for one copy back (``recognition.best_path`` on a torch device).

    Args:
        probs: (N, T, K) class probabilities (class 0 is the CTC blank).
        latin: (K,) bool on ``probs``' device, the Latin classes for ``charset="auto"``: each line read in its script
            as ``recognition.best_path`` decides it.
        script_share: see ``latin``.
        letters: (K,) bool on the device, which classes are letters (``recognition.letter_mask``).
        gate: (K,) bool on the device, the script gate's classes (``recognition.gate_mask``; ``best_path``).

    Returns:
        (N, T, 2) float32: the most likely class of each frame (exact as float32 for K < 2**24) and its
        probability. ``decode_lines`` turns it into strings.
    """
    probs = probs.float()
    best = probs.argmax(-1)  # (N, T), the first maximum, as numpy's argmax
    conf = probs.gather(-1, best.unsqueeze(-1)).squeeze(-1)  # (N, T)
    if latin is not None:
        keep = latin.nonzero().squeeze(-1)  # (L,)
        sub = probs.index_select(-1, keep)  # (N, T, L)
        lat = sub.argmax(-1)  # (N, T)
        tiny = torch.finfo(torch.float32).tiny
        total = sub.sum(-1, dtype=torch.float64).clamp_min(tiny)  # (N, T) float64, as ``best_path`` sums
        lat_conf = (sub.gather(-1, lat.unsqueeze(-1)).squeeze(-1) / total).float()  # (N, T)
        kept = best != 0  # (N, T) the frames that are characters: not blank, not a repeat
        kept[:, 1:] &= best[:, 1:] != best[:, :-1]
        n_kept = kept.sum(-1)  # (N,)
        is_letter = letters[best] if letters is not None else torch.ones_like(kept)  # (N, T)
        n_foreign = (kept & ~latin[best] & is_letter).sum(-1)  # (N,) letters outside the Latin classes
        n_latin = (kept & latin[best] & is_letter).sum(-1)  # (N,) Latin letters
        foreign = (n_foreign >= script_share * n_kept) & ((n_foreign >= 2) | (n_latin == 0)) & (n_foreign > 0)
        if gate is not None:
            through = gate.nonzero().squeeze(-1)  # (G,)
            foreign &= ~latin[through[probs.index_select(-1, through).argmax(-1)]].all(-1)
        best = torch.where(foreign[:, None], best, keep[lat])
        conf = torch.where(foreign[:, None], conf, lat_conf)
    return torch.stack([best.float(), conf], -1)


def page_tensor(bgr: np.ndarray, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(3, H, W) ``dtype`` on ``device`` from an (H, W, 3) uint8 BGR page: one upload of the uint8 pixels."""
    return torch.from_numpy(np.ascontiguousarray(bgr)).to(device).permute(2, 0, 1).to(dtype)


def recognise_page(
    net: torch.nn.Module,
    characters: Sequence[str],
    page: torch.Tensor,
    quads: np.ndarray,
    squeeze: float = 1.0,
    max_groups: int = 2,
    latin: torch.Tensor | None = None,
    script_share: float = 0.1,
    letters: torch.Tensor | None = None,
    gate: torch.Tensor | None = None,
) -> list[LineText]:
    """All lines of a page: cut on the device, recognised in one call per width group, decoded with one copy back.

    Args:
        net: the recogniser ((N, 3, 48, W) -> (N, T, K) probabilities), on ``page``'s device.
        characters: its class list (blank first).
        page: (3, H, W) BGR page on the device (``page_tensor``).
        quads: (N, 4, 2) detected line corners in page pixels.
        squeeze: as ``OcrConfig.squeeze`` (1.0: the recogniser's own aspect).
        max_groups: at most this many network calls (``width_groups``); 1: every line padded to the widest.
        latin, script_share, letters, gate: ``charset="auto"``'s per-line script choice (``ctc_best_path``); None:
            none.

    Returns:
        N ``LineText`` in the order of ``quads``.
    """
    geometry = line_geometry(quads, squeeze)
    if len(geometry.own) == 0:
        return []
    x = cut_lines(page, geometry, max(8, int(geometry.own.max())))  # (N, 3, 48, widest): one grid_sample
    groups = group_inputs(x, geometry.own, max_groups)
    best = []
    with torch.inference_mode():
        for _, _, rows in groups:
            best.append(ctc_best_path(net(rows), latin, script_share, letters, gate))  # (n_g, T_g, 2)
        frames = max(b.shape[1] for b in best)
        packed = torch.cat([F.pad(b, (0, 0, 0, frames - b.shape[1])) for b in best]).cpu().numpy()  # one copy back
    out: list[LineText | None] = [None] * len(geometry.own)
    start = 0
    for (idx, width, _), b in zip(groups, best, strict=True):
        lines = decode_lines(packed[start : start + len(idx), : b.shape[1]], characters, width, geometry.own[idx])
        start += len(idx)
        for i, line in zip(idx, lines, strict=True):
            out[i] = line
    return out  # type: ignore[return-value]


class PageRecognizer:
    """The line recogniser on a torch device: every line of a page cut, recognised (one call per width group) and
    decoded in one pass.

    The same network and class list as ``LineRecognizer`` (the ONNX model, its head sliced to ``charset``), run by
    ``OnnxModule`` on ``device`` in ``dtype``. The model loads on first use. Thread-safe (inference only).

    Args:
        model_path: PP-OCR recognition ONNX model (None: the one bundled with rapidocr).
        charset: ``"auto"``, ``"latin"`` or ``"all"`` (see ``recognition``).
        squeeze: horizontal scale of the lines, in (0, 1].
        device: torch device of the network and the crops.
        dtype: compute dtype (float32, bfloat16, float16).
        max_groups: at most this many network calls a page, lines grouped by width (``width_groups``).
        script_share: ``charset="auto"``: see ``recognition.best_path``.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        charset: str = "auto",
        squeeze: float = 1.0,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        max_groups: int = 2,
        script_share: float = 0.1,
    ) -> None:
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating-point torch dtype (float32, bfloat16, float16), got {dtype}")
        if not 0.0 < squeeze <= 1.0:
            raise ValueError(f"squeeze must be in (0, 1], got {squeeze}")
        self.model_path = Path(model_path) if model_path is not None else None
        self.charset = charset
        self.squeeze = float(squeeze)
        self.device = torch.device(device)
        self.dtype = dtype
        self.max_groups = int(max_groups)
        width_groups(np.zeros(0, dtype=np.int64), self.max_groups)  # checks max_groups now, not on the first page
        self.net: torch.nn.Module | None = None
        self.characters: list[str] = []
        self.script_share = float(script_share)
        self.latin: torch.Tensor | None = None  # (K,) bool on the device for charset="auto"
        self.letters: torch.Tensor | None = None  # (K,) bool on the device: which classes are letters
        self.gate: torch.Tensor | None = None  # (K,) bool on the device: the script gate's classes
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load the model (head sliced to ``charset``) onto the device now; a no-op when loaded."""
        if self.net is not None:
            return
        with self._lock:
            if self.net is not None:
                return
            import onnx

            from .onnx_torch import OnnxModule

            blob, characters, _ = load_rec_model(self.model_path or bundled_rec_model(), self.charset)
            if self.charset == "auto":
                self.latin = torch.from_numpy(latin_mask(characters)).to(self.device)
                self.letters = torch.from_numpy(letter_mask(characters)).to(self.device)
                self.gate = torch.from_numpy(gate_mask(characters)).to(self.device)
            self.characters = characters
            self.net = OnnxModule(onnx.load_from_string(blob)).to(self.device, self.dtype).eval()

    def read_page(self, bgr: np.ndarray, quads: np.ndarray) -> list[LineText]:
        """Recognise the lines ``quads`` (N, 4, 2) of the (H, W, 3) uint8 BGR page ``bgr``: N ``LineText``."""
        self.load()
        assert self.net is not None
        page = page_tensor(bgr, self.device, self.dtype)  # one upload of the page's pixels
        return recognise_page(
            self.net,
            self.characters,
            page,
            quads,
            self.squeeze,
            self.max_groups,
            self.latin,
            self.script_share,
            self.letters,
            self.gate,
        )
