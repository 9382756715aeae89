"""The text detector's box extraction (DB post-processing) with less host time per box, the same boxes.

rapidocr's ``DBPostProcess`` turns the detector's probability map into line quads: contours of the thresholded map,
then, per contour, a minimum-area rectangle, its mean probability (``box_score_fast``), the rectangle grown by the
unclip ratio (shapely's area and length, pyclipper's offset), a second rectangle, and the scale to the page. On the
example invoice that is 66 contours and 10-13 ms of host time a page, most of it NumPy calls on four points
(``np.clip`` of scalars, ``sorted`` of a list of arrays), not the OpenCV / GEOS / Clipper calls themselves. On a GPU
it is the largest host step of the first question after the networks.

:class:`LeanDBPostProcess` is a ``DBPostProcess`` whose per-box steps do the same arithmetic with plain Python
numbers where rapidocr uses NumPy scalars, the unclip distances of all boxes in two vectorised shapely calls (area
and length) instead of a ``Polygon`` per box, and the final clockwise ordering and clipping of all quads at once
(``filter_det_res``: the same ``np.argsort`` on each quad's row): the same OpenCV, GEOS, pyclipper and NumPy
arithmetic on the same values (the dtypes each step sees are kept, float32 corners included), so every box and score
is the same bit for bit (``tests/test_ocr_detection.py`` compares it with rapidocr's on random probability maps;
``python benchmarks/ocr_exactness.py detector --pages 300``: 14,757 boxes of 278 pages, 0 differ). About half
rapidocr's host time (0.50-0.52 of it on realdocs-dev pages, where the per-box version was 0.86 of it). Only the
default ``score_mode="fast"`` path changes; the "slow" score is rapidocr's own.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
from rapidocr.ch_ppocr_det.utils import DBPostProcess


class LeanDBPostProcess(DBPostProcess):
    """``DBPostProcess`` with the per-box steps in plain Python numbers (see the module docstring).

    Built from a loaded detector's own post-processing, so every threshold is the detector's:
    ``LeanDBPostProcess.like(stage.postprocess_op)``.
    """

    @classmethod
    def like(cls, other: DBPostProcess) -> LeanDBPostProcess:
        """A lean copy of ``other`` (its thresholds, unclip ratio, score mode, dilation kernel and minimum size)."""
        lean = cls.__new__(cls)
        lean.__dict__.update(vars(other))
        return lean

    def boxes_from_bitmap(
        self, pred: np.ndarray, bitmap: np.ndarray, dest_width: int, dest_height: int
    ) -> tuple[np.ndarray, list[float]]:
        """As ``DBPostProcess.boxes_from_bitmap``: (N, 4, 2) int32 quads on the page and their scores."""
        if self.score_mode != "fast":
            return super().boxes_from_bitmap(pred, bitmap, dest_width, dest_height)
        height, width = bitmap.shape
        contours = cv2.findContours((bitmap * 255).astype(np.uint8), cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[-2]
        kept = []  # (corners, score) of the contours that pass the size and score tests
        for contour in contours[: self.max_candidates]:
            points, sside = self.get_mini_boxes(contour)
            if sside < self.min_size:
                continue
            score = self.box_score_fast(pred, points)
            if self.box_thresh > score:
                continue
            kept.append((points, score))
        boxes, scores = [], []
        for (points, score), distance in zip(kept, self._unclip_distances([p for p, _ in kept]), strict=True):
            box, sside = self.get_mini_boxes(self._offset(points, distance))
            if sside < self.min_size + 2:
                continue
            # rapidocr: np.clip(np.round(box[:, 0] / width * dest_width), 0, dest_width) written into the float32
            # box, then cast to int32; the same float64 arithmetic on the whole column at once
            box[:, 0] = np.clip(np.round(box[:, 0] / width * dest_width), 0, dest_width)
            box[:, 1] = np.clip(np.round(box[:, 1] / height * dest_height), 0, dest_height)
            boxes.append(box.astype(np.int32))
            scores.append(score)
        return np.array(boxes, dtype=np.int32), scores

    def filter_det_res(
        self, dt_boxes: np.ndarray, scores: list[float], img_height: int, img_width: int
    ) -> tuple[np.ndarray, list[float]]:
        """As ``DBPostProcess.filter_det_res``: each quad's corners ordered clockwise from the top-left
        (``order_points_clockwise``), clipped to the page (``clip_det_res``), and quads of a side <= 3 px dropped.

        The ordering and the clipping run on all quads at once: the same ``np.argsort`` on each quad's (row of) x,
        then y, coordinates (NumPy sorts every row of an array with the function it sorts a lone one with), and the
        clip of integer coordinates; the side lengths stay rapidocr's own ``np.linalg.norm`` a quad (float32).
        """
        if len(dt_boxes) == 0:
            return super().filter_det_res(dt_boxes, scores, img_height, img_width)
        pts = np.asarray(dt_boxes)  # (N, 4, 2) int32

        def by(key: np.ndarray, rows: np.ndarray) -> np.ndarray:  # rows (N, k, 2) in the order of key (N, k)
            return np.take_along_axis(rows, np.argsort(key, axis=1)[:, :, None], axis=1)

        x_sorted = by(pts[:, :, 0], pts)  # (N, 4, 2)
        left = by(x_sorted[:, :2, 1], x_sorted[:, :2])  # (N, 2, 2): top-left, bottom-left
        right = by(x_sorted[:, 2:, 1], x_sorted[:, 2:])  # (N, 2, 2): top-right, bottom-right
        rect = np.stack([left[:, 0], right[:, 0], right[:, 1], left[:, 1]], 1).astype(np.float32)  # (N, 4, 2)
        # clip_det_res: int(min(max(v, 0), limit)) of whole numbers, written back into the float32 quad
        rect[:, :, 0] = np.clip(rect[:, :, 0], 0, img_width - 1)
        rect[:, :, 1] = np.clip(rect[:, :, 1], 0, img_height - 1)
        kept, kept_scores = [], []
        for box, score in zip(rect, scores, strict=True):
            if int(np.linalg.norm(box[0] - box[1])) <= 3 or int(np.linalg.norm(box[0] - box[3])) <= 3:
                continue
            kept.append(box)
            kept_scores.append(score)
        return np.array(kept), kept_scores

    def _unclip_distances(self, corners: list[np.ndarray]) -> list[float]:
        """rapidocr's ``unclip`` distance, ``area * unclip_ratio / length`` of each quad's polygon, for all quads in
        two vectorised shapely calls (the same GEOS area and length of the same float64 coordinates a ``Polygon``
        per quad gives, then the same double arithmetic)."""
        if not corners:
            return []
        import shapely

        polygons = shapely.polygons(np.stack(corners).astype(np.float64))  # (N,) from (N, 4, 2)
        return (shapely.area(polygons) * self.unclip_ratio / shapely.length(polygons)).tolist()

    @staticmethod
    def _offset(points: np.ndarray, distance: float) -> np.ndarray:
        """rapidocr's ``unclip`` after the distance: the quad grown by ``distance`` with pyclipper (round joins),
        (M, 1, 2) integer points."""
        import pyclipper

        offset = pyclipper.PyclipperOffset()
        offset.AddPath(points, pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
        return np.array(offset.Execute(distance)).reshape((-1, 1, 2))

    def get_mini_boxes(self, contour: np.ndarray) -> tuple[np.ndarray, float]:
        """As ``DBPostProcess.get_mini_boxes``: the minimum-area rectangle's corners (4, 2) float32, ordered
        top-left, top-right, bottom-right, bottom-left, and its shorter side. The four corners are sorted as Python
        numbers (rapidocr: ``sorted(..., key=x)``, a stable sort on x; float32 values are exact as Python floats)."""
        rect = cv2.minAreaRect(contour)
        p = sorted(cv2.boxPoints(rect).tolist(), key=lambda q: q[0])  # four [x, y]
        i1, i4 = (0, 1) if p[1][1] > p[0][1] else (1, 0)
        i2, i3 = (2, 3) if p[3][1] > p[2][1] else (3, 2)
        return np.array([p[i1], p[i2], p[i3], p[i4]], dtype=np.float32), min(rect[1])

    @staticmethod
    def box_score_fast(bitmap: np.ndarray, _box: np.ndarray) -> float:
        """As ``DBPostProcess.box_score_fast``: the mean of ``bitmap`` inside the quad ``_box`` (4, 2)."""
        h, w = bitmap.shape[:2]
        xs, ys = _box[:, 0], _box[:, 1]
        # np.clip(np.floor(v).astype(np.int32), 0, w - 1) of one number, in Python ints (exact: |v| < 2**31)
        xmin = min(max(int(math.floor(xs.min())), 0), w - 1)
        xmax = min(max(int(math.ceil(xs.max())), 0), w - 1)
        ymin = min(max(int(math.floor(ys.min())), 0), h - 1)
        ymax = min(max(int(math.ceil(ys.max())), 0), h - 1)
        mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
        box = _box.copy()  # float32, as rapidocr's copy: the shifted corners are rounded to float32 before the cast
        box[:, 0] -= xmin
        box[:, 1] -= ymin
        cv2.fillPoly(mask, box.reshape(1, -1, 2).astype(np.int32), 1)
        return cv2.mean(bitmap[ymin : ymax + 1, xmin : xmax + 1], mask)[0]
