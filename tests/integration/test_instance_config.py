"""Every Dagster instance and workspace YAML in the repo passes Dagster's own config validation, so a
typo in dagster.yaml or deploy/ fails CI instead of the first `dagster-daemon run` on a server.

- the repo's dagster.yaml (the embedded SQLite default) is loaded as a real instance in a temp dir;
- the YAML the CLI writes when TALKTHROUGH_PG_URL is set, and deploy/dagster.yaml, are validated with
  the instance schema, then each configurable class (storage, run queue, launcher, logs) against its own
  config schema without connecting anywhere (tests/integration/test_postgres.py loads the Postgres one for real);
- workspace YAMLs against Dagster's workspace schema; deploy/docker-compose.yml's wiring is checked.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
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

    from talkthrough_assets.app import service

    monkeypatch.delenv("TALKTHROUGH_PG_URL", raising=False)
    assert service.instance_yaml() == (ROOT / "dagster.yaml").read_text()
    (tmp_path / "dagster.yaml").write_text(service.instance_yaml())
    inst = DagsterInstance.from_config(str(tmp_path))
    try:
        assert type(inst.run_storage).__name__ == "SqliteRunStorage"
        assert type(inst.run_coordinator).__name__ == "QueuedRunCoordinator"
        limits = inst.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
        # beside `concurrency:`, the queue's own setting still reaches the coordinator (Dagster's default: 5 s)
        assert inst.run_coordinator.dequeue_interval_seconds == 1
        assert inst.get_concurrency_config().run_queue_config.max_concurrent_runs == 2
        assert (tmp_path / "history" / "runs.db").exists()
    finally:
        inst.dispose()


def test_pg_url_selects_postgres_storage_without_writing_the_url(tmp_path, monkeypatch):
    from talkthrough_assets.app import service

    monkeypatch.setenv("TALKTHROUGH_PG_URL", "postgresql://talkthrough:s3cret@127.0.0.1:5432/talkthrough")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    home = service.ensure_dagster_home()
    # the driver dagster-postgres installs, whatever SQLAlchemy's default for postgresql:// is
    assert os.environ["TALKTHROUGH_PG_URL"] == "postgresql+psycopg2://talkthrough:s3cret@127.0.0.1:5432/talkthrough"
    text = (home / "dagster.yaml").read_text()
    assert "s3cret" not in text  # read from the environment when an instance loads
    ref = _validate_instance_yaml(text, tmp_path)
    assert ref.storage_data.class_name == "DagsterPostgresStorage"
    assert ref.storage_data.config_dict == {"postgres_url": {"env": "TALKTHROUGH_PG_URL"}}
    assert ref.run_coordinator_data.class_name == "QueuedRunCoordinator"
    # unset again: back to the embedded default, rewritten in place
    monkeypatch.delenv("TALKTHROUGH_PG_URL")
    assert (service.ensure_dagster_home() / "dagster.yaml").read_text() == (ROOT / "dagster.yaml").read_text()


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
        assert type(inst.run_storage).__name__ == "SqliteRunStorage"
        assert inst.get_runs(limit=1) == []
        assert (tmp_path / "home" / "dagster" / "history" / "runs.db").exists()
    finally:
        inst.dispose()
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "not-a-folder"))
    with pytest.raises(OSError):
        tt_instance.instance_soon().result(timeout=120)
