#!/usr/bin/env python3
"""Materialise the evaluation set of bench/eval/manifest.json into a cache folder.

    python bench/fetch_eval.py [--cache DIR] [--git-root DIR] [--only SUBSTR] [--check]

Every clip is a file taken from a public GitHub repository at a pinned commit (see bench/eval/SOURCES.md),
or a deterministic edit of such files (a member of a zip archive, a time window of a WAV, raw PCM given a
WAV header, several WAVs
of distinct speakers played one after another). Sources are read

* from local bare git mirrors when ``--git-root`` is given (``ROOT/owner+name/repo`` or ``.../repo/.git``,
  the layout of the search tool's ``fetch``), by git blob id; else
* from ``https://raw.githubusercontent.com/OWNER/NAME/COMMIT/PATH`` (pinned by commit).

Each source is checked against its sha256 and git blob id, and each written clip against the manifest's
sha256, so a clip in the cache is byte-identical on every machine. Next to each ``ID.EXT`` the script
writes ``ID.txt`` (reference text, when there is one) and ``ID.rttm`` (reference speaker turns, when there
are some). The default cache is ``$TALKTHROUGH_EVAL_CACHE`` or ``~/.cache/talkthrough-eval``.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import array
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "eval" / "manifest.json"
RAW_BASE = "https://raw.githubusercontent.com"  # serves OWNER/NAME/COMMIT/PATH


def default_cache() -> Path:
    return Path(os.environ.get("TALKTHROUGH_EVAL_CACHE") or Path.home() / ".cache" / "talkthrough-eval")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# ---------------------------------------------------------------- sources

def _git_dir(root: Path, repo: str) -> Path | None:
    base = root / repo.replace("/", "+")
    for cand in (base / "repo" / ".git", base / "repo", base):
        if (cand / "objects").is_dir() and (cand / "HEAD").is_file():
            return cand
    return None


def read_source(src: dict, git_root: Path | None = None, timeout: float = 60.0,
                base_url: str = RAW_BASE) -> bytes:
    """The bytes of one source file, verified against its sha256 and git blob id."""
    data = None
    where = ""
    if git_root is not None:
        gd = _git_dir(git_root, src["repo"])
        if gd is not None:
            r = subprocess.run(["git", "--git-dir", str(gd), "cat-file", "blob", src["blob"]],
                               capture_output=True)
            if r.returncode == 0:
                data, where = r.stdout, f"{gd} blob {src['blob'][:12]}"
    if data is None:
        url = f"{base_url.rstrip('/')}/{src['repo']}/{src['commit']}/{urllib.request.quote(src['path'])}"
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - pinned https URL
            data, where = resp.read(), url
    if git_blob_id(data) != src["blob"] or sha256(data) != src["sha256"]:
        raise ValueError(f"{src['repo']}:{src['path']} from {where}: content does not match the manifest "
                         f"(blob {git_blob_id(data)[:12]}, sha256 {sha256(data)[:12]})")
    return data


# ---------------------------------------------------------------- WAV edits (pure, byte-exact)

def parse_wav(data: bytes) -> tuple[bytes, dict, bytes]:
    """(fmt chunk body, {tag, channels, rate, block_align, bits}, PCM data) of a RIFF/WAVE file."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a RIFF/WAVE file")
    pos, fmt, pcm = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if cid == b"fmt ":
            fmt = body
        elif cid == b"data":
            pcm = body
        pos += 8 + size + (size & 1)
    if fmt is None or pcm is None:
        raise ValueError("WAV without fmt or data chunk")
    tag, channels, rate, _, block_align, bits = struct.unpack("<HHIIHH", fmt[:16])
    return fmt, {"tag": tag, "channels": channels, "rate": rate, "block_align": block_align, "bits": bits}, pcm


def write_wav(fmt: bytes, pcm: bytes) -> bytes:
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
    if len(pcm) & 1:
        body += b"\0"
    return b"RIFF" + struct.pack("<I", len(body)) + body


def pcm16_fmt(rate: int, channels: int = 1) -> bytes:
    return struct.pack("<HHIIHH", 1, channels, rate, rate * channels * 2, channels * 2, 16)


def crop(data: bytes, start_s: float, end_s: float) -> bytes:
    fmt, p, pcm = parse_wav(data)
    a = round(start_s * p["rate"]) * p["block_align"]
    b = round(end_s * p["rate"]) * p["block_align"]
    return write_wav(fmt, pcm[a:b])


def raw_to_wav(data: bytes, rate: int, channels: int = 1) -> bytes:
    return write_wav(pcm16_fmt(rate, channels), data[: len(data) - len(data) % (2 * channels)])


def speech_bounds(pcm: bytes, rate: int, rel: float = 0.05, pad_s: float = 0.05) -> tuple[int, int]:
    """First and last sample of a mono 16-bit clip whose 10-ms frame mean |x| reaches ``rel`` of the
    loudest frame's, widened by ``pad_s`` (integer arithmetic: the same on every machine)."""
    x = array.array("h")
    x.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if sys.byteorder == "big":
        x.byteswap()
    hop = rate // 100
    frames = [sum(abs(v) for v in x[i:i + hop]) for i in range(0, len(x), hop)]
    if not frames or max(frames) == 0:
        return 0, len(x)
    thr = max(frames) * rel
    loud = [i for i, f in enumerate(frames) if f >= thr]
    pad = round(pad_s * rate)
    return max(0, loud[0] * hop - pad), min(len(x), (loud[-1] + 1) * hop + pad)


