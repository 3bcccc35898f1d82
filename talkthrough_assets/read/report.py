"""`talkthrough report`: one self-contained, offline HTML page of a processed recording, built from its
published manifest (the snapshot the MCP server serves): a header, a timeline of the unique keyframes
(inlined as small JPEGs; a click opens one large), speaker turns as coloured bands and scene cuts, the
transcript with recording and wall time, speaker names and the on-screen (OCR) text, every frame's screen
text, a search box over both, and the MCP call for each moment.

Everything from the recording (file name, transcript, OCR text, speaker names) is data an attacker may
control: it is written only through :func:`html.escape` into text and quoted attributes, never into the
script; the script reads numbers from ``data-`` attributes (and the large image's ``data:`` URL). A Content-Security-Policy allows no request at
all (images are ``data:`` URLs), so nothing the page holds can reach the network.
"""

from __future__ import annotations

import base64
import bisect
import io
from dataclasses import dataclass
from html import escape

from talkthrough_assets import store
from talkthrough_assets.model.manifest import FrameItem, WallClock
from talkthrough_assets.model.wallclock import t_wall

from talkthrough_assets.read import formats
from talkthrough_assets.read import snapshot

THUMB_WIDTH = 240
THUMB_QUALITY = 70
LARGE_WIDTH = 1024   # a thumbnail opens large: the size get_frames serves, text legible
COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7")
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "base-uri 'none'; form-action 'none'")


def _e(value) -> str:
    return escape("" if value is None else str(value), quote=True)


def _thumb(key: str, width: int = THUMB_WIDTH) -> str | None:
    """A frame as a small JPEG data URL (None when its file is gone)."""
    from PIL import Image

    try:
        path = store.local_file(key, immutable=True)
    except (FileNotFoundError, PermissionError):
        return None
    with Image.open(path) as im:
        im = im.convert("RGB")
        if im.width > width:
            im = im.resize((width, max(1, round(im.height * width / im.width))))
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=THUMB_QUALITY, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def _pct(ms: int, total: int) -> str:
    return f"{100.0 * max(0, min(ms, total)) / total:.3f}"


def build(rid: str) -> str:
    """The report's HTML. ValueError: an unknown recording, or one with no finished manifest."""
    return render(snapshot.finished(rid), _thumb, large=lambda key: _thumb(key, LARGE_WIDTH))


def render(snap: snapshot.Snapshot, thumb, large=None) -> str:
    """The HTML of one snapshot; ``thumb(file key)`` gives a frame's image URL (or None), ``large(file key)``
    the one a click on the thumbnail opens (default: the thumbnail's)."""
    unique = [f for f in snap.frames if f.duplicate_of is None]
    labels = sorted({t[2] for t in snap.turns} | {s.speaker for s in snap.segments if s.speaker})
    colour = {lab: COLOURS[i % len(COLOURS)] for i, lab in enumerate(labels)}
    names = snap.names if any(s.speaker for s in snap.segments) else {}
    title = f"{snap.rec.filename} · Talkthrough report"
    return "".join([
        f"<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<meta http-equiv=Content-Security-Policy content=\"{_e(CSP)}\">"
        f"<meta name=viewport content='width=device-width,initial-scale=1'><title>{_e(title)}</title>"
        f"<style>{STYLE}</style></head><body>",
        _header(snap, len(unique), labels, names),
        _timeline(snap, unique, labels, colour, names, thumb, large or thumb),
        "<dialog id=large aria-label='frame, large'><p id=large-cap></p></dialog>",  # the script adds the image
        "<section id=transcript><input id=q type=search placeholder='search transcript and screen text' "
        "aria-label=search autocomplete=off><span id=count></span><ol id=segs>",
        _transcript(snap, colour, names),
        "</ol>",
        _screens(unique, snap.wall_clock),
        "</section>",
        f"<script>{SCRIPT}</script></body></html>"])


