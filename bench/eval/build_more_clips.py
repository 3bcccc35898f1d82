#!/usr/bin/env python3
"""Maintainer tool: add clips from sources the first evaluation set did not use (short phrases, pauses, digits).

1. Spoken digits with short pauses.

Free Spoken Digit Dataset (Jakobovski/free-spoken-digit-dataset, CC BY-SA 4.0): 6 English speakers, one digit
per 8-kHz WAV, trimmed by its authors to the word. Each clip here plays one speaker's digits one after another
with a short silence between them (bench/fetch_eval.py ``concat``: each part trimmed to its speech, then
``gap_s`` of silence), like counting, a phone number or a spelled code read out:

* ``fsdd_<speaker>_count``: one to nine, then zero, 0.15 s apart;
* ``fsdd_<speaker>_code``: ten digits in a fixed shuffled order, 0.20 s apart.

The reference text is the digits' words; the reference word times are exactly the parts' spans (the concat's
turns). Both go into bench/eval/manifest.json (kind ``asr``, tags ``numbers``, ``pauses``) and
bench/eval/word_times.json (``split``: george, jackson, lucas tune the word-timing constants; nicolas, theo,
yweweler are held out).

2. Uberi/speech_recognition's test clips (BSD-3-Clause): ``english.wav`` (1.6 s, "one two three": the text its
   tests expect from every engine), ``french.aiff`` and ``chinese.flac`` (short non-English phrases, their texts
   as the repository's tests give them for IBM's recognizer).

    python bench/eval/build_more_clips.py --git-root /work/.mirror
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

sys.path.insert(0, str(HERE))
import build_word_times  # noqa: E402  (its one-line-per-word JSON layout)

REPO = "Jakobovski/free-spoken-digit-dataset"
LICENCE = "CC BY-SA 4.0"
SPEAKERS = {"george": "tune", "jackson": "tune", "lucas": "tune", "nicolas": "heldout", "theo": "heldout",
            "yweweler": "heldout"}
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
COUNT = [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]
CODE = [4, 0, 7, 5, 9, 1, 3, 8, 2, 6]
CLIPS = {"count": (COUNT, 0.15), "code": (CODE, 0.20)}


SR_REPO = "Uberi/speech_recognition"
SR_LICENCE = "BSD-3-Clause"
SR_CLIPS = [  # id, kind, language, path, text, tags
    ("sr_english_one_two_three", "asr", "en", "tests/english.wav", "one two three", ["numbers", "short", "command"]),
    ("sr_french_dictee", "non_english", "fr", "tests/french.aiff", "si la dictée numéro un", ["short", "read"]),
    ("sr_chinese", "non_english", "zh", "tests/chinese.flac", "砸 自己 的 脚", ["short", "read"]),
]


def _mirror(git_root: Path, repo: str) -> Path:
    root = git_root / repo.replace("/", "+") / "repo"
    return root / ".git" if (root / ".git").is_dir() else root


def _duration(data: bytes) -> float:
    import io

    import av

    with av.open(io.BytesIO(data)) as c:
        return round(sum(f.samples for f in c.decode(audio=0)) / c.streams.audio[0].rate, 3)


def git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(root), *args], check=True, capture_output=True).stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--git-root", type=Path, required=True)
    args = ap.parse_args()
    root = _mirror(args.git_root, REPO)
    commit = git(root, "rev-parse", "HEAD").decode().strip()
    man_path, wt_path = HERE / "manifest.json", HERE / "word_times.json"
    man, wt = json.loads(man_path.read_text()), json.loads(wt_path.read_text())
    man["clips"] = [c for c in man["clips"] if not c["id"].startswith(("fsdd_", "sr_"))]
    wt["clips"] = [c for c in wt["clips"] if not c["id"].startswith("fsdd_")]
    man["repos"][REPO] = {"commits": [commit], "licence": LICENCE}
    for spk, split in SPEAKERS.items():
        for name, (digits, gap) in CLIPS.items():
            srcs = []
            for k, d in enumerate(digits):
                path = f"recordings/{d}_{spk}_{k + 10}.wav"
                data = git(root, "show", f"{commit}:{path}")
                srcs.append({"repo": REPO, "commit": commit, "path": path,
                             "blob": git(root, "rev-parse", f"{commit}:{path}").decode().strip(),
                             "size": len(data), "sha256": F.sha256(data), "speaker": WORDS[d]})
            cid = f"fsdd_{spk}_{name}"
            clip = {"id": cid, "sources": srcs, "edit": {"op": "concat", "gap_s": gap}}
            data, turns = F.build(clip, lambda s: git(root, "show", f"{s['commit']}:{s['path']}"))
            text = " ".join(WORDS[d] for d in digits)
            man["clips"].append({
                "id": cid, "kind": "asr", "language": "en", "file": f"{cid}.wav", "sources": srcs,
                "edit": clip["edit"], "sha256": F.sha256(data), "text": text,
                "text_source": "the digits the Free Spoken Digit Dataset's file names give, in order",
                "tags": ["numbers", "pauses", "composite", "read", "narrowband"], "licence": LICENCE,
                "duration_s": round(turns[-1][1], 3)})
            wt["clips"].append({
                "id": cid, "speaker": f"fsdd-{spk}", "split": split, "eval_clip": cid,
                "reference": f"word spans of the concat (bench/fetch_eval.py): each FSDD digit file trimmed to its "
                             f"speech (10-ms frames >= 5 % of the loudest, 50 ms padding), {gap} s of silence between",
                "words": [{"word": w, "start_s": a, "end_s": b} for a, b, w in turns]})
    sr = _mirror(args.git_root, SR_REPO)
    sr_commit = git(sr, "rev-parse", "HEAD").decode().strip()
    man["repos"][SR_REPO] = {"commits": [sr_commit], "licence": SR_LICENCE}
    for cid, kind, lang, path, text, tags in SR_CLIPS:
        data = git(sr, "show", f"{sr_commit}:{path}")
        src = {"repo": SR_REPO, "commit": sr_commit, "path": path,
               "blob": git(sr, "rev-parse", f"{sr_commit}:{path}").decode().strip(), "size": len(data),
               "sha256": F.sha256(data)}
        man["clips"].append({"id": cid, "kind": kind, "language": lang, "file": cid + Path(path).suffix,
                             "sources": [src], "sha256": F.sha256(data), "text": text,
                             "text_source": "the text the repository's tests expect (tests/test_recognition.py)",
                             "tags": tags, "licence": SR_LICENCE, "duration_s": _duration(data)})
    man_path.write_text(json.dumps(man, indent=1, ensure_ascii=False) + "\n")
    wt_path.write_text(build_word_times.dump(wt))
    print(f"{len(SPEAKERS) * len(CLIPS)} clips from {REPO}@{commit[:10]}, {len(SR_CLIPS)} from {SR_REPO}@{sr_commit[:10]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
