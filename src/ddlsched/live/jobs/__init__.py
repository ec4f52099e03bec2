"""Jobs bundled with the live runs: the profile job (a model profile's compute and all-reduce, for real) and a small
real training job; both written against :mod:`ddlsched.job`."""

PROFILE_JOB = "ddlsched.live.jobs.profile_job:main"
TRAIN_JOB = "ddlsched.live.jobs.train_job:main"

__all__ = ["PROFILE_JOB", "TRAIN_JOB"]
