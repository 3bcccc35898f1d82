"""stages.dedup: a keyframe is a duplicate only when nothing a reader could notice changed."""

from __future__ import annotations

from PIL import Image, ImageDraw

from talkthrough_assets.stages import dedup


def _slide(title: str, color=(40, 90, 200), size=(320, 180)) -> Image.Image:
    im = Image.new("RGB", size, (245, 245, 245))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, size[0], 24], fill=color)
    d.text((20, 60), title, fill=(0, 0, 0), font_size=28)
    return im


class TestDedup:
    def test_identical_and_recompressed_frames_are_duplicates(self, tmp_path):
        a = _slide("DEPLOY")
        a.save(tmp_path / "a.jpg", quality=95)
        a.save(tmp_path / "b.jpg", quality=40)
        sa, sb = dedup.signature(tmp_path / "a.jpg"), dedup.signature(tmp_path / "b.jpg")
        assert (sa.dhash ^ sb.dhash).bit_count() <= 4  # Hamming distance of the stored dhash
        assert dedup.is_duplicate(sa, sb)

    def test_different_layouts_are_not_duplicates(self):
        a = dedup.signature(_slide("DEPLOY"))
        b = dedup.signature(Image.linear_gradient("L").resize((320, 180)).rotate(90).convert("RGB"))
        assert not dedup.is_duplicate(a, b)

    def test_same_layout_new_text_is_kept_for_ocr(self):
        a = dedup.signature(_slide("DEPLOY PIPELINE"))
        b = dedup.signature(_slide("ROLLBACK DONE"))
        assert not dedup.is_duplicate(a, b)

    def test_one_changed_word_or_colour_is_never_a_duplicate(self):
        a = dedup.signature(_slide("ERROR 503", size=(1280, 720)))
        b = dedup.signature(_slide("ERROR 504", size=(1280, 720)))  # one digit
        c = dedup.signature(_slide("ERROR 503", color=(200, 40, 40), size=(1280, 720)))  # banner recoloured
        assert not dedup.is_duplicate(a, b)
        assert not dedup.is_duplicate(a, c)

    def test_a_blinking_cursor_is_new_but_only_its_band_changed(self):
        a = _slide("DEPLOY", size=(1280, 720))
        b = a.copy()
        ImageDraw.Draw(b).rectangle([900, 300, 903, 330], fill=(0, 0, 0))  # a 4x30 px text cursor
        sa, sb = dedup.signature(a), dedup.signature(b)
        assert not dedup.is_duplicate(sa, sb)
        bands = dedup.changed_bands(sa, sb)
        assert len(bands) == 1 and bands[0][0] <= 900 and bands[0][2] >= 904 and bands[0][2] - bands[0][0] < 160
        assert bands[0][1] <= 300 and bands[0][3] >= 331 and bands[0][3] - bands[0][1] < 120  # a box, not a strip
        assert dedup.changed_bands(sa, dedup.signature(_slide("OTHER", color=(200, 0, 0), size=(1280, 720)))) \
            is not None  # a title + banner change is still a band, not the whole frame
        full = Image.linear_gradient("L").resize((1280, 720)).convert("RGB")
        assert dedup.changed_bands(sa, dedup.signature(full)) is None  # everything changed: read it all

    def test_mark_points_duplicates_at_the_head_of_their_run(self):
        frames = [0, 1000, 2000, 3000]
        stripes = Image.linear_gradient("L").resize((320, 180)).rotate(90).convert("RGB")
        h1, h2 = dedup.signature(_slide("A")), dedup.signature(stripes)
        rows = dedup.mark(frames, [h1, h1, h1, h2])
        assert [r.duplicate_of for r in rows] == [None, 0, 0, None]
        assert all(len(r.dhash) == 16 for r in rows)

    def _screen(self, t: int, body: str = "status: pending", pointer: bool = True, caret: bool = True):
        im = _slide("DEPLOY", size=(1280, 720))
        d = ImageDraw.Draw(im)
        d.text((60, 300), body, fill=(60, 70, 90), font_size=40)
        if caret and t % 2:
            d.rectangle([400, 296, 403, 344], fill=(20, 24, 32))
        d.text((1090, 670), f"09:41:{t:02d}", fill=(90, 90, 90), font_size=28)  # a clock in the corner
        if pointer:
            x, y = 200 + 70 * t, 420 + 9 * t
            d.polygon([(x, y), (x, y + 26), (x + 7, y + 20), (x + 12, y + 31), (x + 19, y + 18)], fill=(0, 0, 0))
        return dedup.signature(im)

    def test_a_moving_pointer_a_blinking_caret_and_a_ticking_clock_are_no_new_scene(self):
        sigs = [self._screen(t) for t in range(10)]
        rows = dedup.mark([t * 1000 for t in range(10)], sigs)
        unique = [r.ms for r in rows if r.duplicate_of is None]
        assert len(unique) <= 2, unique  # the first frame, at most one more
        assert not dedup.is_duplicate(sigs[0], sigs[1])  # each pair alone differs

    def test_one_changed_word_is_new_while_the_pointer_moves_and_the_clock_ticks(self):
        sigs = [self._screen(t, "status: pending" if t < 5 else "status: running") for t in range(10)]
        rows = dedup.mark([t * 1000 for t in range(10)], sigs)
        assert rows[5].duplicate_of is None, rows
        assert len([r for r in rows if r.duplicate_of is None]) <= 3

    def test_a_recoloured_banner_is_new_while_the_pointer_moves(self):
        sigs = [self._screen(t) for t in range(4)]
        im = _slide("DEPLOY", color=(200, 40, 40), size=(1280, 720))  # the banner turns red, the rest as at t=4
        d = ImageDraw.Draw(im)
        d.text((60, 300), "status: pending", fill=(60, 70, 90), font_size=40)
        d.text((1090, 670), "09:41:04", fill=(90, 90, 90), font_size=28)
        d.polygon([(480, 456), (480, 482), (487, 476), (492, 487), (499, 474)], fill=(0, 0, 0))
        rows = dedup.mark([t * 1000 for t in range(5)], sigs + [dedup.signature(im)])
        assert rows[4].duplicate_of is None, rows

    def test_a_line_typed_at_the_same_spot_in_every_scene_is_new_the_clock_there_too_is_not(self):
        lines = ["$ make release", "$ git revert HEAD", "$ pager ack", "$ kubectl get pods"]
        sigs = []
        for k, line in enumerate(lines):  # a scene: the slide, its line typed out, a clock tick
            for step in range(3):
                im = _slide(f"SLIDE {k} " + "ABCD"[k] * 6, color=(40 + 50 * k, 90, 200), size=(1280, 720))
                d = ImageDraw.Draw(im)
                d.rectangle([700, 100 + 120 * k, 1000, 200 + 120 * k], fill=(60, 160, 90))  # each slide's chart
                if step:
                    d.text((60, 420), line, fill=(30, 41, 59), font_size=28)
                d.text((1090, 670), f"09:41:{3 * k + step:02d}", fill=(90, 90, 90), font_size=28)
                sigs.append(dedup.signature(im))
        rows = dedup.mark([t * 1000 for t in range(len(sigs))], sigs)
        unique = [i for i, r in enumerate(rows) if r.duplicate_of is None]
        assert unique == [i for i in range(len(sigs)) if i % 3 < 2], unique  # each slide, then its typed line
        assert all(rows[3 * k + 1].changed for k in range(len(lines)))  # the typed line's band, for OCR
