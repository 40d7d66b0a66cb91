"""A real single-node Slurm cluster with accounting on 127.0.0.1, for the launcher tests (and by hand).

    python tests/helpers/slurm_cluster.py start|stop|status [--state DIR]

It runs munged, MariaDB, slurmdbd, slurmctld and slurmd from Debian's packages, in the foreground of processes
it starts itself (no systemd, no cgroups), with every configuration file, socket, log, spool and database
under one state folder (default /tmp/evalkit-slurm-<uid>, or EVALKIT_SLURM_STATE). Slurm's commands find the
cluster through `SLURM_CONF=<state>/slurm.conf` (printed by `start` and `status`).

Idempotent: `start` reuses a cluster whose recorded processes are all alive and answering, and says so. `stop`
ends exactly the processes whose ids `start` recorded (never by name), then removes the record.

Test sessions use it through `Cluster.session()`: started unless running, and at the end stopped only if a
session started it and no other session (another pytest run on the same machine) still uses it. A cluster
started by hand with `start` is left running for `stop`.

What makes it work here (found by running it):
- proctrack/linuxproc and task/none: no cgroups in a container;
- DefMemPerCPU: otherwise a job that asks for no memory gets all of it and jobs run one at a time;
- accounting (slurmdbd + MariaDB): without it submitit cannot tell that Slurm cancelled or killed a job,
  and waits on it for ever;
- KillWait=2 and a short MinJobAge, so a cancelled or timed-out job ends in seconds, not half a minute;
- SlurmdParameters=config_overrides: the node offers more CPUs than the machine has, because evalkit's jobs
  mostly wait on their pytest subprocess.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cluster", "DEBIAN_PACKAGES", "default_state"]

DEBIAN_PACKAGES = ("munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd", "mariadb-server")
CLUSTER = "evalkit"
NODE = "evalkit-node"
PARTITION = "debug"
NODE_CPUS = 8
NODE_MEMORY_MB = 8000
# Daemons in start order; stopped in reverse.
DAEMONS = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd")


def default_state() -> Path:
    return Path(os.environ.get("EVALKIT_SLURM_STATE") or f"/tmp/evalkit-slurm-{os.getuid()}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own child that exited) is not alive
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _runs(pid: int, program: str) -> bool:
    """Whether process PID still runs PROGRAM (its pid was not recycled for another program)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
    except OSError:
        return False
    return Path(argv0).name == program


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class ClusterError(RuntimeError):
    """The cluster could not be started or did not answer; the message names the log to read."""


