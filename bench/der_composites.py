"""Multi-speaker clips built from distinct real speakers in ``../shared/eval/media``, with their reference
turns, for bench_der.py and the diarization tests: several speakers who talk one after another (4-6), and
"conversations" where 3-4 of them take turns more than once.

Every speaker is a different real person (LibriSpeech readers 1272 and 2412, JFK, TIMIT's LDC93S1
talker, the Custom Speech narrator, the multilingual clip's reader, the three Falcon test talkers,
pyannote's sample Diane / Sheila, AMI's MEE009 / MEE012, the two talkers of the stereo test file);
a speaker's pieces come from spans where the source's own reference (RTTM, segment list, channel)
says only that speaker talks. Each piece is trimmed of leading/trailing silence and brought to the
same loudness; the reference turn is the piece, split where it pauses for 0.5 s or more (energy in
50 ms windows under -35 dB of the piece's loudest window: a measurement, not a label).

Nothing here is committed audio: the clips are rebuilt from the shared media on every run
(deterministic), so no new licence travels with the project.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

SR = 16000

# speaker -> pieces (file under media/, t0 s, t1 s, channel or None = mono mix)
SPEAKERS: dict[str, list[tuple[str, float, float, int | None]]] = {
    "jfk": [("asr/whisper_jfk.flac", 0.0, 11.0, None)],
    "ls1272": [("asr/ortx_librispeech-1272-141231-0002.flac", 0.0, 13.3, None),
               ("asr/leopard_test_librispeech-1272-128104-0000.wav", 0.0, 5.85, None)],
    "ls2412": [("asr/lhotse_librispeech-2412-153948-0000.flac", 0.0, 11.6, None)],
    "timit": [("asr/deepspeech_LDC93S1.wav", 0.0, 2.92, None)],
    "narrator": [("asr/ms_customspeech_en-US_general_testing_audio.wav", 0.0, 41.9, None)],
    "mlen": [("asr/faster_whisper_multilingual.mp3", 0.0, 30.0, None)],
    "falcon2": [("diarization/falcon_test.wav", 6.2, 11.1, None)],
    "falcon3": [("diarization/falcon_test.wav", 12.8, 18.0, None)],
    "diane": [("diarization/pyannote_sample.wav", 10.57, 14.49, None),
              ("diarization/pyannote_sample.wav", 18.59, 21.49, None)],
    "sheila": [("diarization/pyannote_sample.wav", 21.78, 27.85, None),
               ("diarization/pyannote_sample.wav", 14.70, 17.92, None)],
    "mee009": [("diarization/pyannote_dev00.wav", 1.44, 13.15, None)],
    "mee012": [("diarization/pyannote_dev00.wav", 13.15, 16.92, None),
               ("diarization/pyannote_dev00.wav", 26.19, 28.22, None)],
    "stereo_left": [("diarization/faster_whisper_stereo_diarization.wav", 0.0, 5.0, 0)],
}

# name -> [(speaker, seconds or None = the whole next piece)]; a speaker's pieces are consumed in order,
# a long piece in chunks cut at its quietest point near the asked length
RECIPES: dict[str, list[tuple[str, float | None]]] = {
    # one after another
    "seq4_a": [("jfk", None), ("sheila", None), ("ls2412", None), ("mee009", None)],
    "seq5_a": [("narrator", 9), ("falcon2", None), ("ls1272", None), ("diane", None), ("mlen", 9)],
    "seq6_a": [("jfk", None), ("ls1272", None), ("mee009", None), ("sheila", None), ("ls2412", None),
               ("narrator", 10)],
    "seq6_b": [("mlen", 8), ("falcon3", None), ("narrator", 8), ("mee012", None), ("diane", None),
               ("stereo_left", None)],
    # taking turns more than once
    "conv3_a": [("narrator", 5), ("mee009", 4), ("ls1272", None), ("narrator", 6), ("mee009", 5),
                ("ls1272", None), ("narrator", 5)],
    "conv4_a": [("sheila", None), ("jfk", 5), ("mlen", 6), ("diane", None), ("jfk", None), ("sheila", None),
                ("mlen", 6), ("diane", None)],
    "conv4_b": [("ls2412", 4), ("narrator", 5), ("mee012", None), ("falcon2", None), ("ls2412", None),
                ("narrator", 6), ("mee012", None), ("narrator", 4)],
}
GAP_S = 0.6  # silence between turns


def _read(media: Path, rel: str, channel: int | None) -> np.ndarray:
    """16 kHz float32 mono (or one channel) of a shared media file, decoded once per call."""
    path = media / rel
    if channel is not None:
        with wave.open(str(path), "rb") as w:
            assert w.getframerate() == SR and w.getsampwidth() == 2
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, w.getnchannels())
        return x[:, channel].astype(np.float32) / 32768.0
    import tempfile

    from talkthrough_assets.stages import audio

    with tempfile.TemporaryDirectory() as d:
        dst = Path(d) / "x.wav"
        audio.extract_wav(path, dst)
        return audio.load_wav(dst)


def _frame_db(x: np.ndarray, win: int = SR // 20) -> np.ndarray:
    n = max(1, len(x) // win)
    y = x[: n * win].reshape(n, win)
    return 20 * np.log10(np.sqrt((y ** 2).mean(axis=1)) + 1e-9)


def _speech_spans(x: np.ndarray, rel_db: float = -35.0, min_gap_s: float = 0.5) -> list[tuple[float, float]]:
    db = _frame_db(x)
    on = db > db.max() + rel_db
    spans, start = [], None
    for i, a in enumerate(list(on) + [False]):
        if a and start is None:
            start = i
        elif not a and start is not None:
            spans.append([start * 0.05, i * 0.05])
            start = None
    merged: list[list[float]] = []
    for s in spans:
        if merged and s[0] - merged[-1][1] < min_gap_s:
            merged[-1][1] = s[1]
        else:
            merged.append(s)
    return [(a, b) for a, b in merged if b - a >= 0.2]


def _trim(x: np.ndarray) -> np.ndarray:
    sp = _speech_spans(x)
    if not sp:
        return x
    a, b = max(0.0, sp[0][0] - 0.1), sp[-1][1] + 0.1
    return x[int(a * SR): int(b * SR)]


def _quiet_cut(x: np.ndarray, want_s: float, search_s: float = 1.5) -> int:
    """Sample index of the quietest 50 ms window within ``search_s`` of ``want_s``."""
    db = _frame_db(x)
    lo, hi = int(max(0.5, want_s - search_s) / 0.05), int((want_s + search_s) / 0.05)
    hi = min(hi, len(db) - 1)
    if hi <= lo:
        return len(x)
    return (lo + int(np.argmin(db[lo:hi]))) * (SR // 20)


def build(name: str, media: Path, cache: dict | None = None) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """(16 kHz float32 samples, reference turns [(t0_s, t1_s, speaker)]) of one recipe."""
    cache = {} if cache is None else cache
    pos: dict[str, tuple[int, int]] = {}  # speaker -> (piece index, sample offset in it)
    out: list[np.ndarray] = []
    ref: list[tuple[float, float, str]] = []
    t = GAP_S
    out.append(np.zeros(int(GAP_S * SR), dtype=np.float32))
    for spk, secs in RECIPES[name]:
        i, off = pos.get(spk, (0, 0))
        rel, a, b, ch = SPEAKERS[spk][i % len(SPEAKERS[spk])]
        key = (rel, ch)
        if key not in cache:
            cache[key] = _read(media, rel, ch)
        piece = cache[key][int(a * SR): int(b * SR)][off:]
        if secs is not None and len(piece) > (secs + 2.5) * SR:
            cut = _quiet_cut(piece, secs)
            pos[spk] = (i, off + cut)
            piece = piece[:cut]
        else:
            pos[spk] = (i + 1, 0)
        piece = _trim(piece)
        rms = float(np.sqrt((piece ** 2).mean())) or 1.0
        piece = np.clip(piece * (0.05 / rms), -0.99, 0.99).astype(np.float32)  # same loudness, -26 dBFS
        for s0, s1 in _speech_spans(piece):
            ref.append((round(t + s0, 3), round(t + min(s1, len(piece) / SR), 3), spk))
        out += [piece, np.zeros(int(GAP_S * SR), dtype=np.float32)]
        t += len(piece) / SR + GAP_S
    return np.concatenate(out), ref


def write_wav(path: Path, x: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def clips(media: Path, tmp: Path) -> list[dict]:
    """bench_der clip dicts (name, file, speakers, ref) for every recipe, written under ``tmp``."""
    cache: dict = {}
    out = []
    for name in RECIPES:
        x, ref = build(name, media, cache)
        out.append({"name": name, "file": write_wav(tmp / f"{name}.wav", x),
                    "speakers": len({r[2] for r in ref}), "ref": ref, "kind": "composite"})
    return out
