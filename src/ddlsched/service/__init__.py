"""``ddlsched serve``: the scheduler as a long-running service (API, job store, dashboard); see docs/service.md."""
