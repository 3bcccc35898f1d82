"""Issue #38, item 8: doctor's OCR check compares the text read with the line it rendered, exactly (spacing
and line breaks aside), so a misread can fail it. The check on the real engine: tests/integration/test_doctor.py."""

from talkthrough_assets.app.selfcheck import ocr_read_exactly


def test_the_ocr_check_fails_on_a_misread():
    word = "TALKTHROUGH 42"
    assert ocr_read_exactly("TALKTHROUGH 42", word) and ocr_read_exactly("TALKTHROUGH\n42", word)
    assert not ocr_read_exactly("TALKTHROUGH4\n142", word)  # the misread doctor used to call ok
    assert not ocr_read_exactly("TALKTHROUGH", word) and not ocr_read_exactly("TALKTHR0UGH 42", word)
    assert not ocr_read_exactly("", word)
