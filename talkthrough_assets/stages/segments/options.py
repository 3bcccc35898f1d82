"""What the segments stage decodes with: its settings and engine choices (:class:`Options`, built once per run by
``pipeline.options``) and the decoding rules beyond them (:class:`Decoding`; why each is what it is:
``transcribe.py``). ``transcribe.decode`` and the faster-whisper adapter (``engine.py``) take them whole."""

from __future__ import annotations

from dataclasses import dataclass, field

BEAM_SIZE = 5  # faster-whisper's default: greedy decoding lost words (see transcribe.py)
CHUNK_S = 180.0  # target chunk length (TALKTHROUGH_CHUNK_S), see bench/bench_chunks.py


@dataclass(frozen=True, slots=True)
class Decoding:
    """The pipeline's decoding rules (``transcribe.py`` says why each): changed by the benchmarks and tests, and
    by the coverage pass for its own decodes (no word refinement, no coverage pass of their own)."""

    condition_on_previous_text: bool = True
    max_compression_ratio: float | None = 2.4  # a segment's text over it loses its repeated tail
    temperature: tuple[float, ...] = (0.0,)  # no sampling fallback
    language_check: bool = True  # an English-only model's doubtful segments get a language check
    loop_retry: bool = True  # a window whose text loops is decoded again without the text before it
    refine_words: bool = True  # word starts moved onto the audio (word_timing.refine)
    coverage: bool = True  # speech no kept segment covers is decoded again on its own
    vad: bool = True  # the voice-activity gate


@dataclass(frozen=True, slots=True)
class Options:
    """What the segments stage runs with (built by ``pipeline.options`` from its settings and the environment; a
    field left out keeps its default here)."""

    whisper_model: str | None = None  # the settings its config hash covers (transcribe.SETTINGS)
    language: str | None = None
    vocabulary: str | None = None
    beam_size: int = BEAM_SIZE
    device: str = field(default="cpu", metadata={"env": "TALKTHROUGH_DEVICE"})  # the engine: in the config hash too
    compute_type: str | None = field(default=None, metadata={"env": "TALKTHROUGH_COMPUTE_TYPE"})
    threads: int | None = field(default=None, metadata={"env": "TALKTHROUGH_WHISPER_THREADS"})  # None: cpu_threads
    chunk_s: float = field(default=CHUNK_S, metadata={"env": "TALKTHROUGH_CHUNK_S"})
    decoding: Decoding = Decoding()


__all__ = ["BEAM_SIZE", "CHUNK_S", "Decoding", "Options"]
