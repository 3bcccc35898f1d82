"""What survives `kill -9 -PGID` of `talkthrough ui` (#38 item 1): start it on a fresh data root, wait until the
webserver serves the job, kill its process group with SIGKILL (as the issue did), then list every process it
had started that is still alive after 0.5 s and after 10 s. Leftovers are killed by this script at the end.

    python bench/bench_ui_kill.py                      # this checkout
    python bench/bench_ui_kill.py --code /work/main    # another checkout's `talkthrough ui`, for a baseline
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e"), str(ROOT / "tests")]

from talkthrough_assets.core import proctree  # noqa: E402
from test_webserver import _free_port, talkthrough_command, wait_until_up  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", default=str(ROOT), help="checkout whose talkthrough_assets `talkthrough ui` runs")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench_ui_kill_"))
    env = dict(os.environ, TALKTHROUGH_HOME=str(base / "home"), DAGSTER_HOME=str(base / "home" / "dagster"),
               PYTHONPATH=args.code)
    env.pop("TALKTHROUGH_DROP_DIR", None)
    port = _free_port()
    t0 = time.monotonic()
    ui = subprocess.Popen(talkthrough_command() + ["ui", "--port", str(port)], env=env, cwd=args.code,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    family: set[int] = set()
    try:
        wait_until_up(ui, port)
        print(f"code {args.code}: up in {time.monotonic() - t0:.1f} s")
        family = proctree.descendants(ui.pid)
        print(f"started {len(family)} process(es): {proctree.describe(family)}")
        os.killpg(ui.pid, signal.SIGKILL)
        ui.wait()
        for after in (0.5, 10.0):
            time.sleep(after - (0.5 if after > 0.5 else 0))
            left = {p for p in family if proctree.alive(p)}
            print(f"alive {after:4.1f} s after kill -9 of the group: {len(left)} of {len(family)}"
                  + (f": {proctree.describe(left)}" if left else ""))
    finally:
        for p in family | ({ui.pid} if ui.poll() is None else set()):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main()
