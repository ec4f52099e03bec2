"""The metric vocabulary: every per-job record column and every summary key, defined once.

Every execution model fills the same record columns with the same meaning (``docs/metrics.md`` is generated
from this module; a test keeps them in sync). Times are seconds.

The run-time identity every model satisfies for every completed job (checked on every run)::

    run_s = ideal_run_s + contention_s + spread_s + sharing_s + hetero_s + switch_s + restart_s

and ``jct_s = queue_s + run_s``. Each cause is ≥ 0; a cause a model does not have is 0 (see the model table in
``docs/engine.md``).
"""

from __future__ import annotations

RECORD_FIELDS: dict[str, str] = {
    "job_id": "the job's id in the trace",
    "model": "the job's DNN model (profile name)",
    "num_gpus": "GPUs (workers) the job asks for",
    "user": "user, virtual cluster or group from the trace ('' if none)",
    "arrival_s": "submission time",
    "first_start_s": "time the job first started running",
    "finish_s": "completion time",
    "jct_s": "job completion time = finish_s − arrival_s",
    "queue_s": "time waiting for resources = jct_s − run_s (before the first start, after preemptions, and "
               "— in the rounds model — while none of its tasks ran)",
    "run_s": "time the job held resources and made progress or paid a cost of running (jct_s − queue_s)",
    "ideal_run_s": "run time alone on an empty cluster, consolidated (fewest servers, one rack), on the GPU "
                   "types fastest for its model: a lower bound on run_s",
    "comm_s": "time in gradient synchronisation, contention included (task DAG: from a step's last backward task "
              "to the end of its all-reduce, waiting for admission included)",
    "comm_overhead_s": "communication excess = contention_s + spread_s (communication only)",
    "contention_s": "extra communication time caused by other jobs sharing links/NICs (or waiting for a "
                    "transfer to be admitted) beyond the job's own placement alone",
    "spread_s": "extra communication time of the job's placement alone over its ideal (consolidated) placement",
    "sharing_s": "extra compute time from GPU sharing: co-location interference, gradient accumulation, and "
                 "waiting for a time-shared GPU held by another task",
    "hetero_s": "extra compute time from running on GPU types slower (for its model) than the ideal ones",
    "switch_s": "task-switching overhead paid when a GPU changes from another job's task to this job's",
    "restart_s": "time lost restarting after preemptions (restart penalty, no progress)",
    "iterations": "training iterations (or synchronisation rounds) the job ran",
    "preemptions": "times the job was preempted",
    "placements": "times the job was (re)placed (fluid, task DAG) or distinct GPUs it used (rounds)",
    "servers": "most servers the job's GPUs spanned at once (rounds: servers of the GPUs it used)",
    "racks": "most racks the job's GPUs spanned at once (rounds: racks of the GPUs it used)",
    "last_gpus": "GPUs of its last placement (rounds: of its last round), space-separated",
}

TEXT_FIELDS: frozenset[str] = frozenset({"job_id", "model", "user", "last_gpus"})
"""Record columns that are text even when they look like numbers (readers must not convert them)."""

CAUSES: tuple[str, ...] = ("contention_s", "spread_s", "sharing_s", "hetero_s", "switch_s", "restart_s")
"""The causes of run-time excess over the ideal, in record order."""

