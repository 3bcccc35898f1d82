"""What `talkthrough process` draws for one file on a terminal while its long stages run (#19 item 4): the share of
the audio transcribed (the segments stage, chunk by chunk) and of the video scanned for keyframes (the keyframes
stage), each with what it is at, one bar for both and one ETA: the later of the two branches' (they run at once).
Pure: the CLI feeds it the stages' progress reports (``runner.progress``) and draws what it returns."""

from __future__ import annotations

from .stages.runner import hms

# the long stages that report progress, in the order they are shown, and what their share is of
SHOWN = {"segments": "the audio", "keyframes": "the video scanned"}



class FileProgress:
    """The latest report of each long stage of one file's run."""

    def __init__(self) -> None:
        self.reports: dict[str, dict] = {}

    def report(self, stage: str, info: dict) -> None:
        self.reports[stage] = dict(info)

    def finished(self, stage: str) -> None:
        """The stage ended: its branch is done (no ETA of its own any more)."""
        if stage in self.reports:
            self.reports[stage].update(share=1.0, eta_s=None)

    def percent(self) -> int:
        """The bar: the mean share of the long stages reported so far."""
        shares = [r["share"] for r in self.reports.values()]
        return round(100 * sum(shares) / len(shares)) if shares else 0

    def eta_s(self) -> float | None:
        """The later of the running branches' ETAs (None when none has one)."""
        etas = [r["eta_s"] for r in self.reports.values() if r.get("eta_s") and r["share"] < 1.0]
        return max(etas) if etas else None

    def text(self) -> str:
        """``segments 45% of the audio (5 of 11 chunks), keyframes 60% of the video scanned (frames to 1:23 of
        10:00), ETA 1:05``."""
        parts = []
        for stage in sorted(self.reports, key=lambda s: (list(SHOWN).index(s) if s in SHOWN else len(SHOWN), s)):
            r = self.reports[stage]
            what = r.get("what") or SHOWN.get(stage, "done")
            parts.append(f"{stage} {100 * r['share']:.0f}% of {what}" + (f" ({r['text']})" if r.get("text") else ""))
        eta = self.eta_s()
        return ", ".join(parts) + (f", ETA {hms(eta)}" if eta else "")
