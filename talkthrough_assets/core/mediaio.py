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


def alone(container, stream) -> None:
    """Have the demuxer read ``stream`` alone: every other stream of ``container`` is discarded. A demuxer reads
    the streams in time order, so in a file that stores them one after another (all its video, then all its
    audio) and is cut short, the first missing packet of the other stream would end this one's reading too."""
    import av

    kinds = getattr(av.stream, "Discard", None)
    if kinds is None:  # a PyAV without Stream.discard: the streams are read together
        return
    for s in container.streams:
        s.discard = kinds.default if s.index == stream.index else kinds.all


_TO_THE_END_S = 10_000_000  # a seek this far lands on the last keyframe the demuxer knows of


def stream_ends(path, indexes: list[int], header_s: float | None, container=None) -> dict[int, float | None]:
    """Where the readable packets of each stream in ``indexes`` end, in seconds on the file's clock, each read
    alone (None: no packet of it can be read; NaN: packets without times, so it cannot be told). No frame is
    decoded: a seek to the end and the packets after it, on ``container`` (``path`` already open: opening a
    1080p file costs more than the seek) or a new one; when that reads nothing (a file cut short), a seek to
    just before ``header_s``, then the packets from the start."""
    out = {}
    for i in indexes:
        end = _last_packet_end(container, i, _TO_THE_END_S) if container is not None else None
        for start in (None if container is not None else _TO_THE_END_S,
                      header_s - 5.0 if header_s and header_s > 5.0 else None, 0.0):
            if end is not None:
                break
            if start is not None:
                end = _reopened(path, i, start)
        out[i] = end
    return out


def _reopened(path, index: int, start_s: float) -> float | None:
    import av

    try:
        with open_input(path) as c:
            return _last_packet_end(c, index, start_s)
    except (av.error.FFmpegError, EOFError, OSError):
        return None


def _last_packet_end(c, index: int, start_s: float) -> float | None:
    """The end of the last packet of stream ``index`` of ``c`` read after a seek to ``start_s`` (none at 0: the
    start), up to the end of the file or the damage that stops the demuxer; None when none was read, NaN when
    those read had no time."""
    import av

    last, seen = None, False
    try:
        st = c.streams[index]
        alone(c, st)
        if start_s > 0:
            c.seek(int(start_s / st.time_base), stream=st, backward=True, any_frame=False)
        try:
            for pkt in c.demux(st):
                seen = seen or bool(pkt.size)
                if pkt.pts is not None and pkt.size:
                    end = float((pkt.pts + (pkt.duration or 0)) * pkt.time_base)
                    last = end if last is None else max(last, end)
        except (av.error.FFmpegError, EOFError, OSError):  # the damage: what came before it counts
            pass
    except (av.error.FFmpegError, EOFError, OSError, IndexError, TypeError, ValueError, ZeroDivisionError):
        pass
    return float("nan") if last is None and seen else last


def clean_text(value) -> str:
    """A tag value as valid UTF-8 text (lone surrogates from undecodable bytes become U+FFFD)."""
    s = str(value)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


__all__ = ["open_input", "alone", "stream_ends", "clean_text"]
