"""Every Dagster instance and workspace YAML in the repo passes Dagster's own config validation, so a
typo in dagster.yaml or deploy/ fails CI instead of the first `dagster-daemon run` on a server.

- the repo's dagster.yaml (the embedded SQLite default) is loaded as a real instance in a temp dir;
- the YAML the CLI writes when TALKTHROUGH_PG_URL is set, and deploy/dagster.yaml, are validated with
  the instance schema, then each configurable class (storage, run queue, launcher, logs) against its own
  config schema without connecting anywhere (tests/integration/test_postgres.py loads the Postgres one for real);
- workspace YAMLs against Dagster's workspace schema; deploy/docker-compose.yml's wiring is checked, and so is
  deploy/k8s/values.yaml's (Dagster's Helm chart values, never rendered here).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INSTANCE_YAMLS = sorted(p for p in ROOT.rglob("dagster*.yaml")
                        if not any(part.startswith(".") for part in p.relative_to(ROOT).parts))
WORKSPACE_YAMLS = sorted(p for p in ROOT.rglob("workspace*.yaml")
                         if not any(part.startswith(".") for part in p.relative_to(ROOT).parts))
DEPLOY = ROOT / "deploy"

# dagster-docker's DockerRunLauncher config schema (dagster_docker/utils.py DOCKER_CONFIG_SCHEMA +
# container_context.py), mirrored for when dagster-docker is not installed (it is only in the image).
_DOCKER_LAUNCHER_FIELDS = {"image", "network", "registry", "env_vars", "container_kwargs", "networks"}


def test_the_instance_yamls_are_found():
    names = {str(p.relative_to(ROOT)) for p in INSTANCE_YAMLS}
    assert {"dagster.yaml", "deploy/dagster.yaml"} <= names, names
    assert {"workspace.yaml", "deploy/workspace.yaml"} <= {str(p.relative_to(ROOT)) for p in WORKSPACE_YAMLS}


def _class_datas(ref) -> dict:
    from dagster._serdes import ConfigurableClassData

    return {f: getattr(ref, f) for f in ref._fields if isinstance(getattr(ref, f), ConfigurableClassData)}


def _check_class_config(data) -> None:
    """The class exists and its config passes its own schema (what rehydrate() checks before it
    instantiates, i.e. before any connection)."""
    from dagster._config import process_config, resolve_to_config_type

    try:
        module = importlib.import_module(data.module_name)
    except ModuleNotFoundError:
        if (data.module_name, data.class_name) == ("dagster_docker", "DockerRunLauncher"):
            unknown = set(data.config_dict) - _DOCKER_LAUNCHER_FIELDS
            assert not unknown, f"DockerRunLauncher has no config field(s) {sorted(unknown)}"
            return
        raise
    klass = getattr(module, data.class_name)
    result = process_config(resolve_to_config_type(klass.config_type()), data.config_dict)
    assert result.success, f"{data.module_name}.{data.class_name}: {[e.message for e in result.errors]}"


def _validate_instance_yaml(text: str, tmp_path: Path):
    """Dagster's instance schema, then every configurable class's own schema. Returns the InstanceRef."""
    from dagster._core.instance.ref import InstanceRef

    (tmp_path / "dagster.yaml").write_text(text)
    ref = InstanceRef.from_dir(str(tmp_path))  # raises DagsterInvalidConfigError on a schema error
    for data in _class_datas(ref).values():
        _check_class_config(data)
    return ref


@pytest.mark.parametrize("path", INSTANCE_YAMLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_instance_yaml_passes_dagsters_schema(path, tmp_path, monkeypatch):
    monkeypatch.setenv("TALKTHROUGH_PG_URL", "postgresql://u:pw@127.0.0.1:5432/db")
    _validate_instance_yaml(path.read_text(), tmp_path)


def test_a_typo_fails_validation(tmp_path):
    from dagster._core.errors import DagsterInvalidConfigError

    bad = (ROOT / "dagster.yaml").read_text().replace("max_concurrent_runs", "max_concurent_runs")
    with pytest.raises(DagsterInvalidConfigError):
        _validate_instance_yaml(bad, tmp_path)
    launcher = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    launcher["run_launcher"]["config"]["envvars"] = ["X"]
    (tmp_path / "launcher").mkdir()
    with pytest.raises((AssertionError, DagsterInvalidConfigError)):
        _validate_instance_yaml(yaml.safe_dump(launcher), tmp_path / "launcher")


def test_the_repo_dagster_yaml_loads_as_an_embedded_sqlite_instance(tmp_path, monkeypatch):
    from dagster import DagsterInstance

    from talkthrough_assets.defs.instance import instance_yaml

    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    assert instance_yaml() == (ROOT / "dagster.yaml").read_text()
    (tmp_path / "dagster.yaml").write_text(instance_yaml())
    inst = DagsterInstance.from_config(str(tmp_path))
    try:
        from dagster import QueuedRunCoordinator
        from dagster._core.storage.event_log import SqliteEventLogStorage
        from dagster._core.storage.runs import SqliteRunStorage

        from talkthrough_assets.defs import sqlite_storage

        # Dagster's SQLite storage under the instance's own folder, as Talkthrough's subclasses of its classes
        assert type(inst).__name__ == "Instance" and isinstance(inst.run_storage, SqliteRunStorage)
        assert type(inst.run_storage) is sqlite_storage.RunStorage
        assert type(inst.event_log_storage) is sqlite_storage.EventLogStorage
        assert isinstance(inst.event_log_storage, SqliteEventLogStorage)

        # Dagster's queue, which also names the runs it queues (defs/run_coordinator.py)
        assert type(inst.run_coordinator).__name__ == "NamingRunCoordinator"
        assert isinstance(inst.run_coordinator, QueuedRunCoordinator)
        limits = inst.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
        # beside `concurrency:`, the queue's own setting still reaches the coordinator (Dagster's default: 5 s)
        assert inst.run_coordinator.dequeue_interval_seconds == 1
        assert inst.get_concurrency_config().run_queue_config.max_concurrent_runs == 2
        assert (tmp_path / "history" / "runs.db").exists()
    finally:
        inst.dispose()


def test_a_queued_run_is_named_by_its_recordings_before_it_starts(tt_home, tmp_path):
    """What the daemon does with a backfill's run (create it with Dagster's partition tags only, then submit it
    to the instance's coordinator), on an instance of the shipped settings: the run is queued already named by
    its recordings' file names, as the runs list shows it, before any step of it starts."""
    from dagster import DagsterInstance, DagsterRunStatus, SubmitRunContext
    from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.test_utils import create_run_for_test
    from fixture_facts import FIXTURES_DIR, MEETING_NAME, SILENT_NAME, TWO_VOICES_NAME, unique_copy

    from talkthrough_assets.app import service
    from talkthrough_assets.defs.instance import instance_yaml

    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml())
    inst = DagsterInstance.from_config(str(home))
    try:
        names = ["first call.m4a", "second.mp4", "third.m4a"]
        ids = [service.register(unique_copy(FIXTURES_DIR / src, tmp_path / name, "queued-name"), inst)
               for src, name in zip((MEETING_NAME, SILENT_NAME, TWO_VOICES_NAME), names)]
        origin = RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("talkthrough_assets.definitions"),
                                                        "__repository__"), "process_recording")

        def created(tags: dict):
            return create_run_for_test(inst, job_name="process_recording", status=DagsterRunStatus.NOT_STARTED,
                                       remote_job_origin=origin, tags=tags)

        batch = created({"dagster/asset_partition_range_start": ids[0], "dagster/asset_partition_range_end": ids[2]})
        one = created({"dagster/partition": ids[1]})
        named = created({"dagster/partition": ids[1], "talkthrough/filename": "as the sensor said"})
        for run in (batch, one, named):  # instance.submit_run, less its check of the Python origin a test run lacks
            inst.run_coordinator.submit_run(SubmitRunContext(inst.get_run_by_id(run.run_id), workspace=None))
        runs = {r.run_id: r for r in inst.get_runs()}
        assert {r.status for r in runs.values()} == {DagsterRunStatus.QUEUED}
        assert runs[batch.run_id].tags["talkthrough/filename"] == "first call.m4a and 2 more"
        assert runs[one.run_id].tags["talkthrough/filename"] == "second.mp4"
        assert runs[named.run_id].tags["talkthrough/filename"] == "as the sensor said"  # a name given is kept
    finally:
        inst.dispose()


