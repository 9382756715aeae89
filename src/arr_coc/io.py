"""Image input: open anything a user may hand us, safely, as an RGB ``PIL.Image``.

What is accepted and what happens to it (every refusal is a ``ValueError`` saying what was wrong and what is
allowed; nothing the caller passed is modified):

* paths, bytes, file objects, ``PIL.Image`` and NumPy arrays (H x W, H x W x 1/3/4; uint8, uint16 or float).
* EXIF orientation is applied, as the pixels a person sees are what the question is about.
* modes: RGBA / LA / palette with transparency are composited on white (documents have white paper); CMYK, 16-bit,
  32-bit integer and float greyscale are converted (high-bit-depth images are rescaled by their own range).
* decompression bombs: an image above ``max_pixels_in`` (default ``MAX_PIXELS_IN``, 50 megapixels: an A4 page
  scanned at 600 dpi is 35; the one bound of the CLI, the API and the demo) is refused before its pixels are
  decoded: the size is read from the file's header and checked per call. Pillow's own process-wide guard
  (``Image.MAX_IMAGE_PIXELS``) is neither used nor changed, so concurrent calls with different limits do not race
  and the application's setting stays its own. Big JPEGs are decoded at reduced scale (``draft``) when that loses
  nothing the model's resize would keep.
* corrupt, truncated and non-image files are refused with the decoder's reason; so are empty files (0-3 bytes).
* multi-frame files (multi-page TIFF, animated GIF, APNG): the first frame is used, and ``notes=`` says so.

Example:
    >>> from PIL import Image
    >>> load_image(Image.new("LA", (4, 2))).mode
    'RGB'
"""

from __future__ import annotations

import io
import math
import os
import struct
from pathlib import Path
from typing import IO, Any

import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

# Largest source image decoded, in pixels; larger ones are refused. One bound for the CLI, the Python API and the
# demo (issue 22: the CLI admitted 268 megapixels, 3.46 GB peak in text mode, while the demo capped at 50).
MAX_PIXELS_IN = 50_000_000
ImageLike = str | os.PathLike | bytes | IO[bytes] | Image.Image | np.ndarray


def load_image(
    source: ImageLike,
    max_pixels_in: int = MAX_PIXELS_IN,
    target_pixels: int | None = None,
    notes: list[str] | None = None,
) -> Image.Image:
    """Open ``source`` as an RGB image, upright, with transparency on white (see ``load_image_with_size``)."""
    return load_image_with_size(source, max_pixels_in, target_pixels, notes)[0]


def load_image_with_size(
    source: ImageLike,
    max_pixels_in: int = MAX_PIXELS_IN,
    target_pixels: int | None = None,
    notes: list[str] | None = None,
) -> tuple[Image.Image, tuple[int, int]]:
    """Open ``source`` as an RGB image, upright, with transparency on white, and its true (W, H).

    The true size is the upright size of the full-resolution image; the returned image may be smaller when a
    big JPEG was decoded at reduced scale, and the model's grid must be computed from the true size. A PIL image that
    is already RGB and upright is returned as it is, not copied (nothing here or downstream writes into it).

    Args:
        source: a path, bytes, a binary file object, a PIL image or a NumPy array.
        max_pixels_in: refuse images with more pixels than this (decompression-bomb guard).
        target_pixels: the area the model will resize to; JPEGs much larger are decoded at a reduced scale.
        notes: if given, what the caller should tell the user is appended here (a multi-page TIFF or an animated
            GIF: only its first frame is used).

    Raises:
        ValueError: for anything that is not a readable image of a supported kind.
    """
    if isinstance(source, Image.Image):
        image = source  # never written to: a conversion or a rotation below makes a new image, else it is returned
    elif isinstance(source, np.ndarray):
        image = _from_array(source)
    else:
        image = _open(source, max_pixels_in)
        frames = getattr(image, "n_frames", 1)
        if frames > 1 and notes is not None:
            notes.append(f"{_name(source)} has {frames} frames (pages); only the first is used")
    size = image.size
    if not isinstance(source, (Image.Image, np.ndarray)):
        if target_pixels and image.format == "JPEG" and image.width * image.height > 4 * target_pixels:
            scale = (target_pixels * 2 / (image.width * image.height)) ** 0.5  # keep 2x the needed resolution
            image.draft("RGB", (max(1, int(image.width * scale)), max(1, int(image.height * scale))))
        try:
            image.load()
        except (OSError, SyntaxError, ValueError) as err:
            raise ValueError(
                f"{_name(source)} could not be decoded ({err}); the file may be corrupt or truncated"
            ) from err
    if image.width * image.height > max_pixels_in:
        raise ValueError(_too_big(_name(source), image.width, image.height, max_pixels_in))
    if image.width < 1 or image.height < 1:
        raise ValueError(f"{_name(source)} is empty ({image.width}x{image.height})")
    decoded = image.size
    if image.getexif().get(ExifTags.Base.Orientation, 1) in _TURNED:  # else exif_transpose would only copy it
        image = ImageOps.exif_transpose(image)
    if image.size != decoded:  # rotated by 90 degrees: so is the true size
        size = size[::-1]
    return _to_rgb(image), size


