/* actrace report's page script (embedded by cmd_report.c): draws what
 * `actrace report` computed (the JSON in #actrace-data) with Chart.js.
 * Every number shown in a table cell carries data-k (its key); the
 * browser test reads them back. */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('actrace-data').textContent);
  var app = document.getElementById('app');
  app.textContent = '';
  var COLORS = ['#3b6fd8', '#e07b39', '#4aa36b', '#b04fc0', '#c9a227', '#38a3b5', '#d9534f', '#6b7280'];
  var KIND = { compute: '#3b6fd8', memcpy: '#e07b39', memset: '#4aa36b', idle: '#d5d9e0' };
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function add(parent, tag, attrs, text) {
    var e = el(tag, attrs, text);
    parent.appendChild(e);
    return e;
  }
  function fix(v, d) {
    return v == null || !isFinite(v) ? '' : Number(v).toFixed(d);
  }
  function human(us) {
    if (us == null) return '';
    var a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toPrecision(4) + ' s';
    if (a >= 1e3) return (us / 1e3).toPrecision(4) + ' ms';
    if (a >= 1) return Number(us).toPrecision(4) + ' µs';
    return (us * 1e3).toPrecision(3) + ' ns';
  }
  /* cols: [key, title, decimals (null: text)]. */
  function table(parent, attrs, cols, rows, rowAttrs) {
    var t = add(parent, 'table', attrs);
    var tr = add(add(t, 'thead'), 'tr');
    cols.forEach(function (c) { add(tr, 'th', c[2] == null ? { 'class': 'text' } : null, c[1]); });
    var tb = add(t, 'tbody');
    rows.forEach(function (r, i) {
      var row = add(tb, 'tr', rowAttrs ? rowAttrs(r, i) : null);
      cols.forEach(function (c) {
        var v = r[c[0]];
        var a = { 'data-k': c[0] };
        if (c[2] == null) a['class'] = 'text';
        add(row, 'td', a, c[2] == null ? (v == null ? '' : String(v)) : fix(v, c[2]));
      });
    });
    return t;
  }
  function chart(parent, cfg, h) {
    var box = add(parent, 'div', { 'class': 'chart' });
    box.style.height = (h || 220) + 'px';
    var c = add(box, 'canvas');
    return new Chart(c, cfg);
  }
  function linX(title, maxv) {
    var x = { type: 'linear', title: { display: true, text: title } };
    if (maxv != null) { x.min = 0; x.max = maxv; }
    return x;
  }
  function yAxis(title, extra) {
    var y = { beginAtZero: true, title: { display: true, text: title } };
    for (var k in extra || {}) y[k] = extra[k];
    return y;
  }
  function devName(d) {
    return (d.device == null ? 'device (process)' : 'device ' + d.device) + (d.name ? ' — ' + d.name : '');
  }

  function warnings(parent, list) {
    var box = add(parent, 'div', { 'class': list.length ? 'warnings' : 'warnings ok', 'data-k': 'warnings' });
    if (!list.length) {
      box.textContent = 'Nothing was dropped or refused while recording.';
      return;
    }
    add(box, 'strong', null, 'Read this first:');
    var ul = add(box, 'ul');
    list.forEach(function (w) { add(ul, 'li', null, w); });
  }

  function device(parent, t, ti, d, di) {
    var sec = add(parent, 'div', { 'class': 'device', 'data-trace': ti, 'data-device': d.device == null ? 'null' : d.device });
    add(sec, 'h3', null, devName(d));
    table(sec, { 'class': 'split' }, [
      ['busy_pct', 'busy %', 1], ['compute_pct', 'kernels %', 1], ['memcpy_pct', 'memcpy %', 1],
      ['memset_pct', 'memset %', 1], ['idle_pct', 'idle %', 1], ['busy_us', 'busy (µs)', 3],
      ['kernels', 'kernels', 0]], [d]);
    var grid = add(sec, 'div', { 'class': 'grid' });
    chart(grid, {
      type: 'bar',
      data: {
        labels: [devName(d)],
        datasets: [['kernels', d.compute_pct, KIND.compute], ['memcpy', d.memcpy_pct, KIND.memcpy],
          ['memset', d.memset_pct, KIND.memset], ['idle', d.idle_pct, KIND.idle]].map(function (x) {
          return { label: x[0], data: [x[1]], backgroundColor: x[2] };
        })
      },
      options: {
        indexAxis: 'y',
        plugins: { title: { display: true, text: 'Share of the trace window (%)' },
          tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + fix(c.raw, 2) + ' %'; } } } },
        scales: { x: { stacked: true, max: 100, beginAtZero: true }, y: { stacked: true, display: false } }
      }
    }, 150);
    var b = d.bins;
    if (b && b.busy_pct) {
      var pts = b.busy_pct.map(function (v, i) { return { x: (b.t0_us + i * b.w_us) / 1e3, y: v }; });
      /* Idle before the first bin and after the last (Chart.js's
       * "before" step holds a point's value until the next point). */
      var end = (b.t0_us + b.busy_pct.length * b.w_us) / 1e3;
      if (b.t0_us > 0) pts.unshift({ x: 0, y: 0 });
      pts.push({ x: end, y: 0 });
      if (end < t.span_us / 1e3) pts.push({ x: t.span_us / 1e3, y: 0 });
      chart(grid, {
        type: 'line',
        data: { datasets: [{ label: 'busy %', data: pts, borderColor: KIND.compute, backgroundColor: 'rgba(59,111,216,0.15)', fill: true, pointRadius: 0, stepped: 'before' }] },
        options: {
          plugins: { title: { display: true, text: 'Busy over time (bins of ' + human(b.w_us) + ')' }, legend: { display: false },
            tooltip: { callbacks: { label: function (c) { return fix(c.raw.y, 1) + ' % busy at ' + fix(c.raw.x, 3) + ' ms'; } } } },
          scales: { x: linX('time since trace start (ms)', t.span_us / 1e3), y: yAxis('busy %', { max: 100 }) }
        }
      });
    }
    if (d.top_kernels.length) {
      add(sec, 'h3', null, 'Top kernels by total time (' + d.top_kernels.length + ' of ' + d.kernel_names + ')');
      table(sec, { 'class': 'kernels' }, [
        ['count', 'count', 0], ['total_us', 'total (µs)', 3], ['mean_us', 'mean (µs)', 3],
        ['p50_us', 'p50 (µs)', 3], ['p99_us', 'p99 (µs)', 3], ['max_us', 'max (µs)', 3],
        ['busy_pct', '% of busy', 1], ['name', 'name', null]], d.top_kernels);
      var top = d.top_kernels.slice(0, 10);
      chart(sec, {
        type: 'bar',
        data: { labels: top.map(function (k) { return k.name.length > 60 ? k.name.slice(0, 57) + '...' : k.name; }),
          datasets: [{ label: 'total (µs)', data: top.map(function (k) { return k.total_us; }), backgroundColor: KIND.compute }] },
        options: { indexAxis: 'y', plugins: { legend: { display: false }, title: { display: true, text: 'Top kernels: total device time (µs)' },
          tooltip: { callbacks: { label: function (c) { var k = top[c.dataIndex]; return human(k.total_us) + ' total, ' + k.count + ' calls, mean ' + human(k.mean_us) + ', p50 ' + human(k.p50_us) + ', p99 ' + human(k.p99_us); } } } } }
      }, 60 + 24 * top.length);
    }
    var L = d.latency;
    if (L) {
      add(sec, 'h3', null, 'Launch latency (host launch call to device start)');
      table(sec, { 'class': 'latency' }, [['count', 'launches', 0], ['p50_us', 'p50 (µs)', 3],
        ['p95_us', 'p95 (µs)', 3], ['max_us', 'max (µs)', 3]], [L]);
      chart(sec, {
        type: 'bar',
        data: { labels: L.lo_us.map(function (lo, i) { return human(lo) + '–' + human(L.hi_us[i]); }),
          datasets: [{ label: 'launches', data: L.counts, backgroundColor: KIND.memcpy }] },
        options: { plugins: { legend: { display: false }, title: { display: true, text: 'Launch latency histogram (launches per bin)' } },
          scales: { y: yAxis('launches') } }
      });
    }
  }

  function steps(parent, t, ti) {
    var S = t.steps;
    var sec = add(parent, 'div', { 'class': 'steps', 'data-trace': ti });
    add(sec, 'h3', null, 'Steps (ProfilerStep#N)');
    if (!S) {
      add(sec, 'p', { 'class': 'note' }, 'No ProfilerStep#N in this trace (torch.profiler with a schedule, or actrace.step(), marks them).');
      return;
    }
    table(sec, { 'class': 'stepstats' }, [['count', 'steps', 0], ['mean_us', 'mean (µs)', 3], ['p50_us', 'p50 (µs)', 3],
      ['p99_us', 'p99 (µs)', 3], ['min_us', 'min (µs)', 3], ['max_us', 'max (µs)', 3]], [S]);
    var grid = add(sec, 'div', { 'class': 'grid' });
    var lab = S.list.map(function (s, i) { return s.n >= 0 ? s.n : i * S.group; });
    chart(grid, {
      type: 'line',
      data: { labels: lab, datasets: [{ label: 'step time (ms)', data: S.list.map(function (s) { return s.dur_us / 1e3; }), borderColor: KIND.compute, pointRadius: S.list.length > 100 ? 0 : 3 }] },
      options: { plugins: { legend: { display: false }, title: { display: true, text: 'Step time over the run' + (S.group > 1 ? ' (mean of ' + S.group + ' steps a point)' : '') },
        tooltip: { callbacks: { label: function (c) { return 'step ' + c.label + ': ' + human(S.list[c.dataIndex].dur_us); } } } },
        scales: { x: { title: { display: true, text: 'step' } }, y: yAxis('ms') } }
    });
    var H = S.hist;
    chart(grid, {
      type: 'bar',
      data: { labels: H.counts.map(function (c, i) { return human(H.lo_us + i * H.w_us); }),
        datasets: [{ label: 'steps', data: H.counts, backgroundColor: KIND.memset }] },
      options: { plugins: { legend: { display: false }, title: { display: true, text: 'Step time distribution (steps per bin)' },
        tooltip: { callbacks: { title: function (c) { var i = c[0].dataIndex; return human(H.lo_us + i * H.w_us) + ' – ' + human(H.lo_us + (i + 1) * H.w_us); } } } },
        scales: { y: yAxis('steps') } }
    });
    chart(sec, {
      type: 'bar',
      data: { labels: lab, datasets: [['kernel_us', 'kernels', KIND.compute], ['memcpy_us', 'memcpy', KIND.memcpy], ['memset_us', 'memset', KIND.memset]].map(function (x) {
        return { label: x[1], data: S.list.map(function (s) { return s[x[0]] / 1e3; }), backgroundColor: x[2] };
      }).concat([{ type: 'line', label: 'step time', data: S.list.map(function (s) { return s.dur_us / 1e3; }), borderColor: '#1d2330', pointRadius: 0 }]) },
      options: { plugins: { title: { display: true, text: 'Device work in each step (ms, device spans inside the step\'s window)' },
        tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + human(c.raw * 1e3); } } } },
        scales: { x: { stacked: true, title: { display: true, text: 'step' } }, y: yAxis('ms', { stacked: true }) } }
    }, 240);
  }

  function host(parent, t, ti, h) {
    var sec = add(parent, 'div', { 'class': 'host', 'data-trace': ti, 'data-pid': h.pid });
    add(sec, 'h3', null, 'pid ' + h.pid + (h.name ? ' — ' + h.name : '') + ': top ' + h.top.length + ' of ' + h.names + ' names by total time');
    table(sec, { 'class': 'hostnames' }, [['count', 'count', 0], ['total_us', 'total (µs)', 3], ['self_us', 'self (µs)', 3],
      ['mean_us', 'mean (µs)', 3], ['max_us', 'max (µs)', 3], ['name', 'name', null]], h.top);
    var top = h.top.slice(0, 10);
    chart(sec, {
      type: 'bar',
      data: { labels: top.map(function (k) { return k.name.length > 60 ? k.name.slice(0, 57) + '...' : k.name; }),
        datasets: [{ label: 'self (µs)', data: top.map(function (k) { return k.self_us; }), backgroundColor: KIND.compute },
          { label: 'in children (µs)', data: top.map(function (k) { return Math.max(0, k.total_us - k.self_us); }), backgroundColor: KIND.idle }] },
      options: { indexAxis: 'y', plugins: { title: { display: true, text: 'Host: total time by name (µs), self and in nested children' },
        tooltip: { callbacks: { label: function (c) { var k = top[c.dataIndex]; return human(k.total_us) + ' total, ' + human(k.self_us) + ' self, ' + k.count + ' calls, max ' + human(k.max_us); } } } },
        scales: { x: { stacked: true }, y: { stacked: true } } }
    }, 80 + 24 * top.length);
  }

  function counters(parent, t, ti) {
    if (!t.counters.length) return;
    table(parent, { 'class': 'counters', 'data-trace': ti }, [['track', 'track', null], ['key', 'series', null],
      ['unit', 'unit', null], ['samples', 'samples', 0], ['min', 'min', 3], ['max', 'max', 3]], t.counters);
    var grid = add(parent, 'div', { 'class': 'grid' });
    t.counters.forEach(function (s, i) {
      var unit = s.unit || '';
      var pt = function (arr) { return arr.map(function (v, k) { return { x: (s.t0_us + k * s.w_us) / 1e3, y: v }; }).filter(function (p) { return p.y != null; }); };
      chart(grid, {
        type: 'line',
        data: { datasets: [
          { label: 'mean', data: pt(s.mean), borderColor: COLORS[i % COLORS.length], pointRadius: 0 },
          { label: 'max', data: pt(s.hi), borderColor: 'rgba(0,0,0,0.15)', pointRadius: 0, borderDash: [3, 3] },
          { label: 'min', data: pt(s.lo), borderColor: 'rgba(0,0,0,0.15)', pointRadius: 0, borderDash: [3, 3] }] },
        options: { plugins: { title: { display: true, text: s.track + (s.key !== s.track ? ' / ' + s.key : '') + (unit ? ' (' + unit + ')' : '') },
          legend: { display: false },
          tooltip: { callbacks: { label: function (c) { return c.dataset.label + ' ' + Number(c.raw.y).toPrecision(6) + (unit ? ' ' + unit : '') + ' at ' + fix(c.raw.x, 3) + ' ms'; } } } },
          scales: { x: linX('time since trace start (ms)', t.span_us / 1e3), y: { title: { display: true, text: unit || 'value' } } } }
      }, 200);
    });
  }

  function trace(parent, t, ti, open) {
    var sec;
    if (D.traces.length > 1) {
      var det = add(parent, 'details', { 'class': 'trace-details' });
      if (open) det.setAttribute('open', '');
      add(det, 'summary', null, 'rank ' + t.rank + ': ' + t.file);
      sec = add(det, 'section', { 'class': 'trace', 'data-trace': ti });
    } else {
      sec = add(parent, 'section', { 'class': 'trace', 'data-trace': ti });
    }
    if (t.error) {
      add(sec, 'p', { 'class': 'warnings' }, t.file + ': not read: ' + t.error);
      return;
    }
    warnings(sec, t.warnings);
    table(sec, { 'class': 'overview' }, [['producer', 'producer', null], ['events', 'events', 0],
      ['span_us', 'time span (µs)', 3], ['dropped', 'dropped', 0], ['host_name', 'host', null]], [t]);
    add(sec, 'h2', null, 'Devices');
    if (!t.devices.length)
      add(sec, 'p', { 'class': 'note' }, 'No device work in this trace.');
    t.devices.forEach(function (d, di) { device(sec, t, ti, d, di); });
    add(sec, 'h2', null, 'Steps');
    steps(sec, t, ti);
    add(sec, 'h2', null, 'Host');
    if (!t.host.length)
      add(sec, 'p', { 'class': 'note' }, 'No host spans in this trace.');
    t.host.forEach(function (h) { host(sec, t, ti, h); });
    add(sec, 'h2', null, 'Counters');
    if (!t.counters.length)
      add(sec, 'p', { 'class': 'note' }, 'No counter tracks in this trace.');
    counters(sec, t, ti);
  }

  function ranks(parent) {
    var ok = D.traces.filter(function (t) { return !t.error; });
    add(parent, 'h2', null, 'Ranks');
    var rows = ok.map(function (t) {
      var busy = t.devices.length ? Math.max.apply(null, t.devices.map(function (d) { return d.busy_pct; })) : null;
      return { rank: t.rank, file: t.file, events: t.events, span_us: t.span_us, busy_pct: busy,
        steps: t.steps ? t.steps.count : 0, step_mean_us: t.steps ? t.steps.mean_us : null,
        step_p50_us: t.steps ? t.steps.p50_us : null, step_max_us: t.steps ? t.steps.max_us : null,
        warnings: t.warnings.length };
    });
    rows.sort(function (a, b) { return a.rank - b.rank; });
    var slow = -1, slowv = -1;
    rows.forEach(function (r, i) { if (r.step_mean_us != null && r.step_mean_us > slowv) { slowv = r.step_mean_us; slow = i; } });
    table(parent, { 'class': 'ranks' }, [['rank', 'rank', 0], ['events', 'events', 0], ['span_us', 'time span (µs)', 3],
      ['busy_pct', 'device busy %', 1], ['steps', 'steps', 0], ['step_mean_us', 'mean step (µs)', 3],
      ['step_p50_us', 'p50 step (µs)', 3], ['step_max_us', 'max step (µs)', 3], ['warnings', 'warnings', 0], ['file', 'file', null]],
      rows, function (r, i) { return i === slow ? { 'class': 'slowest', 'data-slowest': '1' } : null; });
    if (slow >= 0) {
      add(parent, 'p', { 'data-k': 'slowest' }, 'Slowest rank: ' + rows[slow].rank + ' (mean step ' + human(slowv) + ').');
      var grid = add(parent, 'div', { 'class': 'grid' });
      chart(grid, {
        type: 'bar',
        data: { labels: rows.map(function (r) { return 'rank ' + r.rank; }),
          datasets: [{ label: 'mean step (ms)', data: rows.map(function (r) { return r.step_mean_us == null ? null : r.step_mean_us / 1e3; }),
            backgroundColor: rows.map(function (r, i) { return i === slow ? '#d9534f' : KIND.compute; }) }] },
        options: { plugins: { legend: { display: false }, title: { display: true, text: 'Mean step time per rank (ms); the slowest in red' },
          tooltip: { callbacks: { label: function (c) { var r = rows[c.dataIndex]; return 'mean ' + human(r.step_mean_us) + ', p50 ' + human(r.step_p50_us) + ', max ' + human(r.step_max_us) + ' over ' + r.steps + ' steps'; } } } },
          scales: { y: yAxis('ms') } }
      });
      chart(grid, {
        type: 'line',
        data: { datasets: ok.filter(function (t) { return t.steps; }).map(function (t, i) {
          return { label: 'rank ' + t.rank, data: t.steps.list.map(function (s, k) { return { x: s.n >= 0 ? s.n : k * t.steps.group, y: s.dur_us / 1e3 }; }),
            borderColor: t.rank === rows[slow].rank ? '#d9534f' : COLORS[i % COLORS.length], pointRadius: 2 };
        }) },
        options: { plugins: { title: { display: true, text: 'Step time per rank (ms)' },
          tooltip: { callbacks: { label: function (c) { return c.dataset.label + ', step ' + c.raw.x + ': ' + human(c.raw.y * 1e3); } } } },
          scales: { x: linX('step'), y: yAxis('ms') } }
      });
    }
  }

  add(app, 'h1', null, 'actrace report: ' + D.input);
  add(app, 'p', { 'class': 'meta' }, D.traces.length + (D.traces.length === 1 ? ' trace' : ' traces') +
    ', written by actrace ' + D.actrace_version + '. Hover a chart for the numbers behind it; times are from each trace\'s first event.');
  if (D.traces.length > 1) {
    var all = [];
    D.traces.forEach(function (t) {
      if (t.error) all.push(t.file + ': not read: ' + t.error);
      else t.warnings.forEach(function (w) { all.push('rank ' + t.rank + ' (' + t.file + '): ' + w); });
    });
    warnings(app, all);
    ranks(app);
    D.traces.forEach(function (t, i) { trace(app, t, i, false); });
  } else {
    trace(app, D.traces[0], 0, true);
  }
  document.body.setAttribute('data-rendered', '1');
})();
