"""Diarization models: where the two ONNX files come from (pyannote segmentation-3.0 + 3D-Speaker CAM++).

:func:`resolve_models` looks in ``$TALKTHROUGH_DIARIZATION_MODELS`` (a folder; authoritative, never
downloads) > the verified cache ``<models_dir>/diarization`` > a download of the pinned sherpa-onnx
release files (sha256-checked). Missing models raise :class:`ModelUnavailable`, whose message is the
one-line reason the stage records (not a crash).
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from talkthrough_assets.core.errors import ModelUnavailable

ENV_MODELS_DIR = "TALKTHROUGH_DIARIZATION_MODELS"


@dataclass(frozen=True)
class ModelSpec:
    """A pinned upstream file: ``url`` (sha256 ``sha256``), optionally a tar archive holding
    ``member`` (sha256 ``member_sha256``); cached as ``filename``."""

    role: str
    filename: str
    url: str
    sha256: str
    member: str | None = None
    member_sha256: str | None = None


# Pinned upstream sherpa-onnx release assets. The sha256 values were not computed here (this build
# machine cannot reach GitHub); they are the values pinned independently by several public projects
# that download these exact URLs (found with the code search: two pin the archive + its model.onnx,
# three pin the CAM++ file, all agreeing). Sizes: archive 6,958,444 B; CAM++ 28,281,164 B.
# The offline copies in shared/models/diarization (int8 re-exports, SHA256SUMS there) are what tests
# use through $TALKTHROUGH_DIARIZATION_MODELS; they are NOT these files.
SEGMENTATION = ModelSpec(
    role="segmentation",
    filename="sherpa-onnx-pyannote-segmentation-3-0.onnx",
    url="https://github.com/k2-fsa/sherpa-onnx/releases/download/speaker-segmentation-models/"
        "sherpa-onnx-pyannote-segmentation-3-0.tar.bz2",
    sha256="24615ee884c897d9d2ba09bb4d30da6bb1b15e685065962db5b02e76e4996488",
    member="sherpa-onnx-pyannote-segmentation-3-0/model.onnx",
    member_sha256="220ad67ca923bef2fa91f2390c786097bf305bceb5e261d4af67b38e938e1079",
)
EMBEDDING = ModelSpec(
    role="embedding",
    filename="3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx",
    url="https://github.com/k2-fsa/sherpa-onnx/releases/download/speaker-recongition-models/"
        "3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx",
    sha256="aa3cfc16963a10586a9393f5035d6d6b57e98d358b347f80c2a30bf4f00ceba2",
)
PINNED = (SEGMENTATION, EMBEDDING)


@dataclass(frozen=True)
class DiarizationModels:
    segmentation: Path
    embedding: Path
    source: str  # "dir:<path>" or "cache:<path>"

    def label(self, role: str) -> str:
        p = self.segmentation if role == "segmentation" else self.embedding
        return f"{p.name} (sha256 {_sha256(p)[:12]})"


_sha_cache: dict[tuple[str, int, float], str] = {}


def _sha256(path: Path) -> str:
    from talkthrough_assets.store.models import sha256_file

    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime)
    if key not in _sha_cache:
        _sha_cache[key] = sha256_file(path)
    return _sha_cache[key]


def cache_dir() -> Path:
    from talkthrough_assets import store

    return Path(store.models_dir()) / "diarization"


def find_in_dir(folder: str | os.PathLike) -> tuple[Path, Path] | None:
    """(segmentation, embedding) ONNX files in ``folder`` (or one level below), else None.

    Segmentation = an ``.onnx`` whose path (relative to ``folder``) mentions "segmentation"
    (int8 preferred); embedding = another ``.onnx`` (CAM++ preferred)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return None
    files = sorted(p for p in [*root.glob("*.onnx"), *root.glob("*/*.onnx")] if p.is_file())

    def rel(p: Path) -> str:
        return p.relative_to(root).as_posix().lower()

    seg = [p for p in files if "segmentation" in rel(p)]
    emb = [p for p in files if "segmentation" not in rel(p)]
    if not seg or not emb:
        return None
    seg.sort(key=lambda p: ("int8" not in rel(p), rel(p)))
    emb.sort(key=lambda p: ("campplus" not in rel(p), "int8" not in rel(p), rel(p)))
    return seg[0], emb[0]


def _cached_ok(spec: ModelSpec, folder: Path) -> Path | None:
    p = folder / spec.filename
    want = spec.member_sha256 if spec.member else spec.sha256
    return p if p.is_file() and _sha256(p) == want else None


def ensure_cached(spec: ModelSpec, folder: Path, *, timeout: float = 60) -> Path:
    """The verified cached file for ``spec``, downloading (and unpacking) it when absent.

    Raises :class:`ModelUnavailable` (never leaves a partial or unverified file behind)."""
    from talkthrough_assets import store
    from talkthrough_assets.store.models import download_verified, sha256_file

    hit = _cached_ok(spec, folder)
    if hit:
        return hit
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / spec.filename
    if not spec.member:
        return download_verified(spec.url, spec.sha256, dest, timeout=timeout)
    archive = download_verified(spec.url, spec.sha256, folder / (spec.filename + ".archive"), timeout=timeout)
    try:
        with tarfile.open(archive) as tar:
            try:
                src = tar.extractfile(spec.member)
            except KeyError:
                src = None
            if src is None:
                raise ModelUnavailable(f"{spec.url} does not contain {spec.member}")
            with store.atomic_path(dest) as tmp, src, open(tmp, "wb") as out:
                while b := src.read(1 << 20):
                    out.write(b)
                out.flush()
                got = sha256_file(tmp)
                if got != spec.member_sha256:
                    raise ModelUnavailable(
                        f"{spec.member} in {spec.url} has sha256 {got}, expected {spec.member_sha256}")
    except tarfile.TarError as e:
        raise ModelUnavailable(f"cannot unpack {archive.name}: {e}") from None
    finally:
        archive.unlink(missing_ok=True)
    return dest


def resolve_models(*, download: bool = True, models_dir: str | None = None) -> DiarizationModels:
    """Find the models (see module doc); ``models_dir``: the value of ``$TALKTHROUGH_DIARIZATION_MODELS``
    (config), which is authoritative. Raises :class:`ModelUnavailable` with a one-line reason."""
    env = models_dir
    if env:
        found = find_in_dir(env)
        if found:
            return DiarizationModels(found[0], found[1], f"dir:{env}")
    folder = cache_dir()
    cached = [_cached_ok(s, folder) for s in PINNED]
    if all(cached):
        return DiarizationModels(cached[0], cached[1], f"cache:{folder}")
    if env:
        raise ModelUnavailable(
            f"diarization models not found in {ENV_MODELS_DIR}={env} (it needs a pyannote *segmentation*.onnx "
            f"and a speaker-embedding .onnx) nor in the model cache {folder}")
    if not download:
        raise ModelUnavailable(f"diarization models are not in the model cache {folder}")
    try:
        paths = [ensure_cached(s, folder) for s in PINNED]
    except ModelUnavailable as e:
        raise ModelUnavailable(
            f"diarization models unavailable ({e}); download them once with network access, or set "
            f"{ENV_MODELS_DIR} to a folder holding the segmentation and embedding ONNX files") from None
    return DiarizationModels(paths[0], paths[1], f"cache:{folder}")



__all__ = ["ENV_MODELS_DIR", "ModelUnavailable", "ModelSpec", "SEGMENTATION", "EMBEDDING", "PINNED",
           "DiarizationModels", "cache_dir", "find_in_dir", "ensure_cached", "resolve_models"]
