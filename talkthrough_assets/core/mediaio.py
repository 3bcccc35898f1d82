"""Opening media with PyAV across its versions (the one place that calls ``av.open`` for reading).

PyAV 18 takes ``metadata_errors=`` and raises on badly encoded tags unless told to ignore them;
PyAV 19 removed the argument and decodes tags with ``surrogateescape``. ``open_input`` works on
both, and ``clean_text`` turns whatever a tag holds into valid UTF-8 (Parquet and JSON need it).
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _open_kwargs() -> dict:
    import inspect

    import av

    try:
        params = inspect.signature(av.open).parameters
    except (TypeError, ValueError):  # a compiled function without a signature: ask the version
        major = int(str(getattr(av, "__version__", "0")).split(".")[0] or 0)
        return {"metadata_errors": "ignore"} if major < 19 else {}
    return {"metadata_errors": "ignore"} if "metadata_errors" in params else {}


def open_input(path):
    """``av.open(path)`` for reading, tolerant of badly encoded metadata on every supported PyAV.
    ``path`` may also be a binary file object open for reading: it is decoded from that descriptor."""
    import av

    src = path if hasattr(path, "read") else str(path)
    return av.open(src, mode="r", **_open_kwargs())


def clean_text(value) -> str:
    """A tag value as valid UTF-8 text (lone surrogates from undecodable bytes become U+FFFD)."""
    s = str(value)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


__all__ = ["open_input", "clean_text"]