SUMMARY_FIELDS: dict[str, str] = {
    "policy": "policy name",
    "execution_model": "execution model that ran the policy (fluid, taskdag, rounds)",
    "cluster": "cluster name",
    "cluster_gpus": "GPUs in the cluster",
    "perf_model": "physics model (network / sharing) of the run",
    "seed": "the run's seed",
    "jobs": "jobs read (rows of the trace accepted by the loader plus rows skipped) = jobs_completed + "
            "jobs_rejected + jobs_unfinished + jobs_skipped",
    "jobs_completed": "jobs that finished",
    "jobs_rejected": "jobs refused as impossible on this cluster (see rejected.csv)",
    "jobs_unfinished": "jobs still pending or running when the simulation stopped",
    "jobs_skipped": "invalid trace rows skipped by the loader (--skip-invalid)",
    "window_start_s": "start of the measurement window (trace time): the first arrival, or later by --warmup",
    "window_end_s": "end of the measurement window: the last arrival, or earlier by --cooldown",
    "jobs_measured": "completed jobs that arrived inside the window; every per-job metric below is over them",
    "gpu_utilization_window": "realised load: time-average of busy GPUs over the measurement window ÷ cluster "
                              "GPUs (compare with offered_load; NaN when no time series was recorded)",
    "avg_jct_s": "mean JCT over completed jobs",
    "median_jct_s": "median JCT over completed jobs",
    "p95_jct_s": "95th-percentile JCT (linear interpolation) over completed jobs",
    "p99_jct_s": "99th-percentile JCT (linear interpolation) over completed jobs",
    "makespan_s": "last finish − first arrival over all completed jobs (the whole run, whatever the window)",
    "avg_queueing_s": "mean queue_s over completed jobs",
    "avg_run_s": "mean run_s over completed jobs",
    "avg_comm_s": "mean comm_s over completed jobs",
    "comm_overhead_s": "mean comm_overhead_s over completed jobs",
    "comm_overhead_pct": "100 · Σ comm_overhead_s / Σ run_s: the share of run time lost to communication excess",
    "contention_pct": "100 · Σ contention_s / Σ run_s",
    "spread_pct": "100 · Σ spread_s / Σ run_s",
    "sharing_pct": "100 · Σ sharing_s / Σ run_s",
    "hetero_pct": "100 · Σ hetero_s / Σ run_s",
    "switch_pct": "100 · Σ switch_s / Σ run_s",
    "restart_pct": "100 · Σ restart_s / Σ run_s",
    "median_slowdown": "median over completed jobs of run_s / ideal_run_s (1 = every job ran as if alone, "
                       "consolidated, on its fastest GPUs)",
    "p95_slowdown": "95th percentile over completed jobs of run_s / ideal_run_s (the slow tail: split rings, "
                    "contention, sharing)",
    "gpu_utilization": "time-average of GPUs held by at least one job, over the makespan (whole run), ÷ cluster "
                       "GPUs (the same quantity the time series samples as busy_gpus; a GPU hosting several jobs, "
                       "shared or packed by share, counts once)",
    "offered_load": "Σ over completed jobs of GPUs × ideal_run_s ÷ (cluster GPUs × arrival span): > 1 means "
                    "more work arrives than the cluster could do even with ideal placements",
    "offered_load_min_quarter": "offered load of the jobs arriving in the quarter of the measured arrival span "
                                "with the least (a steady window has min ≈ max ≈ offered_load)",
    "offered_load_max_quarter": "likewise, the quarter with the most",
    "preemptions": "total preemptions",
    "mechanisms": "how often each mechanism of the execution model and of the policy fired (MECHANISMS)",
}

TRACE_ROW_FIELDS: dict[str, str] = {
    "rows_read": "data rows of the trace file(s) = jobs + sum(rows_filtered); in summary.json only when the loader "
                 "filtered rows (Slurm, Kubernetes exports) and the whole trace was used",
    "rows_filtered": "well-formed rows that are not jobs, by reason: state (not in --states), never_ran, zero_gpus, "
                     "step, component (ddlsched.workload.trace.FILTER_REASONS)",
}
"""Summary keys about the trace's rows (issue 33), added to SUMMARY_FIELDS' keys when present."""

