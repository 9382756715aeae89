"""Output files that lose nothing and say what made them: ``arr-coc allocate --batch``'s JSONL and ``arr-coc eval``'s
folder.

* :class:`OutputLock`: one writer per output. A second one is refused with a message naming the holder (pid, host,
  start time, command); a lock left by a process that died (SIGKILL, power cut) is taken over, and says so. The lock is
  an ``flock`` on ``OUT.lock`` (released by the kernel when its process dies, however it dies); the file's text says
  who holds it.
* :class:`JsonlWriter`: whole lines only. Each record is one ``os.write`` of its full line on a file opened for
  appending, then ``fsync``; a write that fails or is interrupted part-way (a full disk, Ctrl-C) cuts the file back
  to its last whole line before the error goes on, so the file never ends in half a line. Strict JSON (no NaN).
* :func:`resume_jsonl`: the ids an earlier run already wrote (a line cut short by a crash is dropped first).
* :func:`check_manifest` / :func:`write_manifest`: the options that shape the output's lines, recorded beside it
  (``OUT.manifest.json``, or ``manifest.json`` in an eval folder); a rerun with other options is refused, naming
  each difference, unless it starts afresh (``--overwrite``).

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> with OutputLock(out), JsonlWriter(out) as w:
    ...     w.write({"id": 1, "kept": [[0, 1]]})
    >>> resume_jsonl(out)[0]
    {'1'}
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

MANIFEST_VERSION = 1


# ----- one writer --------------------------------------------------------------------------------------------------
class OutputLockedError(OSError):
    """Another live process writes this output (the message says which)."""


class OutputLock:
    """An exclusive lock on ``path`` (a file the caller will write), held as ``path.lock`` until :meth:`release`.

    Attributes:
        lock_path: the lock file.
        notes: what the caller should tell the user (a stale lock taken over).

    Raises:
        OutputLockedError: (from :meth:`acquire` / ``with``) another process holds the lock; the message names it.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.notes: list[str] = []
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock (see the class)."""
        for _ in range(20):  # the lock file may be removed between our open and our lock: take the new one
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                held_by = _read_holder(fd)
                if not _try_lock(fd, held_by):
                    raise OutputLockedError(
                        f"{self.path} is being written by another arr-coc process ({_describe(held_by)}); wait for it "
                        f"to finish, or, if it is gone, delete {self.lock_path}"
                    )
                if os.path.exists(self.lock_path) and os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino:
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # another process removed that file after we opened it: lock the current one
        else:  # pragma: no cover - a lock file replaced 20 times in a row
            raise OutputLockedError(f"could not lock {self.lock_path}")
        if held_by and held_by.get("pid") is not None:  # a holder that died without releasing: its lock is ours now
            self.notes.append(
                f"took over the stale lock {self.lock_path} of a process no longer running ({_describe(held_by)})"
            )
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:500],
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and release the lock (idempotent)."""
        if self._fd is None:
            return
        try:
            os.unlink(self.lock_path)
        except OSError:
            pass
        os.close(self._fd)  # closing releases the flock
        self._fd = None


def _read_holder(fd: int) -> dict[str, Any] | None:
    raw = os.pread(fd, 4096, 0)
    if not raw.strip():
        return None
    try:
        holder = json.loads(raw.decode("utf-8", "replace"))
    except json.JSONDecodeError:
        return {"text": raw.decode("utf-8", "replace")[:200]}
    return holder if isinstance(holder, dict) else {"text": str(holder)[:200]}


def _describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "unknown holder"
    if "pid" not in holder:
        return f"lock text {holder.get('text', '')!r}"
    return (
        f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}: {holder.get('command', '')}"
    )