def _header(snap: snapshot.Snapshot, unique: int, labels: list[str], names: dict[str, str]) -> str:
    """The file name and the facts of the recording: its id, duration, wall clock, models, counts, speakers."""
    rec, wc = snap.rec, snap.wall_clock
    tr = snap.manifest.transcript
    di = tr.diarization if tr.diarization is not None and tr.diarization.available else None
    models = [m for m in (tr.model, di.segmentation_model if di else None, di.embedding_model if di else None) if m]
    facts = [("recording id", snap.rid),
             ("duration", formats.clock(rec.duration_ms) + f" ({rec.duration_ms / 1000:.1f} s)"),
             ("kind", rec.kind),
             ("wall-clock start", f"{_day_and_time(t_wall(wc, 0))} (source: {wc.source}, confidence: {wc.confidence})"
              if wc else "unknown"),
             ("language", rec.language or "-"), ("models", ", ".join(models) or "-"),
             ("segments", len(snap.segments)), ("frames", f"{len(snap.frames)} ({unique} unique)"),
             ("speakers", ", ".join(formats.speaker_tag(lab, names) + (" (by voice)" if snap.name_sources.get(lab) == "voice"
                                                                      else "") for lab in labels) or "not diarized")]
    # unconfirmed voice matches with enrolled people
    facts += [(f"{lab} voice", m.hint or "voice match") for lab, m in sorted(snap.voice_hints.items())]
    return (f"<header><h1 id=title>{_e(rec.filename)}</h1><dl>"
            + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts) + "</dl></header>")


def _timeline(snap: snapshot.Snapshot, unique: list[FrameItem], labels: list[str], colour: dict[str, str],
              names: dict[str, str], thumb, large) -> str:
    """Every scene once (thumbnails, each with its times), turns as bands, cuts as ticks; each part only when it
    has something to show (an audio-only recording without speakers has no timeline at all)."""
    if not unique and not snap.turns:
        return ""
    total = max(1, snap.rec.duration_ms, *(s.t1_ms for s in snap.segments))
    out = ["<section id=timeline aria-label=timeline>"]
    w = out.append
    if unique:
        w("<div class=frames>" + "".join(_thumb_button(f, snap.wall_clock, thumb, large) for f in unique) + "</div>")
    if snap.turns:
        w("<div class=track id=turns>")
    for t0, t1, lab in snap.turns:
        left, width = _pct(t0, total), f"{max(0.2, 100.0 * (t1 - t0) / total):.3f}"
        w(f"<button class=turn data-t='{int(t0)}' data-t1='{int(t1)}' style='left:{left}%;width:{width}%;background:{colour.get(lab, '#888')}' "
          f"title='{_e(formats.speaker_tag(lab, names))} {_e(formats.clock(t0))}'></button>")
    if snap.turns:
        w("</div>")
    if unique:
        w("<div class=track id=cuts>" + "".join(
            f"<span class=cut style='left:{_pct(f.ms, total)}%' title='scene cut {_e(formats.clock(f.ms))}'></span>"
            for f in unique) + "</div>")
    if labels:
        w("<p class=legend>" + " ".join(
            f"<span style='background:{colour[lab]}'>{_e(formats.speaker_tag(lab, names))}</span>" for lab in labels)
          + "</p>")
    return "".join(out) + "</section>"


def _thumb_button(f: FrameItem, wc: WallClock | None, thumb, large) -> str:
    """One scene: its thumbnail (a click marks its narration and opens it large) with its times as the
    transcript lines have them (from the start, and the time of day when the wall clock is known)."""
    src = thumb(f.file)
    big = large(f.file) if src else None
    at, wall = formats.clock(f.ms), t_wall(wc, f.ms)
    img = f"<img alt='frame at {_e(at)}' src='{_e(src)}'>" if src else "<span>missing</span>"
    when = f"{at} ({formats.time_of_day(wall)} {formats.zone(wall)})" if wall else at
    return (f"<button class=thumb data-t='{int(f.ms)}' title='{_e(when)}: click to enlarge'"
            + (f" data-full='{_e(big)}'" if big else "") + f">{img}<small><span class=time>{_e(at)}</span>"
            + (f"<span class=wall>{_e(formats.time_of_day(wall))}</span>" if wall else "") + "</small></button>")


def _transcript(snap: snapshot.Snapshot, colour: dict[str, str], names: dict[str, str]) -> str:
    """A line per segment: its times, speaker and text, and what was on screen then (folded)."""
    if not snap.segments:
        return f"<li class=none>{_e(snap.transcript_reason or 'no transcript')}</li>"
    by_ms = {f.ms: f for f in snap.frames}
    frame_ms = [f.ms for f in snap.frames]

    def ocr_at(ms: int) -> tuple[int | None, str]:
        i = bisect.bisect_right(frame_ms, ms) - 1
        if i < 0:
            return None, ""
        f = snap.frames[i]
        src = by_ms.get(f.duplicate_of) if f.duplicate_of is not None else f
        return f.ms, (f.ocr_text or (src.ocr_text if src is not None else None) or "")

    out = []
    for s in snap.segments:
        t0 = int(s.t0_ms)
        wall = t_wall(snap.wall_clock, t0)
        fms, ocr = ocr_at(t0)
        who = s.speaker
        # a person reads the time of day; the full stamp and the agent's call for this moment are a hover away
        call = f'get_moment {{"id": "{snap.rid}", "t_ms": {t0}}}'
        out.append(
            f"<li class=seg data-t='{t0}' data-t1='{int(s.t1_ms)}' title='{_e(call)}'>"
            f"<span class=time>{_e(formats.clock(t0))}</span>"
            + (f"<span class=wall title='{_e(wall)}'>{_e(formats.time_of_day(wall))}</span>" if wall else "")
            + (f"<b class=who style='color:{colour.get(who, '#333')}'>{_e(formats.speaker_tag(who, names, s.overlap))}</b>" if who else "")
            + f"<span class=text>{_e(s.text)}</span>"
            + (f"<details><summary>on screen (frame at {_e(formats.clock(fms))})</summary><pre class=ocr>{_e(ocr)}</pre></details>"
               if ocr else "") + "</li>")
    return "".join(out)


