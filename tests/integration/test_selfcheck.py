"""The doctor's self-check on this install (app/selfcheck.run): it writes a test clip with PyAV (an encode),
probes and decodes it, so it lives in the integration tier; the unit tier's smoke tests only open committed
fixtures."""

from __future__ import annotations

from talkthrough_assets.app import selfcheck


def test_doctor_self_check_passes_on_this_install():
    results = selfcheck.run()
    failed = [r for r in results if not r[1]]
    assert len(results) == 4 and not failed, failed
    vers = selfcheck.versions()
    assert all(v != "missing" for k, v in vers.items()), vers