MECHANISMS: dict[str, str] = {
    "starts": "fluid: jobs (re)started",
    "shared_starts": "fluid: starts onto a GPU that already hosted another job (GPU sharing)",
    "accumulation_starts": "fluid: starts with gradient accumulation (sub-batch > 1 step)",
    "share_starts": "fluid, runs with share jobs (JobSpec.gpu_share) under a GPU-sharing policy only: starts of "
                    "share jobs",
    "packed_starts": "fluid, runs with share jobs only: starts of a share job onto a GPU holding only share jobs "
                     "(packed by share, shares summing to <= 1, no interference slowdown)",
    "peak_jobs_per_gpu": "fluid, runs with share jobs only: the most jobs resident on one GPU at any instant",
    "preemptions": "fluid: preemptions of every cause (a policy counter such as network_preemptions says why)",
    "transfers": "task DAG: all-reduce transfers admitted",
    "contended_transfers": "task DAG: transfers admitted onto a NIC that already carried one",
    "time_shared_starts": "task DAG: jobs made resident on a GPU that already hosted one (time sharing)",
    "rounds": "rounds: synchronisation rounds completed",
    "relaxed_rounds": "rounds: rounds whose tasks ran on fewer distinct GPUs than the job asked for",
    "switches": "rounds: task switches that paid the switching overhead",
    "leases": "rounds: gang leases granted (Start)",
    "revocations": "rounds: gang leases revoked (Preempt)",
    "plans": "SJF-BCO/FF/LS/RAND planners: plans made (one per batch of newly arrived jobs)",
    "fa_ffp_starts": "SJF-BCO: starts placed by FA-FFP (G_j ≤ the plan's κ: packed into servers already in use)",
    "lbsgf_starts": "SJF-BCO: starts placed by LBSGF (G_j > κ: least-busy servers)",
    "multi_server_starts": "SJF-BCO/FF/LS/RAND planners: starts spanning more than one server (ring over the "
                           "network, exposed to contention)",
    "best_level_placements": "delay scheduling: starts at the job's best (tightest possible) locality level",
    "relaxed_placements": "delay scheduling: starts at a looser level than the best, after the job's timer ran out "
                          "(a zero timer — low-sensitivity jobs by default — relaxes at once)",
    "relaxed_high_placements": "delay scheduling: relaxed starts of high-sensitivity jobs",
    "relaxed_medium_placements": "delay scheduling: relaxed starts of medium-sensitivity jobs",
    "expired_timer_placements": "delay scheduling: relaxed starts whose timer was positive (the delay timer itself "
                                "ran out)",
    "timer_holds": "delay scheduling: waits in which a job's timer held it back while GPUs for a looser placement "
                   "were free (counted once per wait)",
    "delayed_placements": "delay scheduling: starts of jobs that their timer had held back (the delay paid off or "
                          "the timer ran out)",
    "network_preemptions": "delay scheduling: running jobs evicted to consolidate a waiting high-sensitivity job",
    "timer_updates": "delay scheduling with a tuner: tuning rounds that set the class timers",
    "relaxation_lp": "hare-alg1: relaxations solved as a linear program by HiGHS",
    "relaxation_greedy": "hare-alg1: relaxations filled by the greedy Smith's-rule fallback (no highspy)",
    "matchings": "allox: min-cost job-to-GPU matchings solved",
    "tuner_replays": "delay scheduling, search tuner: replays simulated to score candidate timers",
    "reclaim_preemptions": "quota: borrowed jobs preempted to give a tenant its quota back",
    "borrowed_starts": "quota: starts that took a tenant beyond its quota (borrowing idle GPUs)",
    "fair_rounds": "fair-maxmin/ftf: rounds in which the allocation was decided afresh",
    "lp_rounds": "fair-maxmin-het: rounds whose shares came from the LP (HiGHS)",
    "lp_fallbacks": "fair-maxmin-het: rounds without an LP optimum (or without highspy): jobs in arrival order on "
                    "their fastest types",
    "predicted_jobs": "hindsight: finished jobs that had a size prediction at their first start (a group with enough "
                      "finished jobs)",
    "predictor_median_rel_error": "hindsight: median over predicted_jobs of |predicted − actual| / actual GPU-time "
                                  "(the prediction: its group's median at the job's first start)",
    "predictor_median_log2_ratio": "hindsight: median over predicted_jobs of log2(predicted / actual GPU-time) "
                                   "(calibration: 0 is unbiased, +1 a median over-prediction by 2×)",
    "predictor_p10_p90_coverage": "hindsight: share of predicted_jobs whose GPU-time fell within their group's 10th–"
                                  "90th percentile at their first start (calibration: 0.8 when calibrated)",
    "starvation_promotions": "hindsight: queued jobs promoted to the first class by the starvation guard",
}

REPRODUCTION_METRICS: dict[str, str] = {
    "total_weighted_jct_s": "Σ over completed jobs of weight × jct_s, the job's weight from the trace or workload "
                            "(JobSpec.weight, default 1); the objective of Hare's offline algorithm (chen2024, "
                            "HPDC setup). Computed by ddlsched.metrics.summary.total_weighted_jct from the records "
                            "and the job list; not in summary.json",
}

FAIRNESS_FIELDS: dict[str, str] = {
    "tenants": "per tenant (TENANT_FIELDS), every tenant of the run's tenants file, the default tenant included",
    "jain_index": "Jain's index (Σx)² ÷ (n Σx²) over the tenants' normalised_share x (tenants with an "
                  "entitlement > 0): 1 = every tenant got the same fraction of its entitlement",
    "rho_max": "largest per-job rho over the measured jobs",
    "rho_gt1_frac": "fraction of the measured jobs with rho > 1 (finished later than on their isolated share)",
    "share_bucket_s": "width of the time buckets of tenant_shares.csv (the whole run, first arrival to last "
                      "finish, cut into 100)",
}
"""Summary keys present only when the run's cluster has tenants (docs/policies/fairness.md)."""

