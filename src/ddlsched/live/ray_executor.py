"""The Ray executor: a live run's decisions carried out on a Ray cluster (docs/live-ray.md).

Each server of the cluster description is a Ray node carrying ``ddl_server:<name>`` = 1 (``<name>`` from
:func:`ddlsched.live.model.server_name`: ``s0``, ``s1``, … in the cluster file's order) and one ``ddl_gpu`` per GPU
slot (or real ``GPU``\\ s). Every GPU slot is a placement group of one bundle asking
for one GPU slot and a sliver of its server's resource, so Ray can only place it on that server (checked), with a
warm rank actor in it, all made when the executor opens; a launch runs one rank per GPU it was given (rank order =
the launch's GPU order) on those actors: the job's entry point under :mod:`ddlsched.job`, whose lease is the actor's
revoke flag. (``warm=False``: a placement group with one bundle per GPU and fresh actors per launch.) A background
thread drives every job's steps (place, spawn, run, revoke,
tear down) without blocking, so all Ray calls but :meth:`open`/:meth:`close` happen in it, and hands events to
:meth:`poll`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import runpy
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddlsched.cluster.topology import Cluster
from ddlsched.errors import ConfigError, InputError
from ddlsched.job import attach_lease, read_checkpoint_iterations
from ddlsched.live.clock import LiveClock
from ddlsched.live.executor import EventKind, ExecEvent, Launch
from ddlsched.live.jobs import PROFILE_JOB
from ddlsched.live.model import server_name

GPU_RESOURCE = "ddl_gpu"
SERVER_PREFIX = "ddl_server:"
SERVER_SHARE = 0.001
"""The sliver of ``ddl_server:<name>`` each bundle asks for (pins the bundle to that node, never runs out)."""
NAMESPACE = "ddlsched"
LAUNCH_OPTIONS = frozenset({"entrypoint", "job_args", "checkpoint_every", "grad_scale", "compute_scale",
                            "runtime_env", "checkpoint_dir"})


def server_resource(name: str) -> str:
    return SERVER_PREFIX + name


def node_resources(cluster: Cluster, server: int, gpu_resource: str = GPU_RESOURCE) -> dict[str, float]:
    """The ``ray start --resources`` a server's node needs (``GPU`` is Ray's own: give ``--num-gpus`` instead)."""
    out = {server_resource(server_name(server)): 1.0}
    if gpu_resource != "GPU":
        out[gpu_resource] = float(len(cluster.server_gpus[server]))
    return out


# ---------------------------------------------------------------------------------------------------- the rank
def _resolve(entrypoint: str) -> Callable[[], Any]:
    """``package.module:function`` (called without arguments) or a ``.py`` file (run as ``__main__``)."""
    if entrypoint.endswith(".py"):
        path = entrypoint

        def run_file() -> None:
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise RuntimeError(f"{path} exited with status {e.code}") from None

        return run_file
    mod, sep, fn = entrypoint.partition(":")
    if not sep or not mod or not fn:
        raise ValueError(f"entry point {entrypoint!r}: expected 'package.module:function' or a .py file")
    obj = getattr(importlib.import_module(mod), fn)
    if not callable(obj):
        raise ValueError(f"entry point {entrypoint!r} is not callable")
    return obj  # type: ignore[no-any-return]


def _iface_of(ip: str) -> str | None:
    """The network interface holding IPv4 address ``ip`` (Linux; None when not found)."""
    import fcntl
    import struct

    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):
                req = struct.pack("256s", name.encode()[:15])
                addr = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])  # SIOCGIFADDR
                if addr == ip:
                    return name
    return None


class RankActor:
    """One rank of a launch (a threaded Ray actor: ``run`` in one thread, ``status``/``revoke`` beside it).

    A warm actor (the executor's pool) runs one launch after another: every ``run`` carries a token, ``status``
    answers with the current run's token, ``revoke`` names the run it ends (it may arrive before that run starts),
    and after a run the process's environment is restored and a torch process group left behind is destroyed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._revoked: set[str] = set()
        self._token = ""
        self._st: dict[str, Any] = {}
        self._reset("")

    def _reset(self, token: str) -> None:
        with self._lock:
            self._token = token
            self._st = {"iterations": 0, "checkpoint": None, "started_from": None, "reported": False,
                        "pid": os.getpid(), "token": token}

    # the Lease protocol (ddlsched.job)
    def revoked(self) -> bool:
        with self._lock:
            return self._token in self._revoked

    def report(self, *, iterations: int, checkpoint: int | None, started_from: int | None) -> None:
        with self._lock:
            self._st.update(iterations=iterations, checkpoint=checkpoint, reported=True, wall=time.time())
            if started_from is not None:
                self._st.update(started_from=started_from, start_wall=self._st["wall"])

    # remote methods
    def warm(self, modules: Sequence[str]) -> list[str]:
        """Import ``modules`` now, so that a launch on this actor does not pay for them; returns those missing."""
        missing = []
        for m in modules:
            try:
                importlib.import_module(m)
            except ImportError:
                missing.append(m)
        return missing

    def node(self) -> dict[str, Any]:
        import ray

        ports = []
        for _ in range(2):  # one for a torch process group's master, one for a job's own ring
            with socket.socket() as s:
                s.bind(("", 0))
                ports.append(s.getsockname()[1])
        return {"ip": ray.util.get_node_ip_address(), "pid": os.getpid(), "port": ports[0], "ring_port": ports[1],
                "node_id": ray.get_runtime_context().get_node_id()}

    def status(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._st)

    def revoke(self, token: str = "") -> None:
        with self._lock:
            self._revoked.add(token or self._token)

    def run(self, entrypoint: str, env: Mapping[str, str], token: str = "") -> dict[str, Any]:
        self._reset(token)
        with self._lock:
            self._st["run_wall"] = time.time()
        saved = dict(os.environ)
        try:
            os.environ.update(env)
            if "GLOO_SOCKET_IFNAME" not in os.environ and sys.platform == "linux":
                import ray  # gloo binds where the host name resolves; use the interface of Ray's node address

                iface = _iface_of(ray.util.get_node_ip_address())
                if iface:
                    os.environ["GLOO_SOCKET_IFNAME"] = iface
            attach_lease(self)
            main = _resolve(entrypoint)
            with self._lock:
                self._st["resolved_wall"] = time.time()
            main()
            return self.status() | {"revoked": self.revoked()}
        finally:
            attach_lease(None)
            os.environ.clear()
            os.environ.update(saved)
            dist = sys.modules.get("torch.distributed")
            if dist is not None and dist.is_available() and dist.is_initialized():
                with contextlib.suppress(Exception):
                    dist.destroy_process_group()
            with self._lock:
                self._revoked.discard(token)


# ---------------------------------------------------------------------------------------------------- one launch
@dataclass
class _Slot:
    """Warm mode: GPU ``gpu``'s one-bundle placement group on ``server`` and the rank actor living in it."""

    gpu: int
    server: str
    pg: Any
    actor: Any = None


@dataclass
class _Attempt:
    launch: Launch
    servers: list[str]
    ckpt_dir: Path
    entrypoint: str
    env: dict[str, str]
    pg: Any
    pg_ready: Any
    t_wall: float
    state: str = "placing"  # placing → spawning → running → (revoking) → gone; failing collects errors
    actors: list[Any] = field(default_factory=list)
    info_refs: list[Any] = field(default_factory=list)
    run_refs: list[Any] = field(default_factory=list)
    results: dict[int, Any] = field(default_factory=dict)
    status_ref: Any = None
    status_wall: float = 0.0
    started: bool = False
    started_from: int = 0
    iterations: int = 0
    checkpoint: int | None = None
    progress_iter: int = 0
    progress_wall: float = 0.0
    rank_wall: float = 0.0
    revoke_deadline: float | None = None
    fail_deadline: float = 0.0
    pids: list[int] = field(default_factory=list)
    token: str = ""
    pooled: bool = False
    t_revoke: float = 0.0
    t_epoch: float = 0.0
    t_placed: float = 0.0
    t_spawned: float = 0.0

    @property
    def job_id(self) -> str:
        return self.launch.job_id


def startup_phases(a: _Attempt, st: Mapping[str, Any]) -> dict[str, Any]:
    """Where an attempt's start-up went (wall seconds; rank 0's clock against the driver's, so on several machines
    the rank's phases carry their clock offset): ``place`` (launch → placement group placed), ``spawn`` (→ every
    rank actor up: a Ray worker process each), ``call`` (→ rank 0's ``run`` entered), ``imports`` (→ its entry point
    imported), ``init`` (→ the job's first step: process group, checkpoint load), ``total``."""
    t = [a.t_epoch, a.t_placed, a.t_spawned, float(st.get("run_wall") or 0.0), float(st.get("resolved_wall") or 0.0),
         float(st.get("start_wall") or 0.0)]
    names = ("place", "spawn", "call", "imports", "init")
    row: dict[str, Any] = {"job_id": a.job_id, "attempt": a.launch.attempt, "ranks": len(a.servers),
                           "resumed_from": int(st.get("started_from") or 0)}
    row.update({n: round(max(t[i + 1] - t[i], 0.0), 4) if t[i] and t[i + 1] else None for i, n in enumerate(names)})
    row["total"] = round(t[-1] - t[0], 4) if t[0] and t[-1] else None
    return row


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("the Ray executor needs Ray: pip install 'ddlsched[live]' (or pip install ray)") from None
    return ray


def _probe(address: str, timeout_s: float) -> None:
    """A TCP connect to ``host:port``: a clear error now instead of Ray's long retries."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise InputError(f"Ray address {address!r} is not host:port", field="address")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        raise InputError(f"Ray is not reachable at {address} ({e.strerror or e}); start the head with "
                         "'ray start --head' there or pass the right address / RAY_ADDRESS", field="address") from None


class RayExecutor:
    """Runs a live run's jobs on a Ray cluster whose nodes are the cluster description's servers.

    ``address``: the head's ``host:port`` (default ``RAY_ADDRESS``), or ``auto``. ``clock``: the run's clock
    (``LiveRun`` sets its own; else one at ``time_scale`` run seconds per wall second, started by :meth:`open`);
    events are stamped with it. ``checkpoint_dir``: where each job's checkpoints live (``<dir>/<job_id>``; must be
    shared by all nodes on a real cluster; default a temporary folder removed at :meth:`close`). Launch options
    (a launch's own ``options`` win; defaults from ``defaults`` or the same names as keyword arguments, so
    ``--executor-opt grad_scale=0.01`` works): ``entrypoint`` (``module:function`` or a ``.py`` file; default the
    profile job), ``job_args`` (a mapping the job reads as ``Job().args``), ``checkpoint_every`` (iterations),
    ``grad_scale`` / ``compute_scale`` (the profile job's all-reduce bytes / compute time, × the profile's),
    ``runtime_env`` (Ray's, for the rank actors), ``checkpoint_dir`` (this job's folder). ``models``: a model
    profile CSV (as ``--models``) whose profiles the profile job follows. ``warm`` (default True): at :meth:`open`
    place one single-bundle placement group per GPU slot and start a rank actor in each that imports
    ``warm_imports`` (default: the entry point's module, and torch unless it is the profile job), so a launch only
    calls the actors of its GPUs; False: a placement group and fresh actors per launch (docs/live-ray.md, "Where a
    start goes"). ``startups``, ``drains`` and ``dispatch_s`` are what the executor measured.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, time_scale: float = 1.0, clock: LiveClock | None = None,
                 checkpoint_dir: str | Path | None = None, gpu_resource: str = "auto",
                 defaults: Mapping[str, Any] | None = None, report_every_s: float = 0.5, poll_s: float = 0.02,
                 place_timeout_s: float = 120.0, catalog: Any = None, models: str | None = None,
                 warm: bool = True, warm_imports: Sequence[str] | None = None, warm_timeout_s: float = 180.0,
                 **launch_defaults: Any) -> None:
        if not (isinstance(time_scale, int | float) and time_scale > 0):
            raise InputError(f"time scale must be > 0, got {time_scale!r}", field="time_scale")
        unknown = sorted(set(launch_defaults) - LAUNCH_OPTIONS)
        if unknown:
            raise InputError(f"unknown Ray executor option(s) {unknown} (options: address, checkpoint_dir, "
                             "gpu_resource, models, report_every_s, place_timeout_s, time_scale; launch options: "
                             f"{', '.join(sorted(LAUNCH_OPTIONS))})", field="--executor-opt")
        self.address = address
        self._time_scale = float(time_scale)
        self.clock = clock
        self.gpu_resource = gpu_resource
        self.defaults = {**(defaults or {}), **launch_defaults}
        self.report_every_s = report_every_s
        self.poll_s = poll_s
        self.place_timeout_s = place_timeout_s
        if models is not None:  # extra model profiles (as --models): the profile job's compute and gradient size
            from ddlsched.workload.profiles import default_catalog, load_models

            catalog = (catalog or default_catalog()).with_profiles(load_models(models))
        self.catalog = catalog
        self._ckpt_root = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self._own_ckpt = False
        self._ray: Any = None
        self._we_init = False
        self._cluster: Cluster | None = None
        self._node_server: dict[str, str] = {}
        self._server_gres: dict[str, str] = {}
        self._cmds: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._events: queue.Queue[ExecEvent] = queue.Queue()
        self._jobs: dict[str, _Attempt] = {}
        self._jobs_lock = threading.Lock()  # the loop thread changes _jobs; running()/pids() read it from others
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._actor_cls: Any = None
        self._made_pgs: list[Any] = []
        self._made_actors: list[Any] = []
        self.leftovers: list[str] = []
        """After :meth:`close`: what could not be confirmed gone (empty when everything is)."""
        self.startups: list[dict[str, Any]] = []
        """One row per attempt that started: where its start-up went, wall seconds (:func:`startup_phases`)."""
        self.dispatch_s: dict[tuple[str, int], float] = {}
        """Per (job, attempt): wall seconds from :meth:`launch` to Ray asked (warm: the GPUs' actors called; else
        the placement group requested)."""
        self._launch_t: dict[tuple[str, int], float] = {}
        self.drains: list[float] = []
        """Wall seconds from each revoke to its job's GPUs being free (checkpointed, or killed after the grace)."""
        self.warm = warm and not self.defaults.get("runtime_env")
        self.warm_imports = warm_imports
        self.warm_timeout_s = warm_timeout_s
        self._slots: dict[int, _Slot] = {}  # GPU → its placement group and warm actor (warm mode)
        self._slot_job: dict[int, str] = {}  # GPU → the job whose attempt holds its warm actor
        self._tokens = 0
        self.warm_s: float | None = None
        """Wall seconds :meth:`open` spent starting the warm actors (None: no pool)."""

    # ------------------------------------------------------------------ clock
    @property
    def time_scale(self) -> float:
        return self.clock.time_scale if self.clock is not None else self._time_scale

    def now(self) -> float:
        """Run seconds on the run's clock."""
        return self.clock.now() if self.clock is not None else 0.0

    # ------------------------------------------------------------------ open: connect and check
    def open(self, cluster: Cluster) -> None:
        address = self.address or os.environ.get("RAY_ADDRESS")
        if not address:
            raise ConfigError("no Ray cluster to run on: pass the head's address (host:port) or set RAY_ADDRESS",
                              field="address")
        ray = _ray()
        if address != "auto" and not address.startswith("ray://"):
            _probe(address, timeout_s=5.0)
        if not ray.is_initialized():
            try:
                ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, logging_level="ERROR")
            except (ConnectionError, RuntimeError) as e:
                raise InputError(f"cannot connect to Ray at {address}: {e}", field="address") from None
            self._we_init = True
        self._ray = ray
        self._check_nodes(cluster)
        self._cluster = cluster
        if self._ckpt_root is None:
            self._ckpt_root = Path(tempfile.mkdtemp(prefix="ddlsched-ckpt-"))
            self._own_ckpt = True
        self._actor_cls = ray.remote(max_restarts=0, max_concurrency=4)(RankActor)
        try:
            self._start_slots(cluster)
        except BaseException:
            self.close()
            raise
        if self.clock is None:
            self.clock = LiveClock(self._time_scale)
            self.clock.start()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="ray-executor", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ warm slots
    def _warm_modules(self) -> list[str]:
        if self.warm_imports is not None:
            return list(self.warm_imports)
        entry = str(self.defaults.get("entrypoint") or PROFILE_JOB)
        mods = ["ddlsched.job"] + ([entry.partition(":")[0]] if ":" in entry else [])
        return mods if entry == PROFILE_JOB else [*mods, "torch", "torch.distributed"]

    def _slot_actor(self, slot: _Slot) -> Any:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        kw: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": PlacementGroupSchedulingStrategy(
            slot.pg, placement_group_bundle_index=0)}
        gres = self._server_gres[slot.server]
        if gres == "GPU":
            kw["num_gpus"] = 1  # Ray then sets CUDA_VISIBLE_DEVICES to this slot's GPU
        else:
            kw["resources"] = {gres: 1.0}
        h = self._actor_cls.options(**kw).remote()
        self._made_actors.append(h)
        return h

    def _start_slots(self, cluster: Cluster) -> None:
        """Warm mode: one placement group per GPU slot (one bundle, pinned to its server, checked) holding one
        rank actor that has imported the job's modules; waits until all are ready. A launch then runs on the
        actors of the GPUs the policy chose, with nothing to place or start."""
        if not self.warm:
            return
        from ray.util.placement_group import placement_group

        t0 = time.monotonic()
        free = self._ray.available_resources()
        for gres in set(self._server_gres.values()):
            need = sum(1 for g in range(cluster.num_gpus) if self._server_gres[server_name(cluster.gpu_server[g])]
                       == gres)
            if free.get(gres, 0.0) < need:
                raise ConfigError(f"only {free.get(gres, 0.0):g} of the {need} {gres} slots the cluster file names "
                                  "are free on the Ray cluster (another executor or Ray user holds the rest); a warm "
                                  "executor holds every slot (pass warm=False to share the cluster)",
                                  field="--executor-opt")
        for g in range(cluster.num_gpus):
            server = server_name(cluster.gpu_server[g])
            pg = placement_group([{self._server_gres[server]: 1.0, server_resource(server): SERVER_SHARE}],
                                 name=f"ddlsched-gpu{g}")
            self._made_pgs.append(pg)
            self._slots[g] = _Slot(g, server, pg)
        ready, _ = self._ray.wait([sl.pg.ready() for sl in self._slots.values()], num_returns=len(self._slots),
                                  timeout=self.warm_timeout_s)
        if len(ready) < len(self._slots):
            raise ConfigError(f"the Ray executor's {len(self._slots)} GPU slots were not placed within "
                              f"{self.warm_timeout_s:g} s (another Ray user holds them?)", field="--executor-opt")
        from ray.util.placement_group import placement_group_table

        for sl in self._slots.values():
            node = placement_group_table(sl.pg).get("bundles_to_node_id", {}).get(0, "")
            if self._node_server.get(node) != sl.server:
                raise ConfigError(f"GPU {sl.gpu}'s slot was placed on {self._node_server.get(node, node)}, not "
                                  f"{sl.server}")
        mods = self._warm_modules()
        refs = []
        for sl in self._slots.values():
            sl.actor = self._slot_actor(sl)
            refs.append(sl.actor.warm.remote(mods))
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=self.warm_timeout_s)
        if len(ready) < len(refs):
            raise ConfigError(f"the Ray executor's {len(refs)} warm rank actors were not ready within "
                              f"{self.warm_timeout_s:g} s (pass warm=False to start ranks per launch)",
                              field="--executor-opt")
        self._ray.get(refs)
        self.warm_s = time.monotonic() - t0

    def _replace(self, g: int) -> None:
        """Kill GPU ``g``'s actor (its run failed, was killed or cancelled) and start a fresh one in its slot."""
        sl = self._slots[g]
        with contextlib.suppress(Exception):
            self._ray.kill(sl.actor, no_restart=True)
        sl.actor = None
        if not self._stop.is_set():
            sl.actor = self._slot_actor(sl)
            sl.actor.warm.remote(self._warm_modules())  # runs before any later call: the next launch finds it warm

    def _gpu_res(self, res: Mapping[str, float]) -> str:
        if self.gpu_resource != "auto":
            return self.gpu_resource
        return GPU_RESOURCE if GPU_RESOURCE in res else "GPU"

    def _check_nodes(self, cluster: Cluster) -> None:
        """Every server must be exactly one live node with its GPU count; name every mismatch."""
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        carriers: dict[str, list[dict[str, Any]]] = {}
        for n in nodes:
            for key in n.get("Resources", {}):
                if key.startswith(SERVER_PREFIX):
                    carriers.setdefault(key[len(SERVER_PREFIX):], []).append(n)
        problems: list[str] = []
        self._node_server, self._server_gres = {}, {}
        for s in range(cluster.num_servers):
            name = server_name(s)
            want = len(cluster.server_gpus[s])
            found = carriers.get(name, [])
            if not found:
                problems.append(f"server {name} ({want} GPUs): no live Ray node carries the resource "
                                f"{server_resource(name)}")
                continue
            if len(found) > 1:
                problems.append(f"server {name}: {len(found)} Ray nodes carry {server_resource(name)} "
                                f"({', '.join(n['NodeManagerAddress'] for n in found)}); one node per server")
                continue
            n = found[0]
            res = n.get("Resources", {})
            gres = self._gpu_res(res)
            have = res.get(gres, 0.0)
            if have != want:
                problems.append(f"server {name}: its Ray node {n['NodeManagerAddress']} has {have:g} {gres}, "
                                f"the cluster file says {want} GPUs")
            self._node_server[n["NodeID"]] = name
            self._server_gres[name] = gres
        if problems:
            known = sorted(carriers)
            raise ConfigError(f"cluster {cluster.name!r} does not match the Ray cluster ({len(nodes)} live nodes, "
                              f"servers advertised: {', '.join(known) or 'none'}):\n  " + "\n  ".join(problems))

    # ------------------------------------------------------------------ the interface (thread-safe, returns at once)
    def launch(self, launch: Launch) -> None:
        c = self._require_open()
        if len(launch.gpus) < 1 or any(not 0 <= g < c.num_gpus for g in launch.gpus):
            raise InputError(f"job {launch.job_id}: GPUs {launch.gpus} are not GPUs of cluster {c.name!r}")
        if len(set(launch.gpus)) != len(launch.gpus):
            raise InputError(f"job {launch.job_id}: GPUs {launch.gpus} repeat")
        self._launch_t[(launch.job_id, launch.attempt)] = time.perf_counter()
        self._cmds.put(("launch", launch))

    def revoke(self, job_id: str, grace_s: float) -> None:
        self._require_open()
        self._cmds.put(("revoke", job_id, grace_s))

    def cancel(self, job_id: str) -> None:
        self._require_open()
        self._cmds.put(("cancel", job_id))

    def poll(self, timeout_s: float) -> Sequence[ExecEvent]:
        out: list[ExecEvent] = []
        try:
            out.append(self._events.get(timeout=max(timeout_s, 0.0)) if timeout_s > 0 else self._events.get_nowait())
        except queue.Empty:
            return out
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                break
        out.sort(key=lambda e: e.time_s)
        return out

    def running(self) -> list[str]:
        """Job ids with a live attempt (for tests and snapshots)."""
        with self._jobs_lock:
            return sorted(self._jobs)

    def pids(self, job_id: str) -> list[int]:
        """The worker process ids of the job's ranks (empty until they run)."""
        with self._jobs_lock:
            a = self._jobs.get(job_id)
            return list(a.pids) if a is not None else []

    def close(self) -> None:
        if self._thread is not None:
            self._cmds.put(("stop",))
            self._stop.set()
            self._thread.join(timeout=60)
            self._thread = None
        if self._ray is not None and self._ray.is_initialized():
            self._stop.set()  # no warm actor is replaced from here on
            for a in list(self._jobs.values()):
                self._teardown(a)
            self._jobs.clear()
            from ray.util.placement_group import remove_placement_group

            for sl in self._slots.values():
                with contextlib.suppress(Exception):
                    if sl.actor is not None:
                        self._ray.kill(sl.actor, no_restart=True)
                with contextlib.suppress(Exception):
                    remove_placement_group(sl.pg)
            self._slots = {}
            self.leftovers = self._confirm_gone(timeout_s=20.0)
            if self._we_init:
                self._ray.shutdown()
                self._we_init = False
        if self._own_ckpt and self._ckpt_root is not None:
            shutil.rmtree(self._ckpt_root, ignore_errors=True)
            self._ckpt_root, self._own_ckpt = None, False
        self._cluster = None

    def _require_open(self) -> Cluster:
        if self._cluster is None or self._thread is None:
            raise RuntimeError("the Ray executor is not open")
        return self._cluster

    def _confirm_gone(self, timeout_s: float) -> list[str]:
        """Wait until every placement group this executor made is REMOVED and every actor DEAD."""
        from ray.util.placement_group import placement_group_table

        deadline = time.monotonic() + timeout_s
        while True:
            left = []
            for pg in self._made_pgs:
                st = placement_group_table(pg).get("state")
                if st != "REMOVED":
                    left.append(f"placement group {pg.id.hex()} ({st})")
            for h in self._made_actors:
                info = self._ray._private.state.state.actor_table(h._actor_id.hex())
                st = info.get("State") if info else "DEAD"
                if st not in ("DEAD", 4):
                    left.append(f"actor {h._actor_id.hex()} ({st})")
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)

    # ------------------------------------------------------------------ the driving thread
    def _emit(self, a: _Attempt, kind: EventKind, **kw: Any) -> None:
        self._events.put(ExecEvent(kind, a.job_id, self.now(), a.launch.attempt, **kw))

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:  # wait for a command at most poll_s: a launch is carried out as soon as it arrives
                cmd: tuple[Any, ...] | None = self._cmds.get(timeout=self.poll_s)
            except queue.Empty:
                cmd = None
            while cmd is not None:
                if cmd[0] == "stop":
                    return
                with contextlib.suppress(Exception):  # e.g. revoking a rank that just died: its run() says so
                    self._command(cmd)
                try:
                    cmd = self._cmds.get_nowait()
                except queue.Empty:
                    cmd = None
            for a in list(self._jobs.values()):
                try:
                    self._step(a)
                except Exception as e:  # a bug or a Ray failure: the job fails, the executor goes on
                    self._finish(a, EventKind.FAILED, reason=f"executor error: {type(e).__name__}: {e}")

    def _command(self, cmd: tuple[Any, ...]) -> None:
        if cmd[0] == "launch":
            launch: Launch = cmd[1]
            with self._jobs_lock:
                old = self._jobs.pop(launch.job_id, None)
            if old is not None:  # a relaunch of a job still held: the old attempt goes first
                self._teardown(old)
            try:
                attempt = self._place(launch)
                with self._jobs_lock:
                    self._jobs[launch.job_id] = attempt
                if attempt.pooled:
                    attempt.t_placed = time.time()
                    self._spawn(attempt)
                key = (launch.job_id, launch.attempt)  # Ray asked: the GPUs' actors called, or the group requested
                t = self._launch_t.pop(key, None)
                if t is not None:
                    self.dispatch_s[key] = time.perf_counter() - t
            except Exception as e:
                self._events.put(ExecEvent(EventKind.FAILED, launch.job_id, self.now(), launch.attempt,
                                           reason=f"cannot launch: {type(e).__name__}: {e}"))
            return
        a = self._jobs.get(cmd[1])
        if a is None:
            return
        if cmd[0] == "cancel":
            self._teardown(a)
            with self._jobs_lock:
                self._jobs.pop(a.job_id, None)
        elif cmd[0] == "revoke" and a.revoke_deadline is None:
            if a.state in ("placing", "spawning"):  # nothing runs yet: its checkpoint is where it was
                self._finish(a, EventKind.CHECKPOINTED, iterations=float(self._last_checkpoint(a)))
                return
            a.t_revoke = time.monotonic()
            a.revoke_deadline = a.t_revoke + float(cmd[2]) / self.time_scale
            for h in a.actors:
                h.revoke.remote(a.token)

    def _options(self, launch: Launch) -> dict[str, Any]:
        return {**self.defaults, **launch.options}

    def _job_args(self, launch: Launch, opts: Mapping[str, Any], entrypoint: str) -> dict[str, Any]:
        args = dict(opts.get("job_args") or {})
        if entrypoint == PROFILE_JOB:
            compute_s = launch.ideal_iter_s
            grad_bytes = 0.0
            cat = self.catalog
            if cat is None:
                from ddlsched.workload.profiles import default_catalog

                cat = self.catalog = default_catalog()
            if launch.spec.model in cat:
                p = cat[launch.spec.model]
                compute_s, grad_bytes = p.compute_s, p.grad_bytes
            args.setdefault("compute_s", compute_s / self.time_scale * float(opts.get("compute_scale", 1.0)))
            args.setdefault("grad_bytes", int(grad_bytes * float(opts.get("grad_scale", 1.0))))
        return args

    def _place(self, launch: Launch) -> _Attempt:
        import json

        from ray.util.placement_group import placement_group

        c = self._require_open()
        servers = [server_name(c.gpu_server[g]) for g in launch.gpus]
        opts = self._options(launch)
        pooled = bool(self._slots)
        if pooled:  # the GPUs' warm actors: nothing to place
            if opts.get("runtime_env"):
                raise ConfigError("a launch with its own runtime_env needs the Ray executor with warm=False")
            busy = {g: self._slot_job[g] for g in launch.gpus if g in self._slot_job}
            if busy:
                raise RuntimeError(f"GPU(s) busy: {', '.join(f'{g} with job {j}' for g, j in sorted(busy.items()))}")
            pg = pg_ready = None
        else:
            bundles = [{self._server_gres[s]: 1.0, server_resource(s): SERVER_SHARE} for s in servers]
            pg = placement_group(bundles, strategy="PACK", name=f"ddlsched-{launch.job_id}-{launch.attempt}")
            self._made_pgs.append(pg)
            pg_ready = pg.ready()
        entrypoint = str(opts.get("entrypoint") or PROFILE_JOB)
        assert self._ckpt_root is not None
        ckpt = Path(opts["checkpoint_dir"]) if opts.get("checkpoint_dir") else self._ckpt_root / launch.job_id
        env = {"DDLSCHED_JOB_ID": launch.job_id, "DDLSCHED_ATTEMPT": str(launch.attempt),
               "DDLSCHED_ITERATIONS": str(int(launch.iterations)), "DDLSCHED_CHECKPOINT_DIR": str(ckpt),
               "DDLSCHED_JOB_ARGS": json.dumps(self._job_args(launch, opts, entrypoint)),
               "WORLD_SIZE": str(len(launch.gpus))}
        if opts.get("checkpoint_every"):
            env["DDLSCHED_CHECKPOINT_EVERY"] = str(int(opts["checkpoint_every"]))
        self._tokens += 1
        if pooled:
            for g in launch.gpus:
                self._slot_job[g] = launch.job_id
        return _Attempt(launch, servers, ckpt, entrypoint, env, pg, pg_ready, time.monotonic(), t_epoch=time.time(),
                        token=f"{launch.job_id}#{launch.attempt}#{self._tokens}", pooled=pooled)

    def _step(self, a: _Attempt) -> None:
        ray = self._ray
        if a.state == "placing":
            done, _ = ray.wait([a.pg_ready], timeout=0)
            if not done:
                if time.monotonic() - a.t_wall > self.place_timeout_s:
                    self._finish(a, EventKind.FAILED, reason=f"placement group not placed within "
                                 f"{self.place_timeout_s:g} s on servers {sorted(set(a.servers))}")
                return
            a.t_placed = time.time()
            wrong = self._check_placement(a)
            if wrong:
                self._finish(a, EventKind.FAILED, reason=wrong)
                return
            self._spawn(a)
        elif a.state == "spawning":
            done, _ = ray.wait(a.info_refs, num_returns=len(a.info_refs), timeout=0)
            if len(done) < len(a.info_refs):
                return
            try:
                infos = ray.get(a.info_refs)
            except Exception as e:
                self._finish(a, EventKind.LOST, iterations=float(self._last_checkpoint(a)),
                             reason=f"a worker did not start: {type(e).__name__}: {e}")
                return
            a.t_spawned = time.time()
            self._run(a, infos)
        elif a.state in ("running", "failing"):
            self._watch(a)

    def _check_placement(self, a: _Attempt) -> str:
        from ray.util.placement_group import placement_group_table

        where = placement_group_table(a.pg).get("bundles_to_node_id", {})
        bad = []
        for i, want in enumerate(a.servers):
            got = self._node_server.get(where.get(i, ""), f"node {where.get(i)}")
            if got != want:
                bad.append(f"rank {i} placed on {got}, not {want}")
        return "placement group not pinned: " + "; ".join(bad) if bad else ""

    def _spawn(self, a: _Attempt) -> None:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        rt = self._options(a.launch).get("runtime_env")
        if a.pooled:
            a.actors = [self._slots[g].actor for g in a.launch.gpus]
            a.info_refs = [h.node.remote() for h in a.actors]
            a.state = "spawning"
            return
        for r, s in enumerate(a.servers):
            gres = self._server_gres[s]
            kw: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": PlacementGroupSchedulingStrategy(
                a.pg, placement_group_bundle_index=r)}
            if gres == "GPU":
                kw["num_gpus"] = 1
            else:
                kw["resources"] = {gres: 1.0}
            if rt:
                kw["runtime_env"] = rt
            h = self._actor_cls.options(**kw).remote()
            a.actors.append(h)
            self._made_actors.append(h)
        a.info_refs = [h.node.remote() for h in a.actors]
        a.state = "spawning"

    def _run(self, a: _Attempt, infos: list[dict[str, Any]]) -> None:
        a.pids = [int(i["pid"]) for i in infos]
        seen: dict[str, int] = {}
        for r, h in enumerate(a.actors):
            local = seen.get(a.servers[r], 0)
            seen[a.servers[r]] = local + 1
            env = {**a.env, "RANK": str(r), "LOCAL_RANK": str(local), "MASTER_ADDR": str(infos[0]["ip"]),
                   "MASTER_PORT": str(infos[0]["port"]),
                   "DDLSCHED_PEERS": ",".join(f"{i['ip']}:{i['ring_port']}" for i in infos)}
            a.run_refs.append(h.run.remote(a.entrypoint, env, a.token))
        a.state = "running"
        a.progress_wall = time.monotonic()

    def _watch(self, a: _Attempt) -> None:
        ray = self._ray
        now = time.monotonic()
        every = min(self.report_every_s, 0.2) if a.started else 0.01  # catch the first step promptly: STARTED's time
        if a.status_ref is None and now - a.status_wall >= every:
            a.status_ref = a.actors[0].status.remote()
            a.status_wall = now
        if a.status_ref is not None and ray.wait([a.status_ref], timeout=0)[0]:
            with contextlib.suppress(Exception):  # a dead rank: its run() says so below
                self._absorb(a, ray.get(a.status_ref))
            a.status_ref = None
        for i, ref in enumerate(a.run_refs):
            if i not in a.results and ray.wait([ref], timeout=0)[0]:
                try:
                    a.results[i] = ray.get(ref)
                except Exception as e:
                    a.results[i] = e
                    if a.state != "failing":
                        a.state, a.fail_deadline = "failing", now + 3.0
        if a.state == "failing":
            if len(a.results) < len(a.run_refs) and now < a.fail_deadline:
                return  # collect the other ranks' outcomes: one dead rank makes its peers' collectives fail
            self._failed(a)
            return
        if len(a.results) == len(a.run_refs):
            self._completed(a)
            return
        if a.revoke_deadline is not None and now > a.revoke_deadline:
            self._finish(a, EventKind.CHECKPOINTED, iterations=float(self._last_checkpoint(a)), killed=True)

    def _absorb(self, a: _Attempt, st: Mapping[str, Any]) -> None:
        """Take a rank-0 status: STARTED once it resumed, PROGRESS (rate-limited) with the iteration time measured
        between the rank's own reports. A warm actor's status from before this attempt's run began is ignored."""
        if st.get("token") != a.token:
            return
        if st.get("checkpoint") is not None:
            a.checkpoint = max(a.checkpoint or 0, int(st["checkpoint"]))
        if st.get("started_from") is not None and not a.started:
            a.started, a.started_from = True, int(st["started_from"])
            a.iterations = a.progress_iter = a.started_from
            a.rank_wall = float(st.get("start_wall") or 0.0)
            a.progress_wall = time.monotonic()
            self.startups.append(startup_phases(a, st))
            self._emit(a, EventKind.STARTED, iterations=float(a.started_from))
        if not a.started:
            return
        it = int(st.get("iterations") or 0)
        a.iterations = max(a.iterations, it)
        now = time.monotonic()
        if it > a.progress_iter and now - a.progress_wall >= self.report_every_s:
            wall = float(st.get("wall") or 0.0)
            iter_s = max(wall - a.rank_wall, 0.0) / (it - a.progress_iter) * self.time_scale
            a.progress_iter, a.progress_wall, a.rank_wall = it, now, wall
            self._emit(a, EventKind.PROGRESS, iterations=float(it), iter_s=iter_s)

    def _failed(self, a: _Attempt) -> None:
        from ray.exceptions import RayActorError, RayTaskError

        died = [r for r, x in a.results.items() if isinstance(x, RayActorError)]
        errors = {r: x for r, x in a.results.items() if isinstance(x, BaseException) and r not in died}
        if died:
            self._finish(a, EventKind.LOST, iterations=float(self._last_checkpoint(a)),
                         reason=f"rank {died[0]}'s worker died")
            return

        def cause(x: BaseException) -> BaseException:
            c = getattr(x, "cause", None) if isinstance(x, RayTaskError) else None
            return c if isinstance(c, BaseException) else x

        def peer_error(x: BaseException) -> bool:  # a rank whose collective broke because another rank failed
            s = f"{type(x).__name__} {x}".lower()
            return any(w in s for w in ("gloo", "connection", "peer", "distbackenderror"))

        ranked = sorted(errors.items(), key=lambda kv: (peer_error(cause(kv[1])), kv[0]))
        r, x = ranked[0]
        c = cause(x)
        msg = str(c).strip().splitlines()
        self._finish(a, EventKind.FAILED, reason=f"rank {r}: {type(c).__name__}: {msg[-1] if msg else ''}".strip())

    def _completed(self, a: _Attempt) -> None:
        res: dict[str, Any] = a.results[0]
        self._absorb(a, res)
        total = int(a.launch.iterations)
        it = int(res.get("iterations") or 0)
        if not a.started:
            a.started = True
            self._emit(a, EventKind.STARTED, iterations=float(res.get("started_from") or 0))
        if not res.get("reported") or it >= total:
            self._finish(a, EventKind.FINISHED, iterations=float(total))
        elif res.get("revoked"):
            self._finish(a, EventKind.CHECKPOINTED, iterations=float(self._last_checkpoint(a)))
        else:
            self._finish(a, EventKind.FAILED, reason=f"the entry point {a.entrypoint} returned after {it} of "
                         f"{total} iterations without its lease being revoked")

    def _last_checkpoint(self, a: _Attempt) -> int:
        on_disk = read_checkpoint_iterations(a.ckpt_dir)  # readable where the driver shares the folder
        return max(a.checkpoint or 0, on_disk or 0)

    def _finish(self, a: _Attempt, kind: EventKind, **kw: Any) -> None:
        """Release the job's GPUs, then report (so the next launch on them finds them free). Warm actors whose run
        returned cleanly (or that were revoked before running anything) stay in their slots; any other rank is
        killed (and, warm, replaced)."""
        clean = kind == EventKind.FINISHED or (kind == EventKind.CHECKPOINTED and not kw.get("killed")
                                               and len(a.results) == len(a.actors))
        ran_clean = clean and a.state == "running" and all(not isinstance(x, BaseException)
                                                            for x in a.results.values())
        never_ran = kind == EventKind.CHECKPOINTED and a.state in ("placing", "spawning")
        self._teardown(a, reuse=ran_clean or never_ran)
        if kind == EventKind.CHECKPOINTED and a.t_revoke:
            self.drains.append(round(time.monotonic() - a.t_revoke, 4))
        with self._jobs_lock:
            self._jobs.pop(a.job_id, None)
        self._emit(a, kind, **kw)

    def _teardown(self, a: _Attempt, reuse: bool = False) -> None:
        from ray.util.placement_group import remove_placement_group

        if a.pooled:
            for g in a.launch.gpus:
                if self._slot_job.get(g) == a.job_id:
                    del self._slot_job[g]
                    if not reuse:
                        self._replace(g)
            a.actors = []
            a.state = "gone"
            return
        for h in a.actors:
            with contextlib.suppress(Exception):
                self._ray.kill(h, no_restart=True)
        a.actors = []
        with contextlib.suppress(Exception):
            remove_placement_group(a.pg)
        a.state = "gone"


__all__ = ["GPU_RESOURCE", "SERVER_PREFIX", "RankActor", "RayExecutor", "node_resources", "server_name",
           "server_resource"]