def test_pg_url_selects_postgres_storage_without_writing_the_url(tmp_path, monkeypatch):
    from talkthrough_assets.defs.instance import ensure_dagster_home

    monkeypatch.setenv("TALKTHROUGH_PG_URL", "postgresql://talkthrough:s3cret@127.0.0.1:5432/talkthrough")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    home = ensure_dagster_home()
    # the driver dagster-postgres installs, whatever SQLAlchemy's default for postgresql:// is
    assert os.environ["TALKTHROUGH_PG_URL"] == "postgresql+psycopg2://talkthrough:s3cret@127.0.0.1:5432/talkthrough"
    text = (home / "dagster.yaml").read_text()
    assert "s3cret" not in text  # read from the environment when an instance loads
    ref = _validate_instance_yaml(text, tmp_path)
    assert ref.storage_data.class_name == "DagsterPostgresStorage"
    assert ref.storage_data.config_dict == {"postgres_url": {"env": "TALKTHROUGH_PG_URL"}}
    assert ref.run_coordinator_data.class_name == "NamingRunCoordinator"
    # unset again: back to the embedded default, rewritten in place
    monkeypatch.delenv("TALKTHROUGH_PG_URL")
    assert (ensure_dagster_home() / "dagster.yaml").read_text() == (ROOT / "dagster.yaml").read_text()


