"""Synthetic clips of the evaluation set: speech generated here (espeak-ng, flite), sentence by sentence, and
placed with known silences, so where each sentence's sound ends is known exactly.

    import synthetic
    for clip in synthetic.clips():            # evalset.Clip objects; the audio is generated into the cache
        spans = synthetic.spans(clip)         # [(start_s, end_s, sentence)]: each sentence's sound

* ``non_english`` clips (German, French, Spanish, Portuguese, Mandarin, by espeak-ng): one language from start to
  end, ~12-18 s, the way a short foreign recording reaches the default English-only model. An English-only
  model must keep no word of them (bench/bench_asr.py counts every word as invented);
* ``narration`` clips (English, flite voices): six slides of three sentences, 0.35 s between sentences and 1 s
  (or 4-6 s) of silence at each slide's end, as a narrated screencast; bench/bench_word_timing.py --segment-ends
  scores segment ends against the sentences' ends.

Generated on the fly (needs espeak-ng and flite) into ``<cache>/synthetic/``; the same tool versions give the same
samples. Tagged ``synthetic``: report them apart from the public recordings.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import evalset

SR = 16000
LEAD_S = 0.5
SLIDES = [
    ["Welcome to this short tour of the reporting dashboard.", "It shows how the sales team did this quarter.",
     "We start with the overview."],
    ["On this slide you can see the monthly revenue for each region.", "The north grew fastest.",
     "The south stayed flat."],
    ["The blue line shows the forecast.", "The orange line shows the actual numbers.", "They met in August."],
    ["Next, we open the settings panel to change the date range.", "Pick the last ninety days.",
     "Then press apply."],
    ["Here we export the chart as a picture for the weekly meeting.", "The file goes to the shared folder.",
     "Everyone can open it there."],
    ["That is all for today.", "Send your questions by email.", "Thank you for watching."],
]
FOREIGN = {
    "de": ["Guten Morgen zusammen.", "Heute schauen wir uns an, wie man die Einstellungen ändert.",
           "Zuerst öffnen wir das Menü oben rechts.", "Dann wählen wir die gewünschte Sprache aus und speichern."],
    "fr": ["Bonjour à tous.", "Aujourd'hui nous allons voir comment modifier les paramètres.",
           "D'abord, ouvrez le menu en haut à droite.", "Ensuite, choisissez la langue et enregistrez."],
    "es": ["Buenos días a todos.", "Hoy vamos a ver cómo cambiar la configuración.",
           "Primero abrimos el menú de arriba a la derecha.", "Después elegimos el idioma y guardamos los cambios."],
    "pt": ["Bom dia a todos.", "Hoje vamos ver como alterar as configurações.",
           "Primeiro abrimos o menu no canto superior direito.",
           "Depois escolhemos o idioma e salvamos as alterações."],
    "zh": ["大家早上好。", "今天我们来看看如何修改设置。", "首先打开右上角的菜单。", "然后选择语言并保存修改。"],
}
ESPEAK_VOICE = {"zh": "cmn"}
# id -> (kind, language, engine, voice, sentences, gap after each sentence (s))
SPECS: dict[str, tuple] = {
    **{f"tts_{lang}": ("non_english", lang, "espeak-ng", ESPEAK_VOICE.get(lang, lang), sents, [0.8] * len(sents))
       for lang, sents in FOREIGN.items()},
    **{f"narration_{voice}{'' if slide_gap == 1.0 else f'_gap{slide_gap:g}'}": (
        "narration", "en", "flite", voice, [s for slide in SLIDES for s in slide],
        [slide_gap if j == len(slide) - 1 else 0.35 for slide in SLIDES for j in range(len(slide))])
       for voice, slide_gap in (("slt", 1.0), ("kal", 1.0), ("awb", 1.0), ("rms", 1.0), ("kal", 6.0),
                                ("slt", 4.0))},
}


def _tts(engine: str, voice: str, text: str, tmp: Path) -> np.ndarray:
    """One sentence at 16 kHz mono float32, trimmed to its sound (|x| > 0.003, about -50 dBFS)."""
    from talkthrough_assets.stages import audio

    raw, wav = tmp / "raw.wav", tmp / "16k.wav"
    cmd = (["espeak-ng", "-v", voice, "-w", str(raw), text] if engine == "espeak-ng"
           else ["flite", "-voice", voice, "-t", text, "-o", str(raw)])
    subprocess.run(cmd, check=True, capture_output=True)
    audio.extract_wav(raw, wav)
    x = audio.load_wav(wav)
    loud = np.flatnonzero(np.abs(x) > 0.003)
    return x[loud[0]:loud[-1] + 1]


def render(clip_id: str) -> tuple[np.ndarray, list[tuple[float, float, str]]]:
    """The clip's samples and each sentence's (start_s, end_s, text)."""
    _, _, engine, voice, sents, gaps = SPECS[clip_id]
    if shutil.which(engine) is None:
        raise FileNotFoundError(f"{engine} is not installed (apt-get install {engine})")
    parts, spans, t = [np.zeros(int(LEAD_S * SR), np.float32)], [], int(LEAD_S * SR)
    with tempfile.TemporaryDirectory() as d:
        for text, gap in zip(sents, gaps):
            x = _tts(engine, voice, text, Path(d))
            spans.append((t / SR, (t + len(x)) / SR, text))
            parts += [x, np.zeros(int(gap * SR), np.float32)]
            t += len(x) + int(gap * SR)
    return np.concatenate(parts), spans


def clips(cache: str | Path | None = None, kind: str | None = None) -> list[evalset.Clip]:
    """The synthetic clips as evalset.Clip objects (kind ``non_english`` or ``narration``), generated into
    ``<cache>/synthetic/`` when missing, each with its sentence spans beside it (``<id>.json``)."""
    root = Path(cache).expanduser() if cache else evalset.default_cache()
    folder = root / "synthetic"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for cid, (k, lang, engine, voice, sents, _) in SPECS.items():
        if kind and k != kind:
            continue
        wav, meta = folder / f"{cid}.wav", folder / f"{cid}.json"
        if not wav.is_file() or not meta.is_file():
            x, sp = render(cid)
            _write_wav(wav, x)
            meta.write_text(json.dumps({"spans": sp}, ensure_ascii=False))
        data = wav.read_bytes()
        out.append(evalset.Clip(id=cid, kind=k, language=lang, audio=wav, text=" ".join(sents),
                                tags=("synthetic", "whole_recording" if k == "non_english" else "narration"),
                                licence=f"generated here ({engine} voice {voice})",
                                sha256=hashlib.sha256(data).hexdigest(), sources=(),
                                duration_s=(len(data) - 44) / 2 / SR))
    return out


def spans(clip: evalset.Clip) -> list[tuple[float, float, str]]:
    """Each sentence's sound (start_s, end_s, text) of a synthetic clip."""
    return [tuple(s) for s in json.loads(clip.audio.with_suffix(".json").read_text())["spans"]]


def _write_wav(path: Path, x: np.ndarray) -> None:
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
