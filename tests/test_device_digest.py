"""Pages known by digests computed where their frames lie (``arr_coc.caching.device_digests``, ``frame_digests``,
``digest_scope``) and the OCR reader that looks a page up by one (``DigestedPicture``): the universal hash equals its
definition in Python's integers, every byte / shape / dtype / memory order counts, and a text-mode decision on frames
copies a page to the host only when the reader has not read it, with the same result as reading the host pixels."""

from __future__ import annotations

import importlib.util
import operator
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import arr_coc.caching as caching
from arr_coc.caching import device_digests, digest_scope, frame_digests, page_digest, universal_hash

HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None


def reference(row: bytes) -> list[int]:
    """``universal_hash`` of one row, written from its definition with Python's integers (no overflow possible)."""
    a, b = (c.tolist() for c in caching._coefficients(torch.device("cpu")))
    if len(row) % 2:
        row += b"\0"
    words = list(np.frombuffer(row, dtype="<u2").tolist())
    blocks = max(1, -(-len(words) // caching._BLOCK))
    words += [0] * (blocks * caching._BLOCK - len(words))
    out = []
    for f in range(caching._FUNCTIONS):
        firsts = [
            sum(map(operator.mul, a[f], words[k * caching._BLOCK : (k + 1) * caching._BLOCK])) % caching._P
            for k in range(blocks)
        ]
        limbs = [part for v in firsts for part in (v & 0xFFFF, (v >> 16) & 0xFFFF, v >> 32)]
        out.append(sum(map(operator.mul, b[f], limbs)) % caching._P)
    return out


@pytest.mark.parametrize("nbytes", [1, 2, 7, 2 * 65536, 2 * 65536 + 1, 5 * 65536 + 3])
def test_universal_hash_equals_its_definition_in_python_integers(nbytes: int) -> None:
    rng = np.random.default_rng(nbytes)
    rows = rng.integers(0, 256, (2, nbytes), dtype=np.uint8)
    rows[1, :16] = 255  # the largest words too
    got = universal_hash(torch.from_numpy(rows)).tolist()
    assert got == [reference(r.tobytes()) for r in rows]
    assert all(0 <= v < caching._P for vals in got for v in vals)


def test_device_digests_depend_on_every_byte_shape_dtype_order_and_salt() -> None:
    frames = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (3, 3, 28, 56), dtype=np.uint8))
    keys = device_digests(frames)
    assert len(keys) == 3 and len(set(keys)) == 3 and all(len(k) == 16 for k in keys)
    assert device_digests(frames.clone()) == keys and device_digests(frames[1:2]) == keys[1:2]  # per frame
    for where in [(0, 0, 0, 0), (2, 2, 27, 55), (1, 1, 13, 40)]:  # one changed bit anywhere: that frame's key only
        changed = frames.clone()
        changed[where] ^= 1
        new = device_digests(changed)
        assert new[where[0]] != keys[where[0]] and [k for i, k in enumerate(new) if i != where[0]] == [
            k for i, k in enumerate(keys) if i != where[0]
        ]
    assert device_digests(frames.reshape(3, 3, 56, 28)) != keys  # same bytes, other shape
    assert device_digests(frames.view(torch.int8)) != keys  # same bytes, other dtype
    assert device_digests(frames, "grid") != keys
    last = frames.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # channels last: another memory order
    assert device_digests(last) == device_digests(last.clone(memory_format=torch.channels_last)) != keys
    assert device_digests(frames[:, :, ::2]) == device_digests(frames[:, :, ::2].contiguous())  # strided: a copy
    assert device_digests(frames.float() / 255) != device_digests(frames.double() / 255)
    assert device_digests(frames[:0]) == [] and len(device_digests(torch.tensor(True))) == 1
    assert frame_digests(frames) == [page_digest(f) for f in frames] != keys  # the CPU's kind: XXH3, another head
    assert device_digests([frames, frames[2:], frames[:0]]) == [keys, keys[2:], []]  # items: one pass, one sync
    assert frame_digests([frames, frames[2:]]) == [frame_digests(frames), frame_digests(frames[2:])]


def test_device_digests_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    frames = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (5, 3, 60, 70), dtype=np.uint8))
    whole = device_digests(frames)
    monkeypatch.setattr(caching, "_CHUNK_WORDS", 1)  # one frame a pass
    assert device_digests(frames) == whole