@pytest.mark.parametrize("path", WORKSPACE_YAMLS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_workspace_yaml_passes_dagsters_schema(path):
    from dagster import DagsterInvalidConfigError
    from dagster._core.workspace.config_schema import ensure_workspace_config

    raw = yaml.safe_load(path.read_text())
    checked = ensure_workspace_config(raw, str(path))  # raises DagsterInvalidConfigError when invalid
    # the schema keeps every code location as written, and each names something that loads: a module that
    # exists here, or a gRPC code server with a host and port
    assert checked["load_from"] == raw["load_from"] and checked["load_from"]
    for entry in checked["load_from"]:
        (kind, target), = entry.items()
        if kind == "python_module":
            assert importlib.util.find_spec(target["module_name"]) is not None, target
        else:
            assert kind == "grpc_server" and target["host"] and int(target["port"]) > 0, entry
    # the check has teeth: the same file with a misspelled key is refused
    (kind, target), = raw["load_from"][0].items()
    with pytest.raises(DagsterInvalidConfigError):
        ensure_workspace_config({"load_from": [{kind + "_": target}]}, str(path))


def test_deploy_compose_wiring():
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "s3", "user_code", "webserver", "daemon"} <= set(services)
    instance = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    workspace = yaml.safe_load((DEPLOY / "workspace.yaml").read_text())
    # the webserver and the daemon reach the code server where workspace.yaml says it is
    grpc = workspace["load_from"][0]["grpc_server"]
    cmd = services["user_code"]["command"]
    assert grpc["host"] in services and cmd[cmd.index("-p") + 1] == str(grpc["port"])
    assert cmd[cmd.index("-m") + 1] == "talkthrough_assets.definitions"
    for name in ("webserver", "daemon"):
        svc = services[name]
        mounts = {m.split(":")[1]: m.split(":")[0] for m in svc["volumes"]}
        assert mounts[svc["environment"]["DAGSTER_HOME"] + "/dagster.yaml"] == "./dagster.yaml"
        assert (DEPLOY / mounts["/opt/dagster/workspace.yaml"]).exists()
        assert "/var/run/docker.sock" in mounts
    for name in ("user_code", "webserver", "daemon"):
        url = services[name]["environment"]["TALKTHROUGH_PG_URL"]
        assert url.startswith("postgresql+psycopg2://") and "@postgres:5432/" in url
    # run containers join the compose network and mount the data volume under the names compose gives them
    launcher = instance["run_launcher"]["config"]
    assert compose["networks"][launcher["network"]]["name"] == launcher["network"]
    vol = launcher["container_kwargs"]["volumes"][0].split(":")[0]
    assert compose["volumes"][vol]["name"] == vol
    assert {"TALKTHROUGH_PG_URL", "TALKTHROUGH_HOME"} <= set(launcher["env_vars"])
    # outputs go to the compose S3 service: every container names the same bucket and endpoint, and run
    # containers are given the same settings (names only: values come from the daemon's environment)
    env = services["user_code"]["environment"]
    assert env["TALKTHROUGH_HOME"].startswith("s3://") and env["AWS_ENDPOINT_URL"] == "http://s3:9000"
    bucket = env["TALKTHROUGH_HOME"][len("s3://"):].split("/")[0]
    assert f"s3/{bucket}" in " ".join(services["s3_bucket"]["entrypoint"])
    assert {k for k in env if k.startswith(("AWS_", "TALKTHROUGH_"))} <= set(launcher["env_vars"])
    for name in ("webserver", "daemon"):
        assert services[name]["environment"]["TALKTHROUGH_HOME"] == env["TALKTHROUGH_HOME"]
    assert services["user_code"]["environment"]["DAGSTER_CURRENT_IMAGE"] == services["user_code"]["image"]
    assert (ROOT / services["user_code"]["build"]["dockerfile"]).exists()
    # the daemon is Dagster's, started through the installed module that gives it the 2 s backfill loop
    daemon = services["daemon"]["command"]
    launcher_module = daemon[daemon.index("-m") + 1]
    assert importlib.util.find_spec(launcher_module) is not None
    assert daemon[daemon.index("-m") + 2:daemon.index("-m") + 4] == ["dagster._daemon", "run"]


