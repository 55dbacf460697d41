"""Strict JSON for every input path (API bodies, imports, MCP arguments).

Python's json module accepts what the databases and our own renderer cannot hold: NaN
and Infinity (PostgreSQL's jsonb refuses them, DRF's renderer raises on them), numbers
that overflow to infinity, lone surrogates and NUL characters (neither PostgreSQL text
nor jsonb can store them), and nesting deep enough to exhaust the interpreter's stack.
`loads` refuses each with a JsonInputError naming where in the document it sits, so a
caller can answer 400 naming the field instead of failing later with a 500.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Deeper than any document of ours (a bulk item's keywords sit at depth 4) and far below
# the interpreter's recursion limit.
MAX_DEPTH = 64

# A string, or an unterminated one running to the end: the loop is unrolled and the closing
# quote optional, so the match never fails and backtracks. The plain `"(?:[^"\\]|\\.)*"`
# failed on an unterminated string and was retried from every quote after it: quadratic
# (2 s for 24 KB of escaped quotes).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
# Escapes that decode to something a database cannot store; raw NUL and raw surrogates
# cannot reach here (json refuses raw control characters, strict UTF-8 refuses surrogates).
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonInputError(ValueError):
    """Refused JSON; `path` is where ("memories.2.content"), empty for the whole document."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.message = message
        self.path = path


class _Refused:
    """Stands where a number no database can hold was, until its path is known."""

    def __init__(self, message: str) -> None:
        self.message = message


def _find(value: Any, target: _Refused, path: str = "") -> str | None:
    """The path of `target` within a parsed value, or None."""
    if value is target:
        return path
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _find(item, target, _path(path, key))
        if found is not None:
            return found
    return None


def check_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse documents nested deeper than max_depth, without parsing them."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonInputError(f"nested deeper than {max_depth} levels")
        else:
            depth -= 1


def _path(parent: str, key: Any) -> str:
    return f"{parent}.{key}" if parent else str(key)


def check_strings(value: Any, path: str = "") -> None:
    """Refuse NUL characters and lone surrogates in any key or string of a parsed value."""
    if isinstance(value, str):
        if "\x00" in value:
            raise JsonInputError("NUL characters are not allowed", path)
        if _SURROGATE.search(value):
            raise JsonInputError("lone surrogates are not valid Unicode", path)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_strings(key, _path(path, key))
            check_strings(item, _path(path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_strings(item, _path(path, index))


def decode(data: bytes | bytearray | memoryview | str) -> str:
    """The text of a body or line; invalid UTF-8 is refused, not replaced."""
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not valid UTF-8 (byte {exc.start})") from None


def loads(data: bytes | bytearray | memoryview | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON, refusing what no write path may store (see the module docstring)."""
    text = decode(data)
    check_depth(text, max_depth)
    refused: list[_Refused] = []

    def constant(name: str) -> _Refused:
        refused.append(_Refused(f"{name} is not allowed; numbers must be finite"))
        return refused[-1]

    def number(text: str) -> float | _Refused:
        value = float(text)
        if math.isfinite(value):
            return value
        refused.append(_Refused(f"the number {text[:40]} is out of range"))
        return refused[-1]

    try:
        value = json.loads(text, parse_constant=constant, parse_float=number)
    except json.JSONDecodeError as exc:
        message = f"not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
        raise JsonInputError(message) from None
    except (ValueError, RecursionError) as exc:  # int digits limit; depth checked above
        raise JsonInputError(f"not valid JSON ({exc})") from None
    if refused:
        # Parsed to the end first, so the refusal can name where the number sits (a
        # repeated key may have dropped it: then it names nothing).
        raise JsonInputError(refused[0].message, _find(value, refused[0]) or "")
    if _SUSPECT_ESCAPE.search(text):
        check_strings(value)
    return value
