"""A real (tiny) training job: a two-layer MLP on synthetic regression data, CPU, DDP over gloo.

Seeded throughout: the model's initial weights from ``seed``; step ``k``'s batch on rank ``r`` from
``(seed, k, r)`` alone, so a run resumed from a checkpoint (model, optimizer with its momentum, RNG state) sees the
same batches and reaches the same loss at the same step as an uninterrupted run with the same world size.
Arguments (``DDLSCHED_JOB_ARGS``): ``seed`` (0), ``lr`` (0.05), ``hidden`` (32), ``batch`` (32), ``loss_log``
(a file rank 0 appends ``step loss`` lines to, ``repr`` of the float; optional; ``{job_id}`` in it is replaced by the
job's id), ``step_sleep_s`` (0: a pause per step, to pace a demo or a test; it changes no number), ``device``
(``cpu``, the default, or ``cuda``: the model and each batch on the rank's GPU, NCCL between ranks; the batches are
still drawn on the CPU from the same seeds, so the data does not depend on the device).
"""

from __future__ import annotations

import time

from ddlsched.job import Job

FEATURES = 16


def main() -> None:
    import torch
    from torch import nn

    torch.set_num_threads(1)
    job = Job()
    seed = int(job.args.get("seed", 0))
    hidden = int(job.args.get("hidden", 32))
    batch = int(job.args.get("batch", 32))
    loss_log = job.args.get("loss_log")
    if loss_log:
        loss_log = str(loss_log).replace("{job_id}", job.job_id)
    device = str(job.args.get("device", "cpu"))
    if device not in ("cpu", "cuda"):
        raise ValueError(f"train job: device must be 'cpu' or 'cuda', not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("train job: device=cuda but torch sees no GPU on this worker")
    job.init_process_group("nccl" if device == "cuda" else "gloo")
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(FEATURES, hidden), nn.Tanh(), nn.Linear(hidden, 1)).to(device)
    net: nn.Module = model
    if job.world_size > 1:
        net = nn.parallel.DistributedDataParallel(model, device_ids=[0] if device == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=float(job.args.get("lr", 0.05)), momentum=0.9)
    lossf = nn.MSELoss()
    pause = float(job.args.get("step_sleep_s", 0.0))
    for step in job.steps(state={"model": model, "opt": opt}):
        g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1_009 + job.rank)
        x = torch.randn(batch, FEATURES, generator=g)
        y = torch.sin(x.sum(dim=1, keepdim=True))
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = lossf(net(x), y)
        loss.backward()
        opt.step()
        if pause:
            time.sleep(pause)
        if loss_log and job.rank == 0:
            with open(loss_log, "a") as f:
                f.write(f"{step} {loss.item()!r}\n")


if __name__ == "__main__":
    main()
