// "How this works": the measurements behind the page, from the build (lab-model.json's
// precision candidates), the reader's own browser (engine.stats) and bench/lab.py.

import { el } from "./dom.js";
import { fmt, mb } from "./strings.js";

export function facts(box, engine, bench, { t }) {
  if (!box) return;
  const meta = engine.meta;
  const c = meta.candidates;
  const rows = Object.entries(c).map(([name, m]) => el("tr", {},
    el("td", { text: name === meta.precision ? t("precision_used", { precision: name }) : name }), el("td", { text: mb(m.download_bytes ?? m.bytes) }),
    el("td", { text: m.max_abs_map.toExponential(1) }), el("td", { text: fmt(m.min_cosine, 5) })));
  const table = el("table", { class: "mha-lab-table" },
    el("caption", { text: t("precision_caption", { sentences: c.fp32.sentences, masks: c.fp32.masks, tokens: c.fp32.longest_tokens, batched: c.fp32.batched,
      map_tolerance: meta.rule.map_tolerance, cosine_floor: meta.rule.cosine_floor }) }),
    el("thead", {}, el("tr", {}, ...["precision_weights", "precision_file", "precision_map", "precision_cosine"]
      .map((key) => el("th", { scope: "col", text: t(key) })))),
    el("tbody", {}, ...rows));
  const parts = [table];
  const own = engine.stats;
  // The page's first update: its sentence alone, then the sentences it ranks, in one batch.
  const text = own.runs.find((r) => r.texts === 1);
  const batch = own.runs.find((r) => r.texts > 1);
  const loaded = { load: fmt(own.loadMs / 1000, 2), download: fmt(own.fetchMs / 1000, 2), session: fmt(own.createMs / 1000, 2) };
  parts.push(el("p", { id: "mha-lab-own", text: text && batch
    ? t("own_timing_runs", { ...loaded, tokens: text.tokens, text: fmt(text.ms, 0), texts: batch.texts, batch: fmt(batch.ms, 0) })
    : t("own_timing", loaded) }));
  if (bench && bench.lab) parts.push(el("p", { id: "mha-lab-bench", text: benchSentence(bench, t) }));
  const eds = bench && bench.lab && bench.lab.editions;
  if (eds && eds.zh) {
    const long = bench.lab.long_text;
    parts.push(el("p", { id: "mha-lab-bench-editions", text: t("bench_editions", {
      zh_load: fmt(eds.zh.load_s.median, 2), zh_download: mb(eds.zh.download_bytes),
      switch_download: mb(bench.lab.switch_language_download_bytes),
    }) }));
    const first = long && long.click_by_layer && long.click_by_layer["0"]; // a first-layer head's clicks
    if (first) {
      parts.push(el("p", { id: "mha-lab-bench-long", text: t("bench_long", {
        tokens: long.tokens, maps_median: fmt(long.click_maps_ms.median, 0), maps_min: fmt(long.click_maps_ms.min, 0),
        maps_max: fmt(long.click_maps_ms.max, 0), clicks: long.click_maps_ms.n, first_median: fmt(first.maps_ms.median, 0),
        click_median: fmt(long.click_ms.median, 0), first_click_median: fmt(first.ms.median, 0),
        model_median: fmt(long.click_model_ms.median, 0),
      }) }));
    }
  }
  box.replaceChildren(...parts);
}

// bench/lab.py's committed run in one sentence, each number against its budget.
function benchSentence(bench, t) {
  const b = bench.lab;
  const prov = bench.provenance.lab;
  const goal = b.targets;
  const verdict = (ok, budget) => t(ok ? "bench_within" : "bench_over", { budget });
  return t("bench", {
    cores: b.machine.cores,
    load_average: fmt(b.machine.load_average_before, 1),
    repeats: b.repeats,
    load_median: fmt(b.load_s.median, 2),
    load_min: fmt(b.load_s.min, 2),
    load_max: fmt(b.load_s.max, 2),
    load_verdict: verdict(b.load_s.median <= goal.load_s, `${fmt(goal.load_s, 0)} s`),
    tokens_min: b.run_tokens.min,
    tokens_max: b.run_tokens.max,
    run_median: fmt(b.run_ms.median, 0),
    run_min: fmt(b.run_ms.min, 0),
    run_max: fmt(b.run_ms.max, 0),
    runs: b.run_ms.n,
    cpu_median: fmt(b.run_cpu_ms.median, 0),
    run_verdict: verdict(b.run_ms.median <= goal.run_ms, `${fmt(goal.run_ms, 0)} ms`),
    download: mb(b.download_bytes),
    model: mb(b.model_bytes),
    download_verdict: verdict(b.download_bytes <= goal.download_bytes, mb(goal.download_bytes)),
    sentences: b.compared.sentences,
    masks: b.compared.masks,
    map_difference: b.browser_max_abs_map.toExponential(1),
    embedding_difference: b.browser_max_abs_embedding.toExponential(1),
    commit: prov.git_commit.slice(0, 7),
    date: prov.created.slice(0, 10),
  });
}
