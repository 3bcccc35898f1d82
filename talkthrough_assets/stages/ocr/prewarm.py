"""The ocr stage's StageSpec ``prewarm`` hook: RapidOCR loaded before the stage needs it."""

from __future__ import annotations

import threading

from talkthrough_assets.stages import cpu_plan
from talkthrough_assets.stages.probe import may_have_video
from talkthrough_assets.stages.runner import RunContext


def prewarm(rid: str, opts, engines, ctx: RunContext) -> None:
    """Start loading RapidOCR in a background thread (named ``prewarm``) for a recording with a picture when OCR is
    on (ONNX Runtime releases the GIL while loading; the ocr stage waits for a load under way, never starting a
    second one). Its import is Python (~1.5 s here), so the hook is not native (StageSpec.prewarm_native): the
    CLI starts it once the run's first stage starts, so that it overlaps the first stages (probe, audio,
    keyframes) rather than Dagster's own import and its creation of the run, which need the interpreter as much.
    Its ONNX sessions are built for the thread count the stage will start on: fewer where Whisper decodes beside
    it (``ctx.beside``; built for every core, the stage rebuilt them at its start, ~0.25 s on the 60-s cut)."""
    if opts.ocr and may_have_video(rid):  # opts: the ocr stage's Options (the detection cap it will run with)
        threads = cpu_plan.ocr_threads(beside_whisper="audio" in ctx.beside)
        threading.Thread(target=_quietly, args=(lambda: engines.ocr.status(True, opts.det_max_side, threads),),
                         daemon=True, name="prewarm").start()


def _quietly(fn) -> None:
    try:
        fn()
    except Exception:  # the stage itself reports a missing or broken model, with a reason
        pass
