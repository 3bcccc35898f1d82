"""What a run of the segments stage did with its chunks (``chunks.transcribe_chunked``): the counts and failures
(:class:`Report`), and the results read in chunk order as they come (:class:`Collector`), whichever thread
finished them."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

from talkthrough_assets.core import stop
from talkthrough_assets.model.transcript import Chunk, Decoded


@dataclass(frozen=True, slots=True)
class Failed:
    """A chunk whose decoding raised: its place, its range and why."""

    idx: int
    t0_ms: int
    t1_ms: int
    reason: str


@dataclass(slots=True)
class Report:
    """What a run did with its chunks (counts, filled in as it goes)."""

    total: int
    reused: int = 0
    decoded: int = 0
    corrupt: int = 0
    unstored: int = 0
    recontext: int = 0
    ahead: int = 0  # main passes started while the previous chunk's coverage pass ran beside them
    redrafted: int = 0  # of those, decoded again: that coverage pass changed their context after all
    failed: list[Failed] = field(default_factory=list)


class Collector:
    """The chunks' results as they come, read in chunk order: each counted in the report, stored when decoded
    while the chain of contexts is whole (a chunk after a failed one lacks its context), its failure recorded,
    and ``on_chunk`` told. ``save(key, result)`` stores a result.""" 

    def __init__(self, rows: list[Chunk], report: Report, save, on_chunk):
        self.rows, self.report, self.save, self.on_chunk = rows, report, save, on_chunk
        self.results: list[Decoded | None] = [None] * len(rows)
        self.queue: list[tuple[int, Future, str]] = []
        self.chain_ok = True

    def add(self, i: int, res: Future, state: str) -> None:
        self.queue.append((i, res, state))
        self.collect(wait=False)

    def collect(self, *, wait: bool) -> None:
        """The chunks at the head of the queue whose results are there (``wait``: all of them, waiting)."""
        while self.queue and (wait or self.queue[0][1].done()):
            i, fut, state = self.queue.pop(0)
            row, report = self.rows[i], self.report
            try:
                res = fut.result()
            except stop.Interrupted:
                raise
            except Exception as e:  # noqa: BLE001 - one chunk's failure is recorded; the others go on
                res, state = None, "failed"
                reason = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                report.failed.append(Failed(row.idx, row.t0_ms, row.t1_ms, reason))
            if state == "decoded":
                report.recontext += res.recontext
                if self.chain_ok:
                    self.save(row.key, res)
                else:
                    report.unstored += 1
            if state != "failed":
                setattr(report, state, getattr(report, state) + 1)
            self.chain_ok = self.chain_ok and state != "failed"
            self.results[i] = res
            if self.on_chunk:
                self.on_chunk(row.idx + 1, len(self.rows), state, row.t1_ms, self.rows[-1].t1_ms)


__all__ = ["Collector", "Failed", "Report"]
