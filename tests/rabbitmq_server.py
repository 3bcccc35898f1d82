"""A throwaway RabbitMQ node for tests (Debian's `rabbitmq-server` package, which .ci/run installs): its own
node name, database, logs, Erlang cookie and config under a temp dir, listening on free loopback ports only
(AMQP and Erlang distribution), no plugins. Plain module, no pytest.

RabbitMQ is the broker the Celery route is tested with because it requeues a task the moment the connection
of the worker holding it closes (a worker killed with -9), where Redis waits for a visibility timeout."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")  # the script itself: /usr/sbin's wrapper switches user


class RabbitUnavailable(RuntimeError):
    """RabbitMQ cannot be found or started here; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RabbitMQ:
    user = password = "guest"  # RabbitMQ's default user, accepted on loopback only

    def __init__(self) -> None:
        server = SERVER if SERVER.exists() else shutil.which("rabbitmq-server")
        if not server or not Path(server).exists():
            raise RabbitUnavailable("rabbitmq-server not found: install Debian's `rabbitmq-server` package "
                                    "(`apt-get install -y rabbitmq-server`, as .ci/run does)")
        if not shutil.which("erl") and not Path("/usr/lib/erlang/bin/erl").exists():
            raise RabbitUnavailable("Erlang (erl) not found: install Debian's `rabbitmq-server` package")
        self.server = str(server)
        self.root = Path(tempfile.mkdtemp(prefix="talkthrough-rabbit-"))
        self.port = _free_port()
        self.node = f"tt{self.port}@localhost"
        self.url = f"amqp://{self.user}:{self.password}@127.0.0.1:{self.port}//"
        self.log = self.root / "server.log"
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        conf = self.root / "rabbitmq.conf"
        conf.write_text(f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
                        "# a task may run for hours (a long recording): never close its channel for it\n"
                        "consumer_timeout = 86400000\n")
        plugins = self.root / "enabled_plugins"
        plugins.write_text("[].\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RABBITMQ_")}
        env.update(HOME=str(self.root), RABBITMQ_NODENAME=self.node, RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
                   RABBITMQ_NODE_PORT=str(self.port), RABBITMQ_DIST_PORT=str(_free_port()),
                   RABBITMQ_CONFIG_FILE=str(conf.with_suffix("")), RABBITMQ_ENABLED_PLUGINS_FILE=str(plugins),
                   RABBITMQ_MNESIA_BASE=str(self.root / "mnesia"), RABBITMQ_LOG_BASE=str(self.root / "log"),
                   RABBITMQ_PID_FILE=str(self.root / "pid"), RABBITMQ_LOGS="-",
                   RABBITMQ_CONF_ENV_FILE=str(self.root / "rabbitmq-env.conf"),
                   RABBITMQ_ADVANCED_CONFIG_FILE=str(self.root / "advanced.config"),
                   ERL_EPMD_ADDRESS="127.0.0.1")
        return env

    def start(self, timeout: float = 120) -> "RabbitMQ":
        env = self.env()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([self.server], env=env, cwd=self.root, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + timeout
        while True:
            if self._answers():
                return self
            if self.proc.poll() is not None or time.time() > deadline:
                tail = self.log.read_text(errors="replace")[-800:] if self.log.exists() else ""
                self.stop()
                raise RabbitUnavailable(f"rabbitmq-server did not start (rc {self.proc.poll()}): {tail}")
            time.sleep(0.5)

    def _answers(self) -> bool:
        """An AMQP handshake succeeds (the port opens before the broker takes logins)."""
        from kombu import Connection

        try:
            with Connection(self.url, connect_timeout=2) as conn:
                conn.connect()
                return True
        except Exception:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(self.root, ignore_errors=True)


def start_rabbitmq() -> RabbitMQ:
    """Start one, or raise RabbitUnavailable with the reason (never a silent fallback)."""
    try:
        import kombu  # noqa: F401
    except ImportError as e:
        raise RabbitUnavailable(f"kombu is not installed ({e}): pip install -c constraints.txt '.[test]'")
    return RabbitMQ().start()
