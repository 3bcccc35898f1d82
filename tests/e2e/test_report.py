"""`talkthrough report` (#22 item 1) in Chromium: the page of a screencast processed by the real Dagster job
(keyframes, OCR, transcript) and of a diarized call with named speakers renders offline with no request and
no console error, has one thumbnail per unique frame, a click on a thumbnail or a turn scrolls the transcript
to that moment, the search box filters; and hostile text (file names, speaker names, transcript, OCR) never
executes. Screenshots go to $TALKTHROUGH_TEST_ARTIFACTS (default: the test's tmp folder)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import manifests
from fixture_facts import PROCESS_OPTIONS, SCREENCAST_PATH, TWO_VOICES_NAME, TWO_VOICES_PATH, unique_copy
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.app import service
from talkthrough_assets.read import formats
from talkthrough_assets.read import report
from talkthrough_assets.read import snapshot
from talkthrough_assets.model.wallclock import t_wall

CHROMIUM = "/usr/bin/chromium"  # Debian's package (.ci/run installs it); no browser download
SITE = "http://talkthrough.test"
HOSTILE = "x'\"><img src=x onerror=__pwned=1><script>__pwned=1</script></textarea>"


class Page:
    """One Chromium page serving ``html`` at SITE/ (every other request is recorded and refused)."""

    def __init__(self, browser, html: str):
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append("dialog: " + d.message), d.dismiss()))

        def serve(route):
            self.requests.append(route.request.url)
            if route.request.url == f"{SITE}/":
                route.fulfill(body=html, content_type="text/html; charset=utf-8")
            else:
                route.abort()

        self.page.route("**/*", serve)
        self.page.goto(f"{SITE}/")


def _artifacts(tmp_path) -> Path:
    d = Path(os.environ.get("TALKTHROUGH_TEST_ARTIFACTS") or tmp_path / "artifacts")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _write(ref: str, out: Path) -> str:
    r = CliRunner().invoke(cli.app, ["report", ref, "-o", str(out)])
    assert r.exit_code == 0 and out.is_file(), r.output
    return out.read_text()


def test_report_of_processed_recordings_in_chromium(tt_home, processed, tmp_path):
    from playwright.sync_api import sync_playwright

    sc = unique_copy(SCREENCAST_PATH, tmp_path / "demo 'screen'.mp4", "report")
    s1 = service.process(sc)
    assert s1["status"] == "processed", s1
    call = unique_copy(TWO_VOICES_PATH, tmp_path / f"call {HOSTILE[:30]}.m4a".replace("/", "_"), "report")
    s2 = service.process(call, overrides=PROCESS_OPTIONS[TWO_VOICES_NAME])
    assert s2["status"] == "processed" and s2["diarized"], s2
    service.set_speaker_names(s2["recording_id"], [f"S1={HOSTILE}"])
    art = _artifacts(tmp_path)
    html_sc = _write(str(sc), tmp_path / "sc.html")
    html_call = _write(s2["recording_id"], tmp_path / "call.html")
    snap = snapshot.read(s1["recording_id"])
    unique = [f for f in snap.frames if f.duplicate_of is None]
    assert len(unique) >= 4  # the fixture's four scenes

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: apt-get install -y chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            pg = Page(b, html_sc)
            page = pg.page
            assert page.inner_text("#title") == "demo 'screen'.mp4"
            thumbs = page.locator(".thumb")
            assert thumbs.count() == len(unique)
            assert [int(t) for t in thumbs.evaluate_all("els => els.map(e => e.dataset.t)")] == [f.ms for f in unique]
            assert page.evaluate("() => Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
            segs = page.locator("#segs .seg")
            n = segs.count()
            assert n == len(snap.segments) >= 2
            page.screenshot(path=str(art / "report_screencast.png"), full_page=True)
            # a click on each thumbnail marks what was said for that screen: the narration that starts after
            # the cut, not the previous slide's sentence still running into it; scrolled into view
            cuts = [f.ms for f in unique] + [10 ** 9]
            for i in range(len(unique)):
                thumbs.nth(i).click()
                page.keyboard.press("Escape")
                hit = page.locator("#segs .seg.hit")
                t = int(hit.get_attribute("data-t"))
                assert hit.count() == 1 and cuts[i] - 250 <= t < cuts[i + 1], (i, t, cuts)
                assert hit.evaluate("e => { const r = e.getBoundingClientRect(); "
                                    "return r.top >= 0 && r.bottom <= innerHeight; }")
            # a click on a transcript line marks the frame that was on screen then
            for i in range(n):
                segs.nth(i).locator(".text").click()
                on = int(page.locator(".thumb.hit").get_attribute("data-t"))
                t0 = snap.segments[i].t0_ms
                assert on == max(c for c in cuts if c <= t0 + 250), (i, on, t0)
            # thumbnails a person can read, no developer line under each segment, times of day without a date
            assert page.evaluate("() => document.querySelector('.thumb img').getBoundingClientRect().height") >= 100
            assert "get_moment" not in page.inner_text("#segs")
            assert all(len(w) == 8 for w in page.locator("#segs .wall").all_inner_texts())
            # every scene once (the strip is the page's contact sheet), each with its times as its transcript
            # lines have them: from the start, and the time of day; the header says the day and the zone once
            wc = snap.wall_clock
            assert wc, "the fixture carries a creation time"
            walls = [t_wall(wc, f.ms) for f in unique]
            assert thumbs.evaluate_all("els => els.map(e => [e.querySelector('.time').innerText, "
                                       "e.querySelector('.wall').innerText])") == [
                [formats.clock(f.ms), formats.time_of_day(w)] for f, w in zip(unique, walls)]
            assert page.locator("#screens .screen .wall").all_inner_texts() == [
                formats.time_of_day(w) for f, w in zip(unique, walls) if (f.ocr_text or "").strip()]
            start = t_wall(wc, 0)
            assert f"{start[:10]} {formats.time_of_day(start)} {formats.zone(start)}" in page.inner_text("header")
            assert not re.search(r"\d\dT\d\d:|:\d\d\.\d{3}", page.inner_text("body")), "an ISO stamp shown"
            # the frame opens large: Escape closes it
            thumbs.last.click()
            assert page.locator("#large[open]").count() == 1
            size = page.evaluate("() => { const i = document.getElementById('large-img'); "
                                 "return [i.naturalWidth, i.getBoundingClientRect().height]; }")
            assert size[0] == report.LARGE_WIDTH and size[1] > 400, size
            assert page.inner_text("#large-cap") == f"{formats.clock(unique[-1].ms)} " \
                f"({formats.time_of_day(walls[-1])} {formats.zone(walls[-1])})"
            page.screenshot(path=str(art / "report_large.png"))
            page.keyboard.press("Escape")
            assert page.locator("#large[open]").count() == 0
            # on-screen text of each segment's frame, collapsible
            assert page.locator("#segs details").count() >= 1
            # search filters segments and screen text
            word = snap.segments[0].text.split()[0].strip(".,!?").lower()
            page.fill("#q", word)
            shown = page.evaluate("() => Array.from(document.querySelectorAll('#segs .seg'))"
                                  ".filter(s => s.style.display !== 'none').length")
            assert 1 <= shown <= n
            # every on-screen text is searched, also a frame no segment points at (#38 item 7): a word that was
            # only on screen is found in the screens list
            screens = page.locator("#screens .screen")
            assert screens.count() == sum(1 for f in unique if (f.ocr_text or "").strip()) >= 4
            page.fill("#q", "responding")  # "checkout service not responding": on screen, never said
            shown = page.evaluate("() => Array.from(document.querySelectorAll('#screens .screen'))"
                                  ".filter(s => s.style.display !== 'none').map(s => +s.dataset.t)")
            assert shown and all(6000 <= t < 12000 for t in shown), shown
            assert f"{len(shown)} of {screens.count()} screens" in page.inner_text("#count")
            # the match is marked where it is, and the on-screen box that holds it is opened
            opened = page.evaluate("() => Array.from(document.querySelectorAll('#segs .seg'))"
                                   ".filter(s => s.style.display !== 'none')"
                                   ".map(s => [!!s.querySelector('details[open] pre mark'), !!s.querySelector('.text mark')])")
            assert opened and all(box and not said for box, said in opened), opened
            assert page.locator("#screens .screen mark").first.inner_text().lower() == "responding"
            page.fill("#q", "")
            assert page.locator("mark").count() == 0 and page.locator("details[open]").count() == 0
            for hidden in ("get_moment", "t_ms", snap.rid):  # hover text (the agent's call) is not searched
                page.fill("#q", hidden)
                assert page.inner_text("#count").startswith(f"0 of {n} segments, 0 of "), (hidden, page.inner_text("#count"))
            page.fill("#q", "zzzz-no-such-text")
            assert page.evaluate("() => Array.from(document.querySelectorAll('#segs .seg'))"
                                 ".every(s => s.style.display === 'none')")
            page.screenshot(path=str(art / "report_search.png"))
            assert pg.requests == [f"{SITE}/"] and pg.errors == [], (pg.requests, pg.errors)

            pg = Page(b, html_call)
            page = pg.page
            assert page.locator(".turn").count() == len(snapshot.read(s2["recording_id"]).turns) >= 2
            page.locator(".turn").last.click()
            assert page.locator("#segs .seg.hit").count() == 1
            assert HOSTILE in page.inner_text("header") and HOSTILE in page.inner_text("#segs")
            page.screenshot(path=str(art / "report_call.png"), full_page=True)
            assert page.evaluate("() => window.__pwned") is None
            assert page.locator("script").count() == 1 and page.locator("img").count() == 0
            assert pg.requests == [f"{SITE}/"] and pg.errors == [], (pg.requests, pg.errors)

            # an audio-only recording without speakers: no timeline, so no empty grey bars (#38 item 7)
            from fixture_facts import MEETING_NAME

            mt_id = processed[MEETING_NAME]["recording_id"]
            html_mt = _write(mt_id, tmp_path / "meeting.html")
            pg = Page(b, html_mt)
            page = pg.page
            assert page.locator("#timeline").count() == 0 and page.locator(".track").count() == 0
            # every segment listed (how many depends on the run: test_amends re-decodes it with a vocabulary)
            n_mt = len(snapshot.read(mt_id).segments)
            assert page.locator("#segs .seg").count() == n_mt >= 1 and page.locator("#screens").count() == 0
            page.screenshot(path=str(art / "report_audio_only.png"), full_page=True)
            assert pg.requests == [f"{SITE}/"] and pg.errors == [], (pg.requests, pg.errors)

            # hostile transcript and OCR text (what a malicious screen or speech could put there)
            fake = manifests.snap(
                [{"seq": 0, "t0_ms": 0, "t1_ms": 4000, "text": HOSTILE, "speaker": "S1"},
                 {"seq": 1, "t0_ms": 4000, "t1_ms": 8000, "text": "<a href='javascript:window.__pwned=1'>x</a>",
                  "speaker": "S2"}],
                [{"ms": 0, "file": "frames/x/t0.jpg", "ocr_text": "javascript:alert(1) " + HOSTILE}],
                filename=HOSTILE, duration_ms=9000, names={"S1": HOSTILE}, turns=[[0, 4000, "S1"], [4000, 8000, "S2"]],
                model_name=HOSTILE)
            html = report.render(fake, lambda key: "javascript:window.__pwned=1")
            pg = Page(b, html)
            page = pg.page
            page.locator(".thumb").click()
            page.keyboard.press("Escape")
            page.locator("details summary").first.click()
            assert page.locator("a").count() == 0 and page.locator("script").count() == 1
            assert page.evaluate("() => window.__pwned") is None
            assert HOSTILE in page.locator("pre.ocr").first.inner_text()
            assert HOSTILE in page.inner_text("#screens")
            assert pg.requests == [f"{SITE}/"] and not [e for e in pg.errors if "dialog" in e], pg.errors
        finally:
            b.close()
