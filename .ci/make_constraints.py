"""Regenerate constraints.txt from fresh venvs, one per supported Python (run by hand, not by CI).

    python .ci/make_constraints.py /path/to/venv310 /path/to/venv312 ...

Each venv must hold a fresh `pip install -e '.[test]'` that passed the suite. Packages that resolve to
the same version everywhere are pinned plainly; the others get one line per Python with a marker.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def freeze(venv: str) -> tuple[str, dict[str, str]]:
    py = str(Path(venv) / "bin" / "python")
    ver = subprocess.check_output([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], text=True).strip()
    out = subprocess.check_output([py, "-m", "pip", "freeze", "--exclude-editable"], text=True)
    pins = {}
    for line in out.splitlines():
        if "==" in line and not line.startswith("#"):
            name, v = line.split("==", 1)
            pins[name.lower().replace("_", "-")] = v.strip()
    return ver, pins


def main(venvs: list[str]) -> None:
    frozen = [freeze(v) for v in venvs]
    names = sorted(set().union(*(p for _, p in frozen)))
    lines = ["# Tested dependency set: `pip install -c constraints.txt -e '.[test]'` (README, .ci/run).",
             "# Made by .ci/make_constraints.py from venvs that passed the suite on Python "
             + ", ".join(v for v, _ in frozen) + "."]
    for n in names:
        by_ver = {ver: pins.get(n) for ver, pins in frozen}
        if len(set(by_ver.values())) == 1:
            lines.append(f"{n}=={next(iter(by_ver.values()))}")
        else:
            for ver, v in by_ver.items():
                if v:
                    lines.append(f'{n}=={v}; python_version == "{ver}"')
    (ROOT / "constraints.txt").write_text("\n".join(lines) + "\n")
    print(f"constraints.txt: {len(names)} packages over Python {', '.join(v for v, _ in frozen)}")


if __name__ == "__main__":
    main(sys.argv[1:])
