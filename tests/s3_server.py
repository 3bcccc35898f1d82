"""A real S3-compatible endpoint on loopback for tests and benchmarks: `moto` in server mode
(`moto[server]`, in the test extra), started as its own process on a free port. Plain module, no pytest."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


class S3Unavailable(RuntimeError):
    """moto cannot be imported or started here; the message says why."""


class S3Server:
    access_key, secret_key, region = "test", "test", "us-east-1"

    def __init__(self) -> None:
        try:
            import moto.server  # noqa: F401
        except ImportError as e:
            raise S3Unavailable(f"moto[server] is not installed ({e}): pip install -c constraints.txt '.[test]'")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix=f"moto-{self.port}-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url, timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise S3Unavailable(f"moto server did not start (rc {self.proc.poll()}); see {self.log.name}")
                time.sleep(0.3)

    def fs(self):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{self.port}", scheme="http", region=self.region,
                                 access_key=self.access_key, secret_key=self.secret_key, allow_bucket_creation=True)

    def bucket(self, name: str) -> str:
        self.fs().create_dir(name)
        return name

    def env(self) -> dict[str, str]:
        """What a Talkthrough process needs to reach this endpoint (the standard AWS_* variables)."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": self.region}

    def keys(self, prefix: str) -> set[str]:
        import pyarrow.fs as pafs

        sel = pafs.FileSelector(prefix, recursive=True, allow_not_found=True)
        return {i.path for i in self.fs().get_file_info(sel) if i.type == pafs.FileType.File}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass
