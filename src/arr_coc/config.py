"""One config for the relevance model: every weight and threshold of texture, scorers, balancer and budget.

The training-free defaults below are the numbers the scorers start from (the ``nn.Parameter`` ones can be learned
from there); an ablation or a tuning run changes a field here, never a literal inside a function. The config is
plain data: ``to_dict`` / ``from_dict`` / ``to_json`` / ``from_json`` round-trip it, so a run can record exactly
what it used.

The text path's own weights (OCR matching and layout) live in the reading package's ``ReadingConfig``; the
``reading`` field carries them as a dict (``None`` = that config's defaults).

Example:
    >>> cfg = RelevanceConfig(edge_quantile=0.8)
    >>> RelevanceConfig.from_json(cfg.to_json()) == cfg
    True
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from .checkpoint_check import (
    CHECKPOINT_VERSION,
    MAX_COUNT,
    MAX_MAGNITUDE,
    CheckpointError,
    check_range,
    check_types,
    check_version,
)

# The texture array's 13 channels, in the order arr_coc.texture computes them; ``information`` and ``perspectival``
# below map some of these names to weights. They live here, with the weights that name them, so that the config
# needs nothing from texture.py (which imports this file).
CHANNELS: tuple[str, ...] = (
    "r", "g", "b", "pos_y", "pos_x", "sobel_x", "sobel_y", "sobel_mag",
    "sal_spectral", "sal_contrast", "sal_color", "entropy", "edge_density",
)  # fmt: skip

# Balancer rules. Rows: information, perspectival, participatory. Columns: the query features bias, specificity,
# vagueness, wants_text, participatory signal, participatory available (see arr_coc.balancing).
DEFAULT_BALANCER_RULES: tuple[tuple[float, ...], ...] = (
    (0.0, 0.0, 0.5, 0.8, -0.5, 0.0),  # information: text questions and vague ones lean on content
    (0.0, -0.5, 1.0, -0.8, -0.5, 0.0),  # perspectival: vague questions lean on what stands out
    (-1.0, 1.0, -1.5, 0.0, 2.5, 0.5),  # participatory: specific questions with evidence lean on coupling
)


# How one machine runs the model, saved in every config.json before they moved to ``arr_coc.engine.EngineConfig``
# (a run-time config, never in a checkpoint): a saved config that holds them still loads, and they are ignored.
RUNTIME_FIELDS: tuple[str, ...] = ("cpu_band_elements", "texture_cache_items", "frames_cache_items", "texture_graphs")


@dataclass(frozen=True)
class RelevanceConfig:
    """Weights and thresholds of the relevance model (texture -> three scorers -> balancer -> budget)."""

    # ---- texture (arr_coc.texture) ----
    grey_weights: tuple[float, float, float] = (0.299, 0.587, 0.114)  # RGB -> grey (ITU-R BT.601 luma)
    half_resolution: bool = True  # analyse at half the processor's resolution (cells of 14 / 16 px), 1/4 the cost
    entropy_bins: int = 16  # grey levels of the per-cell entropy histogram
    spectral_side: int = 64  # spectral residual saliency runs on a map of about this many pixels a side
    spectral_blur: float = 40.0  # its smoothing sigma is (longer side of that map) / this
    surround: float = 12.0  # centre-surround: the surround's sigma is (longer side of the grid, in cells) / this
    edge_quantile: float = 0.9  # edge density counts pixels above this quantile of the frame's gradient magnitudes
    edge_sample: int = 16384  # the quantile is taken on a strided sample of about this many pixels
    edge_floor: float = 1e-3  # the edge threshold is never below this gradient magnitude (blank frames)

    # ---- information and perspectival scorers (arr_coc.knowing): texture channel -> weight ----
    information: dict[str, float] = field(
        default_factory=lambda: {"entropy": 0.5, "edge_density": 0.3, "sobel_mag": 0.2}
    )
    perspectival: dict[str, float] = field(
        default_factory=lambda: {"sal_spectral": 0.4, "sal_contrast": 0.3, "sal_color": 0.3}
    )

    # ---- participatory scorer (arr_coc.knowing) ----
    term_weights: tuple[float, float, float] = (3.0, 1.0, 0.5)  # weights of its terms: prior, coupling, query cues
    coupling_top_k: int = 3  # a token's coupling is the mean of its top-k cosine similarities to the query tokens
    where_scale: float = 0.35  # sharpness of spatial cues (top/left/...): exp(-distance / scale)
    colour_scale: float = 0.08  # sharpness of colour cues: exp(-squared RGB distance / scale)

    # ---- balancer (arr_coc.balancing) ----
    balancer_rules: tuple[tuple[float, ...], ...] = DEFAULT_BALANCER_RULES  # (3, 6) linear map features -> logits
    balancer_temperature: float = 1.0  # softmax temperature of the balancer

    # ---- query cues (arr_coc.query) ----
    specificity_per_word: float = 0.2  # specificity added per content word
    specificity_per_number: float = 0.3  # ... per number or quoted phrase
    specificity_per_capital: float = 0.15  # ... per capitalised word after the first
    vagueness_per_word: float = 0.5  # vagueness added per "describe"-like word
    vagueness_no_content: float = 0.4  # ... when the query names nothing

    # ---- budget (arr_coc.attending) ----
    adaptive_mass: float = 0.5  # "adaptive": K holds this share of the relevance mass above the map's median
    adaptive_tiers: tuple[int, ...] = (64, 100, 160, 256, 400)  # "adaptive": K snaps up to one of these

    # ---- text path: the reading package's ReadingConfig as a dict (None = its defaults) ----
    reading: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self._check_numbers()  # finite and in range, the first field at fault named (a CheckpointError)
        problems = []
        if len(self.grey_weights) != 3:
            problems.append(f"grey_weights needs 3 numbers, got {self.grey_weights!r}")
        if not 0.0 < self.edge_quantile < 1.0:
            problems.append(f"edge_quantile must be in (0, 1), got {self.edge_quantile}")
        if self.entropy_bins < 2:
            problems.append(f"entropy_bins must be >= 2, got {self.entropy_bins}")
        if len(self.term_weights) != 3:
            problems.append(f"term_weights needs 3 numbers (prior, coupling, cues), got {self.term_weights!r}")
        if len(self.balancer_rules) != 3 or any(len(r) != 6 for r in self.balancer_rules):
            problems.append("balancer_rules must be 3 rows of 6 numbers")
        if self.balancer_temperature <= 0:
            problems.append(f"balancer_temperature must be > 0, got {self.balancer_temperature}")
        if not 0.0 < self.adaptive_mass <= 1.0:
            problems.append(f"adaptive_mass must be in (0, 1], got {self.adaptive_mass}")
        if not self.adaptive_tiers or list(self.adaptive_tiers) != sorted(self.adaptive_tiers):
            problems.append(f"adaptive_tiers must be ascending and non-empty, got {self.adaptive_tiers!r}")
        if self.coupling_top_k < 1 or self.spectral_side < 8 or self.edge_sample < 1:
            problems.append("coupling_top_k, edge_sample must be >= 1, spectral_side >= 8")
        for name in ("information", "perspectival"):
            unknown = set(getattr(self, name)) - set(CHANNELS)
            if unknown or not getattr(self, name):
                problems.append(f"{name} maps texture channels ({', '.join(CHANNELS)}) to weights; got {unknown}")
        if problems:
            raise ValueError("invalid RelevanceConfig: " + "; ".join(problems))

    def _check_numbers(self) -> None:
        """Every number finite and in its range (``arr_coc.checkpoint_check``): a config that loads scores finite."""
        m = MAX_MAGNITUDE
        for name in ("grey_weights", "term_weights"):
            for i, v in enumerate(getattr(self, name)):
                check_range(f"{name}[{i}]", v, 0.0, m)
        for name in ("information", "perspectival"):
            for key, v in getattr(self, name).items():
                check_range(f"{name}.{key}", v, 0.0, m)
        for name in ("grey_weights", "term_weights", "information", "perspectival"):
            values = getattr(self, name)
            if values and not sum(values.values() if isinstance(values, dict) else values) > 0:
                raise CheckpointError(f"{name} must not all be 0 (a weighted mean of nothing)", None, name)
        for i, row in enumerate(self.balancer_rules):
            for j, v in enumerate(row):
                check_range(f"balancer_rules[{i}][{j}]", v, -m, m)
        check_range("entropy_bins", self.entropy_bins, 2, 256)
        check_range("spectral_side", self.spectral_side, 8, 512)
        check_range("spectral_blur", self.spectral_blur, 1.0, m)
        if self.spectral_side / self.spectral_blur > 64:  # the saliency blur's sigma, px: its window grows with it
            raise CheckpointError(
                f"spectral_side / spectral_blur (the saliency blur's sigma) must be <= 64, got {self.spectral_side} / "
                f"{self.spectral_blur}", None, "spectral_blur",
            )  # fmt: skip
        check_range("surround", self.surround, 1.0, m)
        check_range("edge_quantile", self.edge_quantile, 0.0, 1.0, above=True, below=True)
        check_range("edge_sample", self.edge_sample, 1, MAX_COUNT)
        check_range("edge_floor", self.edge_floor, 0.0, m)
        check_range("coupling_top_k", self.coupling_top_k, 1, MAX_COUNT)
        for name in ("where_scale", "colour_scale"):  # they divide: exp(-distance / scale)
            check_range(name, getattr(self, name), 1e-3, m)
        check_range("balancer_temperature", self.balancer_temperature, 1e-3, m)
        for name in ("specificity_per_word", "specificity_per_number", "specificity_per_capital",
                     "vagueness_per_word", "vagueness_no_content"):  # fmt: skip
            check_range(name, getattr(self, name), 0.0, m)
        check_range("adaptive_mass", self.adaptive_mass, 0.0, 1.0, above=True)
        for i, t in enumerate(self.adaptive_tiers):
            if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= MAX_COUNT:
                raise CheckpointError(f"adaptive_tiers[{i}] must be a positive integer token count, got {t!r}", None,
                                      "adaptive_tiers")  # fmt: skip
        if not self.adaptive_tiers or any(
            a > b for a, b in zip(self.adaptive_tiers[:-1], self.adaptive_tiers[1:], strict=True)
        ):
            raise CheckpointError(
                f"adaptive_tiers must be ascending and non-empty, got {list(self.adaptive_tiers)}", None,
                "adaptive_tiers",
            )  # fmt: skip

    # ----- serialisation ----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of every field (tuples become lists)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevanceConfig:
        """Inverse of :meth:`to_dict`; missing fields take their defaults.

        Parsed JSON is checked as a checkpoint is (``arr_coc.checkpoint_check``): exact types (no ``"0.5"`` for a
        number, no ``true`` for a number, no ``16.0`` for an integer), every number finite and in its range, and an
        optional ``version`` (the format; :meth:`checkpoint_json` writes it) that this release knows. The ``reading``
        section is checked when a checkpoint is loaded (``check_reading``) or when the text path first builds it.

        The run-time fields a config of an older version saved (:data:`RUNTIME_FIELDS`) are ignored: they never
        changed a decision, and an ``arr_coc.engine.EngineConfig`` holds them now.

        Raises:
            CheckpointError: a ``ValueError`` naming the field at fault (unknown fields: the known ones too).
        """
        if not isinstance(data, dict):
            raise CheckpointError(f"a RelevanceConfig is a JSON object, got {type(data).__name__}")
        data = dict(data)
        check_version(data)
        names = {f.name: f for f in dataclasses.fields(cls)}
        data = {k: v for k, v in data.items() if k not in RUNTIME_FIELDS}
        unknown = set(data) - set(names)
        if unknown:
            raise CheckpointError(
                f"unknown RelevanceConfig fields {sorted(unknown)}; known: {', '.join(names)}", None, sorted(unknown)[0]
            )
        check_types(cls, data)
        kwargs = {}
        for key, value in data.items():
            default = getattr(cls(), key)
            if isinstance(default, tuple):  # JSON lists back to (nested) tuples
                value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            kwargs[key] = value
        return cls(**kwargs)

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict` (``kwargs`` go to ``json.dumps``, e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kwargs)

    def checkpoint_json(self, **kwargs: Any) -> str:
        """A checkpoint's ``config.json``: :meth:`to_json` with the format's ``version`` first (a release that does
        not know it refuses the file: "made by a newer release"), strict JSON (no NaN or Infinity)."""
        return json.dumps({"version": CHECKPOINT_VERSION, **self.to_dict()}, allow_nan=False, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> RelevanceConfig:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> RelevanceConfig:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def check_reading(reading: Any) -> None:
    """The ``reading`` section of a parsed config: exact types and finite numbers (every section's fields), then
    ``ReadingConfig.from_dict``'s own checks (ranges, unknown settings), each error naming ``reading.<section>...``."""
    from .reading.config import _SECTIONS, ReadingConfig

    if not isinstance(reading, dict):
        raise CheckpointError(f"reading must be an object or null, got {type(reading).__name__}", None, "reading")
    for section, values in reading.items():
        if section in _SECTIONS:
            check_types(_SECTIONS[section], values, f"reading.{section}.")
    try:
        ReadingConfig.from_dict(reading)
    except (ValueError, TypeError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise CheckpointError(f"reading: {err}", None, "reading") from None
