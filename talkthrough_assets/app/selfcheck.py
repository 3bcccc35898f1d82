"""`talkthrough doctor`: prove the installed media stack works before blaming the input.

A dependency break (e.g. a PyAV release that drops an argument) otherwise looks exactly like bad
input: every file "fails at probe". The self-check writes a 2-second clip with PyAV (H.264 video +
AAC audio, in a temp folder), then runs the real probe, audio and keyframe stage functions on it.
"""

from __future__ import annotations

import importlib.metadata as md
import sys
import tempfile
import traceback
from fractions import Fraction
from pathlib import Path

from talkthrough_assets.core import config

PACKAGES = ("av", "faster-whisper", "ctranslate2", "onnxruntime", "sherpa-onnx", "rapidocr",
            "dagster", "duckdb", "pyarrow", "mcp", "numpy", "pillow")


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "missing"
    return out


def write_clip(path: str | Path, seconds: float = 2.0, size: tuple[int, int] = (320, 240)) -> Path:
    """A tiny H.264 + AAC MP4 with a scene change half-way (used by the self-check and tests)."""
    import av
    import numpy as np

    path = Path(path)
    fps, sr = 10, 16000
    with av.open(str(path), "w", format="mp4") as out:
        v = out.add_stream("libx264", rate=fps)
        v.width, v.height, v.pix_fmt = size[0], size[1], "yuv420p"
        a = out.add_stream("aac", rate=sr, layout="mono")
        n = int(seconds * fps)
        for i in range(n):
            img = np.full((size[1], size[0], 3), 40 if i < n // 2 else 220, np.uint8)
            frame = av.VideoFrame.from_ndarray(img, format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            out.mux(v.encode(frame))
        out.mux(v.encode(None))
        t = np.arange(int(seconds * sr)) / sr
        tone = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
        for k in range(0, len(tone), 1024):
            chunk = tone[k:k + 1024]
            af = av.AudioFrame.from_ndarray(chunk[None, :].copy(), format="fltp", layout="mono")
            af.sample_rate, af.pts, af.time_base = sr, k, Fraction(1, sr)
            out.mux(a.encode(af))
        out.mux(a.encode(None))
    return path


def run() -> list[tuple[str, bool, str]]:
    """[(check, ok, detail)]: each media stage function on a freshly written clip."""
    from talkthrough_assets.stages import audio
    from talkthrough_assets.stages import keyframes
    from talkthrough_assets.stages import probe

    results: list[tuple[str, bool, str]] = []

    def check(name, fn):
        try:
            detail = fn()
            results.append((name, True, detail))
            return True
        except Exception as e:  # report, never raise: the point is to name what broke
            tb = traceback.extract_tb(e.__traceback__)[-1]
            results.append((name, False, f"{type(e).__name__}: {e} (at {Path(tb.filename).name}:{tb.lineno})"))
            return False

    with tempfile.TemporaryDirectory(prefix="talkthrough-doctor-") as tmp:
        clip = Path(tmp) / "clip.mp4"
        if not check("write a test clip (PyAV encode)", lambda: f"{write_clip(clip).stat().st_size} bytes"):
            return results
        info: dict = {}

        def _probe():
            p = info["probe"] = probe.probe_file(clip)
            assert p.has_video and p.has_audio, p
            return f"{p.kind}, {p.duration_ms} ms, {p.width}x{p.height}"

        def _audio():
            res = audio.extract_wav(clip, Path(tmp) / "a.wav")
            assert res.samples > 16000, res
            return f"{res.samples} samples at 16 kHz"

        def _keyframes():
            duration_ms = info["probe"].duration_ms if "probe" in info else 2000
            res = keyframes.extract(clip, Path(tmp) / "frames", duration_s=duration_ms / 1000,
                                    max_frames=10)
            assert res.frames, res
            return f"{len(res.frames)} keyframes"

        check("probe", _probe)
        check("audio (decode + resample)", _audio)
        check("keyframes (decode + filter graph)", _keyframes)
    return results


def config_check() -> tuple[str, str, str]:
    """(check, "ok" | "FAIL", detail): every TALKTHROUGH_* (and AWS_*) variable that is set holds a value
    its declaration in :mod:`talkthrough_assets.core.config` accepts."""
    name = "environment variables (docs/operations.md: Environment variables)"
    problems = config.problems()
    if problems:
        return name, "FAIL", "; ".join(problems)
    n = sum(config.is_set(v.name) for v in config.VARS)
    return name, "ok", f"{n} set, every value accepted"


def ocr_read_exactly(read: str, word: str) -> bool:
    """The OCR check passes only when every character of the rendered line was read, and nothing else
    (spacing and line breaks aside: OCR boxes split or join words): ``TALKTHROUGH4\n142`` fails."""
    return "".join(read.split()) == "".join(word.split())


DATA_CHECK = "data root (tables, manifests, frames, reports)"


def data_check() -> tuple[str, str, str]:
    """(check, "ok" | "FAIL", detail): every table partition of the data root reads whole and fits its schema,
    every processed recording has its manifest, keyframe files and report (``datacheck.scan``)."""
    from talkthrough_assets.pipeline import datacheck
    from talkthrough_assets import store

    try:
        problems = datacheck.scan(deep=True)
        temp = datacheck.leftover_temp_files()  # no damage: disk taken by writers that were killed
    except OSError as e:
        return DATA_CHECK, "FAIL", f"cannot read the data root {store.data_location()}: {e}"
    if problems or temp:
        listed = problems + temp
        shown = "; ".join(p.line() for p in listed[:5])
        more = f" (and {len(listed) - 5} more)" if len(listed) > 5 else ""
        return DATA_CHECK, "FAIL" if problems else "warn", f"{len(listed)} problem(s): {shown}{more}"
    n = len(datacheck.recordings())
    return DATA_CHECK, "ok", f"{n} recording(s) at {store.data_location()}: every partition, manifest, frame and report whole"


def engine_checks(engines=None) -> list[tuple[str, str, str]]:
    """[(check, "ok" | "FAIL" | "warn", detail)]: the model-backed engines on inputs made here.

    OCR (on by default) reads a line it rendered itself: FAIL when it cannot. Diarization is opt-in
    (``--diarize``): its models are looked up without downloading and, when found, the sherpa-onnx
    engine runs on a few seconds of test signal; a missing model is a "warn" that says what to do."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    from talkthrough_assets.pipeline.engines import shared
    from talkthrough_assets.stages.turns import engine as diarize_engine
    from talkthrough_assets.stages.turns import models as diarize_models
    from talkthrough_assets.stages import ocr as ocr_stage

    engines = engines or shared()
    out: list[tuple[str, str, str]] = []
    word = "TALKTHROUGH 42"
    with tempfile.TemporaryDirectory(prefix="talkthrough-doctor-") as tmp:
        try:
            img = Image.new("RGB", (960, 160), (24, 24, 24))  # margins all round: a crowded line read as two
            ImageDraw.Draw(img).text((40, 56), word, fill=(235, 235, 235), font=ImageFont.load_default(size=48))
            img.save(Path(tmp) / "line.png")
            engine, status = engines.ocr.status(True)
            if engine is None:
                out.append(("OCR engine (RapidOCR)", "FAIL", f"{status}: frames would not be read"))
            else:
                text = ocr_stage.read_image(engine, Path(tmp) / "line.png").text
                ok = ocr_read_exactly(text, word)
                out.append(("OCR engine (RapidOCR)", "ok" if ok else "FAIL",
                            f"read {text!r} from a rendered {word!r}"))
        except Exception as e:  # report, never raise
            out.append(("OCR engine (RapidOCR)", "FAIL", f"{type(e).__name__}: {e}"))
    try:
        models = diarize_models.resolve_models(download=False, models_dir=config.get(diarize_models.ENV_MODELS_DIR))
    except diarize_models.ModelUnavailable as e:
        out.append(("diarization models (--diarize)", "warn",
                    f"{e}; `--diarize` downloads them once from pinned URLs (network needed), or set "
                    f"{diarize_models.ENV_MODELS_DIR} to a folder holding them"))
        return out
    try:
        sr = 16000
        t = np.arange(4 * sr) / sr
        signal = (0.3 * np.sin(2 * np.pi * (180 + 60 * (t > 2)) * t) * (np.sin(2 * np.pi * 3 * t) > 0))
        turns = diarize_engine.run_engine(signal.astype(np.float32), models, None, 0.5,
                                          cache=engines.diarizer.cache)
        out.append(("diarization models (--diarize)", "ok",
                    f"{models.segmentation.name} + {models.embedding.name} ({models.source}); sherpa-onnx "
                    f"{diarize_engine.engine_version()} ran on a 4-s test signal ({len(turns)} turns)"))
    except Exception as e:
        out.append(("diarization models (--diarize)", "warn",
                    f"found ({models.source}) but sherpa-onnx failed on them: {type(e).__name__}: {e}"))
    return out


__all__ = ["run", "versions", "write_clip", "engine_checks", "ocr_read_exactly", "data_check"]
