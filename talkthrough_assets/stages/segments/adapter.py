"""faster-whisper's ``WhisperModel`` with the two hooks a decode needs, as overrides of its own methods (the
model is made of this class where it is loaded, ``engine.Whisper``), so nothing replaces a method of a shared
object while it runs. :meth:`WhisperAdapter.hooks` sets them for one ``transcribe`` call (under the
``Whisper`` lock); outside it the model decodes as faster-whisper does.

* ``encode``: each window's encoder output is handed to ``on_encode``: the words are aligned afterwards, window by
  window, on the output the decoder itself used (``word_timing.WindowAligner``; encoding a window again cost
  ~50 % of the decoding time on a screencast).
* ``generate_with_fallback``: a 30-s window whose text loops (compression ratio over ``loop_ratio``,
  faster-whisper's own measure of it) after a prompt of text said before is decoded again without that text (the
  vocabulary, as hotwords, stays), and the result that loops less is kept. Bare faster-whisper escapes a loop by
  sampling at a higher temperature and dropping the prompt after it (random per call); without that, one looped
  window ("bye, bye, bye, ...") was the next window's prompt and the loop ran to the end of its chunk: the last
  3 min of the 10-min bench screencast, decoded again span by span by the coverage pass. Beam search both times:
  the same words every run.

With ``encoder_threads`` above its ``cpu_threads`` (a model loaded from its folder), the model's encoder-heavy
calls (``encode``, ``align``, ``detect_language``) run on a second copy of it loaded with that many threads
(:class:`_SplitModel`), its beam search on the first. CTranslate2's beam search over a small model gets slower
with threads (tiny.en: 5.9 s on 2 threads vs 3.8 s on 1 for 120 s of speech, ``engine.cpu_threads``), its encoder
faster (a 30-s window: 0.23 s on 2 vs 0.39 s on 1, the same CPU seconds), and the encoder's output is the same to
the bit on any thread count, so every word is as it was.

Imported only where a model is loaded: importing faster-whisper takes a while."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

import ctranslate2
from faster_whisper import WhisperModel

from talkthrough_assets.stages.segments import word_timing


TWIN_AFTER = 4  # windows encoded before the encoder's twin is loaded (``_SplitModel``): 2 min of audio


class WhisperAdapter(WhisperModel):
    """A ``WhisperModel`` whose ``encode`` and ``generate_with_fallback`` honour the hooks of :meth:`hooks`."""

    def __init__(self, model_ref: str, *, encoder_threads: int | None = None, **kwargs):
        super().__init__(model_ref, **kwargs)
        if (encoder_threads and encoder_threads > kwargs.get("cpu_threads", 0) and self.model.device == "cpu"
                and os.path.isdir(model_ref)):
            # the twin reads the model's folder again when it loads (its files are not kept in memory until then)
            self.model = _SplitModel(self.model, lambda: ctranslate2.models.Whisper(
                model_ref, device="cpu", compute_type=kwargs.get("compute_type", "default"),
                intra_threads=encoder_threads, files=word_timing.model_files(model_ref)))
        self._on_encode = None
        self._loop_ratio: float | None = None

    @contextmanager
    def hooks(self, *, on_encode=None, loop_ratio: float | None = None):
        """For the ``transcribe`` call inside: ``on_encode(encoder_output)`` after each encode; ``loop_ratio``:
        a window over it after a prompt of earlier text is decoded again without it (None: never)."""
        self._on_encode, self._loop_ratio = on_encode, loop_ratio
        try:
            yield self
        finally:
            self._on_encode = self._loop_ratio = None

    def encode(self, features):
        out = super().encode(features)
        if self._on_encode is not None:
            self._on_encode(out)
        return out

    def generate_with_fallback(self, encoder_output, prompt, tokenizer, options):
        out = super().generate_with_fallback(encoder_output, prompt, tokenizer, options)
        ratio = self._loop_ratio
        # out: (result, avg_logprob, temperature, compression_ratio)
        if ratio is None or out[3] <= ratio or tokenizer.sot_prev not in prompt:
            return out
        bare = self.get_prompt(tokenizer, [], without_timestamps=options.without_timestamps,
                               hotwords=options.hotwords)
        if bare == prompt:
            return out
        again = super().generate_with_fallback(encoder_output, bare, tokenizer, options)
        return again if again[3] < out[3] else out


class _SplitModel:
    """CTranslate2's Whisper ``own`` (beam search on its threads) with its encoder-heavy calls on a twin, the same
    model loaded with more threads by ``load_twin()``. The twin is loaded, in a thread of its own, once ``own`` has
    encoded :data:`TWIN_AFTER` windows: a short clip never pays its load (~0.25 s of CPU; on a 5-s clip the run
    took 0.3-0.5 s longer with it). Until it is loaded (or when its load failed) ``own`` does the calls, with the
    same results. Every other attribute is ``own``'s."""

    __slots__ = ("_own", "_twin", "_load_twin", "_loader", "_encodes")

    def __init__(self, own, load_twin):
        self._own, self._twin, self._load_twin, self._loader, self._encodes = own, None, load_twin, None, 0

    def _load(self) -> None:
        try:
            self._twin = self._load_twin()
        except Exception:  # out of memory for a second copy: the encoder stays on own's threads
            pass
        finally:
            self._load_twin = None

    def wait(self, timeout: float | None = None) -> bool:
        """Start the twin's load if it has not started, and wait for it; whether it is loaded."""
        self._start()
        self._loader.join(timeout)
        return self._twin is not None

    def _start(self) -> None:
        if self._loader is None:
            self._loader = threading.Thread(target=self._load, daemon=True, name="whisper-encoder")
            self._loader.start()

    def _on(self):
        if self._twin is None:
            self._encodes += 1
            if self._encodes > TWIN_AFTER:
                self._start()
        return self._twin or self._own

    def encode(self, *args, **kwargs):
        return self._on().encode(*args, **kwargs)

    def align(self, *args, **kwargs):
        return (self._twin or self._own).align(*args, **kwargs)

    def detect_language(self, *args, **kwargs):
        return (self._twin or self._own).detect_language(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._own, name)


__all__ = ["WhisperAdapter"]
