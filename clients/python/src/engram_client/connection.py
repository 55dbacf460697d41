"""What the sync and async clients share beyond the operations: the base URL, the
headers, the import body, and reading JSON Lines."""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from engram_client import models as m
from engram_client.errors import error_from_response

API_PATH = "/api/v1"
CHUNK = 64 * 1024
# An import body built from records is kept in memory up to this size, then on disk: the
# server's own API_MAX_BODY_BYTES default, past which it imports in the background.
SPOOL_MAX = 5 * 1024 * 1024

ImportSource = (
    bytes | bytearray | os.PathLike[str] | IO[bytes] | Iterable[Mapping[str, Any]] | Iterable[bytes]
)


def api_base(url: str) -> str:
    """The API's root from a server URL, with or without /api/v1 already on it."""
    url = url.rstrip("/")
    return url if url.endswith(API_PATH) else url + API_PATH


def default_headers(token: str, user_agent: str) -> dict[str, str]:
    if not token:
        raise ValueError("A token is needed: Engram(url, token='eng_...').")
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": user_agent,
    }


@dataclass
class ImportBody:
    """An import's JSON Lines body, sent with its Content-Length when it can be known (any
    server reads it; only gunicorn-like servers read a chunked one) and sent again on a
    retry when it can be rewound."""

    stream: IO[bytes]
    length: int | None
    start: int | None
    owned: bool  # a spool this client made, closed after the request

    @property
    def replayable(self) -> bool:
        return self.start is not None

    def rewind(self) -> None:
        if self.start is not None:
            self.stream.seek(self.start)

    def chunks(self) -> Iterator[bytes]:
        while chunk := self.stream.read(CHUNK):
            yield chunk

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/x-ndjson"}
        if self.length is not None:
            headers["Content-Length"] = str(self.length)
        return headers

    def close(self) -> None:
        if self.owned:
            self.stream.close()


def _seekable_position(stream: IO[bytes]) -> int | None:
    try:
        return stream.tell() if stream.seekable() else None
    except (AttributeError, OSError, ValueError):
        return None


def import_body(source: ImportSource) -> ImportBody:
    """The body for `source`: bytes, a path, a binary file, or an iterable of records
    (dicts, as export_namespace yields them) or of encoded lines, which are spooled so that
    their length is known and a retry can send them again."""
    if isinstance(source, bytes | bytearray):
        return ImportBody(io.BytesIO(bytes(source)), len(source), 0, owned=True)
    if isinstance(source, str):
        raise TypeError("Pass the JSON Lines as bytes, a pathlib.Path, a file or records.")
    if isinstance(source, os.PathLike):
        stream = open(source, "rb")  # noqa: SIM115 (closed by ImportBody.close)
        return ImportBody(stream, os.fstat(stream.fileno()).st_size, 0, owned=True)
    if hasattr(source, "read"):
        stream = source  # type: ignore[assignment]
        start = _seekable_position(stream)
        length = None
        if start is not None:
            length = stream.seek(0, os.SEEK_END) - start
            stream.seek(start)
        return ImportBody(stream, length, start, owned=False)
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX)  # noqa: SIM115
    for item in source:
        if isinstance(item, bytes | bytearray):
            spool.write(item if item.endswith(b"\n") else bytes(item) + b"\n")
        else:
            line = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
            spool.write(line.encode() + b"\n")
    length = spool.tell()
    spool.seek(0)
    return ImportBody(spool, length, 0, owned=True)  # type: ignore[arg-type]


def record(line: str) -> dict[str, Any]:
    """One JSON Lines record of an export."""
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError(f"An export line is not a JSON object: {line[:80]!r}")
    return value


def import_result(data: Any) -> m.ImportResult:
    """A finished import's answer, with the id map's keys as the ints they are."""
    result = m.decode(m.ImportResult, data)
    ids = {int(old): new for old, new in result.memory_ids.items()}
    return m.ImportResult(counts=result.counts, memory_ids=ids, extra=result.extra)


def finished_import(state: m.ImportJob) -> m.ImportResult | None:
    """The result of an ended import job (its error raised, as a small import's would
    be), or None while it runs."""
    if state.status == "failed":
        error = state.error or {}
        content = json.dumps({"error": error}).encode()
        raise error_from_response(int(error.get("status") or 500), {}, content)
    return state.result