def test_instance_soon_opens_the_instance_in_a_background_thread(tmp_path, monkeypatch):
    """The CLI opens Dagster's instance (import, storage on a new data root) beside Whisper's load (issue #33
    item 3): the future holds a working instance whose storage is in place; a failure is raised by result()."""
    import threading

    from talkthrough_assets.defs import instance as tt_instance

    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home" / "dagster"))
    opening = tt_instance.instance_soon()
    assert any(t.name == "dagster-instance" for t in threading.enumerate()) or opening.done()
    inst = opening.result(timeout=120)
    try:
        assert type(inst.run_storage).__name__ == "RunStorage"  # defs/sqlite_storage.py's
        assert inst.get_runs(limit=1) == []
        assert (tmp_path / "home" / "dagster" / "history" / "runs.db").exists()
    finally:
        inst.dispose()
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "not-a-folder"))
    with pytest.raises(OSError):
        tt_instance.instance_soon().result(timeout=120)


def test_the_top_level_dagster_yaml_is_the_shipped_package_data():
    """The repo's dagster.yaml and the wheel's are one file: what a checkout shows is what an install applies."""
    from talkthrough_assets.defs import instance as tt_instance

    assert (ROOT / "dagster.yaml").read_text() == tt_instance.shipped_yaml()
    assert "tag_concurrency_limits" in tt_instance.shipped_yaml()


OPERATOR_YAML = """# the operator's own instance: kept byte for byte
telemetry:
  enabled: false
"""


def _cli(env: dict, *args: str):
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("talkthrough")
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=300)


