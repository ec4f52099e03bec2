"""The simulation engine: one core (``core``), three execution models (``fluid``, ``taskdag``, ``rounds``), the
decision vocabulary and the entry point :func:`run_simulation`."""

from ddlsched.engine.decisions import Decision, Preempt, RunTask, Start, Transfer, WakeAt
from ddlsched.engine.jobview import JobView
from ddlsched.engine.model import Requirements
from ddlsched.engine.result import SimResult
from ddlsched.engine.run import MODELS, SimConfig, run_simulation
from ddlsched.engine.state import JobStatus
from ddlsched.engine.view import SchedulerView

__all__ = ["MODELS", "Decision", "JobStatus", "JobView", "Preempt", "Requirements", "RunTask", "SchedulerView",
           "SimConfig", "SimResult", "Start", "Transfer", "WakeAt", "run_simulation"]
