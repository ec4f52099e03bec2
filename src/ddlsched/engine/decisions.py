"""The one decision vocabulary: what a policy may ask the engine to do. The execution model validates each one.

* ``Start(job_id, gpus)`` — give a pending job exactly those GPUs (fluid: run it; task DAG: make it resident;
  rounds: lease them to a gang job). All models.
* ``Preempt(job_id)`` — take a job's GPUs back and return it to the queue. Fluid, rounds.
* ``WakeAt(time)`` — call the policy again at ``time`` even if nothing else happens. All models.
* ``RunTask(job_id, gpu)`` — run the next ready compute task of the job on that idle GPU. Task DAG, rounds.
* ``Transfer(job_id)`` — admit the job's ready all-reduce onto the network now. Task DAG.

See ``docs/engine.md`` for the execution models.
"""

from __future__ import annotations

from dataclasses import dataclass

# Value objects made on every event. Each is a slotted dataclass with its __init__ written out (``init=False``):
# the compiled build then compiles it into a native class (≈ 10× cheaper to build and read than a frozen
# dataclass, whose generated __init__ stays interpreted); plain Python gets the fastest __init__ it can have.
# They are not frozen at run time: nothing in the engine changes one after it is made, and a policy must not
# either (docs/engine.md "Compiled build"). Equality, hashing and repr are the dataclass's, over every field.


@dataclass(slots=True, init=False, unsafe_hash=True)
class Start:
    """Start (or restart) a pending job on exactly ``num_gpus`` GPUs.

    ``share=True`` allows GPUs that already host another job (GPU sharing, docs/policies/gpu-sharing.md),
    subject to the policy's jobs-per-GPU limit and memory. ``accum_steps`` > 1 runs the job with gradient
    accumulation (sub-batch = batch / accum_steps).
    """

    job_id: str
    gpus: tuple[int, ...]
    share: bool = False
    accum_steps: int = 1

    def __init__(self, job_id: str, gpus: tuple[int, ...], share: bool = False, accum_steps: int = 1) -> None:
        self.job_id = job_id
        self.gpus = gpus
        self.share = share
        self.accum_steps = accum_steps


@dataclass(slots=True, init=False, unsafe_hash=True)
class Preempt:
    """Stop a running job (checkpoint) and return it to the queue; its next start pays the restart penalty."""

    job_id: str

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id


@dataclass(slots=True, init=False, unsafe_hash=True)
class WakeAt:
    """Call the policy again at ``time`` (seconds), even if nothing else happens."""

    time: float

    def __init__(self, time: float) -> None:
        self.time = time


@dataclass(slots=True, init=False, unsafe_hash=True)
class RunTask:
    """Run the next ready compute task of ``job_id`` on GPU ``gpu`` (which must be idle)."""

    job_id: str
    gpu: int

    def __init__(self, job_id: str, gpu: int) -> None:
        self.job_id = job_id
        self.gpu = gpu


@dataclass(slots=True, init=False, unsafe_hash=True)
class Transfer:
    """Admit the ready gradient all-reduce of ``job_id`` onto the network now."""

    job_id: str

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id


Decision = Start | Preempt | WakeAt | RunTask | Transfer
