"""`talkthrough export` (#22 item 2) on a recording processed by the real Dagster job with diarization, its
speakers named (names with markup in them): every format through the real CLI, SRT identical to the MCP
server's get_transcript SRT, and the WebVTT file loaded by Chromium's own parser through a <track>."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fixture_facts import PROCESS_OPTIONS, TWO_VOICES_NAME, TWO_VOICES_PATH, unique_copy
from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli
from talkthrough_assets.app import service
from talkthrough_assets.read.reader import Reader

CHROMIUM = "/usr/bin/chromium"  # Debian's package (.ci/run installs it); no browser download
NASTY = "Ann <b>O'Neil</b> & co"


def _export(ref: str, fmt: str, *extra: str) -> str:
    r = CliRunner().invoke(cli.app, ["export", ref, "--format", fmt, *extra])
    assert r.exit_code == 0, r.output
    return r.output


def test_export_formats_on_a_diarized_recording_and_vtt_in_chromium(tt_home, tmp_path):
    media = unique_copy(TWO_VOICES_PATH, tmp_path / "call 'q3' <draft>.m4a", "export")
    s = service.process(media, overrides={**PROCESS_OPTIONS[TWO_VOICES_NAME], "recorded_at": "2026-03-14T11:00:00+01:00"})
    assert s["status"] == "processed" and s["diarized"], s
    rid = s["recording_id"]
    service.set_speaker_names(rid, [f"S1={NASTY}"])

    srt = _export(str(media), "srt")  # by path: hashed to the id
    cues = re.findall(r"(?m)^(\d+)\n(\d\d:\d\d:\d\d,\d{3}) --> (\d\d:\d\d:\d\d,\d{3})\n(.*)$", srt)
    assert [int(c[0]) for c in cues] == list(range(1, len(cues) + 1)) and len(cues) >= 2
    assert any(c[3].startswith(f"[S1 {NASTY}] ") for c in cues) and any(c[3].startswith("[S2] ") for c in cues)
    reader = Reader(refresh_interval=0)
    try:
        assert reader.get_transcript(rid, format="srt").srt == srt  # one formatting path
    finally:
        reader.index.close()

    doc = json.loads(_export(rid, "json"))
    assert doc["speaker_names"] == {"S1": NASTY} and len(doc["segments"]) == len(cues)
    assert doc["segments"][0]["t_wall"].startswith("2026-03-14T11:00:0")
    md = _export(rid, "md", "--wall-clock")
    assert md.startswith(r"# call 'q3' \<draft\>.m4a") and r"S1 Ann \<b\>O'Neil\</b\> \& co:" in md
    assert "2026-03-14T11:00:0" in md and "\\." not in md  # periods as written (issue #38, item 8)
    txt = _export(rid, "txt").splitlines()
    assert len(txt) == len(cues) and all(re.match(r"\[\d\d:\d\d:\d\d\] S[12]", ln) for ln in txt)
    out = tmp_path / "out" / "call.vtt"
    out.parent.mkdir()
    r = CliRunner().invoke(cli.app, ["export", rid, "--format", "vtt", "-o", str(out)])
    assert r.exit_code == 0 and out.is_file(), r.output
    bad = CliRunner().invoke(cli.app, ["export", rid, "--format", "docx"])
    assert bad.exit_code == 2 and "unknown format" in bad.output
    missing = CliRunner().invoke(cli.app, ["export", "0" * 16, "--format", "srt"])
    assert missing.exit_code == 2 and "unknown recording 0000000000000000" in missing.output  # #38 item 8
    missing = CliRunner().invoke(cli.app, ["report", "0" * 16])
    assert missing.exit_code == 2 and "unknown recording 0000000000000000" in missing.output

    # Chromium parses the VTT file itself: every cue, with the times and the text (markup escaped) as written
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} missing: apt-get install -y chromium"
    site = "http://talkthrough.test"
    html = (f"<!doctype html><video id=v muted preload=auto><track id=t kind=subtitles src='{site}/call.vtt' "
            "default></video>")
    requests: list[str] = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = b.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

            def serve(route):
                requests.append(route.request.url)
                if route.request.url == f"{site}/call.vtt":
                    route.fulfill(body=out.read_bytes(), content_type="text/vtt")
                elif route.request.url == f"{site}/":
                    route.fulfill(body=html, content_type="text/html")
                else:
                    route.abort()

            page.route("**/*", serve)
            page.goto(f"{site}/")
            got = page.evaluate("""() => new Promise((ok, fail) => {
                const el = document.getElementById('t');
                const done = () => ok(Array.from(el.track.cues).map(c => [c.startTime, c.endTime, c.text]));
                if (el.readyState === 2) return done();
                el.addEventListener('load', done);
                el.addEventListener('error', () => fail('track failed to load'));
                el.track.mode = 'hidden';
                setTimeout(() => fail('timeout, readyState ' + el.readyState), 20000);
            })""")
        finally:
            b.close()
    assert len(got) == len(cues) and not errors, (got, errors)
    for (start, end, text), (_n, t0, t1, _line) in zip(got, cues):
        assert abs(start - _secs(t0)) < 1e-6 and abs(end - max(_secs(t1), start + 0.001)) < 1e-6
    seg_texts = [s["text"] for s in doc["segments"]]
    for (_s, _e, text), seg, want in zip(got, doc["segments"], seg_texts):
        voice = NASTY if seg.get("speaker") == "S1" else seg["speaker"]
        assert text == f"<v {voice.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}>" \
                       + want.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"), text
    assert set(requests) == {f"{site}/", f"{site}/call.vtt"}


def _secs(t: str) -> float:
    h, m, rest = t.split(":")
    s, ms = rest.split(",")
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000
