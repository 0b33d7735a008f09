// The browser page end to end in headless Chromium: files in through the file
// input, ingestion in the Web Worker with progress, each endpoint run from the
// controls, tables and charts checked against the library, a parameter error
// shown beside its control. Screenshots go to test-output/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { LogEndpoints } from "log-endpoints";
import { ROOT } from "../../www/miniflare-options.mjs";
import { serveStatic } from "../../www/static-server.mjs";
import { generate, ndjson, projectRefs } from "../../scripts/generate-logs.mjs";
import { launchChromium } from "./chromium.mjs";

const END = Date.parse("2026-11-18T09:30:00Z"); // an old download: "now" must default to its newest entry
const OUT = path.join(ROOT, "test-output");
const [project] = projectRefs();
const edge = [...generate({ stream: "edge_logs", count: 3000, endMs: END, spanMs: 2 * 24 * 3600e3 })];
const fns = [...generate({ stream: "function_edge_logs", count: 3000, endMs: END, spanMs: 2 * 24 * 3600e3 })];
const newestUs = Math.max(...edge.map((e) => e.timestamp), ...fns.map((e) => e.timestamp));

const reference = new LogEndpoints({ apiKeys: ["k"], now: newestUs / 1000 });
reference.ingest("edge_logs", edge);
reference.ingest("function_edge_logs", fns);

let dir;
let site;
let browser;
let page;
const foreignRequests = [];

/** Notes every request of `tab`'s context (its service worker's too) that leaves the page's origin. */
function watchRequests(tab) {
  tab.context().on("request", (r) => {
    if (!r.url().startsWith(site.url)) foreignRequests.push(r.url());
  });
  return tab;
}

before(async () => {
  mkdirSync(OUT, { recursive: true });
  dir = mkdtempSync(path.join(tmpdir(), "log-endpoints-page-"));
  writeFileSync(path.join(dir, "edge.ndjson"), ndjson(edge) + "this line is not json\n");
  writeFileSync(path.join(dir, "functions.json.gz"), gzipSync(JSON.stringify(fns)));
  site = await serveStatic(path.join(ROOT, "dist/page"));
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  watchRequests(page);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(site.url);
  await page.waitForFunction(() => window.logEndpointsPage?.ready);
  assert.deepEqual(errors, []);
});

