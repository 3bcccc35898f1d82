"""The `talkthrough` console script's entry: Ctrl-C while the command's modules load (a second or more on a busy
machine) ends it quietly with 130, as a shell reports an interrupt, instead of a KeyboardInterrupt traceback from
whatever module was loading. Once loaded, the command handles Ctrl-C itself (a run keeps what it finished)."""

import os
import signal


def _quiet_exit(_signum, _frame) -> None:
    os._exit(130)


def main() -> None:  # pragma: no cover
    before = signal.getsignal(signal.SIGINT)
    if before is signal.SIG_IGN:  # started in the background by a shell: Ctrl-C is not for it, and stays so
        from talkthrough_assets.cli.main import main as run

        run()
        return
    signal.signal(signal.SIGINT, _quiet_exit)
    from talkthrough_assets.cli.main import main as run

    signal.signal(signal.SIGINT, before)
    run()
