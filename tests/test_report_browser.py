"""The report as a reader sees it: rendered by headless Chromium at 800 px.

A store with the shipped H200 measurements (analysis/data/h200), the static judge's verdicts on
some tasks' expert and naive kernels and a paired experiment whose submissions are those kernels
(one attempt failed in the harness) fills every kind of section; the page must then fit 800 px
without horizontal scrolling, show every table complete (no box that scrolls its rows away), keep
figure text legible, name the score each figure shows, and print no literal backtick.

Chromium: `apt-get install -y chromium` (or set D2K_CHROMIUM to a Chrome/Chromium binary); without
one these tests are skipped, saying so.
"""

import datetime as dt
import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import ROOT

from d2k.content import Benchmark, find_root
from d2k.ingest import ingest
from d2k.judge.pipeline import judge_solution, store_judgement
from d2k.report import report
from d2k.solutions import resolve
from d2k.store import Store

TASKS = ("rmsnorm", "silu_and_mul", "softmax_vocab", "layernorm_backward", "flash_attention_prefill")


def chromium() -> str | None:
    for name in (os.environ.get("D2K_CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM = chromium()
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium, "
                                                "or set D2K_CHROMIUM): the rendered report is not checked"),
    pytest.mark.xdist_group("test_report_browser"),  # one worker: the tests share one module-scoped report
]

CHECK = ("""
<script>
(function () {
  const out = {};
  const doc = document.documentElement;
  out.innerWidth = window.innerWidth;
  out.scrollWidth = doc.scrollWidth;
  out.overflowing = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 0.5 && el.closest('svg') === null) """
"""out.overflowing.push(el.tagName + ' ' + (el.textContent || '').slice(0, 40));
    if (el.closest('svg') !== null && el.tagName !== 'svg') continue;
    const st = getComputedStyle(el);
    if ((st.overflowY === 'auto' || st.overflowY === 'scroll' || st.overflowY === 'hidden') """
"""&& el.scrollHeight > el.clientHeight + 1)
      out.overflowing.push('inner scroll: ' + el.tagName);
  }
  out.tables = [];
  for (const t of document.querySelectorAll('table')) {
    const meta = t.nextElementSibling;
    out.tables.push({rows: t.tBodies[0].rows.length, said: meta ? meta.textContent : '',
                     right: t.getBoundingClientRect().right});
  }
  out.figureText = [];
  for (const svg of document.querySelectorAll('figure svg')) {
    const section = svg.closest('figure').previousElementSibling.previousElementSibling.id;
    // the rendered font size: the text's font size in the figure's units times the figure's scale
    const scale = svg.getBoundingClientRect().width / (svg.viewBox.baseVal.width || svg.getBoundingClientRect().width);
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim()) continue;
      out.figureText.push([section, t.textContent.trim(), parseFloat(getComputedStyle(t).fontSize) * scale]);
    }
  }
  out.text = document.body.innerText;
  const pre = document.createElement('pre');
  pre.id = 'd2k-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
""")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    bench = Benchmark.load(only=list(TASKS))
    store = Store(tmp / "b.duckdb")
    ingest(store, Benchmark.load(), ROOT / "analysis" / "data" / "h200" / "results.jsonl")
    ingest(store, None, ROOT / "analysis" / "data" / "h200" / "calibration.json")
    con = store.con
    con.execute("INSERT INTO experiments (experiment_id, name, spec, spec_path, created_at) "
                "VALUES ('x', 'paired', '{}', 's.toml', ?)",
                [dt.datetime(2026, 12, 2)])
    n = 0
    for task in TASKS:
        solutions = {name: resolve(bench, task, name) for name in ("expert", "naive")}
        for solution in solutions.values():
            store_judgement(store, judge_solution(bench, solution, "static"))
        for model in ("model-a", "model-b"):
            for condition, name in (("guided", "expert"), ("unguided", "naive")):
                n += 1
                failed = (model, task, condition) == ("model-b", "layernorm_backward", "unguided")
                con.execute("INSERT INTO attempts (attempt_id, experiment_id, model, task_id, condition, seed, status, "
                            "agent_status, submission_id) VALUES (?, 'x', ?, ?, ?, 0, ?, ?, ?)",
                            [f"a{n}", model, task, condition, "failed" if failed else "finished",
                             None if failed else "submitted", None if failed else solutions[name].solution_id])
    out = tmp / "report"
    page_path, results = report(store, find_root(), out)
    store.close()
    checked = tmp / "checked.html"
    checked.write_text(page_path.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=800,1000", "--virtual-time-budget=5000", "--dump-dom", checked.as_uri()],
                          capture_output=True, text=True, timeout=180)
    found = re.search(r"<pre id=\"d2k-check\">(.*?)</pre>", proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    import html

    return json.loads(html.unescape(found.group(1))), results, page_path


def test_the_page_fits_800_px_without_inner_scrolling(page):
    check, _, _ = page
    assert check["innerWidth"] == 800
    assert check["scrollWidth"] <= 800, check["overflowing"][:5]
    assert check["overflowing"] == []


def test_every_table_is_complete(page):
    check, results, _ = page
    shown = [r for r in results if r.rows]
    assert len(check["tables"]) == len(shown) >= 12
    for table, result in zip(check["tables"], shown):
        assert table["rows"] == len(result.rows), result.section.name
        assert table["said"].startswith(f"{len(result.rows)} row(s)")
        assert table["right"] <= 800


def test_figure_text_is_legible_and_legends_name_the_score(page):
    check, _, _ = page
    sections = {s for s, _, _ in check["figureText"]}
    assert {"performance", "task_speed", "workload_speed", "implementation", "design_graph"} <= sections
    small = [(s, t, round(h, 1)) for s, t, h in check["figureText"] if h < 9]  # px, at 800 px
    assert small == [], small[:10]
    text = " ".join(t for _, t, _ in check["figureText"])
    for legend in ("implementation score, plain", "item credit (static judge)", "Performance Score",
                   "dependency-aware", "speedup over the eager reference", "95 % CI"):
        assert legend in text, legend


def test_no_literal_backticks_and_the_labels_a_reader_needs(page):
    check, _, page_path = page
    text = check["text"]
    assert "`" not in text
    assert "GPU measurements: NVIDIA H200, measured 2026-12-02" in text
    assert "correctness rate, GPU" in text and "correctness rate" in text
    assert "(all models)" in text and "DEMO" not in text
    assert page_path.stat().st_size < 5_000_000
