"""What `talkthrough process` draws for one file on a terminal while its stages run: the share of the audio
transcribed (the segments stage, chunk by chunk) and of the video scanned for keyframes (the keyframes stage), each
with what it is at, one ETA (the later of the two branches', which run at once), and one bar over every stage the
run planned, each weighted by the share of a run's time it usually takes: a stage not started counts 0, a stage
done counts whole, a long stage its reported share. The bar never goes back and shows 100 % only when every planned
stage is done. Pure: the CLI feeds it the plan, the stages' ends and their progress reports
(``runner.progress``), and draws what it returns."""

from __future__ import annotations

import time

from talkthrough_assets.stages.runner import hms

# the long stages that report progress, in the order they are shown, and what their share is of
SHOWN = {"segments": "the audio", "keyframes": "the video scanned"}
# a stage's weight in the bar: roughly its share of a run's CPU time (docs/benchmarks.md); others weigh 1
WEIGHTS = {"segments": 50, "ocr": 20, "keyframes": 15, "turns": 10, "audio": 2}
NOT_DONE_CAP = 0.99  # the bar while any planned stage is still to end



class FileProgress:
    """The latest report of each long stage of one file's run."""

    def __init__(self, clock=time.monotonic) -> None:
        self.reports: dict[str, dict] = {}
        self.clock = clock
        self.planned: list[str] = []
        self.done: set[str] = set()
        self._shown = 0.0  # the highest share drawn: the bar never goes back

    def plan(self, stages: list[str]) -> None:
        """The stages this run will run (before any has started)."""
        self.planned = list(stages)

    def report(self, stage: str, info: dict) -> None:
        self.reports[stage] = dict(info, at=self.clock())

    def _share_now(self, r: dict, now: float) -> float:
        """A stage's share interpolated since its last report: at the pace its ETA
        implies, never past ``next_share`` (the end of the chunk in progress) or 99 % of what is left."""
        share = r["share"]
        eta = r.get("eta_s")
        if share >= 1.0 or not eta:
            return share
        cap = r.get("next_share", share + 0.99 * (1 - share))
        moved = (1 - share) * min((now - r["at"]) / eta, 1.0)
        return min(share + moved, cap, share + 0.99 * (1 - share))

    def share_now(self, now: float | None = None) -> float | None:
        """The bar, interpolated within a chunk: the planned stages' shares weighted (see the module); None
        before there is a plan or a report."""
        stages = self.planned or list(self.reports)
        if not stages:
            return None
        now = self.clock() if now is None else now

        def share(stage: str) -> float:
            if stage in self.done:
                return 1.0
            r = self.reports.get(stage)
            return self._share_now(r, now) if r else 0.0

        total = sum(WEIGHTS.get(s, 1) for s in stages)
        bar = sum(WEIGHTS.get(s, 1) * share(s) for s in stages) / total
        if any(s not in self.done for s in stages):
            bar = min(bar, NOT_DONE_CAP)
        self._shown = max(self._shown, bar)
        return self._shown

    def eta_now(self, now: float | None = None) -> float | None:
        """The later branch's ETA, counted down since its report."""
        now = self.clock() if now is None else now
        etas = [max(r["eta_s"] - (now - r["at"]), 0.0) for r in self.reports.values()
                if r.get("eta_s") and r["share"] < 1.0]
        return max(etas) if etas else None

    def finished(self, stage: str) -> None:
        """The stage ended (done or failed): it counts whole, and its branch has no ETA of its own any more."""
        self.done.add(stage)
        if stage in self.reports:
            self.reports[stage].update(share=1.0, eta_s=None)

    def percent(self) -> int:
        """The bar in whole percent (never back, 100 only when every planned stage is done)."""
        share = self.share_now()
        return int(100 * share) if share is not None else 0

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