def test_digest_scope_hashes_the_same_memory_once(monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[int] = []
    real = caching.xxhash.xxh3_128

    def counting(data=b"", seed=0):  # noqa: ANN001, ANN202  (xxhash's own signature)
        hashed.append(data.nbytes if isinstance(data, np.ndarray) else len(data))
        return real(data, seed=seed)

    monkeypatch.setattr(caching.xxhash, "xxh3_128", counting)
    frames = torch.from_numpy(np.random.default_rng(2).integers(0, 256, (1, 40, 50, 3), dtype=np.uint8))
    frames = frames.permute(0, 3, 1, 2)  # as frames_from_image lays them out
    outside = (page_digest(frames, "texture"), frame_digests(frames, "picture"))
    assert hashed.count(6000) == 2  # each key hashed the bytes
    hashed.clear()
    with digest_scope():
        with digest_scope():  # nested: the outer memo
            inside = (page_digest(frames, "texture"), frame_digests(frames, "picture"))
        assert page_digest(frames.clone(), "texture") == outside[0]  # other memory: hashed, the same key
    assert inside == outside and hashed.count(6000) == 2  # the frames once, their copy once
    hashed.clear()
    frames[0, 0, 0, 0] ^= 1  # written after the block: the next block sees it
    with digest_scope():
        assert page_digest(frames, "texture") != outside[0]
    assert caching._SCOPE.get() is None


# --- the reader and the decision ---------------------------------------------------------------------------------


def stand_in_reading():
    """A text path whose reader runs a stand-in engine (one line "Total: 42" on any page), MiniLM off; and the list
    of the page sizes its detector saw."""
    from arr_coc.reading import Reading, ReadingConfig
    from arr_coc.reading.ocr.recognition import LineText

    reading = Reading(ReadingConfig().replace(semantic={"enabled": False}))
    detected: list[tuple[int, int]] = []
    quad = np.array([[[2, 2], [50, 2], [50, 20], [2, 20]]], dtype=np.float32)
    reading.reader._engine = (
        lambda bgr: detected.append(bgr.shape[:2]) or SimpleNamespace(boxes=quad),
        lambda crops: [LineText("Total: 42", 0.9, tuple(np.linspace(0.05, 0.95, 9))) for _ in crops],
    )
    return reading, detected


def test_reader_reads_a_digested_picture_once_and_fetches_its_pixels_only_when_new() -> None:
    from arr_coc.reading.ocr.reader import DigestedPicture

    reading, detected = stand_in_reading()
    pixels = np.full((30, 60, 3), 255, np.uint8)
    fetched: list[int] = []
    picture = DigestedPicture(b"k" * 16, pixels.shape, lambda: fetched.append(1) or pixels)
    first = reading.reader.read_timed(picture)
    assert not first.cached and fetched == [1] and detected == [(30, 60)]
    second = reading.reader.read_timed(picture)
    assert second.cached and fetched == [1] and second.boxes == first.boxes == reading.reader.read(pixels)
    assert detected == [(30, 60), (30, 60)]  # the host array is another key: read again, the same boxes
    assert reading.reader.read(DigestedPicture(b"k" * 16, (3, 60, 3), lambda: pixels)) == []  # under 4 px: no text


@pytest.mark.skipif(not HAS_OCR, reason="the [ocr] extra is not installed (mode='text' checks for it)")
def test_text_decision_on_frames_copies_a_page_to_the_host_once_and_equals_reading_its_pixels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import arr_coc.text_prior as text_prior
    from arr_coc.config import RelevanceConfig
    from arr_coc.engine import EngineConfig
    from arr_coc.realizing import Realizer

    reading, detected = stand_in_reading()
    r = Realizer(RelevanceConfig(reading={"semantic": {"enabled": False}}))
    r._reading = reading  # (a realizer with a text path of its own: its reading is built on first use)
    copied: list[int] = []
    real = text_prior.pictures_from_frames
    monkeypatch.setattr(text_prior, "pictures_from_frames", lambda f: copied.append(f.shape[0]) or real(f))
    rng = np.random.default_rng(4)
    hwc = np.full((2, 84, 112, 3), 255, np.uint8)
    hwc[:, 40:] = rng.integers(0, 256, (2, 44, 112, 3), dtype=np.uint8)
    frames = torch.from_numpy(hwc).permute(0, 3, 1, 2)  # a 2-frame video, 3 x 4 tokens a frame
    args = ([frames], [(3, 4)], ["What is the total?"], 4)
    first = r.decide(*args, mode="text")
    assert copied == [1, 1] and len(detected) == 2  # each new frame copied once and read
    assert first[0].scoring.timings_ms["digest"] > 0
    again = r.decide(*args, mode="text")
    assert copied == [1, 1] and len(detected) == 2  # nothing copied or read: the digests found the pages
    scored = r.score(frames, (3, 4), "What is the total?", "text")  # the training path looks pages up alike
    assert copied == [1, 1] and len(detected) == 2 and torch.equal(scored.scores, first[0].scores)
    floats = r.decide([frames.float() / 255], *args[1:], mode="text")  # rounded to the same uint8 frames
    assert copied == [1, 1] and len(detected) == 2  # the same pages
    other = frames.clone()
    other[1, :, 0, 0] = 0
    r.decide([other], *args[1:], mode="text")
    assert copied == [1, 1, 1] and len(detected) == 3  # the changed frame only
    hashed: list[int] = []
    real_digests = text_prior.frame_digests
    monkeypatch.setattr(text_prior, "frame_digests", lambda f, salt: hashed.append(len(f)) or real_digests(f, salt))
    batch = r.decide([frames, other, frames], [(3, 4)] * 3, ["What is the total?"] * 3, 4, mode="text")
    assert hashed == [3] and copied == [1, 1, 1]  # three items' frames hashed in one call; all read before
    assert torch.equal(batch[0].keep, first[0].keep) and torch.equal(batch[2].scores, first[0].scores)
    no_cache = EngineConfig(texture_cache_items=0)
    plain = Realizer(RelevanceConfig(reading={"semantic": {"enabled": False}}), engine=no_cache)
    plain._reading, _ = stand_in_reading()
    pics = [list(hwc)]
    given = plain.decide(*args, mode="text", pictures=pics)
    for d in (again, floats, given):
        assert torch.equal(d[0].keep, first[0].keep) and torch.equal(d[0].scores, first[0].scores)
        assert d[0].scoring.boxes == first[0].scoring.boxes


@pytest.mark.skipif(not HAS_OCR, reason="the [ocr] extra is not installed (mode='text' checks for it)")
def test_decide_computes_each_groups_texture_once_before_the_text_paths_host_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a GPU the texture's kernels then run while the host matches the page; the result is the same."""
    import arr_coc.engine as engine
    import arr_coc.text_prior as text_prior
    from arr_coc.config import RelevanceConfig
    from arr_coc.engine import EngineConfig
    from arr_coc.realizing import Realizer

    reading, _ = stand_in_reading()
    r = Realizer(RelevanceConfig(reading={"semantic": {"enabled": False}}), engine=EngineConfig(texture_cache_items=0))
    r._reading = reading
    events: list[str] = []
    real_texture, real_text = engine.texture_from_frames, text_prior.text_prior_maps
    monkeypatch.setattr(engine, "texture_from_frames", lambda f, *a, **k: events.append(f"texture {len(f)}")
                        or real_texture(f, *a, **k))  # fmt: skip
    monkeypatch.setattr(text_prior, "text_prior_maps", lambda *a, **k: events.append("text") or real_text(*a, **k))
    rng = np.random.default_rng(5)
    small = torch.from_numpy(rng.integers(0, 256, (1, 3, 84, 112), dtype=np.uint8))
    large = torch.from_numpy(rng.integers(0, 256, (1, 3, 112, 112), dtype=np.uint8))
    frames, grids = [small, large, small, small], [(3, 4), (4, 4), (3, 4), (3, 4)]
    modes = ["text", "text", "text", "texture"]
    got = r.decide(frames, grids, ["What is the total?"] * 4, 4, mode=modes)
    # groups: the two small text items together, the large one, the small texture item (no prior) apart
    assert sorted(events[:3]) == ["texture 1", "texture 1", "texture 2"] and events[3:] == ["text"] * 3
    for i in range(4):
        alone = r.decide([frames[i]], [grids[i]], ["What is the total?"], 4, mode=modes[i])[0]
        assert torch.equal(alone.scores, got[i].scores) and torch.equal(alone.keep, got[i].keep)
        assert got[i].scoring.timings_ms["texture"] > 0
