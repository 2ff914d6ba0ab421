/* The status page's drawing, loaded before app.js: the DOM and text
 * helpers every part of the page builds with, and the SVG line charts of a
 * plan's samples (time and value axes, ticks, a bound, hover values).
 * app.js takes them from window.cutoverDraw; nothing here keeps state or
 * talks to the API. What the API returns goes in as text (textContent,
 * SVG attributes), never as markup. */
'use strict';
window.cutoverDraw = (function () {
  function $(id) { return document.getElementById(id); }

  /* el('td', {class: 'x'}, 'text', child…): text children become text nodes. */
  function el(tag, attrs) {
    var e = document.createElement(tag);
    var k, i, c;
    for (k in attrs || {}) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
      if (k === 'class') e.className = attrs[k];
      else if (k === 'onclick') e.addEventListener('click', attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (i = 2; i < arguments.length; i++) {
      c = arguments[i];
      if (c == null) continue;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

  function fmtTime(ms) {
    if (ms == null) return '—';
    return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }
  function fmtDur(ms) {
    if (ms == null || !isFinite(ms)) return '—';
    if (ms < 0) ms = 0;
    if (ms < 1000) return Math.round(ms) + ' ms';
    var s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600),
      m = Math.floor(s % 3600 / 60), r = s % 60;
    if (d) return d + 'd ' + h + 'h ' + m + 'm';
    if (h) return h + 'h ' + m + 'm ' + r + 's';
    if (m) return m + 'm ' + r + 's';
    return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  }
  function num(v) { return v == null ? '—' : String(v); }
  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }
  /* A duration in words for the state sentence: "3 h 12 m", "12 d". */
  function fmtSpan(ms) {
    if (ms == null || !isFinite(ms)) return '—';
    if (ms < 0) ms = 0;
    var s = Math.round(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600),
      m = Math.floor(s % 3600 / 60), r = s % 60;
    if (d) return d + ' d' + (h ? ' ' + h + ' h' : '');
    if (h) return h + ' h' + (m ? ' ' + m + ' m' : '');
    if (m) return m + ' m' + (r ? ' ' + r + ' s' : '');
    return ms < 1000 ? Math.round(ms) + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
  }
  function stateBadge(s) { return el('span', { class: 'state s-' + String(s) }, String(s).replace('_', ' ')); }

  var SVGNS = 'http://www.w3.org/2000/svg';
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag), k;
    for (k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text != null) e.textContent = String(text);
    return e;
  }
  /* Tick values for [0, max]: 3 to 6 round numbers (1, 2, 5 × 10^k). */
  function valueTicks(max, unit) {
    var steps = unit === 'ms' ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000,
      120000, 300000, 600000, 1800000, 3600000] : null, step, i, out = [];
    if (steps) {
      for (i = 0; i < steps.length && max / steps[i] > 5; i++);
      step = steps[Math.min(i, steps.length - 1)];
    } else {
      var mag = Math.pow(10, Math.floor(Math.log10(Math.max(max, 1) / 5)));
      step = [1, 2, 5, 10].map(function (m) { return m * mag; }).filter(function (x) { return max / x <= 5; })[0] || 10 * mag;
      if (step < 1) step = 1;
    }
    for (i = 0; i <= max + step * 1e-9; i += step) out.push(i);
    if (out[out.length - 1] < max) out.push(out[out.length - 1] + step);
    return out;
  }
  var TSTEPS = [1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5,
    864e5, 1728e5, 6048e5];
  /* Tick times in [t0, t1]: at most 6, on round UTC boundaries. */
  function timeTicks(t0, t1) {
    var span = t1 - t0, i, step, out = [], t;
    for (i = 0; i < TSTEPS.length && span / TSTEPS[i] > 5; i++);
    step = TSTEPS[Math.min(i, TSTEPS.length - 1)];
    for (t = Math.ceil(t0 / step) * step; t <= t1; t += step) out.push(t);
    if (out.length < 2) out = [t0, t1];   /* a short span: its two ends */
    return { ticks: out, step: step };
  }
  function fmtTick(t, step, span) {
    var iso = new Date(t).toISOString();
    if (span > 864e5) return iso.slice(5, 10) + ' ' + iso.slice(11, 16);
    return step >= 6e4 ? iso.slice(11, 16) : iso.slice(11, 19);
  }
  function fmtV(v, unit) {
    if (v == null) return '—';
    if (unit === 'ms') return fmtDur(v);
    return Math.round(v).toLocaleString('en-US');
  }
  /* A line chart of one quantity: OPTS {unit ("ms" or a word: messages,
   * queues), yLabel, lines [{name, pts [[t, v]], color, dots}], bound
   * {value, label} (a dashed limit line), small (a small multiple), vmax
   * (a shared scale)}. Time and value axes with ticks, hover values. */
  function chart(title, o) {
    var small = !!o.small, W = small ? 240 : 640, H = small ? 140 : 260, L = small ? 40 : 64, R = 12, T = 12, B = small ? 30 : 44;
    var box = el('div', { class: 'chart' + (small ? ' small' : ''), 'data-chart': o.id || title }, el('h3', null, title));
    var t0 = Infinity, t1 = -Infinity, v1 = 0, any = false, lines = o.lines;
    lines.forEach(function (l) {
      l.pts.forEach(function (p) { any = true; t0 = Math.min(t0, p[0]); t1 = Math.max(t1, p[0]); v1 = Math.max(v1, p[1]); });
    });
    var svg = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': title });
    box.appendChild(svg);
    if (!any) { svg.appendChild(sv('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', fill: '#5b6470' }, 'no samples yet')); return box; }
    if (o.vmax != null) v1 = Math.max(v1, o.vmax);
    if (o.bound && o.bound.value != null) v1 = Math.max(v1, o.bound.value * 1.1);
    if (t1 - t0 < 1000) t1 = t0 + 1000;
    var yt = valueTicks(v1 || 1, o.unit), vtop = yt[yt.length - 1] || 1;
    function x(t) { return L + (t - t0) / (t1 - t0) * (W - L - R); }
    function y(v) { return T + (1 - v / vtop) * (H - T - B); }
    var fs = small ? 13 : 12, grey = '#5b6470';
    yt.forEach(function (v) {
      svg.appendChild(sv('line', { x1: L, y1: y(v), x2: W - R, y2: y(v), stroke: '#eef1f4', class: 'grid' }));
      svg.appendChild(sv('text', { x: L - 5, y: y(v) + 4, 'text-anchor': 'end', 'font-size': fs, fill: grey, class: 'ytick' }, fmtV(v, o.unit)));
    });
    var tt = timeTicks(t0, t1);
    /* A small multiple shows its first and last tick only; a label near
     * an edge is anchored to stay inside the chart. */
    (small && tt.ticks.length > 2 ? [tt.ticks[0], tt.ticks[tt.ticks.length - 1]] : tt.ticks).forEach(function (t) {
      var xt = x(t), anchor = xt > W - R - 40 ? 'end' : xt < L + 30 ? 'start' : 'middle';
      svg.appendChild(sv('line', { x1: xt, y1: H - B, x2: xt, y2: H - B + 4, stroke: grey }));
      svg.appendChild(sv('text', { x: xt, y: H - B + 5 + fs, 'text-anchor': anchor, 'font-size': fs, fill: grey, class: 'xtick' },
        fmtTick(t, tt.step, t1 - t0)));
    });
    svg.appendChild(sv('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#9aa3ad' }));
    svg.appendChild(sv('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#9aa3ad' }));
    if (!small) {
      svg.appendChild(sv('text', { x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', 'font-size': fs, fill: grey, class: 'xlabel' }, 'time (UTC)'));
      svg.appendChild(sv('text', { x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle', 'font-size': fs, fill: grey, class: 'ylabel',
        transform: 'rotate(-90 12 ' + (T + H - B) / 2 + ')' }, o.yLabel || o.unit));
    }
    if (o.bound && o.bound.value != null) {
      svg.appendChild(sv('line', { x1: L, y1: y(o.bound.value), x2: W - R, y2: y(o.bound.value), stroke: '#c62828',
        'stroke-dasharray': '6 4', class: 'bound' }));
      svg.appendChild(sv('text', { x: W - R - 2, y: y(o.bound.value) - 4, 'text-anchor': 'end', 'font-size': fs, fill: '#c62828' }, o.bound.label));
    }
    var legend = el('div', { class: 'legend' });
    lines.forEach(function (l, i) {
      var color = l.color || 'hsl(' + (i * 137 % 360) + ',65%,42%)', pts = thin(l.pts, 400);
      if (l.dots) {
        var g = sv('g', {});
        pts.forEach(function (p) { g.appendChild(sv('circle', { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 2.5, fill: color })); });
        svg.appendChild(g);
      } else
        svg.appendChild(sv('polyline', { points: pts.map(function (p) { return x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1); }).join(' '),
          fill: 'none', stroke: color, 'stroke-width': small ? 1.4 : 1.8 }));
      var last = l.pts.length ? l.pts[l.pts.length - 1][1] : null;
      var key = el('span', null, (i ? ' · ' : '') + l.name + ' now ' + fmtV(last, o.unit) + (o.unit === 'ms' ? '' : ' ' + (o.unit || '')));
      key.style.color = color;      /* CSSOM, which the page's CSP allows */
      legend.appendChild(key);
    });
    /* Hover: the nearest sample's time and each line's value there. */
    var tip = el('div', { class: 'tip', 'aria-live': 'off' }, small ? '' : 'hover the chart for values');
    var cursor = sv('line', { x1: 0, y1: T, x2: 0, y2: H - B, stroke: '#1b1f24', 'stroke-width': 0.8, visibility: 'hidden' });
    svg.appendChild(cursor);
    var hit = sv('rect', { x: L, y: T, width: W - L - R, height: H - T - B, fill: 'transparent', class: 'hover' });
    function at(ev) {
      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) / r.width * W;
      var t = t0 + (px - L) / (W - L - R) * (t1 - t0);
      var parts = lines.map(function (l) {
        var best = null;
        l.pts.forEach(function (p) { if (!best || Math.abs(p[0] - t) < Math.abs(best[0] - t)) best = p; });
        if (best) t = lines.length === 1 ? best[0] : t;
        return best ? l.name + ' ' + fmtV(best[1], o.unit) : null;
      }).filter(Boolean);
      cursor.setAttribute('x1', x(t)); cursor.setAttribute('x2', x(t)); cursor.setAttribute('visibility', 'visible');
      tip.textContent = fmtTime(t).slice(11) + ': ' + parts.join(', ') + (o.unit && o.unit !== 'ms' ? ' ' + o.unit : '');
    }
    hit.addEventListener('mousemove', at);
    hit.addEventListener('mouseleave', function () { cursor.setAttribute('visibility', 'hidden'); });
    svg.appendChild(hit);
    box.appendChild(legend);
    box.appendChild(tip);
    return box;
  }
  /* At most N points, keeping each bucket's largest value. */
  function thin(pts, n) {
    if (pts.length <= n) return pts;
    var out = [], step = pts.length / n, i, j, best;
    for (i = 0; i < n; i++) {
      best = null;
      for (j = Math.floor(i * step); j < Math.floor((i + 1) * step); j++)
        if (!best || pts[j][1] > best[1]) best = pts[j];
      if (best) out.push(best);
    }
    return out;
  }
  return { '$': $, el: el, clear: clear, fmtTime: fmtTime, fmtDur: fmtDur, num: num, plural: plural,
    fmtSpan: fmtSpan, stateBadge: stateBadge, chart: chart };
})();
