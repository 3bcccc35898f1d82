"""segments' engine: faster-whisper models, loaded once per (model, device, compute type, CPU threads) and kept
in a :class:`Whisper` object that the caller owns and passes in (the pipeline gets the process's one from
``talkthrough_assets.pipeline.engines``, Dagster from its ``whisper`` resource); a call without one uses
:func:`default_whisper`, the same process-wide object. The device, compute type and threads come from the
stage's options (``segments.stage.Options``, built from the environment by ``pipeline.options``): nothing here
reads the environment."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable

import numpy as np

from talkthrough_assets.stages import audio as audio_stage
from talkthrough_assets.stages.segments import word_timing

PROMPT_TOKENS = 223  # faster-whisper's previous-text prompt: the last max_length // 2 - 1 tokens
DEVICE = "cpu"  # a model asked for without a device: CPU int8 (the stage's options name TALKTHROUGH_DEVICE's)


def cpu_threads(shared: bool = False, override: int | None = None) -> int:
    """Whisper's CPU threads: half the cores, a quarter when the visual branch of a video runs beside it (at
    least one). CTranslate2's beam search over a small model does not scale with threads: on the 2-core machines
    here, tiny.en decoded 120 s of speech in 3.8 s on 1 thread and 5.9 s on 2 (1.8x the CPU), base in 9.1 s vs
    10.8 s, the same words (``OMP_WAIT_POLICY`` changed nothing); the 10-min bench screencast's segments stage
    took 31.9 s on 1 thread and 43.8 s on 2 (bench/bench_segments_profile.py). ``override``
    (TALKTHROUGH_WHISPER_THREADS) replaces both."""
    if override:
        return int(override)
    n = os.cpu_count() or 2
    return max(1, n // 4) if shared else max(1, n // 2)


# A second copy of the model runs its encoder on more threads (``adapter._SplitModel``) only up to this size of
# model.bin: its memory is that of the model once more (tiny.en 40 MB, base 75 MB, small 250 MB in int8).
ENCODER_TWIN_MAX_BYTES = 300 << 20
ENCODER_MAX_THREADS = 8


def encoder_threads(device: str = DEVICE, override: int | None = None) -> int | None:
    """The CPU threads of the model's encoder (``adapter._SplitModel``): every core (at most
    :data:`ENCODER_MAX_THREADS`), whatever the decoder gets (:func:`cpu_threads`). A 30-s window of tiny.en took
    0.23 s on 2 threads against 0.39 s on 1, the same CPU seconds; with the other core busy, 0.38-0.40 s on either.
    None (the encoder on the decoder's threads): ``override`` (TALKTHROUGH_WHISPER_THREADS: the user's count is
    honoured for all), or not on the CPU."""
    if override or device != "cpu":
        return None
    return min(os.cpu_count() or 1, ENCODER_MAX_THREADS)


def _twin_fits(model_ref: str) -> bool:
    """Whether the model folder ``model_ref``'s model.bin is small enough for a second copy
    (:data:`ENCODER_TWIN_MAX_BYTES`)."""
    try:
        return os.path.getsize(os.path.join(model_ref, "model.bin")) <= ENCODER_TWIN_MAX_BYTES
    except OSError:
        return False


def compute_type(device: str, given: str | None = None) -> str:
    """The compute type a model is loaded with: ``given`` (TALKTHROUGH_COMPUTE_TYPE), else int8 (float16 on cuda)."""
    return given or ("float16" if device == "cuda" else "int8")


class Whisper:
    """faster-whisper models, each loaded once per (model, device, compute type, CPU threads) and kept
    (the newest ``max_models``). ``lock`` serializes decoding: one model instance is not safe to share across
    concurrent transcribe calls. A model is loaded once: whoever asks for it while another thread loads it (a
    warm-up) waits for that load instead of starting a second one; a load holds no lock that a decode needs,
    so one model (the language check's) loads while another decodes."""

    def __init__(self, max_models: int = 2, load: Callable | None = None):
        self.max_models = max_models
        self.lock = threading.RLock()
        self._guard = threading.Lock()  # the table of models (held for lookups, never during a load)
        self._models: OrderedDict[tuple, Future] = OrderedDict()
        # (model_ref, device=, compute_type=, cpu_threads=, files=) -> a model; the adapter unless given
        self._load = load or _adapter

    def model(self, model_ref: str, threads: int | None = None, device: str = DEVICE,
              compute: str | None = None, files=None, encoder: int | None = None):
        """The loaded model (``compute``: see :func:`compute_type`). ``files``: a function returning the model's
        files in memory (``WhisperModel(files=...)``; ``model_ref`` then names it), called only to load it.
        ``encoder``: the encoder's threads (:func:`encoder_threads`) where more than ``threads``, for a model loaded
        from its folder (``files`` None) whose model.bin fits :data:`ENCODER_TWIN_MAX_BYTES`."""
        threads = threads or cpu_threads()
        encoder = encoder if encoder and encoder > threads and files is None else None
        key = (model_ref, device, compute_type(device, compute), threads, encoder)
        with self._guard:
            slot = self._models.get(key)
            mine = slot is None
            if mine:
                while len(self._models) >= self.max_models:
                    self._models.popitem(last=False)
                slot = self._models[key] = Future()
            else:
                self._models.move_to_end(key)
        if mine:
            try:
                # better alignment heads where measured (word_timing.ALIGNMENT_HEADS; decoding is unchanged)
                got = files() if files else word_timing.model_files(model_ref)
                slot.set_result(self._load(model_ref, device=key[1], compute_type=key[2], cpu_threads=key[3],
                                           files=got, encoder_threads=encoder if encoder and
                                           _twin_fits(model_ref) else None))
            except BaseException as e:  # the next caller tries again
                with self._guard:
                    if self._models.get(key) is slot:
                        del self._models[key]
                slot.set_exception(e)
                raise
        return slot.result()

    def warm(self, model_ref: str, threads: int | None = None, device: str = DEVICE,
             compute: str | None = None, files=None, encoder: int | None = None) -> None:
        """Load the model now (a background thread may call this while other work runs)."""
        self.model(model_ref, threads, device, compute, files, encoder)


def _adapter(model_ref: str, **kw):
    """faster-whisper's model with the decode's hooks (``adapter.WhisperAdapter``; faster-whisper is imported here,
    when a model is first loaded)."""
    from talkthrough_assets.stages.segments.adapter import WhisperAdapter

    return WhisperAdapter(model_ref, **kw)


@dataclass(frozen=True, slots=True)
class Engine:
    """The model a decode runs on: the caller's :class:`Whisper` (the loaded models), the model's path and the
    label its outputs record, the CPU threads (``encoder``: the encoder's, :func:`encoder_threads`), the device and
    compute type."""

    whisper: Whisper
    model_ref: str
    model_label: str
    threads: int | None = None
    device: str = DEVICE
    compute: str | None = None
    encoder: int | None = None

    @classmethod
    def of(cls, opts, whisper: Whisper | None = None, *, shared: bool = False) -> Engine:
        """The engine the segments stage's ``opts`` (``options.Options``) name: its model resolved
        (``store.models.resolve_whisper``), its threads (:func:`cpu_threads`; ``shared``: the visual branch runs
        beside it; its encoder on every core, :func:`encoder_threads`), its device and compute type."""
        from talkthrough_assets.store.models import resolve_whisper

        ref, label = resolve_whisper(opts.whisper_model)
        return cls(whisper or default_whisper(), ref, label, cpu_threads(shared, opts.threads), opts.device,
                   opts.compute_type, encoder_threads(opts.device, opts.threads))

    def model(self):
        """The loaded model (an ``adapter.WhisperAdapter``)."""
        return self.whisper.model(self.model_ref, self.threads, self.device, self.compute, encoder=self.encoder)

    def language_checker(self):
        """:func:`language_checker` on this engine's threads, device and compute type."""
        return language_checker(self.whisper, self.threads, self.device, self.compute)


_default = Whisper()  # loads nothing until a model is asked for


def default_whisper() -> Whisper:
    """This process's one :class:`Whisper`."""
    return _default


def language_checker(whisper: "Whisper", threads: int | None = None, device: str = DEVICE,
                     compute: str | None = None):
    """A function (samples) -> (language, probability, P(en)) using the multilingual base model (loaded from its
    wheels into memory on first use: :func:`store.models.base_model_files`), or None when it is not installed.
    Its CPU threads are the decoder's: on 8-10 s of audio, 2 threads were no faster than 1 (0.10 s a check)."""
    from talkthrough_assets.store.models import BASE_IN_MEMORY, base_model_files, base_model_installed

    if not base_model_installed():
        return None

    def check(samples: np.ndarray, padded: bool = False, ranked: bool = False):
        # ``ranked``: every language with its probability, best first, instead of (language, p, P(en)).
        # The encoder runs on the segment's own frames, not on Whisper's padded 30-s window: CTranslate2
        # accepts the shorter input and it costs ~1/10 (0.03-0.1 s for 3-5 s of audio instead of 0.5 s).
        # ``padded``: on Whisper's 30-s window, as it was trained (see rules.LANGUAGE_MIN_SPEECH_S).
        import ctranslate2

        model = whisper.model(BASE_IN_MEMORY, threads, device, compute, base_model_files)
        feats = model.feature_extractor(samples)
        n = model.feature_extractor.nb_max_frames
        feats = (np.pad(feats[:, :n], ((0, 0), (0, max(0, n - feats.shape[1])))) if padded
                 else feats[:, : max(1, len(samples) // 160)])
        view = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None].astype(np.float32)))
        langs = [(tok.strip("<|>"), float(p)) for tok, p in model.model.detect_language(view)[0]]
        return langs if ranked else (langs[0][0], langs[0][1], dict(langs).get("en", 0.0))

    return check


def warm_language_checker(whisper: "Whisper", threads: int | None = None, device: str = DEVICE,
                          compute: str | None = None) -> None:
    """Load the model :func:`language_checker` uses now (nothing when it is not installed)."""
    from talkthrough_assets.store.models import BASE_IN_MEMORY, base_model_files, base_model_installed

    if base_model_installed():
        whisper.warm(BASE_IN_MEMORY, threads, device, compute, base_model_files)


MULTILINGUAL_VOCABULARY = 51865  # tokens of a multilingual Whisper model's vocabulary at least (CTranslate2's test)


def english_only(model_ref: str) -> bool | None:
    """Whether the Whisper model in folder ``model_ref`` is English-only, from the size of its vocabulary (an
    English-only one has 51864 tokens), without loading it; None when the folder has no ``vocabulary.txt``."""
    try:
        with open(os.path.join(model_ref, "vocabulary.txt"), "rb") as fh:
            return sum(1 for _ in fh) < MULTILINGUAL_VOCABULARY
    except OSError:
        return None


def load_checker_soon(samples: np.ndarray, language_check: bool, engine: Engine) -> None:
    """Load the language check's multilingual model (:func:`warm_language_checker`) in a thread of its own while
    the chunks decode (``chunks.transcribe_chunked`` calls this first), for an English-only model whose audio is
    not silent and ``language_check`` on: the whole recording's language is checked on it once its chunks are
    decoded (``chunks._recording_judge``), and its load (~0.8 s; 145 MB read from two wheels) was on the stage's
    path at that point: on a 28-s audio-only clip the run took 4.95 s instead of 5.67 (a 60-s screencast cut, whose
    visual branch holds the other core, was no faster). A multilingual model, a silent recording or the check
    turned off load nothing."""
    if not language_check or audio_stage.peak(samples) <= audio_stage.AUDIBLE_PEAK:
        return
    english = english_only(engine.model_ref)  # known from its folder: the load starts beside the model's own

    def load() -> None:
        try:
            if english is False or (english is None and engine.model().model.is_multilingual):
                return
            warm_language_checker(engine.whisper, engine.threads, engine.device, engine.compute)
        except Exception:  # noqa: BLE001 - the check loads it again when it needs it, and reports what fails
            pass

    threading.Thread(target=load, daemon=True, name="language-check-load").start()


__all__ = ["PROMPT_TOKENS", "DEVICE", "cpu_threads", "encoder_threads", "compute_type", "Whisper", "Engine",
           "default_whisper", "language_checker", "warm_language_checker", "load_checker_soon"]