def _screens(unique: list[FrameItem], wc: WallClock | None) -> str:
    """Every on-screen text, not only the frames a segment points at: the search box covers them all."""
    screens = [(f.ms, f.ocr_text or "") for f in unique if (f.ocr_text or "").strip()]
    if not screens:
        return ""
    return ("<h2>On screen</h2><ol id=screens>" + "".join(
        f"<li class=screen data-t='{int(ms)}'><span class=time>{_e(formats.clock(ms))}</span>"
        + (f"<span class=wall>{_e(formats.time_of_day(wall))}</span>" if (wall := t_wall(wc, ms)) else "")
        + f"<pre class=ocr>{_e(text)}</pre></li>" for ms, text in screens) + "</ol>")


def _day_and_time(stamp: str) -> str:
    """``2026-03-14T09:27:00.120+00:00`` -> ``2026-03-14 09:27:00 UTC``: the date and zone every time of day in the
    page is in."""
    return f"{stamp[:10]} {formats.time_of_day(stamp)} {formats.zone(stamp)}"


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}header{padding:12px 20px;background:#f4f4f6}
h1{font-size:20px;margin:0 0 8px;word-break:break-all}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
dt{color:#666}dd{margin:0}#timeline{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:8px 20px;z-index:1}
.frames{display:flex;gap:6px;overflow-x:auto;padding-bottom:4px}.thumb{border:1px solid #ccc;padding:2px;background:#fff;cursor:pointer;flex:none}
.thumb img{display:block;height:120px}.thumb.hit{border:2px solid #d08a00}.thumb small{display:block;color:#555}.track{position:relative;height:12px;margin-top:4px;background:#eee}
.turn{position:absolute;top:0;height:12px;border:0;padding:0;cursor:pointer;opacity:.85}.cut{position:absolute;top:0;width:1px;height:12px;background:#222}
.legend span{color:#fff;padding:0 6px;margin-right:4px;border-radius:3px}#transcript{padding:8px 20px}#q{width:320px;padding:4px}#count{margin-left:8px;color:#666}
#segs{list-style:none;padding:0}.seg{padding:4px 6px;border-bottom:1px solid #eee}.seg.hit{background:#fff3c4}.time,.wall{color:#666;margin-right:8px;font-variant-numeric:tabular-nums}
h2{font-size:15px;margin:16px 0 4px}#screens{list-style:none;padding:0}.screen{padding:4px 6px;border-bottom:1px solid #eee;cursor:pointer}
.screen.hit{background:#fff3c4}#large{max-width:96vw;padding:6px;border:1px solid #888}#large img{display:block;max-width:92vw;max-height:84vh}
#large::backdrop{background:rgba(0,0,0,.6)}#large p{margin:4px 0 0;color:#555}.who{margin-right:6px}mark{background:#ffd54a}.seg{cursor:pointer}.ocr{white-space:pre-wrap;background:#f7f7f7;padding:4px;margin:2px 0}
"""

SCRIPT = """
(function(){
  var segs=Array.prototype.slice.call(document.querySelectorAll('#segs .seg'));
  var screens=Array.prototype.slice.call(document.querySelectorAll('#screens .screen'));
  var dlg=document.getElementById('large'),cap=document.getElementById('large-cap'),big=null;
  function enlarge(el){
    if(!el.dataset.full||!dlg.showModal)return;
    if(!big){big=document.createElement('img');big.id='large-img';big.alt='frame, large';dlg.insertBefore(big,cap);}
    big.src=el.dataset.full; cap.textContent=el.title.replace(/: click to enlarge$/,'');
    dlg.showModal();
  }
  dlg.addEventListener('click',function(){dlg.close();});
  var thumbs=Array.prototype.slice.call(document.querySelectorAll('.thumb'));
  var LEAD=250;  // narration starts a little after the cut it speaks to
  function segFor(t,until){
    // what was said for the screen shown from t: the first segment that starts in [t-LEAD, until), else the one
    // on at t, else the last one before t
    var first=null,on=null,before=null;
    for(var i=0;i<segs.length;i++){
      var a=+segs[i].dataset.t,b=+segs[i].dataset.t1;
      if(first===null&&a>=t-LEAD&&a<until)first=segs[i];
      if(on===null&&a<=t&&t<b)on=segs[i];
      if(a<=t)before=segs[i];
    }
    return first||on||before||segs[0]||null;
  }
  function frameAt(t){
    var best=null;
    thumbs.forEach(function(f){ if(+f.dataset.t<=t+LEAD)best=f; });
    return best||thumbs[0]||null;
  }
  function mark(el,all,how){
    all.forEach(function(x){x.classList.remove('hit');});
    if(!el)return;
    el.classList.add('hit');
    el.scrollIntoView(how);
  }
  function untilAfter(el){
    if(el.dataset.t1)return +el.dataset.t1;
    var t=+el.dataset.t,next=Infinity;
    thumbs.forEach(function(f){ var u=+f.dataset.t; if(u>t&&u<next)next=u; });
    return next;
  }
  document.querySelectorAll('[data-t]').forEach(function(el){
    if(el.classList.contains('seg')){
      // a transcript line shows the frame that was on screen then
      el.addEventListener('click',function(ev){
        if(ev.target.closest('details'))return;
        mark(frameAt(+el.dataset.t),thumbs,{block:'nearest',inline:'center'});
        segs.forEach(function(s){s.classList.remove('hit');}); el.classList.add('hit');
      });
      return;
    }
    el.addEventListener('click',function(){
      mark(segFor(+el.dataset.t,untilAfter(el)),segs,{block:'center'});
      if(el.classList.contains('thumb')){mark(el,thumbs,{block:'nearest',inline:'nearest'}); enlarge(el);}
    });
  });
  // search: the words a person sees (transcript, speaker, on-screen text), each match marked, and an on-screen
  // text that matches opened
  function fields(el){ return Array.prototype.slice.call(el.querySelectorAll('.text,.who,pre.ocr')); }
  function paint(node,want){
    if(node.dataset.orig===undefined)node.dataset.orig=node.textContent;
    var text=node.dataset.orig,low=text.toLowerCase(),at=0,hit=false;
    while(node.firstChild)node.removeChild(node.firstChild);
    if(want){
      for(var i=low.indexOf(want);i>=0;i=low.indexOf(want,at)){
        node.appendChild(document.createTextNode(text.slice(at,i)));
        var m=document.createElement('mark'); m.textContent=text.slice(i,i+want.length); node.appendChild(m);
        at=i+want.length; hit=true;
      }
    }
    node.appendChild(document.createTextNode(text.slice(at)));
    return hit;
  }
  function filter(list,want){
    var n=0;
    list.forEach(function(el){
      var hit=false;
      fields(el).forEach(function(f){
        var h=paint(f,want); hit=hit||h;
        var d=f.closest('details'); if(d)d.open=!!(want&&h);
      });
      var show=!want||hit; el.style.display=show?'':'none'; if(show)n++;
    });
    return n;
  }
  var q=document.getElementById('q'),count=document.getElementById('count');
  q.addEventListener('input',function(){
    var want=q.value.trim().toLowerCase();
    var n=filter(segs,want),m=filter(screens,want);
    count.textContent=want?(n+' of '+segs.length+' segments'+(screens.length?', '+m+' of '+screens.length+' screens':'')):'';
  });
})();
"""


@dataclass(frozen=True, slots=True)
class Written:
    """A report written: whose, where and how big."""

    recording_id: str
    path: str
    size_bytes: int


def write(rid: str, path) -> Written:
    """Write the report of ``rid`` to ``path`` (temp file + rename)."""
    from pathlib import Path

    html = build(rid).encode()
    target = Path(path)
    store.atomic_write_bytes(target, html)
    return Written(rid, str(target), len(html))


def publish(rid: str) -> Written:
    """Write the report of ``rid`` into the data root (``reports/<id>.html``, beside its manifest; on an
    ``s3://`` root one PUT), as each run does after publishing the manifest."""
    html = build(rid).encode()
    return Written(rid, store.put_bytes(store.report_key(rid), html), len(html))
