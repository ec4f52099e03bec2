"""A pre-imported parent for the fault drill: it imports ``ddlsched serve``'s modules once, then forks one child per
``spawn`` request (a line of JSON on stdin: ``{"log": PATH, "args": [...]}``), answering the child's pid. Each child
is a whole ``ddlsched serve`` process (its own session) that the drill kills with SIGKILL: forking skips the seconds
of imports a fresh interpreter spends, so 20+ restarts fit the drill's time. Children are reaped automatically."""

from __future__ import annotations

import json
import os
import signal
import sys

import uvicorn  # noqa: F401 - imported here so that children start at once

import ddlsched.cli
import ddlsched.live.run
import ddlsched.live.sim_executor
import ddlsched.service.app
import ddlsched.service.scheduler
from ddlsched.engine.run import default_catalog
from ddlsched.policies.registry import make_policy


def main() -> None:
    default_catalog()
    make_policy("fifo")  # loads the registry's built-in policies
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os.setsid()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.argv = ["ddlsched", *req["args"]]
            code = 0
            try:
                ddlsched.cli.main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            finally:
                sys.stdout.flush()
                os._exit(code)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