TENANT_FIELDS: dict[str, str] = {
    "jobs": "measured completed jobs of the tenant",
    "avg_jct_s": "mean jct_s over the tenant's measured jobs",
    "p95_jct_s": "95th-percentile jct_s (linear interpolation) over the tenant's measured jobs",
    "gpu_s_received": "Σ num_gpus × run_s over the tenant's completed jobs (whole run)",
    "gpu_s_entitled": "Σ over time buckets of the tenant's entitled_gpus × bucket width (whole run)",
    "normalised_share": "gpu_s_received ÷ gpu_s_entitled (1 = exactly its weighted fair share)",
}

FAIRNESS_RECORD_FIELDS: dict[str, str] = {
    "job_id": "the job's id in the trace",
    "tenant": "the tenant the job counts under (its trace user mapped by the tenants file, else the default)",
    "jct_s": "the job's jct_s",
    "ideal_run_s": "the job's ideal_run_s",
    "jobs_in_system_avg": "time-average over [arrival_s, finish_s] of the completed jobs of the run that had "
                          "arrived and not finished (the job itself included)",
    "isolated_s": "ideal_run_s × jobs_in_system_avg: the job's time on an isolated 1/n share of the cluster "
                  "(Themis), n the average number of jobs in the system over its lifetime",
    "rho": "finish-time fairness jct_s ÷ isolated_s (> 1: the job did worse than on its isolated share)",
}

SHARE_FIELDS: dict[str, str] = {
    "bucket_start_s": "start of the time bucket",
    "bucket_s": "width of the time bucket",
    "tenant": "tenant name",
    "demand_gpus": "time-average over the bucket of Σ num_gpus of the tenant's jobs that had arrived and not "
                   "finished",
    "entitled_gpus": "the tenant's weighted max-min fair share of the cluster's GPUs given every tenant's "
                     "demand_gpus in the bucket (never more than its demand)",
    "received_gpus": "GPUs the tenant's jobs held, averaged over the bucket; each job's num_gpus × run_s is "
                     "spread evenly over [first_start_s, finish_s] (exact for a job never preempted)",
}

TIMESERIES_FIELDS: dict[str, str] = {
    "time_s": "instant of the sample (a row is written when a value changes)",
    "busy_gpus": "GPUs held by at least one job from this instant on",
    "pending": "jobs waiting (arrived, not running)",
    "running": "jobs running (holding GPUs; rounds: with a task running, synchronising or a lease)",
}