def concat(parts: list[tuple[bytes, str]], gap_s: float) -> tuple[bytes, list[tuple[float, float, str]]]:
    """Mono 16-bit WAVs (same rate) trimmed to their speech and played one after another with ``gap_s``
    of silence between them; returns the WAV and the [(start_s, end_s, speaker)] of each part."""
    out, turns, rate, t = bytearray(), [], None, 0
    for i, (data, speaker) in enumerate(parts):
        _, p, pcm = parse_wav(data)
        if p["tag"] != 1 or p["channels"] != 1 or p["bits"] != 16:
            raise ValueError(f"part {i}: composites take mono 16-bit PCM WAV, got {p}")
        if rate is None:
            rate = p["rate"]
        elif p["rate"] != rate:
            raise ValueError(f"part {i}: sample rate {p['rate']} != {rate}")
        if i:
            gap = round(gap_s * rate)
            out += b"\0\0" * gap
            t += gap
        a, b = speech_bounds(pcm, rate)
        out += pcm[2 * a:2 * b]
        turns.append((round(t / rate, 3), round((t + b - a) / rate, 3), speaker))
        t += b - a
    return write_wav(pcm16_fmt(rate), bytes(out)), turns


def build(clip: dict, get) -> tuple[bytes, list | None]:
    """The clip's bytes from its sources (``get(src) -> bytes``), and the turns a composite defines."""
    edit = clip.get("edit") or {"op": "copy"}
    srcs = clip["sources"]
    op = edit["op"]
    if op == "copy":
        return get(srcs[0]), None
    if op == "crop":
        return crop(get(srcs[0]), edit["start_s"], edit["end_s"]), None
    if op == "unzip":  # one member of a zip archive, as stored (decompressed)
        with zipfile.ZipFile(io.BytesIO(get(srcs[0]))) as z:
            return z.read(edit["member"]), None
    if op == "raw_to_wav":
        return raw_to_wav(get(srcs[0]), edit["rate"], edit.get("channels", 1)), None
    if op == "concat":  # a part may name a window of its source: start_s/end_s
        parts = [(crop(get(s), s["start_s"], s["end_s"]) if "start_s" in s else get(s), s["speaker"])
                 for s in srcs]
        return concat(parts, edit["gap_s"])
    raise ValueError(f"{clip['id']}: unknown edit {op!r}")


def rttm_text(uri: str, turns: list) -> str:
    return "".join(f"SPEAKER {uri} 1 {a:.3f} {b - a:.3f} <NA> <NA> {s} <NA> <NA>\n" for a, b, s in turns)


# ---------------------------------------------------------------- main

def fetch(manifest: Path = MANIFEST, cache: Path | None = None, git_root: Path | None = None,
          only: str | None = None, check: bool = False, log=print, base_url: str = RAW_BASE) -> dict:
    man = json.loads(Path(manifest).read_text(encoding="utf-8"))
    cache = Path(cache or default_cache()).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    memo: dict[str, bytes] = {}

    def get(src):
        if src["blob"] not in memo:
            memo[src["blob"]] = read_source(src, git_root, base_url=base_url)
        return memo[src["blob"]]

    stats = {"ok": 0, "fetched": 0, "failed": []}
    for clip in man["clips"]:
        if only and only not in clip["id"]:
            continue
        dest = cache / clip["file"]
        try:
            if dest.is_file() and sha256(dest.read_bytes()) == clip["sha256"]:
                stats["ok"] += 1
            elif check:
                raise ValueError("missing or different in the cache")
            else:
                data, _ = build(clip, get)
                if sha256(data) != clip["sha256"]:
                    raise ValueError(f"built file has sha256 {sha256(data)[:12]}, manifest says "
                                     f"{clip['sha256'][:12]}")
                tmp = dest.with_name(dest.name + ".part")
                tmp.write_bytes(data)
                tmp.replace(dest)
                stats["fetched"] += 1
            if not check:
                if clip.get("text"):
                    (cache / f"{clip['id']}.txt").write_text(clip["text"] + "\n", encoding="utf-8")
                if clip.get("turns"):
                    (cache / f"{clip['id']}.rttm").write_text(rttm_text(clip["id"], clip["turns"]),
                                                              encoding="utf-8")
        except Exception as e:  # noqa: BLE001 - reported per clip, the others go on
            stats["failed"].append((clip["id"], str(e)))
            log(f"FAILED {clip['id']}: {e}")
    log(f"{cache}: {stats['ok']} already there, {stats['fetched']} written, {len(stats['failed'])} failed")
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=None, help="default $TALKTHROUGH_EVAL_CACHE or "
                                                              "~/.cache/talkthrough-eval")
    ap.add_argument("--git-root", type=Path, default=None, help="folder of bare git mirrors (owner+name/repo)")
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--only", default=None, help="clips whose id contains this")
    ap.add_argument("--check", action="store_true", help="verify the cache only; fetch nothing")
    ap.add_argument("--base-url", default=RAW_BASE, help="a server laid out as OWNER/NAME/COMMIT/PATH (default "
                                                          "%(default)s)")
    a = ap.parse_args(argv)
    st = fetch(a.manifest, a.cache, a.git_root, a.only, a.check, base_url=a.base_url)
    return 1 if st["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