def test_an_operators_dagster_yaml_is_never_rewritten_and_what_it_lacks_is_said_once(tmp_path):
    """A real `talkthrough process` with DAGSTER_HOME set to an operator's instance: the run uses it, the file is
    byte-identical afterwards, and one stderr line names the settings it lacks (one run per recording, run
    monitoring); an operator file with both says nothing."""
    from fixture_facts import FIXTURES_DIR, SILENT_NAME

    op = tmp_path / "operator-home"
    op.mkdir()
    (op / "dagster.yaml").write_text(OPERATOR_YAML)
    before = (op / "dagster.yaml").read_bytes()
    env = {k: v for k, v in os.environ.items() if k not in ("TALKTHROUGH_PG_URL",)}
    env.update(TALKTHROUGH_HOME=str(tmp_path / "data"), DAGSTER_HOME=str(op), COLUMNS="200")
    r = _cli(env, "process", str(FIXTURES_DIR / SILENT_NAME))
    assert r.returncode == 0, r.stderr[-2000:]
    assert (op / "dagster.yaml").read_bytes() == before
    assert not (op / ".talkthrough-owned").exists()
    said = [line for line in r.stderr.splitlines() if "is yours and left as it is" in line]
    assert len(said) == 1, r.stderr[-2000:]
    assert "one run per recording" in said[0] and "run monitoring" in said[0], said
    assert (op / "history" / "runs.db").exists()  # the run was recorded in the operator's instance
    assert not (tmp_path / "data" / "dagster").exists()

    # everything Talkthrough relies on, in the operator's own words: nothing to say, still untouched
    full = OPERATOR_YAML + (ROOT / "dagster.yaml").read_text().split("telemetry:")[0]
    (op / "dagster.yaml").write_text(full)
    r = _cli(env, "process", "--force", str(FIXTURES_DIR / SILENT_NAME))  # --force: the instance is opened
    assert r.returncode == 0, r.stderr[-2000:]
    assert (op / "dagster.yaml").read_text() == full
    assert "is yours" not in r.stderr


def test_a_new_dagster_home_gets_the_shipped_settings_and_stays_talkthroughs(tmp_path, monkeypatch):
    """An explicitly set DAGSTER_HOME with no dagster.yaml yet is Talkthrough's: the shipped settings are written
    and marked, so a later change (TALKTHROUGH_PG_URL) is written there too."""
    from talkthrough_assets.defs import instance as tt_instance

    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    monkeypatch.setenv("TALKTHROUGH_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "fresh"))
    home = tt_instance.ensure_dagster_home()
    assert (home / "dagster.yaml").read_text() == tt_instance.shipped_yaml()
    assert (home / ".talkthrough-owned").exists()
    monkeypatch.setenv("TALKTHROUGH_PG_URL", "postgresql://u:p@127.0.0.1:1/db")
    assert "postgres_url" in (tt_instance.ensure_dagster_home() / "dagster.yaml").read_text()


def test_celery_and_kubernetes_deploy_wiring():
    """deploy/celery/dagster.yaml has what Talkthrough relies on in an operator's instance; deploy/k8s/values.yaml
    (never rendered here: no helm) names the code location Dagster loads, the variables Talkthrough declares, the
    per-recording run limit and run monitoring, in the chart's shapes."""
    from talkthrough_assets.core import config
    from talkthrough_assets.defs import instance as tt_instance

    assert tt_instance.missing_settings((DEPLOY / "celery" / "dagster.yaml").read_text()) == []
    values = yaml.safe_load((DEPLOY / "k8s" / "values.yaml").read_text())
    module = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["dagster"]["module_name"]
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    args = deployment["dagsterApiGrpcArgs"]
    assert args[args.index("--module-name") + 1] == module
    assert all(e["name"] in config.BY_NAME for e in deployment["env"])
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    secret = {s["name"] for s in deployment["envSecrets"]}
    assert secret == {s["name"] for s in values["runLauncher"]["config"]["k8sRunLauncher"]["envSecrets"]} \
        == {s["name"] for s in values["dagsterDaemon"]["envSecrets"]}
    queued = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    # the chart renders these into the instance's run_coordinator config, where Talkthrough looks for them
    rendered = {"run_coordinator": {"config": {"tag_concurrency_limits": queued["tagConcurrencyLimits"]}},
                "run_monitoring": {"enabled": values["dagsterDaemon"]["runMonitoring"]["enabled"]}}
    assert tt_instance.missing_settings(yaml.safe_dump(rendered)) == []
    assert values["postgresql"]["enabled"] is False and values["dagsterDaemon"]["runMonitoring"]["maxResumeRunAttempts"] >= 1
