"""What every benchmark script shares: its common arguments, alternating A/B timing, and the report it writes.

A script builds its parser with :func:`parser` (``--out``, ``--repeat``, ``--warmup``), times the variants it compares
with :func:`alternate` (A, B, A, B, ...: a machine that slows down or speeds up during the run slows every variant
alike, and the spread of each variant's repeats is the noise a difference must exceed), and writes its tables with
:func:`write_report`: one markdown page whose first line after the title is the command that made it, and the same
data as JSON beside it. A script stays a script (``main(argv)``); tests run it as a subprocess, never import it.

Example:
    from harness import alternate, parser, summary, table, write_report

    args = parser(__doc__, repeat=5).parse_args()
    times = alternate({"a": lambda: f(x), "b": lambda: g(x)}, args.repeat, args.warmup)   # {name: [ms, ...]}
    rows = [[name, *summary(ms).cells()] for name, ms in times.items()]
    write_report(args.out, "f against g", [table(["variant", *Summary.HEADER], rows)], {"times_ms": times})
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def parser(doc: str | None, repeat: int = 5, warmup: int | None = 1, out: str | None = None) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the arguments every benchmark has; the script adds its own.

    Args:
        doc: the script's module docstring (``__doc__``): its first line is the description, the rest the epilog.
        repeat: default of ``--repeat`` (timed runs of each variant).
        warmup: default of ``--warmup`` (untimed runs of each variant first); None: no ``--warmup``.
        out: default of ``--out`` (the markdown report; its JSON goes beside it), or None: print only.
    """
    first, _, rest = (doc or "").strip().partition("\n")
    p = argparse.ArgumentParser(
        description=first, epilog=rest.strip() or None, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=Path, default=None if out is None else Path(out), help="markdown report (+ .json)")
    p.add_argument("--repeat", type=int, default=repeat, help=f"timed runs of each variant (default {repeat})")
    if warmup is not None:
        p.add_argument(
            "--warmup", type=int, default=warmup, help=f"untimed runs of each variant first (default {warmup})"
        )
    return p


def add_against(p: argparse.ArgumentParser, rounds: int = 3) -> None:
    """``--against DIR`` (another checkout, run alternately with this one) and ``--rounds`` (see
    :func:`alternate_checkouts`)."""
    p.add_argument("--against", type=Path, default=None, help="another checkout to run alternately with this one")
    p.add_argument(
        "--rounds", type=int, default=rounds, help=f"alternating rounds, one worker a checkout (default {rounds})"
    )


def run_in_checkout(checkout: Path, script: str | Path, argv: Sequence[str], keep_path: bool = True) -> Any:
    """Run ``script`` (a file of THIS checkout) in a fresh process with ``checkout``'s ``src`` first on the path;
    its last line of stdout is JSON, returned decoded.

    Args:
        keep_path: keep the caller's ``PYTHONPATH`` after the checkout's ``src`` (wheels carried on it stay found).
    """
    path = [str(checkout / "src")]
    if keep_path:
        path += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run([sys.executable, str(script), *argv], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the worker for {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def commit_of(checkout: Path) -> str:
    """The short commit of ``checkout`` (its folder name if it is no git checkout)."""
    got = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return got.stdout.strip() or checkout.name


def alternate_checkouts(against: Path | None, rounds: int, run: Callable[[Path], Any]) -> dict[str, list[Any]]:
    """``run(checkout)`` for this checkout and ``against`` (if given), in alternating rounds: the machine's drift from
    minute to minute then slows both alike. Returns ``{commit: [each round's result]}``."""
    checkouts = [ROOT] + ([against.resolve()] if against else [])
    names = [commit_of(c) for c in checkouts]
    if len(set(names)) < len(names):
        names = [f"{n} ({c})" for n, c in zip(names, checkouts, strict=True)]
    results: dict[str, list[Any]] = {n: [] for n in names}
    for r in range(rounds):
        for c, name in zip(checkouts, names, strict=True):
            results[name].append(run(c))
            print(f"round {r + 1}: {name} done", file=sys.stderr, flush=True)
    return results


def alternate(variants: dict[str, Callable[[], Any]], repeat: int, warmup: int = 0) -> dict[str, list[float]]:
    """Time each variant ``repeat`` times, interleaved (A, B, A, B, ...), after ``warmup`` untimed rounds.

    Returns:
        ``{name: [ms of each timed run, in order]}``.
    """
    for _ in range(warmup):
        for fn in variants.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1e3)
    return times


@dataclass(frozen=True)
class Summary:
    """Median and range of a list of times (ms); ``spread`` = max - min, the run-to-run noise."""

    n: int
    median: float
    min: float
    max: float

    HEADER = ("runs", "median ms", "min-max ms")

    @property
    def spread(self) -> float:
        return self.max - self.min

    def cells(self, digits: int = 1) -> list[str]:
        return [str(self.n), f"{self.median:.{digits}f}", f"{self.min:.{digits}f}-{self.max:.{digits}f}"]


def summary(ms: Sequence[float]) -> Summary:
    """The :class:`Summary` of ``ms`` (at least one value)."""
    return Summary(len(ms), statistics.median(ms), min(ms), max(ms))


def differs(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two variants' medians differ by more than the larger of their run-to-run spreads."""
    sa, sb = summary(a), summary(b)
    return abs(sa.median - sb.median) > max(sa.spread, sb.spread)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A markdown table; ``align`` one letter a column (``l`` / ``r``), default: the first left, the rest right."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return "\n".join(lines)


def command(argv: Sequence[str] | None = None) -> str:
    """The command that is running, as a reader would type it from the repository root."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return shlex.join(["python", str(shown), *(sys.argv[1:] if argv is None else argv)])


def environment() -> dict[str, Any]:
    """What the figures depend on: versions, threads, CPU count, the load of the machine."""
    import platform

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "load_average": os.getloadavg(),  # 1, 5, 15 min: other jobs on the cores the timings shared
    }
    try:
        import torch

        env.update(torch=torch.__version__, threads=torch.get_num_threads(), cuda=torch.cuda.is_available())
    except ImportError:
        pass
    return env


def write_report(
    out: Path | None,
    title: str,
    sections: Sequence[str],
    data: dict[str, Any],
    argv: Sequence[str] | None = None,
) -> str:
    """Print the report and, when ``out`` is given, write it (markdown) and ``data`` (JSON, beside it).

    The page opens with the title and the command that made it; the JSON holds the same command, the environment and
    ``data`` (dataclasses are turned into dicts).

    Returns:
        The markdown.
    """
    cmd = command(argv)
    text = f"# {title}\n\nCommand: `{cmd}`\n\n" + "\n\n".join(s.strip() for s in sections) + "\n"
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        payload = {"command": cmd, "environment": environment(), **data}
        out.with_suffix(".json").write_text(json.dumps(payload, indent=1, default=_plain) + "\n")
        print(f"wrote {out} and {out.with_suffix('.json')}")
    return text


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON: {type(value).__name__}")