after(async () => {
  await browser?.close();
  await site?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function run(endpoint, params) {
  await page.selectOption("#endpoint", endpoint);
  for (const [name, value] of Object.entries(params)) {
    const control = page.locator(`.field[data-param="${name}"]:not([hidden]) :is(input, select)`);
    if ((await control.evaluate((el) => el.tagName)) === "SELECT") await control.selectOption(value);
    else await control.fill(value);
  }
  // Two answers can read alike ("100 rows in 0.4 ms"): the line is cleared first.
  await page.evaluate(() => (document.querySelector("#result-meta").textContent = ""));
  await page.click("#run");
  await page.waitForFunction(
    () => document.querySelector("#result-meta").textContent !== "" || document.querySelector(".field-error:not(:empty)") || !document.querySelector("#form-error").hidden,
  );
}

async function tableRows() {
  return page.$$eval("#table tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
}

/** True when the chart canvas has drawn pixels (not blank). */
async function chartDrawn() {
  return page.$eval("#chart canvas", (canvas) => {
    const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
    let painted = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++;
    return painted > 500;
  });
}

test("files are read in the worker with progress and a summary", async () => {
  await page.setInputFiles("#files", [path.join(dir, "edge.ndjson"), path.join(dir, "functions.json.gz")]);
  await page.waitForSelector("#summary .ok, #summary .warn");
  const summary = await page.textContent("#summary");
  assert.match(summary, /6,000 entries loaded from 2 files/);
  assert.match(summary, /1 rejected/);
  assert.match(summary, /edge\.ndjson: entry 3001: not valid JSON/);
  assert.match(await page.textContent("#progress-text"), /6,001 entries read · [\d,]+ entries\/s/);
  assert.equal(await page.getAttribute("#progress", "value"), "1");
  assert.match(await page.textContent("#now-text"), new RegExp(new Date(newestUs / 1000).toISOString().slice(0, 16)));
  await page.screenshot({ path: path.join(OUT, "page-loaded.png"), fullPage: true });
});

test("functions.invocation-stats: chart and table match the library", async () => {
  const params = { project, interval: "1day" };
  await run("functions.invocation-stats", params);
  const expected = reference.query("functions.invocation-stats", params, "k").result;
  assert.ok(expected.length > 5);
  const rows = await tableRows();
  assert.equal(rows.length, expected.length);
  assert.equal(rows[0][0], new Date(expected[0].timestamp / 1000).toISOString().replace(".000Z", "Z"));
  const headers = await page.$$eval("#table th", (ths) => ths.map((th) => th.textContent));
  assert.equal(rows[0][headers.indexOf("count")], expected[0].count.toLocaleString("en-US"));
  assert.ok(await chartDrawn(), "the chart canvas is drawn");
  // Sorting by count, descending on the second click.
  await page.click('#table th[data-column="count"]');
  await page.click('#table th[data-column="count"]');
  const sorted = await tableRows();
  const max = Math.max(...expected.map((r) => r.count));
  assert.equal(sorted[0][headers.indexOf("count")], max.toLocaleString("en-US"));
  // At 1200 px the table fits the page, and its first column (the time) is whole and in view.
  const fit = await page.$eval(".table-wrap", (wrap) => ({ scroll: wrap.scrollWidth, client: wrap.clientWidth, left: wrap.getBoundingClientRect().left }));
  assert.ok(fit.scroll <= fit.client, `the table fits: ${fit.scroll} px in ${fit.client} px`);
  const first = await page.$eval("#table td", (td) => ({ left: td.getBoundingClientRect().left, text: td.textContent, clipped: td.scrollWidth > td.clientWidth }));
  assert.ok(first.left >= fit.left - 1 && !first.clipped, `the first column is in view: ${JSON.stringify(first)}`);
  assert.match(first.text, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  await page.screenshot({ path: path.join(OUT, "page-invocation-stats.png"), fullPage: true });
});

test("usage.api-counts: four series charted, counts match", async () => {
  const params = { project, interval: "daily" };
  await run("usage.api-counts", params);
  const expected = reference.query("usage.api-counts", params, "k").result;
  assert.ok(expected.some((r) => r.total_rest_requests > 0), "the reference counts requests (an empty answer would match anything)");
  const rows = await tableRows();
  assert.deepEqual(rows.map((r) => r[0]), expected.map((r) => `${r.timestamp}Z`));
  assert.deepEqual(rows.map((r) => r[1]), expected.map((r) => r.total_rest_requests.toLocaleString("en-US")));
  assert.ok(await chartDrawn());
  assert.equal(await page.locator(".u-legend .u-series").count(), 5, "x plus four series");
  await page.screenshot({ path: path.join(OUT, "page-api-counts.png"), fullPage: true });
});

test("logs.all: an expandable list with the metadata tree", async () => {
  const params = { project, project_tier: "FREE" };
  await run("logs.all", params);
  const expected = reference.query("logs.all", params, "k").result;
  const items = page.locator("#logs > details");
  assert.equal(await items.count(), expected.length);
  assert.match(await items.first().locator(":scope > summary").textContent(), new RegExp(expected[0].event_message.slice(0, 20).replace(/[|.]/g, "\\$&")));
  assert.equal(await items.first().locator(".tree").count(), 0, "an entry's metadata is drawn when it is opened");
  await items.first().locator(":scope > summary").click();
  assert.match(await items.first().locator(".tree").first().textContent(), /status_code/);
  assert.match(await items.first().textContent(), new RegExp(`id ${expected[0].id}`));
  await page.screenshot({ path: path.join(OUT, "page-logs-all.png"), fullPage: true });
});

test("a bad parameter is explained next to its control", async () => {
  await run("usage.api-counts", { project: "(unclosed", interval: "hourly" });
  const error = page.locator('.field[data-param="project"]:not([hidden]) .field-error');
  assert.match(await error.textContent(), /not a valid regular expression/);
  assert.ok(await page.locator('.field[data-param="project"]:not([hidden])').evaluate((el) => el.classList.contains("invalid")));
  await page.screenshot({ path: path.join(OUT, "page-error.png"), fullPage: true });
  await run("functions.invocation-stats", { project: "", interval: "1hr" });
  assert.match(await page.locator('.field[data-param="project"]:not([hidden]) .field-error').textContent(), /project is required/);
});

test("a range that holds nothing, or reaches past the retention, says why", async () => {
  await run("logs.all", { project, project_tier: "PRO", iso_timestamp_start: "2026-11-18T00:00:00Z", iso_timestamp_end: "2026-11-17T00:00:00Z" });
  assert.equal(await page.locator("#logs > details").count(), 0);
  assert.match(await page.textContent("#result-warning"), /^Note: iso_timestamp_end is not after iso_timestamp_start: the range holds no instant\.$/);
  await run("logs.all", { project, project_tier: "FREE", iso_timestamp_start: "2026-11-10T00:00:00Z", iso_timestamp_end: "" });
  assert.match(await page.textContent("#result-warning"), /the range begins before the retention window \(FREE keeps 1 day, from 2026-11-17T09:/);
  await run("logs.all", { project, project_tier: "PAYG", iso_timestamp_start: "" });
  assert.equal(await page.isHidden("#result-warning"), true);
});

const studio = (file) => path.join(ROOT, "tests/fixtures/studio", file);

/** Reloads the page, loads `files` and waits for the summary; returns its text. */
async function loadFresh(files) {
  await page.reload();
  await page.waitForFunction(() => window.logEndpointsPage?.ready);
  await page.setInputFiles("#files", files);
  await page.waitForSelector("#summary .ok, #summary .warn");
  return page.textContent("#summary");
}

test("Studio's CSV and JSON downloads show the same rows as the NDJSON of the same entries", async () => {
  const seen = {};
  for (const format of ["ndjson", "csv", "json"]) {
    const summary = await loadFresh([studio(`edge.${format}`), studio(`functions.${format}`)]);
    assert.match(summary, /300 entries loaded from 2 files/, format);
    assert.doesNotMatch(summary, /rejected/, format);
    await run("functions.invocation-stats", { project, interval: "1day" });
    const stats = await tableRows();
    await run("usage.api-counts", { project, interval: "daily" });
    const usage = await tableRows();
    await run("logs.all", { project, project_tier: "PAYG" });
    const logs = await page.$$eval("#logs details summary", (s) => s.map((e) => e.textContent));
    seen[format] = { stats, usage, logs };
    if (format === "csv") await page.screenshot({ path: path.join(OUT, "page-studio-csv.png"), fullPage: true });
  }
  for (const part of ["stats", "usage", "logs"]) assert.ok(seen.ndjson[part].length > 0, part);
  assert.deepEqual(seen.csv, seen.ndjson, "CSV download");
  assert.deepEqual(seen.json, seen.ndjson, "JSON download");
});

test("a saved analysis opens again and answers the same", async () => {
  await loadFresh([studio("edge.csv"), studio("functions.json")]);
  await run("usage.api-counts", { project, interval: "daily" });
  const before = await tableRows();
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#save")]);
  assert.match(download.suggestedFilename(), /\.logsnap$/);
  const saved = path.join(dir, "analysis.logsnap");
  await download.saveAs(saved);
  const summary = await loadFresh([saved]);
  assert.match(summary, /Opened the saved analysis analysis\.logsnap/);
  assert.match(summary, /150 edge, 150 function rows held/);
  await run("usage.api-counts", { project, interval: "daily" });
  assert.deepEqual(await tableRows(), before);
});

test("once loaded, the page opens and analyses a file with the network cut", async () => {
  // A service worker that never installs fails here, named, rather than hanging the suite.
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
  const context = page.context();
  await context.setOffline(true);
  try {
    const summary = await loadFresh([studio("edge.csv")]);
    assert.match(summary, /150 entries loaded/);
    await run("usage.api-counts", { project, interval: "daily" });
    assert.ok((await tableRows()).length > 0);
    await page.screenshot({ path: path.join(OUT, "page-offline.png"), fullPage: true });
  } finally {
    await context.setOffline(false);
  }
});

test("a file given again is skipped, not counted twice; Start over empties the page", async () => {
  const first = await loadFresh([path.join(dir, "functions.json.gz")]);
  assert.match(first, /3,000 entries loaded from 1 file .*\(0 edge, 3,000 function rows held\)/);
  // The same file again, twice in one pick: nothing is added, and the page says why.
  await page.setInputFiles("#files", [path.join(dir, "functions.json.gz"), path.join(dir, "functions.json.gz")]);
  await page.waitForFunction(() => /Skipped/.test(document.querySelector("#summary .load-summary")?.textContent ?? ""));
  assert.match(await page.textContent("#summary .load-summary"), /Skipped functions\.json\.gz, functions\.json\.gz: already read/);
  await run("functions.invocation-stats", { project, interval: "7day" });
  const expected = reference.query("functions.invocation-stats", { project, interval: "7day" }, "k").result;
  const headers = await page.$$eval("#table th", (ths) => ths.map((th) => th.textContent));
  const counts = (await tableRows()).map((r) => r[headers.indexOf("count")]);
  assert.deepEqual(counts, expected.map((r) => r.count.toLocaleString("en-US")), "each entry counted once");
  await page.click("#start-over");
  await page.waitForFunction(() => document.querySelector("#run").disabled && document.querySelector("#summary").children.length === 0);
  const projectFields = await page.$$eval('.field[data-param="project"] input', (inputs) => inputs.map((i) => i.value));
  assert.deepEqual(new Set(projectFields), new Set([""]), "fields filled from the old files are emptied");
  await page.setInputFiles("#files", [path.join(dir, "functions.json.gz")]);
  await page.waitForFunction(() => /entries loaded/.test(document.querySelector("#summary").textContent));
  assert.match(await page.textContent("#summary"), /3,000 entries loaded .*\(0 edge, 3,000 function rows held\)/);
  // A damaged saved analysis is refused, named; the other files of the drop
  // are read, and what is held can still be asked. Two saved analyses in one
  // drop: the first opens, the second is named as not opened.
  const saved = reference.snapshot();
  writeFileSync(path.join(dir, "broken.logsnap"), saved.subarray(0, saved.length - 10));
  writeFileSync(path.join(dir, "edge-only.ndjson"), ndjson(edge.slice(0, 10)));
  await page.setInputFiles("#files", [path.join(dir, "broken.logsnap"), path.join(dir, "edge-only.ndjson")]);
  await page.waitForFunction(() => /broken\.logsnap: invalid snapshot/.test(document.querySelector("#summary").textContent));
  assert.match(await page.textContent("#summary .load-summary"), /10 entries loaded from 2 files .*\(10 edge, 3,000 function rows held\)/);
  assert.equal(await page.isDisabled("#run"), false);
  writeFileSync(path.join(dir, "first.logsnap"), saved);
  writeFileSync(path.join(dir, "second.logsnap"), saved);
  await page.setInputFiles("#files", [path.join(dir, "first.logsnap"), path.join(dir, "second.logsnap")]);
  await page.waitForFunction(() => /second\.logsnap: not opened: first\.logsnap was/.test(document.querySelector("#summary").textContent));
  assert.match(await page.textContent("#summary .load-summary"), /Opened the saved analysis first\.logsnap \(3,000 edge, 3,000 function rows held\)/);
});

test("logs that fill the store (?max-store=MiB): reading stops there, says how far, and what was read is answered", async () => {
  writeFileSync(path.join(dir, "big.ndjson"), ndjson([...generate({ stream: "edge_logs", count: 20_000, endMs: END, spanMs: 2 * 24 * 3600e3 })]));
  const small = watchRequests(await browser.newPage());
  try {
    await small.goto(`${site.url}?max-store=1`);
    await small.waitForFunction(() => window.logEndpointsPage?.ready);
    await small.setInputFiles("#files", [path.join(dir, "big.ndjson"), path.join(dir, "functions.json.gz")]);
    await small.waitForFunction(() => /entries loaded/.test(document.querySelector("#summary").textContent), null, { timeout: 60_000 });
    const summary = await small.textContent("#summary");
    assert.match(summary, /the store is full \([\d.]+ of its 1\.0 MiB held; limits\.maxStoreBytes\): \d+ entries of big\.ndjson were kept, \d+ read after them were not, and the rest of it was not read; 1 later file was not read\. Answers cover what was kept\./);
    assert.match(summary, /\(([1-9][\d,]*) edge, 0 function rows held\)/);
    assert.equal(await small.isDisabled("#run"), false, "what was read can be asked");
  } finally {
    await small.close();
  }
  // With room, the same file's text blocks are compressed on a second thread
  // (seal-worker.js), all of them before the summary.
  const roomy = watchRequests(await browser.newPage());
  try {
    await roomy.goto(site.url);
    await roomy.waitForFunction(() => window.logEndpointsPage?.ready);
    await roomy.setInputFiles("#files", [path.join(dir, "big.ndjson")]);
    await roomy.waitForFunction(() => /entries loaded/.test(document.querySelector("#summary").textContent), null, { timeout: 60_000 });
    const { entries, sealedElsewhere, stats } = await roomy.evaluate(() => window.logEndpointsPage.lastLoad);
    assert.equal(entries, 20_000);
    assert.ok(sealedElsewhere > 0 && stats.unsealedBlocks === 0, JSON.stringify({ sealedElsewhere, stats }));
  } finally {
    await roomy.close();
  }
  // A setting the module cannot use is said, and the default applies.
  const odd = watchRequests(await browser.newPage());
  try {
    await odd.goto(`${site.url}?max-store=99999`);
    await odd.waitForFunction(() => window.logEndpointsPage?.ready);
    await odd.setInputFiles("#files", [path.join(dir, "functions.json.gz")]);
    await odd.waitForFunction(() => /entries loaded/.test(document.querySelector("#summary").textContent));
    const summary = await odd.textContent("#summary");
    assert.match(summary, /\?max-store=99999 is not used \(invalid configuration: \?max-store takes a whole number of MiB from 1 to 4095, not "99999"\); the default applies/);
    assert.match(summary, /3,000 entries loaded/);
  } finally {
    await odd.close();
  }
});

test("a cut-off gzip keeps the whole entries before the cut and says where it ended, NDJSON or a JSON array", async () => {
  for (const [name, text] of [["cut.ndjson.gz", ndjson(edge)], ["cut.json.gz", JSON.stringify(edge)]]) {
    const whole = gzipSync(text);
    writeFileSync(path.join(dir, name), whole.subarray(0, Math.floor(whole.length * 0.6)));
    const summary = await loadFresh([path.join(dir, name)]);
    const loaded = Number(summary.match(/([\d,]+) entries loaded/)[1].replaceAll(",", ""));
    assert.ok(loaded > 1000 && loaded < 3000, `the readable part is kept: ${summary}`);
    assert.match(summary, new RegExp(`${name.replaceAll(".", "\\.")} ends early \\(cut-off gzip\\); the ${loaded.toLocaleString("en-US")} whole entries before the break were read`));
    assert.doesNotMatch(summary, /rejected/, "the entry the cut went through is left out, not read damaged");
  }
  // Gzip files joined with `cat` are read whole (Chromium's DecompressionStream stopped at the first).
  const text = ndjson(edge);
  const split = text.indexOf("\n", text.length / 3) + 1;
  writeFileSync(path.join(dir, "joined.ndjson.gz"), Buffer.concat([gzipSync(text.slice(0, split)), gzipSync(text.slice(split))]));
  const joined = await loadFresh([path.join(dir, "joined.ndjson.gz")]);
  assert.match(joined, new RegExp(`${edge.length.toLocaleString("en-US")} entries loaded`));
  assert.doesNotMatch(joined, /ends early|rejected/);
});

test("a file named .gz that the browser saved unpacked is read as it is", async () => {
  writeFileSync(path.join(dir, "unpacked.ndjson.gz"), ndjson(edge.slice(0, 20)));
  const summary = await loadFresh([path.join(dir, "unpacked.ndjson.gz")]);
  assert.match(summary, /20 entries loaded/);
  assert.doesNotMatch(summary, /gzip/);
});

test("Stop reading ends a long load there: what was read is kept and answered, and the summary says so", async () => {
  const total = 100_000;
  writeFileSync(path.join(dir, "long.ndjson"), ndjson([...generate({ stream: "edge_logs", count: total, endMs: END, spanMs: 2 * 24 * 3600e3, seed: 7 })]));
  const tab = watchRequests(await browser.newPage());
  try {
    await tab.goto(site.url);
    await tab.waitForFunction(() => window.logEndpointsPage?.ready);
    await tab.setInputFiles("#files", [path.join(dir, "long.ndjson"), path.join(dir, "functions.json.gz")]);
    await tab.waitForFunction(() => !document.querySelector("#stop-reading").hidden && /[1-9][\d,]* entries read/.test(document.querySelector("#progress-text").textContent));
    await tab.click("#stop-reading");
    await tab.waitForFunction(() => /entries loaded/.test(document.querySelector("#summary").textContent), null, { timeout: 60_000 });
    const summary = await tab.textContent("#summary");
    assert.match(summary, /Reading stopped at your request in long\.ndjson: the [\d,]+ whole entries before were read \(give it again to go on from there\); 1 later file was not read\. Answers cover what was kept\./);
    const held = Number(summary.match(/\(([\d,]+) edge, 0 function rows held\)/)?.[1].replaceAll(",", ""));
    assert.ok(held > 0 && held < total, `${held} of ${total} entries held`);
    assert.equal(await tab.isHidden("#stop-reading"), true, "the button goes with the load");
    assert.equal(await tab.isDisabled("#run"), false, "what was read can be asked");
    // Given again, the file goes on after the entries read: each is held once (it was skipped as already read).
    await tab.setInputFiles("#files", [path.join(dir, "long.ndjson")]);
    await tab.waitForFunction(() => /Went on with long\.ndjson/.test(document.querySelector("#summary").textContent), null, { timeout: 120_000 });
    const again = await tab.textContent("#summary .load-summary");
    assert.match(again, new RegExp(`Went on with long\\.ndjson after the ${held.toLocaleString()} entries read before\\.`));
    assert.match(again, new RegExp(`\\(${total.toLocaleString()} edge, 0 function rows held\\)`), "every entry held once");
    assert.doesNotMatch(again, /Skipped/);
  } finally {
    await tab.close();
  }
});

test("files without a project, or a CSV without ids, are explained", async () => {
  writeFileSync(path.join(dir, "no-project.ndjson"), ndjson(edge.slice(0, 20).map(({ project: _, ...rest }) => rest)));
  assert.match(await loadFresh([path.join(dir, "no-project.ndjson")]), /none of the 20 edge entries names a project \(a `project` field or column; `metadata.project_ref` for functions\): the endpoints answer per project and will find nothing/);
  writeFileSync(path.join(dir, "no-id.csv"), "timestamp,event_message,metadata\n1795177796000000,GET /,[]\n");
  assert.match(await loadFresh([path.join(dir, "no-id.csv")]), /no-id\.csv has no `id` column \(its columns: timestamp, event_message, metadata\)/);
  assert.equal(await page.isDisabled("#run"), true);
});

test("an entry of megabytes shows its start, and all of it on request", async () => {
  const [sample] = edge;
  const message = `POST /rest/v1/upload ${"x".repeat(3 << 20)}`;
  const body = "b".repeat(1 << 20);
  const huge = { ...sample, id: "00000000-0000-4000-8000-00000000beef", event_message: message, metadata: [{ ...sample.metadata[0], body }] };
  writeFileSync(path.join(dir, "huge.ndjson"), ndjson([huge]));
  assert.match(await loadFresh([path.join(dir, "huge.ndjson")]), /1 entries? loaded/);
  await run("logs.all", { project: huge.project, project_tier: "PAYG" });
  const item = page.locator("#logs > details").first();
  const summary = await item.locator(":scope > summary").textContent();
  assert.ok(summary.length < 400 && summary.includes("POST /rest/v1/upload") && summary.endsWith("…"), `the summary is one line: ${summary.length} characters`);
  assert.equal(await item.locator(".tree").count(), 0);
  await item.locator(":scope > summary").click();
  await item.locator(".tree").first().waitFor();
  const more = (n) => `show all (${n.toLocaleString("en-US")} more characters)`;
  const buttons = item.locator("button.show-all");
  assert.deepEqual(await buttons.allTextContents(), [more(message.length - 2000), more(JSON.stringify(body).length - 2000)]);
  await buttons.last().click();
  assert.equal(await item.locator(".tree .str").filter({ hasText: "bbbb" }).evaluate((e) => e.textContent), JSON.stringify(body));
  assert.equal(await buttons.count(), 1, "the message stays cut until asked");
});

test("the keyboard alone opens the file chooser and sorts a table", async () => {
  await page.reload();
  await page.waitForFunction(() => window.logEndpointsPage?.ready);
  // Whether Chromium shows a chooser for a script's click varies from run to
  // run; the page's part is to click the file input, which is counted here.
  await page.evaluate(() => {
    window.chooserOpened = 0;
    document.querySelector("#files").addEventListener("click", () => window.chooserOpened++);
  });
  await page.focus("#drop");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => window.chooserOpened === 1);
  await page.setInputFiles("#files", [path.join(dir, "functions.json.gz")]);
  await page.waitForFunction(() => /entries loaded/.test(document.querySelector("#summary").textContent));
  await run("functions.invocation-stats", { project, interval: "1day" });
  await page.focus('#table th[data-column="count"]');
  await page.keyboard.press("Enter");
  await page.keyboard.press("Enter");
  assert.equal(await page.getAttribute('#table th[data-column="count"]', "aria-sort"), "descending");
});

test("on a phone the chart fits the screen", async () => {
  await page.setViewportSize({ width: 375, height: 800 });
  try {
    await run("functions.invocation-stats", { project, interval: "1day" });
    const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, chart: document.querySelector("#chart canvas").getBoundingClientRect().width }));
    assert.ok(widths.chart <= 375 && widths.page <= 375, JSON.stringify(widths));
    await page.screenshot({ path: path.join(OUT, "page-phone.png"), fullPage: true });
  } finally {
    await page.setViewportSize({ width: 1200, height: 1000 });
  }
});

test("nothing was sent anywhere but the page's own origin", () => {
  assert.deepEqual(foreignRequests, []);
});
