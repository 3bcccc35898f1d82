#!/usr/bin/env python3
"""Maintainer tool: add meeting excerpts the first evaluation set did not use (``meeting_*`` diarization clips).

The first set's meeting audio is eleven 30-s AMI excerpts from pyannote-audio's ``tests/data``. These are other
AMI Meeting Corpus excerpts, found in other places, with their reference turns taken from the BUT AMI
diarization setup (BUTSpeechFIT/AMI-diarization-setup, ``only_words``: every word of the AMI manual annotation
v1.6.2 is speech, adjacent words of one speaker are joined), cut to the clip's window and shifted to its start:

* ``meeting_es2004a_*``: ES2004a (AMI test set, 4 speakers), 750-810 s of the headset mix, as pyannote-audio's
  separation tutorial committed it (``tutorials/assets/seriously/mixture.wav``, 60 s, later removed from the
  tree; its own ``mixture.rttm`` drops a turn of FEE013 at 0-1.76 s, so it is not used). Two 30-s windows.
* ``meeting_en2002a_array1_184s``: EN2002a (AMI test set, 4 speakers), 30 s of the first far-field table
  array's first microphone (Array1-01, the SDM condition), as DiariZen committed it (``example/EN2002a_30s.wav``;
  its README names the SDM data and an earlier commit held the whole ``EN2002a.Array1-01.wav``). The file does
  not say where in the meeting it starts; it is 184.4 s of the annotation's time line (EN2002A_OFFSET).

Split (bench/bench_der.py ``HELD_OUT``): ES2004a, a meeting whose speakers appear in no other clip, is held out
of tuning; EN2002a's far-field excerpt is in the tuning half (its four speakers are those of ``ami_tst00_30s``,
a tuning clip: EN2002a 0-30 s through another microphone).

    python bench/eval/build_meeting_clips.py --git-root /work/.mirror
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import fetch_eval as F  # noqa: E402

REF_REPO = "BUTSpeechFIT/AMI-diarization-setup"
REF_LICENCE = "Apache-2.0"
AMI_ORIGIN = "AMI Meeting Corpus (CC BY 4.0)"
# Where DiariZen's 30 s sit in EN2002a, found by sliding the reference over the meeting (10-ms steps): the
# number of speakers the reference has at each instant correlates with the number two diarizers find in the
# clip (sherpa-onnx defaults and this project's turns stage) at r = 0.87 / 0.80 at 184.32 / 184.37 s, against
# r = -0.32 at 0 s; DER is lowest at 184.28-184.51 s; and DiariZen's README shows its output for the clip starting
# with two voices at 0.0-0.7 / 0.0-1.7 s and a third from 0.8 s, which the reference has at this offset
# (MEE073 to 1.58 s, MEE071 to 2.56 s, FEO072 from 0.72 s) and not at 0 s. Good to about 0.1 s.
EN2002A_OFFSET = 184.4
# id, repo, commit, path, window in the source file, AMI meeting, the file's start in the meeting, tags
CLIPS = [
    ("meeting_es2004a_750s", "pyannote/pyannote-audio", "c6057f08fc24bcded882abe5c73e22adec45c3fb",
     "tutorials/assets/seriously/mixture.wav", (0.0, 30.0), "ES2004a", 750.0, ["headset_mix"]),
    ("meeting_es2004a_780s", "pyannote/pyannote-audio", "c6057f08fc24bcded882abe5c73e22adec45c3fb",
     "tutorials/assets/seriously/mixture.wav", (30.0, 60.0), "ES2004a", 750.0, ["headset_mix"]),
    ("meeting_en2002a_array1_184s", "BUTSpeechFIT/DiariZen", "a60b18151dbbe246e4199d8ef5cd2ece3872ea94",
     "example/EN2002a_30s.wav", (0.0, 30.0), "EN2002a", EN2002A_OFFSET, ["far_field"]),
]
LICENCES = {"pyannote/pyannote-audio": "MIT", "BUTSpeechFIT/DiariZen": "MIT"}
MIN_TURN_S = 0.01  # a reference turn cut to less than one scoring frame by the window is dropped


def _mirror(git_root: Path, repo: str) -> Path:
    root = git_root / repo.replace("/", "+") / "repo"
    return root / ".git" if (root / ".git").is_dir() else root


def git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(root), *args], check=True, capture_output=True).stdout


def source(git_root: Path, repo: str, commit: str, path: str) -> tuple[dict, bytes]:
    root = _mirror(git_root, repo)
    data = git(root, "show", f"{commit}:{path}")
    blob = git(root, "rev-parse", f"{commit}:{path}").decode().strip()
    return {"repo": repo, "commit": commit, "path": path, "blob": blob, "size": len(data),
            "sha256": F.sha256(data)}, data


def window_turns(rttm: str, uri: str, t0: float, t1: float) -> list[list]:
    """The RTTM's turns of ``uri`` inside [t0, t1] of the meeting, cut to it and shifted to start at 0."""
    out = []
    for line in rttm.splitlines():
        f = line.split()
        if len(f) < 8 or f[0] != "SPEAKER" or f[1] != uri:
            continue
        a, b = float(f[3]), float(f[3]) + float(f[4])
        a, b = round(max(a, t0) - t0, 3), round(min(b, t1) - t0, 3)
        if b - a >= MIN_TURN_S:
            out.append([a, b, f[7]])
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-root", type=Path, required=True)
    args = ap.parse_args()
    man_path = HERE / "manifest.json"
    man = json.loads(man_path.read_text())
    man["clips"] = [c for c in man["clips"] if not c["id"].startswith("meeting_")]
    ref_root = _mirror(args.git_root, REF_REPO)
    ref_commit = git(ref_root, "rev-parse", "HEAD").decode().strip()
    man["repos"][REF_REPO] = {"commits": [ref_commit], "licence": REF_LICENCE}
    for cid, repo, commit, path, (w0, w1), uri, offset, tags in CLIPS:
        src, data = source(args.git_root, repo, commit, path)
        entry = man["repos"].setdefault(repo, {"commits": [], "licence": LICENCES[repo]})
        if commit not in entry["commits"]:
            entry["commits"].append(commit)
        whole = F.parse_wav(data)
        length = len(whole[2]) / whole[1]["block_align"] / whole[1]["rate"]
        edit = {"op": "copy"} if (w0, w1) == (0.0, round(length, 3)) else {"op": "crop", "start_s": w0, "end_s": w1}
        clip = F.build({"id": cid, "sources": [src], "edit": edit}, lambda s: data)[0]
        ref_path = f"only_words/rttms/test/{uri}.rttm"
        ref, rttm = source(args.git_root, REF_REPO, ref_commit, ref_path)
        turns = window_turns(rttm.decode(), uri, offset + w0, offset + w1)
        n = len({s for _, _, s in turns})
        man["clips"].append({
            "id": cid, "kind": "diarization", "language": "en", "file": f"{cid}.wav", "sources": [src],
            "edit": edit, "turns": turns,
            "turns_source": f"{REF_REPO} {ref_path} (uri {uri}), {offset + w0:g}-{offset + w1:g} s of the meeting, "
                            f"shifted to the clip's start",
            "turns_ref": ref,
            "tags": sorted({"meeting", "ami_corpus", "overlap", "spontaneous", f"{n}_speakers", *tags}),
            "sha256": F.sha256(clip), "size": len(clip), "duration_s": round(w1 - w0, 3),
            "licence": f"{repo}: {LICENCES[repo]}; turns: {REF_REPO}: {REF_LICENCE}",
            "audio_origin": f"{AMI_ORIGIN}, meeting {uri}, {offset + w0:g}-{offset + w1:g} s"})
    man_path.write_text(json.dumps(man, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(CLIPS)} meeting clips; references from {REF_REPO}@{ref_commit[:10]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
