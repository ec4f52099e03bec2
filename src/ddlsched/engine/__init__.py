"""The simulation engine: event loop, job state, the policy interface (decisions and view)."""

from ddlsched.engine.decisions import Decision, Preempt, Start, WakeAt
from ddlsched.engine.fluid import SimConfig, SimResult, Simulator, simulate
from ddlsched.engine.state import JobStatus, JobView
from ddlsched.engine.view import SchedulerView

__all__ = ["Decision", "JobStatus", "JobView", "Preempt", "SchedulerView", "SimConfig", "SimResult", "Simulator",
           "Start", "WakeAt", "simulate"]