@dataclass
class Cluster:
    """One cluster's state folder: its configuration, its processes' ids and Slurm's environment."""

    state: Path
    by: str = "script"  # who started it: `script` (by hand, stopped by hand) or `session` (a test session)

    @property
    def conf(self) -> Path:
        return self.state / "slurm.conf"

    @property
    def record(self) -> Path:
        return self.state / "processes.json"

    def env(self) -> dict[str, str]:
        """The environment Slurm's commands (sbatch, squeue, sacct, scancel) need to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # --- status ------------------------------------------------------------------------------------------

    def recorded(self) -> dict[str, int]:
        try:
            data = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {name: int(pid) for name, pid in data.get("pids", {}).items()}

    def running(self) -> bool:
        """All recorded daemons alive and the node answering as usable."""
        pids = self.recorded()
        if set(pids) != set(DAEMONS) or not all(_alive(pid) and _runs(pid, name) for name, pid in pids.items()):
            return False
        return self.node_state() in {"idle", "mixed", "allocated", "completing"}

    def node_state(self) -> str | None:
        try:
            done = subprocess.run(["sinfo", "-h", "-n", NODE, "-o", "%T"], env=self.env(), capture_output=True,
                                  text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip().rstrip("*~#") or None if done.returncode == 0 else None

    # --- start -------------------------------------------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[Cluster]:
        """The cluster for the length of a test session (see the module's docstring)."""
        self.state.mkdir(parents=True, exist_ok=True)
        users = open(self.state / "users.lock", "w")  # noqa: SIM115 - held for the whole session
        try:
            with self._gate():
                self.start(by="session")
                fcntl.flock(users, fcntl.LOCK_SH)
            yield self
        finally:
            with self._gate():
                try:  # the last session out: no other holds the shared lock
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    last = True
                except BlockingIOError:
                    last = False
                if last and self.started_by() == "session":
                    self.stop()
                users.close()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """One test's jobs on the cluster at a time, across processes: tests that time a sweep or count its jobs must
        not queue behind another test's, whichever worker or session runs them."""
        with open(self.state / "tests.lock", "w") as turn:
            fcntl.flock(turn, fcntl.LOCK_EX)
            yield

    @contextmanager
    def _gate(self) -> Iterator[None]:
        """One start or stop at a time, across processes."""
        with open(self.state / "start.lock", "w") as gate:
            fcntl.flock(gate, fcntl.LOCK_EX)
            yield

    def started_by(self) -> str | None:
        try:
            by = json.loads(self.record.read_text(encoding="utf-8")).get("by")
        except (OSError, ValueError):
            return None
        return by if isinstance(by, str) else None

    def start(self, timeout: float = 60.0, by: str = "script") -> bool:
        """Start the cluster; False (and nothing started) if this state folder's cluster is already running."""
        if self.running():
            return False
        if self.recorded():  # a half-dead cluster from an earlier start: end what is left of it first
            self.stop()
        missing = [name for name in ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sbatch", "sacct")
                   if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]
        if missing:
            raise ClusterError(f"not installed: {', '.join(missing)} (Debian packages: {' '.join(DEBIAN_PACKAGES)};"
                               " bash scripts/test.sh installs them)")
        self.state.mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o755)  # MariaDB's user must reach its data folder below it
        for sub in ("log", "spool", "ctld", "run"):
            (self.state / sub).mkdir(exist_ok=True)
        self.by = by
        ports = {"slurmctld": _free_port(), "slurmd": _free_port(), "slurmdbd": _free_port(),
                 "mariadbd": _free_port()}
        self._write_configs(ports)
        pids: dict[str, int] = {}
        try:
            pids["munged"] = self._start_munge()
            self._save(pids, ports)
            pids["mariadbd"] = self._start_mariadb(ports["mariadbd"])
            self._save(pids, ports)
            pids["slurmdbd"] = self._spawn("slurmdbd", ["slurmdbd", "-D"])
            self._save(pids, ports)
            self._wait(lambda: _port_open(ports["slurmdbd"]), timeout, "slurmdbd", pids)
            # Register the cluster (and a root account) before slurmctld talks to slurmdbd; idempotent.
            self._sacctmgr("add", "cluster", CLUSTER)
            pids["slurmctld"] = self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
            self._save(pids, ports)
            self._wait(lambda: _port_open(ports["slurmctld"]), timeout, "slurmctld", pids)
            pids["slurmd"] = self._spawn("slurmd", ["slurmd", "-D", "-N", NODE, "-f", str(self.conf)])
            self._save(pids, ports)
            self._wait(lambda: self.node_state() in {"idle", "mixed"}, timeout, "slurmd", pids)
            self._wait(self._accounting_answers, timeout, "slurmdbd", pids)
        except BaseException:
            self.stop()
            raise
        return True

    def _save(self, pids: dict[str, int], ports: dict[str, int]) -> None:
        tmp = self.record.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pids": pids, "ports": ports, "by": self.by}, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.record)

    def _spawn(self, name: str, argv: list[str]) -> int:
        log = open(self.state / "log" / f"{name}.out", "ab")  # noqa: SIM115 - the child owns it
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       env=self.env(), cwd=self.state, start_new_session=True)
        finally:
            log.close()
        return process.pid

    def _wait(self, ready: object, timeout: float, name: str, pids: dict[str, int]) -> None:
        assert callable(ready)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            dead = [n for n, pid in pids.items() if not _alive(pid)]
            if dead:
                raise ClusterError(f"{dead[0]} exited while starting; read {self.state / 'log'}/{dead[0]}*")
            time.sleep(0.2)
        raise ClusterError(f"{name} did not become ready in {timeout:.0f} s; read {self.state / 'log'}/{name}*")

    def _start_munge(self) -> int:
        key = self.state / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o600)
        socket_path = self.state / "run" / "munge.socket"
        pid = self._spawn("munged", ["munged", "-F", "--force", "--num-threads=10", f"--socket={socket_path}", f"--key-file={key}",
                                     f"--pid-file={self.state / 'run' / 'munged.pid'}",
                                     f"--log-file={self.state / 'log' / 'munged.log'}",
                                     f"--seed-file={self.state / 'run' / 'munged.seed'}"])
        self._wait(socket_path.exists, 20, "munged", {"munged": pid})
        return pid

    def _start_mariadb(self, port: int) -> int:
        datadir = self.state / "mysql"
        as_root = os.getuid() == 0
        user = ["--user=mysql"] if as_root else []
        if not (datadir / "mysql").is_dir():
            datadir.mkdir(exist_ok=True)
            if as_root:  # MariaDB must own its data folder (it runs as its own user)
                entry = pwd.getpwnam("mysql")
                os.chown(datadir, entry.pw_uid, entry.pw_gid)
            done = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", *user,
                                   "--skip-test-db", "--auth-root-authentication-method=normal"],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                hint = (" (MariaDB runs as the user mysql: every folder above the state folder must let it through)"
                        if as_root else "")
                raise ClusterError(f"mariadb-install-db failed{hint}: {done.stderr.strip()[-500:]}")
        pid = self._spawn("mariadbd", [
            "mariadbd", "--no-defaults", f"--datadir={datadir}", *user, f"--port={port}",
            "--bind-address=127.0.0.1", f"--socket={datadir / 'mysqld.sock'}",
            f"--pid-file={datadir / 'mysqld.pid'}", f"--log-error={self.state / 'log' / 'mariadb.log'}",
            # a private database on the loopback only, for one test cluster: no passwords
            "--skip-grant-tables", "--innodb-buffer-pool-size=16M", "--skip-log-bin"])
        self._wait(lambda: _port_open(port), 60, "mariadbd", {"mariadbd": pid})
        return pid

    def _sacctmgr(self, *args: str) -> None:
        done = subprocess.run(["sacctmgr", "-i", *args], env=self.env(), capture_output=True, text=True, timeout=30)
        if done.returncode != 0 and "already exist" not in done.stdout + done.stderr:
            raise ClusterError(f"sacctmgr {' '.join(args)}: {(done.stdout + done.stderr).strip()}")

    def _accounting_answers(self) -> bool:
        done = subprocess.run(["sacct", "-n", "-X", "-S", "now-1minute"], env=self.env(), capture_output=True,
                              text=True, timeout=10)
        return done.returncode == 0

    def _write_configs(self, ports: dict[str, int]) -> None:
        user = pwd.getpwuid(os.getuid()).pw_name
        munge_socket = self.state / "run" / "munge.socket"
        log = self.state / "log"
        slurm_conf = f"""# generated by tests/helpers/slurm_cluster.py: a single-node test cluster on 127.0.0.1
ClusterName={CLUSTER}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports['slurmctld']}
SlurmdPort={ports['slurmd']}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
StateSaveLocation={self.state / 'ctld'}
SlurmdSpoolDir={self.state / 'spool'}
SlurmctldPidFile={self.state / 'run' / 'slurmctld.pid'}
SlurmdPidFile={self.state / 'run' / 'slurmd.pid'}
SlurmctldLogFile={log / 'slurmctld.log'}
SlurmdLogFile={log / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=100
SlurmdParameters=config_overrides
KillWait=2
MinJobAge=30
InactiveLimit=0
Waittime=0
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports['slurmdbd']}
# for connections to slurmdbd, Slurm's clients take the munge socket from here, not from AuthInfo
AccountingStoragePass={munge_socket}
JobCompType=jobcomp/none
NodeName={NODE} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} State=UNKNOWN
PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
"""
        dbd_conf = f"""# generated by tests/helpers/slurm_cluster.py
AuthType=auth/munge
AuthInfo=socket={munge_socket}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports['slurmdbd']}
SlurmUser={user}
LogFile={log / 'slurmdbd.log'}
PidFile={self.state / 'run' / 'slurmdbd.pid'}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mariadbd']}
StorageUser=root
StorageLoc=slurm_acct_db
"""
        self.conf.write_text(slurm_conf, encoding="utf-8")
        dbd = self.state / "slurmdbd.conf"  # slurmdbd reads it beside $SLURM_CONF; it must be private
        dbd.write_text(dbd_conf, encoding="utf-8")
        dbd.chmod(0o600)

    # --- stop --------------------------------------------------------------------------------------------

    def stop(self, timeout: float = 20.0) -> list[str]:
        """End the processes this state folder recorded (SIGTERM, then SIGKILL); the names of those ended."""
        pids = self.recorded()
        ended = []
        for name in reversed(DAEMONS):
            pid = pids.get(name)
            if pid is None or not _alive(pid) or not _runs(pid, name):  # a recycled pid is someone else's
                continue
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _alive(pid) and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
                while _alive(pid):
                    _reap(pid)
                    time.sleep(0.05)
            _reap(pid)
            ended.append(name)
        self.record.unlink(missing_ok=True)
        return ended


def _reap(pid: int) -> None:
    """Collect our own exited child, so it does not linger as a zombie (others' pids: nothing to do)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--state", type=Path, default=default_state())
    args = parser.parse_args(argv)
    cluster = Cluster(args.state.resolve())
    if args.action == "start":
        try:
            started = cluster.start()
        except ClusterError as error:
            print(f"slurm_cluster: {error}", file=sys.stderr)
            return 1
        print(("started" if started else "already running") + f": export SLURM_CONF={cluster.conf}")
        return 0
    if args.action == "stop":
        ended = cluster.stop()
        print("stopped: " + (", ".join(ended) or "nothing was running"))
        return 0
    if cluster.running():
        print(f"running ({cluster.node_state()}): export SLURM_CONF={cluster.conf}")
        return 0
    print("not running")
    return 3


if __name__ == "__main__":
    sys.exit(main())
