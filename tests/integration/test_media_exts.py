"""One extension list (stages.probe.MEDIA_EXTS) decides what a folder holds: the CLI's folder scan,
register_folder (recursive or not) and the drop folder take the same files, GIF screen recordings
(VHS, agg) included, and probe reads such a GIF as a video."""

from __future__ import annotations

from PIL import Image, ImageDraw

from talkthrough_assets.pipeline import dropdir
from talkthrough_assets.pipeline import registry
from talkthrough_assets.stages import probe


def _gif(path, frames: int = 12) -> None:
    imgs = []
    for i in range(frames):
        im = Image.new("RGB", (160, 90), (20, 20, 20))
        ImageDraw.Draw(im).text((10, 40), f"$ make test {i}", fill=(230, 230, 230))
        imgs.append(im)
    imgs[0].save(path, save_all=True, append_images=imgs[1:], duration=250, loop=0)


def test_gif_recordings_are_media_in_folders_for_every_surface(tmp_path):
    folder = tmp_path / "recordings"
    folder.mkdir()
    _gif(folder / "demo.GIF")
    (folder / "notes.txt").write_text("not media")
    files, skipped = registry.collect([folder])
    assert [f.name for f in files] == ["demo.GIF"]
    assert [(p.name, why) for p, why in skipped] == [("notes.txt", "not a media file extension (.txt)")]
    flat, flat_skipped = registry.collect([folder], recursive=False)  # register_folder, recursive: false
    assert flat == files and [p.name for p, _ in flat_skipped] == ["notes.txt"]

    watch = dropdir.Folder(folder)
    assert watch.tick(known_ids=set()).waiting == [str(folder / "demo.GIF")]  # first sight: wait one tick
    res = watch.tick(known_ids=set())
    assert [p for _, p in res.new] == [str(folder / "demo.GIF")]
    assert ".gif" in probe.MEDIA_EXTS and registry.MEDIA_EXTS is dropdir.MEDIA_EXTS is probe.MEDIA_EXTS

    info = probe.probe_file(folder / "demo.GIF")
    assert info.kind == "video" and info.has_video and not info.has_audio
    assert (info.width, info.height) == (160, 90) and 2.5 <= info.duration_ms / 1000 <= 3.5
