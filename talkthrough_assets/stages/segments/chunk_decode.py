"""One chunk's decode (``chunks``): its main pass (:func:`draft`), then its coverage pass and the context it hands
the next chunk (:func:`settled`; a chunk that loops after its context is decoded again without it).

The coverage pass runs beside the next chunk's main pass, and the transcript stays what it is when they run one
after the other. A chunk's context is the last tokens of its final text, the coverage pass's included, but the
coverage pass leaves them as they are when the speech it decodes again lies before them: the next chunk's main
pass then starts at once on the context the main pass alone gives (:func:`guess`) while :class:`Beside` runs the
coverage pass on a thread of its own, on a second copy of the model (``Engine.beside``); else it waits for the
coverage pass. A context that came out otherwise all the same (a loop the coverage pass completed) has the main
pass decoded again on the right one (``chunks``): every chunk is decoded with the context it would have had. On
one core, or for a single chunk, each coverage pass runs at once in the caller's thread instead.

On the 10-min bench screencast the coverage pass was about a quarter of the stage's CPU, and two of its three
chunks' coverage passes changed the context they hand on (speech found in their last minute): those still wait."""

from __future__ import annotations

import contextvars
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Callable

import numpy as np

from talkthrough_assets.model.transcript import Decoded, Transcript
from talkthrough_assets.stages.segments import coverage
from talkthrough_assets.stages.segments import transcribe as T
from talkthrough_assets.stages.segments.engine import PROMPT_TOKENS, Engine
from talkthrough_assets.stages.segments.options import Options

LOOP_RUN = 4  # this many segments in a row with the same text: a loop (see :func:`settled`)


def loop_run(out: Decoded | Transcript) -> int:
    """The longest run of kept segments one after another with the same text (case and punctuation aside):
    Whisper caught in a loop writes "Okay." 100 times over real speech. Dropped segments do not count: a loop
    over the silence at a chunk's end is dropped by the VAD gate and is not the next chunk's context."""
    best = run = 0
    prev = None
    for text in (x.text for x in out.segments):
        key = re.sub(r"\W+", " ", text.lower()).strip()
        run = run + 1 if key and key == prev else 1
        prev, best = key, max(best, run)
    return best


def decode(samples: np.ndarray, opts: Options, engine: Engine, *, prompt=None, vad_regions=None) -> Decoded:
    """One chunk through the drop rules, as stored (times from the chunk's first sample; "tail": the context
    for the next chunk): its main pass (:func:`draft`), then its coverage pass (:func:`settled`)."""
    d = draft(samples, opts, engine, prompt=prompt, vad_regions=vad_regions)
    return settled(d, prompt, samples, vad_regions, opts, engine=engine)


def draft(samples: np.ndarray, opts: Options, engine: Engine, *, prompt=None, vad_regions=None) -> T.Draft:
    """A chunk's main pass with the previous chunk's context (``prompt``)."""
    return T.draft(samples, opts, engine, prompt=prompt, vad_regions=vad_regions)


def guess(d: T.Draft, prompt, opts: Options) -> tuple[tuple[int, ...], bool]:
    """(the context the chunk of main pass ``d`` (with ``prompt``) hands on unless its coverage pass changes it,
    whether that is all but sure: the speech the coverage pass decodes again lies before the segments that
    context comes from, and what it finds there is placed before them; only a loop it completes could change it
    then). Read before :func:`settled`, which adds to the pass."""
    tail = _tail(prompt, d.tokens)
    if d.res is None or d.regions is None:
        return tail, True
    spans = coverage.planned(d.core, d.res.entries, d.res.dropped, again=opts.decoding.coverage)
    if not spans:
        return tail, True
    n = 0
    for e in sorted(d.res.entries, key=lambda e: (e.seg.t0_ms, e.seg.t1_ms), reverse=True):
        n += len(e.tokens)
        if n >= PROMPT_TOKENS:  # the context begins in ``e``: what is found before it stays out of it
            return tail, all(b <= e.seg.t0_ms * 16 for _, b in spans)
    return tail, False  # all its text is the context


def settled(d: T.Draft, prompt, samples: np.ndarray, vad_regions, opts: Options, *, engine: Engine) -> Decoded:
    """A chunk's result as stored, from its main pass ``d`` (with ``prompt``; ``samples`` and ``vad_regions``: its
    audio): its coverage pass decoded on ``engine``, and "tail", the context it hands on (its prompt and its
    tokens, the last PROMPT_TOKENS). A chunk decoded with the previous chunk's context that comes out in a loop
    (:data:`LOOP_RUN`) is decoded again without it, and the result with the shorter loop is kept ("recontext"):
    on the 30-min bench meeting a loop of "Okay." in one chunk's context made the next five chunks nothing but
    "Okay.". Both decodes are deterministic, so the choice is too."""
    out = T.settle(d, opts, engine)
    recontext = False
    if prompt and loop_run(out) >= LOOP_RUN:
        again = T.decode(samples, opts, engine, vad_regions=vad_regions)
        if loop_run(again) < loop_run(out):
            out, prompt, recontext = again, None, True
    return replace(out, tail=_tail(prompt, out.tokens), tokens=(), seg_tokens=(), recontext=recontext)


def _tail(prompt, tokens) -> tuple[int, ...]:
    return tuple((list(prompt or ()) + list(tokens))[-PROMPT_TOKENS:])


def done(value=None, error: BaseException | None = None) -> Future:
    """A future that already holds ``value`` (or raises ``error``)."""
    f: Future = Future()
    if error is not None:
        f.set_exception(error)
    else:
        f.set_result(value)
    return f


class Beside:
    """Runs ``fn(*args, engine=)`` for each chunk handed to :meth:`start`: on one worker thread with its own copy
    of ``engine``'s model when ``concurrent``, else at once on ``engine`` itself. The worker sees the caller's
    stop flag (its context is copied at each start); closing waits for the one running and drops the rest."""

    def __init__(self, engine: Engine, *, concurrent: bool):
        self.engine = engine.beside() if concurrent else engine
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="segments-coverage") if concurrent else None

    def start(self, fn: Callable, *args) -> Future:
        if self._pool is None:
            try:
                return done(fn(*args, engine=self.engine))
            except Exception as e:  # noqa: BLE001 - handed to whoever reads the result, as the worker's would be
                return done(error=e)
        return self._pool.submit(contextvars.copy_context().run, fn, *args, engine=self.engine)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["LOOP_RUN", "Beside", "decode", "done", "draft", "guess", "loop_run", "settled"]