def _try_lock(fd: int, holder: dict[str, Any] | None) -> bool:
    """Whether we got the lock: an ``flock`` where the platform has it, else the holder's pid is not alive."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: a lock whose pid is alive on this host is held
        if not holder or holder.get("host") != socket.gethostname():
            return not holder
        return not _pid_alive(int(holder.get("pid", -1)))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _pid_alive(pid: int) -> bool:  # pragma: no cover - the fallback without flock
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


# ----- whole lines -------------------------------------------------------------------------------------------------
class OutputWriteError(OSError):
    """The output could not be written (a full disk ...): the file ends at its last whole line."""


class JsonlWriter:
    """Appends JSON records to ``path`` as whole lines (see the module docstring); ``written`` counts them.

    Raises:
        OutputWriteError: (an ``OSError``) from :meth:`write` when the disk is full or the file cannot be written;
            the file then ends at its last whole line.
        ValueError: from :meth:`write` for a record that is not strict JSON (NaN, Infinity); nothing is written.
    """

    def __init__(self, path: str | Path, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.written = 0
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._size = os.fstat(self._fd).st_size

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, record: Any) -> None:
        """Write ``record`` as one line: whole, flushed and synced, or not at all."""
        data = (json.dumps(record, allow_nan=False) + "\n").encode("utf-8")  # ASCII: lone surrogates too
        view = memoryview(data)
        try:
            while view:  # a short write (a nearly full disk) goes on where it stopped, or fails below
                n = os.write(self._fd, view)
                view = view[n:]
            if self.fsync:
                os.fsync(self._fd)
        except BaseException as err:  # a full disk, Ctrl-C: cut back to the last whole line, then let it go on
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass
            if isinstance(err, OSError):
                raise OutputWriteError(err.errno, err.strerror or str(err), str(self.path)) from err
            raise
        self._size += len(data)
        self.written += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None  # type: ignore[assignment]


def resume_jsonl(path: str | Path) -> tuple[set[str], int, list[str]]:
    """What an earlier run left in the JSONL ``path``: the ids of its lines (as text: ``5`` and ``"5"`` are one id),
    the number of lines, and notes for the user. A last line cut short (a crash mid-write) is removed from the file
    first; a line that is not a JSON object is reported and left alone.
    """
    path = Path(path)
    notes: list[str] = []
    if not path.is_file():
        return set(), 0, notes
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(raw.rfind(b"\n") + 1)
        raw = raw[: raw.rfind(b"\n") + 1]
        notes.append(f"{path}: removed a last line cut short by an interrupted run")
    ids: set[str] = set()
    lines = 0
    for n, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        lines += 1
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            notes.append(f"{path} line {n} is not JSON; left as it is")
            continue
        if isinstance(record, dict) and "id" in record:
            ids.add(str(record["id"]))
    return ids, lines, notes


# ----- what made them ----------------------------------------------------------------------------------------------
def relevance_fingerprint(relevance: str | Path | None) -> dict[str, Any] | None:
    """``--relevance`` as a manifest records it: what was given and a SHA-256 of its checkpoint files (so a checkpoint
    changed in place is another one). None: the default relevance, by name (``DEFAULT_RELEVANCE``), so a run
    recorded under another default (the rules, before issue 40 item 4: None) is not resumed with this one."""
    from .reading.matching.gated import gate_of
    from .realizing import DEFAULT_RELEVANCE, relevance_folder

    if relevance is None:
        return {**(relevance_fingerprint(DEFAULT_RELEVANCE) or {}), "given": None, "default": DEFAULT_RELEVANCE}
    try:
        folder = relevance_folder(gate_of(relevance)[1])  # "routed-structure[:FOLDER]": the folder it wraps
    except FileNotFoundError:
        return {"given": str(relevance), "sha256": None}
    digest = hashlib.sha256()
    for name in ("config.json", "scorer.json", "model.safetensors"):
        if (folder / name).is_file():
            digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return {"given": str(relevance), "sha256": digest.hexdigest()}


def check_manifest(path: str | Path, options: dict[str, Any], what: str, fresh_hint: str) -> list[str]:
    """Compare the options of this run with those recorded in the manifest ``path`` by the run that wrote the
    output ``what``; returns notes (a manifest that could not be read). Call it only when the output holds lines.

    Raises:
        ValueError: the options differ (each difference named: the value then and now), or there is no manifest
            and ``options`` says none may be missing (``fresh_hint`` tells how to start afresh).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(
            f"{what} holds lines but no record of the options that made them ({path.name} is missing: written by an "
            f"older arr-coc, or by hand), so they cannot be resumed safely; {fresh_hint}"
        )
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))["options"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} cannot be read ({err}); {fresh_hint}") from None
    differences = [
        f"{key}: {json.dumps(recorded.get(key))} then, {json.dumps(options.get(key))} now"
        for key in sorted(set(recorded) | set(options))
        if recorded.get(key) != options.get(key)
    ]
    if differences:
        raise ValueError(
            f"{what} holds lines made with other options ({'; '.join(differences)}); mixing them would make one "
            f"output of two settings. Rerun with the same options to resume, or {fresh_hint}"
        )
    return []


def write_manifest(path: str | Path, options: dict[str, Any], recorded: dict[str, Any] | None = None) -> None:
    """Write the manifest ``path`` (through a temporary file, then renamed: never half a manifest): the options that
    shape the lines (compared on a rerun) and what else is worth knowing (``recorded``: version, command, time)."""
    from . import __version__

    path = Path(path)
    data = {
        "version": MANIFEST_VERSION,
        "options": options,
        "recorded": {
            "arr_coc": __version__,
            "command": " ".join(sys.argv)[:1000],
            "written": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **(recorded or {}),
        },
    }
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
