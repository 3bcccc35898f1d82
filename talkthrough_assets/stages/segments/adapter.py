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

Imported only where a model is loaded: importing faster-whisper takes a while."""

from __future__ import annotations

from contextlib import contextmanager

from faster_whisper import WhisperModel


class WhisperAdapter(WhisperModel):
    """A ``WhisperModel`` whose ``encode`` and ``generate_with_fallback`` honour the hooks of :meth:`hooks`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
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


__all__ = ["WhisperAdapter"]
