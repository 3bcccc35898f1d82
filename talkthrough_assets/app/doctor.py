"""`talkthrough doctor`'s report: the self-checks of :mod:`selfcheck` in the order they print, whether they all
passed, and the one line that says what to do next. Plain data: the CLI prints it as text or JSON."""

from __future__ import annotations

from dataclasses import dataclass

from talkthrough_assets.app import selfcheck

REINSTALL = "reinstall with `pip install --force-reinstall talkthrough` (from a checkout: `pip install -c constraints.txt .`)"


@dataclass(frozen=True)
class Report:
    versions: dict[str, str]
    checks: list[tuple[str, str, str]]  # (check, "ok" | "warn" | "FAIL", detail)
    verdict: str  # the closing line: all passed, or what to fix first

    @property
    def ok(self) -> bool:
        return all(state != "FAIL" for _, state, _ in self.checks)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "versions": self.versions,
                "checks": [{"check": c, "ok": state != "FAIL", "status": state, "detail": d}
                           for c, state, d in self.checks]}


def verdict(ok: bool, env_ok: bool, media_ok: bool, data_ok: bool) -> str:
    """What the closing line says: the first thing to fix, environment and media stack before stored data."""
    if ok:
        return "all checks passed"
    if not data_ok and media_ok and env_ok:
        return "stored outputs are missing or damaged (see FAIL above): `talkthrough repair` re-makes them"
    if not env_ok and media_ok:
        return "an environment variable holds a value it cannot take (see FAIL above): fix or unset it"
    if not media_ok:
        return f"the media stack is broken on this install (not your recordings): {REINSTALL}"
    return f"an engine is broken on this install (see FAIL above): {REINSTALL}"


def report() -> Report:
    """Environment, the media stack on a clip it writes itself, the engines (only where the media stack works)
    and every stored output of the data root."""
    from talkthrough_assets.app.runs import mark_killed_runs

    mark_killed_runs()  # a run a killed `process` left STARTED is failed, not shown running
    vers, results = selfcheck.versions(), selfcheck.run()
    media_ok = all(r[1] for r in results)
    checks = [(c, "ok" if k else "FAIL", d) for c, k, d in results]
    if media_ok:
        checks += selfcheck.engine_checks()
    env = selfcheck.config_check()
    checks.insert(0, env)
    data = selfcheck.data_check()  # every partition, manifest, frame folder and report of the data root
    checks.append(data)
    ok = all(state != "FAIL" for _, state, _ in checks)
    return Report(vers, checks, verdict(ok, env[1] != "FAIL", media_ok, data[1] != "FAIL"))
