"""The client's version, sent in its User-Agent."""

from __future__ import annotations

__version__ = "0.1.0"
