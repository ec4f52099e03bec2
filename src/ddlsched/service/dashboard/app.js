// The ddlsched dashboard: polls the service's JSON endpoints with the bearer token (kept in sessionStorage;
// a URL fragment '#token=…' sets it without sending it to the server).
"use strict";
(function () {
  var POLL_MS = 1000;
  var token = null;
  var selected = null;
  var m = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]);
    sessionStorage.setItem("ddlsched-token", token);
    history.replaceState(null, "", location.pathname);
  } else {
    token = sessionStorage.getItem("ddlsched-token");
  }
  document.getElementById("login").addEventListener("submit", function (e) {
    e.preventDefault();
    token = document.getElementById("token").value.trim();
    sessionStorage.setItem("ddlsched-token", token);
    tick();
  });

  function get(path) {
    return fetch(path, { headers: { Authorization: "Bearer " + token } }).then(function (r) {
      if (!r.ok) { throw new Error(path + ": " + r.status + " " + r.statusText); }
      return r.json();
    });
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function row(cells) {
    var tr = document.createElement("tr");
    cells.forEach(function (c) { tr.appendChild(c instanceof Node ? c : el("td", c)); });
    return tr;
  }
  function fill(id, rows) {
    var body = document.querySelector("#" + id + " tbody");
    body.replaceChildren.apply(body, rows);
  }
  function colour(id) {
    var h = 0;
    for (var i = 0; i < id.length; i++) { h = (h * 31 + id.charCodeAt(i)) >>> 0; }
    return "hsl(" + (h % 360) + ", 65%, 55%)";
  }
  function fmt(x, digits) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits); }

  function renderStats(st, policy) {
    var c = st.counts;
    document.getElementById("f-util").textContent = (100 * st.utilisation).toFixed(1) + " %";
    var jcts = st.tenants.filter(function (t) { return t.avg_jct_s !== null; });
    var n = jcts.reduce(function (a, t) { return a + t.completed; }, 0);
    var mean = n ? jcts.reduce(function (a, t) { return a + t.avg_jct_s * t.completed; }, 0) / n : null;
    document.getElementById("f-jct").textContent = fmt(mean, 1);
    document.getElementById("f-queue").textContent = c.queued;
    document.getElementById("f-running").textContent = c.running;
    document.getElementById("f-done").textContent = [c.completed, c.failed, c.cancelled, c.rejected].join(" / ");
    document.getElementById("f-pass").textContent = st.pass_p99_s === null ? "–" : (1000 * st.pass_p99_s).toFixed(2);
    document.getElementById("summary").textContent = "policy " + policy.policy + " · executor " + policy.executor +
      " (time scale " + policy.time_scale + ") · up " + st.uptime_s.toFixed(0) + " s";
    fill("tenants", st.tenants.map(function (t) {
      return row([t.tenant, t.queued, t.running, t.running_gpus, t.completed, t.failed, t.cancelled, t.rejected,
        fmt(t.avg_jct_s, 1)]);
    }));
  }

  function renderCluster(cl) {
    var map = document.getElementById("gpumap");
    var boxes = cl.servers.map(function (s) {
      var box = el("div", null, "server");
      box.appendChild(el("div", "s" + s.server + " r" + s.rack, "label"));
      var gpus = el("div", null, "gpus");
      s.gpus.forEach(function (g) {
        var cell = el("div", null, "gpu" + (g.job === "other" ? " other" : ""));
        cell.dataset.gpu = g.gpu;
        if (g.job) {
          cell.dataset.job = g.job;
          if (g.job !== "other") { cell.style.background = colour(g.job); }
          cell.title = "GPU " + g.gpu + " (" + g.type + "): " + g.job;
        } else { cell.title = "GPU " + g.gpu + " (" + g.type + "): free"; }
        gpus.appendChild(cell);
      });
      box.appendChild(gpus);
      return box;
    });
    map.replaceChildren.apply(map, boxes);
    document.getElementById("gpu-legend").textContent = cl.name + ": " + cl.busy_gpus + " of " + cl.num_gpus +
      " busy";
  }

  function renderJobs(queued, latest) {
    var now = Date.now() / 1000;
    fill("queue", queued.map(function (j) {
      return row([j.id, j.name, j.tenant, j.num_gpus, (now - j.submitted_at).toFixed(0)]);
    }));
    fill("jobs", latest.map(function (j) {
      var total = j.iterations ? "/" + j.iterations.toFixed(0) : "";
      var jct = j.ended_at && j.state === "completed" ? (j.ended_at - j.submitted_at).toFixed(1) : "";
      var tr = row([j.id, j.name, j.tenant, j.num_gpus, j.model, el("td", j.state, "state-" + j.state),
        j.done_iterations.toFixed(0) + total, j.gpus.join(","), j.restarts, jct, j.reason]);
      tr.dataset.id = j.id;
      tr.dataset.state = j.state;
      if (j.id === selected) { tr.className = "sel"; }
      tr.addEventListener("click", function () { selected = j.id; timeline(j); });
      return tr;
    }));
  }

  function timeline(job) {
    get("/api/v1/jobs/" + encodeURIComponent(job.id) + "/events").then(function (evs) {
      document.getElementById("timeline-box").hidden = false;
      document.getElementById("tl-job").textContent = job.id + " (" + job.name + ")";
      var t0 = job.submitted_at;
      var t1 = job.ended_at || Date.now() / 1000;
      var span = Math.max(t1 - t0, 1e-3);
      var bar = document.getElementById("timeline");
      var segs = [];
      var from = t0;
      var running = false;
      function seg(a, b, cls) {
        var s = el("div", null, "seg " + cls);
        s.style.left = (100 * (a - t0) / span) + "%";
        s.style.width = Math.max(0.3, 100 * (b - a) / span) + "%";
        s.title = cls + " " + (b - a).toFixed(1) + " s";
        segs.push(s);
      }
      evs.forEach(function (e) {
        if (e.kind === "started") { seg(from, e.at, "wait"); from = e.at; running = true; }
        if (running && ["preempted", "lost", "finished", "failed", "cancelled"].indexOf(e.kind) >= 0) {
          seg(from, e.at, "run"); from = e.at; running = false;
        }
      });
      seg(from, t1, running ? "run" : "wait");
      bar.replaceChildren.apply(bar, segs);
      var list = document.getElementById("tl-events");
      list.replaceChildren.apply(list, evs.map(function (e) {
        var d = Object.keys(e.detail).filter(function (k) { return e.kind !== "submitted"; })
          .map(function (k) { return k + "=" + JSON.stringify(e.detail[k]); }).join(" ");
        return el("li", "+" + (e.at - t0).toFixed(2) + " s  " + e.kind + (d ? "  " + d : ""));
      }));
    });
  }

  function tick() {
    var err = document.getElementById("error");
    if (!token) {
      err.hidden = false;
      err.textContent = "enter a bearer token (a tenant's or the admin's)";
      return;
    }
    Promise.all([get("/api/v1/stats"), get("/api/v1/policy"), get("/api/v1/cluster"),
      get("/api/v1/jobs?state=queued&limit=500"), get("/api/v1/jobs?newest_first=true&limit=200")]).then(function (r) {
      err.hidden = true;
      renderStats(r[0], r[1]);
      renderCluster(r[2]);
      renderJobs(r[3], r[4]);
      if (selected) {
        var j = r[4].filter(function (x) { return x.id === selected; })[0];
        if (j) { timeline(j); }
      }
      document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
    }).catch(function (e) {
      err.hidden = false;
      err.textContent = String(e.message || e);
    });
  }
  tick();
  setInterval(tick, POLL_MS);
})();
