"""What `talkthrough process` draws for one file on a terminal while its long stages run (#19 item 4): the share of
the audio transcribed (the segments stage, chunk by chunk) and of the video scanned for keyframes (the keyframes
stage), each with what it is at, one bar for both and one ETA: the later of the two branches' (they run at once).
Pure: the CLI feeds it the stages' progress reports (``runner.progress``) and draws what it returns."""

from __future__ import annotations

import time

from talkthrough_assets.stages.runner import hms

# the long stages that report progress, in the order they are shown, and what their share is of
SHOWN = {"segments": "the audio", "keyframes": "the video scanned"}



class FileProgress:
    """The latest report of each long stage of one file's run."""

    def __init__(self, clock=time.monotonic) -> None:
        self.reports: dict[str, dict] = {}
        self.clock = clock

    def report(self, stage: str, info: dict) -> None:
        self.reports[stage] = dict(info, at=self.clock())

    def _share_now(self, r: dict, now: float) -> float:
        """A stage's share interpolated since its last report (issue #38, item 6): at the pace its ETA
        implies, never past ``next_share`` (the end of the chunk in progress) or 99 % of what is left."""
        share = r["share"]
        eta = r.get("eta_s")
        if share >= 1.0 or not eta:
            return share
        cap = r.get("next_share", share + 0.99 * (1 - share))
        moved = (1 - share) * min((now - r["at"]) / eta, 1.0)
        return min(share + moved, cap, share + 0.99 * (1 - share))

    def share_now(self, now: float | None = None) -> float | None:
        """The bar, interpolated within a chunk: the mean share of the long stages (None before any report)."""
        if not self.reports:
            return None
        now = self.clock() if now is None else now
        shares = [self._share_now(r, now) for r in self.reports.values()]
        return sum(shares) / len(shares)

    def eta_now(self, now: float | None = None) -> float | None:
        """The later branch's ETA, counted down since its report."""
        now = self.clock() if now is None else now
        etas = [max(r["eta_s"] - (now - r["at"]), 0.0) for r in self.reports.values()
                if r.get("eta_s") and r["share"] < 1.0]
        return max(etas) if etas else None

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

    def short(self) -> str:
        """The compact wording for a narrow terminal: ``segments 5 of 11 chunks, keyframes 60%``."""
        parts = []
        for stage in sorted(self.reports, key=lambda s: (list(SHOWN).index(s) if s in SHOWN else len(SHOWN), s)):
            r = self.reports[stage]
            parts.append(f"{stage} {r['text']}" if stage == "segments" and r.get("text")
                         else f"{stage} {100 * r['share']:.0f}%")
        return ", ".join(parts)

    def text(self, eta: bool = True) -> str:
        """``segments 45% of the audio (5 of 11 chunks), keyframes 60% of the video scanned (frames to 1:23 of
        10:00), ETA 1:05``."""
        parts = []
        for stage in sorted(self.reports, key=lambda s: (list(SHOWN).index(s) if s in SHOWN else len(SHOWN), s)):
            r = self.reports[stage]
            what = r.get("what") or SHOWN.get(stage, "done")
            parts.append(f"{stage} {100 * r['share']:.0f}% of {what}" + (f" ({r['text']})" if r.get("text") else ""))
        left = self.eta_s() if eta else None
        return ", ".join(parts) + (f", ETA {hms(left)}" if left else "")