def markdown() -> str:
    """``docs/metrics.md``: the vocabulary as a page (regenerate with ``python -m ddlsched.vocabulary``)."""
    def table(title: str, fields: dict[str, str]) -> list[str]:
        rows = [f"## {title}", "", "| name | meaning |", "|---|---|"]
        rows += [f"| `{k}` | {v.replace('|', '/')} |" for k, v in fields.items()]
        return [*rows, ""]

    head = [
        "# Metrics: one meaning per number",
        "",
        "<!-- generated by `python -m ddlsched.vocabulary > docs/metrics.md` from src/ddlsched/vocabulary.py; "
        "a test keeps them in sync -->",
        "",
        "Every execution model (fluid, task DAG, rounds; see `docs/engine.md`) fills the same per-job record "
        "columns with the same meaning, and the summary is computed from them in one place "
        "(`ddlsched.metrics.summary`). Times are seconds.",
        "",
        "**The run-time identity.** For every completed job, checked on every run (a violation stops the run):",
        "",
        "    run_s = ideal_run_s + contention_s + spread_s + sharing_s + hetero_s + switch_s + restart_s",
        "    jct_s = queue_s + run_s            comm_overhead_s = contention_s + spread_s",
        "",
        "Every cause is ≥ 0, so the ideal run time is a lower bound on the run time. A cause a model does not "
        "have is 0 (the model table in `docs/engine.md` says which). How each model splits its excess:",
        "",
        "* **fluid** — per stretch of progress at iteration time c + m on placement P (c_P, m_P alone on P, c*, m* "
        "ideal): sharing = c − c_P, contention = m − m_P, and E = (c_P + m_P) − (c* + m*) is split into "
        "heterogeneity (c_P − c*, clamped to [0, E]) and spread (the rest); restart = time after a restart before "
        "progress resumes.",
        "* **task DAG** — per step, compute phase L and communication phase C: sharing = L − c_P (waiting for "
        "time-shared GPUs), contention = C − m_P (admission wait and k-way NIC sharing), heterogeneity and spread as "
        "in the fluid model.",
        "* **rounds** — per round, the active time's excess over the ideal round is attributed along the round's "
        "critical path (its last task), each part capped by what is left: switching overhead, heterogeneity, spread "
        "of the synchronisation, and the rest (waiting for GPUs, fewer tasks at a time) as sharing.",
        "",
        "**Reference and ideal iteration** (`ddlsched.engine.ideal`). A trace duration is read as that many seconds "
        "of *reference* iterations: compute on a reference-speed GPU (the profiles' `compute_ms`, speed 1.0, "
        "V100-class) plus communication alone on the consolidated placement — never relative to whichever GPU type "
        "a cluster file declares first. The *ideal* iteration is the fastest over the cluster's GPU-speed and "
        "NIC-speed thresholds of compute at that speed plus communication alone on the consolidated placement "
        "among servers at least that fast (rounds model: also over how many GPUs a round's tasks share).",
        "",
        "**Accounting.** `jobs = jobs_completed + jobs_rejected + jobs_unfinished + jobs_skipped` in every "
        "summary; a run that cannot account for a job fails.",
        "",
        "**Measurement window.** `--warmup` and `--cooldown` (a duration such as `3600`, `30m`, `12h`, `2d`, or a "
        "job count such as `500jobs`) leave the first and last jobs by arrival out of every per-job metric; those "
        "jobs still run and load the cluster, and the accounting still counts them. The summary states the window "
        "(`window_start_s`, `window_end_s`, `jobs_measured`) and the utilisation over it; `makespan_s` and "
        "`gpu_utilization` stay whole-run. `load.csv` gives the offered load and the busy share per hour (or day, "
        "week) of the arrival span, so a steady stretch can be told from a burst. `--window START:END` keeps only "
        "the jobs arriving in that stretch of the trace.",
        "",
    ]
    return "\n".join(head + table("Per-job records (records.csv)", RECORD_FIELDS)
                     + table("Summary (summary.json)", SUMMARY_FIELDS)
                     + table("Mechanism counters (summary.json → mechanisms)", MECHANISMS)
                     + table("Reproduction metrics (tables of `ddlsched reproduce`)", REPRODUCTION_METRICS)
                     + table("Time series (timeseries.csv)", TIMESERIES_FIELDS)
                     + table("Fairness (summary.json, runs with tenants; docs/policies/fairness.md)", FAIRNESS_FIELDS)
                     + table("Per tenant (summary.json → tenants)", TENANT_FIELDS)
                     + table("Per-job finish-time fairness (fairness.csv, runs with tenants)", FAIRNESS_RECORD_FIELDS)
                     + table("Shares over time (tenant_shares.csv, runs with tenants)", SHARE_FIELDS)
                     + _warnings_section()).rstrip() + "\n"


def _warnings_section() -> list[str]:
    from ddlsched.metrics import warnings as w

    return ["## Warnings", "",
            "`simulate`, `compare` and the report print these after the numbers (`ddlsched.metrics.warnings`; the "
            "thresholds are its module constants):", "",
            f"* offered load below {w.LOW_LOAD} (policies barely differ) or above {w.HIGH_LOAD} (the queue grows with "
            "the trace);",
            f"* quarter loads of the arrival window differing more than {w.LOAD_SWING:g}× (a burst and a lull mixed);",
            f"* realised load (`gpu_utilization_window`) above {w.REALISED_OVER_OFFERED}× the offered load, or "
            f"`median_slowdown` above {w.MEDIAN_SLOWDOWN} (a slowdown spiral);",
            "* a queue that never empties over the second half of the arrival window (the cluster is saturated "
            "under that policy);",
            f"* a makespan decided by one job: the last job finishes more than {100 * w.LAST_JOB_SHARE:g} % of the "
            "makespan after every other (named);",
            "* a confidence interval over fewer than 3 seeds.", ""]


if __name__ == "__main__":
    print(markdown(), end="")