_TURNED = frozenset(range(2, 9))  # EXIF orientations other than upright (1)


def _name(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return f"image file {str(source)!r}"
    return f"image input of type {type(source).__name__}"


def _open(source: Any, max_pixels_in: int) -> Image.Image:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"image file {str(path)!r} does not exist or is not a file")
    elif isinstance(source, (bytes, bytearray, memoryview)):
        source = io.BytesIO(bytes(source))
    elif not hasattr(source, "read"):
        raise ValueError(
            f"cannot read an image from {type(source).__name__}; pass a path, bytes, a file object, "
            "a PIL.Image or a NumPy array"
        )
    name = _name(source)
    try:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                source = io.BytesIO(f.read())  # read once; the decoder reads from memory, no file handle is kept
        elif not _seekable(source):
            source = io.BytesIO(source.read())
        image = _open_header(source)
    except UnidentifiedImageError as err:
        if isinstance(err, _TooShort):
            raise ValueError(f"{name} is {err.n} bytes long: empty or cut short, not an image") from err
        raise ValueError(f"{name} is not an image Pillow can read (PNG, JPEG, TIFF, BMP, GIF, WebP, ...)") from err
    except OSError as err:
        raise ValueError(f"{name} could not be opened ({err})") from err
    if image.width * image.height > max_pixels_in:
        raise ValueError(_too_big(name, image.width, image.height, max_pixels_in))
    if getattr(image, "n_frames", 1) > 1:
        image.seek(0)  # multi-frame files (GIF, TIFF): the first frame
    return image


def _too_big(name: str, width: int, height: int, limit: int) -> str:
    """The message for an image above the decompression-bomb guard: what it is, the bound, what to do."""
    side = math.isqrt(limit)
    return (
        f"{name} has {width}x{height} = {width * height / 1e6:,.1f} megapixels, above the limit of {limit} pixels "
        f"({limit / 1e6:g} megapixels, the decompression-bomb guard); downscale it first (a square page: "
        f"{side}x{side} or less): the model resizes every image to at most 16,384 visual tokens anyway"
    )


def _seekable(f: Any) -> bool:
    try:
        return bool(f.seekable()) if hasattr(f, "seekable") else (f.seek(0, io.SEEK_CUR), True)[1]
    except (OSError, AttributeError, ValueError):
        return False


class _TooShort(UnidentifiedImageError):
    """A file of fewer than 4 bytes: no image format fits (0-3 byte files used to raise ``struct.error``)."""

    def __init__(self, n: int) -> None:
        super().__init__(f"cannot identify image file ({n} bytes)")
        self.n = n


def _open_header(fp: IO[bytes]) -> Image.Image:
    """Identify the format and parse the header, as ``Image.open`` does, without Pillow's process-wide bomb check.

    Each registered format plugin (``Image.register_open``: ``Image.ID`` in priority order, ``Image.OPEN``) is
    tried on the file's first 16 bytes, as ``Image.open`` tries them; nothing is decoded. The caller checks the
    size from the header against its own per-call limit.

    Raises:
        UnidentifiedImageError: no plugin accepts the file.
    """
    Image.init()  # register every format plugin (once per process; idempotent)
    start = fp.tell()
    prefix = fp.read(16)
    if len(prefix) < 4:  # no image format fits in fewer bytes; some format checks would fail on them (struct.error)
        raise _TooShort(len(prefix))
    for fmt in list(Image.ID):
        factory, accept = Image.OPEN[fmt]
        if accept is not None:
            try:
                verdict = accept(prefix)
            except (struct.error, IndexError, TypeError, ValueError):
                continue  # a format check that cannot read this prefix: not this format
            if not verdict or isinstance(verdict, str):  # a str is Pillow's "looks like it, but unsupported"
                continue
        fp.seek(start)
        try:
            return factory(fp, "")
        except (SyntaxError, IndexError, TypeError, struct.error):
            continue  # not this format after all (what Image.open does too)
    raise UnidentifiedImageError("cannot identify image file")


def _from_array(array: np.ndarray) -> Image.Image:
    a = np.asarray(array)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)) or a.size == 0:
        raise ValueError(f"image arrays must be H x W, H x W x 1, 3 or 4 and non-empty; got shape {a.shape}")
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    elif a.dtype != np.uint8:
        a = a.astype(np.float64)
        if not np.isfinite(a).all():
            raise ValueError("image array has NaN or infinite values")
        lo, hi = (0.0, 1.0) if a.min() >= 0 and a.max() <= 1 else (a.min(), a.max())
        a = np.round((a - lo) / max(hi - lo, 1e-12) * 255).astype(np.uint8)
    return Image.fromarray(a)


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image
    if image.mode == "P":
        image = image.convert("RGBA")
    if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        a = np.asarray(image, dtype=np.float64)
        lo, hi = float(a.min()), float(a.max())
        image = Image.fromarray(np.round((a - lo) / max(hi - lo, 1e-12) * 255).astype(np.uint8))
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")
