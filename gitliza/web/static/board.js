// gitliza web: live updates (server-sent events, no polling), countdowns, actions. No build step.
"use strict";
(function () {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const live = document.getElementById("live");
  const fragment = document.body.dataset.fragment;
  const flash = document.getElementById("flash");
  const conn = document.getElementById("conn");
  let skew = 0; // server time - browser time, from the board's data-now
  let inflight = null, again = false;

  function span(s) {
    s = Math.max(0, Math.floor(s));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
    return Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
  }
  function syncClock() {
    const b = live.querySelector("[data-now]");
    if (b) skew = Date.parse(b.dataset.now) - Date.now();
  }
  function tick() {
    const now = Date.now() + skew;
    live.querySelectorAll("[data-expires]").forEach((el) => {
      const left = (Date.parse(el.dataset.expires) - now) / 1000;
      el.textContent = left > 0 ? span(left) : "expired " + span(-left);
      el.classList.toggle("expired", left <= 0);
    });
    live.querySelectorAll("[data-since]").forEach((el) => {
      el.textContent = span((now - Date.parse(el.dataset.since)) / 1000) + " ago";
    });
  }
  function say(text, bad) {
    flash.textContent = text;
    flash.className = bad ? "show bad" : "show";
    clearTimeout(say.t);
    say.t = setTimeout(() => { flash.className = ""; }, bad ? 12000 : 4000);
  }
  // Re-fetch the live part of the page; collapse a burst of events into one fetch at a time.
  function refresh() {
    if (!fragment) return;
    if (inflight) { again = true; return; }
    const open = new Set([...live.querySelectorAll("details[id]")].filter((d) => !d.open).map((d) => d.id));
    const typing = document.activeElement && live.contains(document.activeElement) &&
      document.activeElement.matches("input, textarea") ? document.activeElement : null;
    if (typing && typing.value) { again = true; setTimeout(refresh, 1500); return; }
    inflight = fetch(fragment, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        live.innerHTML = html;
        open.forEach((id) => { const d = document.getElementById(id); if (d) d.open = false; });
        syncClock(); tick(); bindLogs();
        document.dispatchEvent(new CustomEvent("gitliza:refreshed"));
      })
      .catch(() => {})
      .finally(() => { inflight = null; if (again) { again = false; refresh(); } });
  }
  function connect() {
    const es = new EventSource("/events");
    let opened = false;
    es.addEventListener("open", () => {
      conn.classList.add("on");
      if (opened) refresh(); // back after a lost connection: what it missed is on the board
      opened = true;
    });
    es.addEventListener("error", () => conn.classList.remove("on"));
    es.addEventListener("change", refresh);
    es.addEventListener("verify", (ev) => {
      const v = JSON.parse(ev.data), badge = document.getElementById("verify");
      if (!badge) return;
      badge.textContent = v.ok === true ? "verified " + v.commits + " commits" :
        v.ok === false ? "verify failed: " + v.error : "verify: running";
      badge.className = "badge " + (v.ok === true ? "ok" : v.ok === false ? "bad" : "");
    });
  }
  const streams = new Map();
  function bindLogs() {
    live.querySelectorAll("pre[data-logstream]").forEach((pre) => {
      const url = pre.dataset.logstream;
      const old = streams.get(url);
      if (old) { pre.textContent = old.pre.textContent; old.pre = pre; return; }
      const s = { pre: pre, es: new EventSource(url + "?offset=" + pre.dataset.offset) };
      s.es.onmessage = (ev) => {
        const p = s.pre, atEnd = p.scrollTop + p.clientHeight >= p.scrollHeight - 4;
        p.textContent += ev.data;
        if (atEnd) p.scrollTop = p.scrollHeight;
      };
      streams.set(url, s);
    });
  }
  document.addEventListener("submit", (ev) => {
    const f = ev.target;
    if (!f.matches("form.action")) return;
    ev.preventDefault();
    if (f.dataset.confirm && !window.confirm(f.dataset.confirm)) return;
    const body = new FormData(f);
    const button = f.querySelector("button");
    button.disabled = true;
    fetch(f.action, { method: "POST", body: body, credentials: "same-origin",
                      headers: { "X-CSRF-Token": csrf } })
      .then((r) => r.text().then((t) => [r.ok, t]))
      .then(([ok, text]) => {
        if (ok) {
          const d = JSON.parse(text);
          say((d.op || "done") + (d.task ? " " + d.task : "") + (d.to ? " → " + d.to : "") + " (state " + String(d.state).slice(0, 12) + ")", false);
          f.reset();
          refresh();
        } else {
          say(text.trim(), true);
        }
      })
      .catch((e) => say("gitliza: error: " + e, true))
      .finally(() => { button.disabled = false; });
  });
  syncClock(); tick(); setInterval(tick, 1000); bindLogs(); connect();
})();
