#!/usr/bin/env python3
"""Maintainer tool: (re)write the TIMIT-sample part of bench/eval/word_times.json from a local bare git
mirror of kenderdukristel/Projekt-DAlgo (``--git-root``, layout ``owner+name/repo``, as the search tool's
``fetch`` lays it out).

That repository's folder ``TIMIT MIT/`` is NLTK's TIMIT corpus sample (the files its ``download.sh`` lists
from ``web.mit.edu/6.863/share/nltk_lite/timit/``): 16 speakers (one woman and one man from each of
TIMIT's eight dialect regions), 10 sentences each, 16-kHz WAV with TIMIT's hand-labelled word boundaries
(``.wrd``: start and end sample, word). NLTK distributes the sample under CC BY-NC-SA ("Copyright 1993
Linguistic Data Consortium", nltk_data index.xml): fine for evaluating, not for shipping.

For each utterance the JSON records the WAV's source (repo, commit, path, git blob id, size, sha256; the
audio itself is not committed: bench/bench_word_timing.py materialises it with bench/fetch_eval.py's
``read_source``), the ``.wrd`` file's blob id, and the words with start/end in seconds (sample / 16000).
``split``: speakers of dialect regions 1, 3, 5, 7 tune constants (``tune``), those of 2, 4, 6, 8 are held
out (``heldout``): constants of stages/word_timing.py are chosen on ``tune`` only.

    python bench/eval/build_word_times.py --git-root /work/.mirror
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "word_times.json"
REPO = "kenderdukristel/Projekt-DAlgo"
FOLDER = "TIMIT MIT"
SR = 16000


def _git(gd: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(gd), *args], check=True, capture_output=True).stdout


def dump(doc: dict) -> str:
    """JSON with one line per word."""
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    return re.sub(r'\{\n\s*"word": (.*),\n\s*"start_s": (.*),\n\s*"end_s": (.*)\n\s*\}',
                  r'{"word": \1, "start_s": \2, "end_s": \3}', text) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-root", type=Path, required=True)
    a = ap.parse_args(argv)
    base = a.git_root / REPO.replace("/", "+")
    gd = next(c for c in (base / "repo" / ".git", base / "repo", base) if (c / "objects").is_dir())
    commit = _git(gd, "rev-parse", "HEAD").decode().strip()
    tree = {}
    for line in _git(gd, "ls-tree", "-r", "-z", commit, "--", FOLDER).split(b"\0"):
        if line:
            meta, path = line.decode().split("\t", 1)
            tree[path] = meta.split()[2]
    clips = []
    for path in sorted(p for p in tree if p.endswith(".wrd")):
        stem = path[: -len(".wrd")]
        spk, utt = stem.split("/")[-2:]
        wav = _git(gd, "cat-file", "blob", tree[stem + ".wav"])
        words = []
        for line in _git(gd, "cat-file", "blob", tree[path]).decode().splitlines():
            if line.strip():
                s, e, w = line.split()
                words.append({"word": w, "start_s": int(s) / SR, "end_s": int(e) / SR})
        region = int(spk[2])
        clips.append({
            "id": f"timit_{spk}_{utt}",
            "speaker": spk,
            "split": "tune" if region % 2 else "heldout",
            "sources": [{"repo": REPO, "commit": commit, "path": stem + ".wav", "blob": tree[stem + ".wav"],
                         "size": len(wav), "sha256": hashlib.sha256(wav).hexdigest()}],
            "reference": f"TIMIT hand-labelled word boundaries, {REPO} {stem}.wrd (blob {tree[path]}); NLTK's "
                         "TIMIT sample, CC BY-NC-SA; sample indices / 16000",
            "words": words,
        })
    doc = json.loads(OUT.read_text())
    keep = [c for c in doc["clips"] if not c.get("id", "").startswith("timit_")]
    doc["clips"] = keep + clips
    OUT.write_text(dump(doc))
    n = sum(len(c["words"]) for c in clips)
    print(f"{len(clips)} TIMIT-sample utterances, {n} words, {len({c['speaker'] for c in clips})} speakers "
          f"-> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
