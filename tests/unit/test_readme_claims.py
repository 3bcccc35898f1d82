"""The README's Quickstart holds on a fresh clone (issue #25 items 8-9): the supported Pythons are
said before the first command and match pyproject's requires-python; it gives exactly two commands, the
ones CI runs (#37); every `talkthrough COMMAND` the README and docs/ name exists; queries go through a
command the setup installs (no DuckDB CLI); the .ci script cleans up its temp files."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from talkthrough_assets.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
SETUP = "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt '.[test]' && .venv/bin/talkthrough process fixtures/"
TEST = ".venv/bin/pytest -q"


def _quickstart() -> str:
    start = README.index("## Quickstart")
    return README[start:README.index("\n## ", start + 1)]


def test_supported_pythons_come_before_the_first_command_and_match_pyproject():
    qs = _quickstart()
    before = qs[:qs.index("```bash")]
    assert "3.11, 3.12 or 3.13" in before and "requires a different Python" in before and "3.14" in before
    req = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert req.replace(" ", "") == ">=3.11"


def test_the_quickstart_gives_exactly_the_two_commands_ci_runs():
    assert re.findall(r"```bash\n(.*?)\n```", _quickstart(), re.S) == [SETUP, TEST]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TEST in ci  # the README's test command, as CI's last step runs it
    # installed as users install it (a wheel, not -e), and the suite told to refuse the checkout
    assert any(line.endswith(" -m venv .venv && .venv/bin/pip install -q -c constraints.txt '.[test]'")
               for line in ci)
    assert "export TALKTHROUGH_TEST_FROM_WHEEL=1" in ci and not any(" -e " in line for line in ci)


def test_every_command_the_readme_and_docs_name_exists():
    named = set(re.findall(r"`(?:\.venv/bin/)?talkthrough ([a-z]+)", README))
    assert {"process", "doctor", "sql", "recordings", "name", "ui", "mcp"} <= named
    named |= {c for text in DOCS.values() for c in re.findall(r"`(?:\.venv/bin/)?talkthrough ([a-z]+)", text)}
    for command in sorted(named):
        r = CliRunner().invoke(cli.app, [command, "--help"])
        assert r.exit_code == 0, (command, r.output)


def test_queries_need_no_duckdb_cli_and_the_contact_sheet_is_documented():
    assert not re.search(r"`duckdb ~/", README)
    assert 'talkthrough sql "SELECT' in README and "contact_sheet.jpg" in README
    assert "/usr/bin/chromium" in _quickstart()


def test_ci_script_removes_its_temp_folder_on_exit(tmp_path):
    """The preamble of .ci/run (up to its first installation step) run for real: its temp folder is gone after."""
    script = (ROOT / ".ci" / "run").read_text()
    preamble = script[:script.index('echo "== postgresql')]
    probe = preamble + 'echo "$CI_TMP"; touch "$CI_TMP/venv-marker"; [ "$TMPDIR" = "$CI_TMP" ]\n'
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=ROOT / ".ci",
                         env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    made = Path(out.stdout.strip().splitlines()[-1])
    assert made.parent == tmp_path and not made.exists()
