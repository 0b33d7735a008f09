// The analysis page: files in, endpoint answers out, all inside this tab. The
// wasm module runs in a Web Worker (ingest-worker.js); this file is the UI.
import uPlot from "./vendor/uPlot.esm.js";

const $ = (selector) => document.querySelector(selector);
// `?max-store=MiB` bounds the memory the logs take once read (the module's default otherwise).
const workerUrl = new URL("./ingest-worker.js", import.meta.url);
const maxStore = new URLSearchParams(location.search).get("max-store");
if (maxStore) workerUrl.searchParams.set("max-store", maxStore);
const worker = new Worker(workerUrl, { type: "module" });
const pending = new Map();
let nextId = 1;
let newestMs = null;
let lastRows = [];
let chart = null;
/** The module's endpoint descriptions (`endpoints()`). */
let endpoints = [];

/** Sends a request to the worker; resolves with its answer or rejects with its error. */
function ask(message) {
  const id = nextId++;
  worker.postMessage({ ...message, id });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

worker.onmessage = ({ data }) => {
  if (data.type === "progress") return showProgress(data);
  const waiting = pending.get(data.id);
  pending.delete(data.id);
  if (data.type === "done") waiting?.resolve(data.answer);
  else waiting?.reject(Object.assign(new Error(data.error.message), data.error));
};

// ---- loading files ----------------------------------------------------------

function showProgress({ bytes, totalBytes, entries, rate }) {
  $("#progress-box").hidden = false;
  $("#progress").value = totalBytes ? bytes / totalBytes : 1;
  $("#progress-text").textContent = `${entries.toLocaleString()} entries read · ${Math.round(rate).toLocaleString()} entries/s`;
}

/**
 * Files already read into what is held, by name, size and modification time:
 * the same file given again would count its entries twice, so it is skipped.
 */
const readFiles = new Set();
/** Files whose reading was stopped (Stop reading), by the same key: the entries read from each. Given again, a file goes on from there. */
const partlyRead = new Map();
const fileKey = (file) => `${file.name}\u0000${file.size}\u0000${file.lastModified}`;
/** Entries held, as the last summary said (Run needs some). */
let held = 0;
/** Loads run one after another, each adding its summary above the last ones. */
let loading = Promise.resolve();

function load(files) {
  const list = [...files];
  if (list.length === 0) return loading; // a drop of text or a link
  return queue(() => loadNow(list));
}

/** Runs `step` after the loads before it; a step that fails is reported and the next still runs. */
function queue(step) {
  loading = loading.then(step).catch((e) => addSummary(`<p class="warn">${escape(e.message)}</p>`));
  return loading;
}

async function loadNow(files) {
  const fresh = [];
  const skipped = [];
  for (const file of files) {
    const key = fileKey(file);
    if (readFiles.has(key) || fresh.some((f) => fileKey(f) === key)) skipped.push(file.name);
    else fresh.push(file);
  }
  const note = skipped.length
    ? `<p class="warn">Skipped ${skipped.map(escape).join(", ")}: already read, so ${skipped.length === 1 ? "its" : "their"} entries would count twice (<em>Start over</em> empties the page to read ${skipped.length === 1 ? "it" : "them"} again).</p>`
    : "";
  if (fresh.length === 0) return addSummary(note);
  $("#run").disabled = true;
  // A save while files load would hold only part of them, without saying so.
  $("#save").disabled = true;
  // The box shows from the start, so that Stop reading can be clicked before the first progress.
  $("#progress-box").hidden = false;
  $("#stop-reading").hidden = false;
  $("#stop-reading").disabled = false;
  try {
    const skipFirst = fresh.map((file) => partlyRead.get(fileKey(file)) ?? 0);
    const summary = await ask({ type: "ingest", files: fresh, skipFirst, stream: $("#stream").value });
    // A saved analysis replaces what was held, so the files read before it are gone.
    if (summary.files.some((f) => f.snapshot)) {
      readFiles.clear();
      partlyRead.clear();
    }
    for (const [at, file] of fresh.entries()) {
      const read = summary.files.find((f) => f.at === at);
      if (read?.stoppedAfter !== undefined) partlyRead.set(fileKey(file), read.stoppedAfter);
      else if (read?.accepted > 0) {
        readFiles.add(fileKey(file));
        partlyRead.delete(fileKey(file));
      }
    }
    addSummary(note + summaryHtml(summary));
    showHeld(summary);
    // For a look from the console (and the page test): how the last load went.
    window.logEndpointsPage.lastLoad = { entries: summary.entries, seconds: summary.seconds, sealedElsewhere: summary.sealedElsewhere, stats: summary.stats };
  } catch (e) {
    addSummary(`${note}<p class="warn">Could not read the files: ${escape(e.message)}</p>`);
    showRunState();
  } finally {
    $("#save").disabled = false;
    $("#stop-reading").hidden = true;
  }
}

// What was read so far is kept and answered; the summary says where reading stopped.
$("#stop-reading").addEventListener("click", () => {
  $("#stop-reading").disabled = true;
  worker.postMessage({ type: "stop-reading" });
});

/** Puts one load's summary on top of the earlier ones (the last few stay). */
function addSummary(html) {
  const block = Object.assign(document.createElement("div"), { className: "load-summary", innerHTML: html });
  $("#summary").prepend(block);
  for (const old of [...$("#summary").children].slice(5)) old.remove();
}

function summaryHtml({ accepted, rejected, reasons, files, seconds, catalog, stats }) {
  const opened = files.filter((f) => f.snapshot).map((f) => escape(f.name));
  const logs = files.length - opened.length;
  const parts = [];
  const heldText = `${stats.edgeEntries.toLocaleString()} edge, ${stats.functionRows.toLocaleString()} function rows held`;
  if (opened.length) parts.push(`<p class="ok">Opened the saved analysis ${opened.join(", ")} (${heldText}).</p>`);
  for (const { name, resumedAfter } of files.filter((f) => f.resumedAfter)) {
    parts.push(`<p class="ok">Went on with ${escape(name)} after the ${resumedAfter.toLocaleString()} entries read before.</p>`);
  }
  if (logs || !opened.length) parts.push(`<p class="${accepted ? "ok" : "warn"}"><strong>${accepted.toLocaleString()}</strong> entries loaded` +
    ` from ${logs} file${logs === 1 ? "" : "s"} in ${seconds.toFixed(1)} s` +
    ` (${heldText})` +
    (rejected ? `, <strong>${rejected.toLocaleString()}</strong> rejected` : "") + ".</p>");
  // Entries are answered per project: without one they are held but no endpoint finds them.
  if (catalog.unprojected) parts.push(`<p class="warn">${escape(catalog.unprojected)}</p>`);
  if (reasons.length) parts.push(`<p class="warn">First reasons:</p><ul>${reasons.map((r) => `<li>${escape(r)}</li>`).join("")}</ul>`);
  return parts.join("");
}

function showHeld({ catalog, stats }) {
  fillChoices(catalog);
  newestMs = catalog.newestTimestamp === null ? null : catalog.newestTimestamp / 1000;
  updateNowText();
  held = stats.edgeEntries + stats.functionRows;
  showRunState();
}

function showRunState() {
  $("#run").disabled = held === 0;
  $("#save-box").hidden = held === 0;
  $("#run-note").textContent = held === 0 ? "load some logs first" : "";
}

/** Offers the projects and functions found in the files, and fills empty project fields. */
function fillChoices(catalog) {
  const fill = (list, values) => {
    list.replaceChildren(...values.map((v) => Object.assign(document.createElement("option"), { value: v })));
  };
  const projects = { edge_logs: catalog.edgeProjects, function_edge_logs: catalog.functionProjects };
  for (const [stream, values] of Object.entries(projects)) fill($(`#projects-${stream}`), values);
  fill($("#functions"), catalog.functions);
  for (const input of document.querySelectorAll('.field[data-param="project"] input')) {
    const first = projects[input.dataset.stream]?.[0];
    if (!input.value && first) input.value = first;
  }
  // Only where it is required (combined-stats): elsewhere it narrows the answer.
  for (const input of document.querySelectorAll('.field[data-param="function_id"][data-required="true"] input')) {
    if (!input.value && catalog.functions[0]) input.value = catalog.functions[0];
  }
}

/** Downloads what is held as a saved analysis, to open here again later. */
$("#save").addEventListener("click", async () => {
  let bytes;
  try {
    bytes = await ask({ type: "snapshot" });
  } catch (e) {
    return addSummary(`<p class="warn">Could not save: ${escape(e.message)}</p>`);
  }
  const link = Object.assign(document.createElement("a"), {
    href: URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" })),
    download: `logs-${new Date().toISOString().slice(0, 10)}.logsnap`,
  });
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
});

/** Empties the page: nothing held, no file read, no result shown. */
$("#start-over").addEventListener("click", () => {
  queue(async () => {
    const stats = await ask({ type: "start-over" });
    readFiles.clear();
    partlyRead.clear();
    // Fields filled from the old files' projects and functions are emptied, to be filled from the next.
    for (const input of document.querySelectorAll('.field[data-param="project"] input, .field[data-param="function_id"] input')) input.value = "";
    showHeld({ stats, catalog: { edgeProjects: [], functionProjects: [], functions: [], newestTimestamp: null } });
    $("#summary").replaceChildren();
    $("#progress-box").hidden = true;
    $("#answer").hidden = true;
  });
});

const drop = $("#drop");
// The drop zone opens the file chooser from the keyboard too.
drop.addEventListener("keydown", (e) => {
  if (e.target === drop && (e.key === "Enter" || e.key === " ")) {
    e.preventDefault();
    $("#files").click();
  }
});
drop.addEventListener("dragover", (e) => {
  e.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  load(e.dataTransfer.files);
});
$("#files").addEventListener("change", (e) => {
  load(e.target.files);
  e.target.value = ""; // picking the same file again is a change too (and is then skipped, saying so)
});

// ---- the query form -----------------------------------------------------------

function activeFields() {
  const endpoint = $("#endpoint").value;
  return [...document.querySelectorAll(".field[data-param]")].filter((f) => f.dataset.for === endpoint);
}

function showFieldsFor(endpoint) {
  for (const field of document.querySelectorAll(".field[data-param]")) field.hidden = field.dataset.for !== endpoint;
  $("#endpoint-summary").textContent = endpoints.find((e) => e.name === endpoint)?.summary ?? "";
  clearErrors();
}

/** One form field for one parameter, as the module describes it. */
function parameterField(endpoint, parameter) {
  const field = document.createElement("div");
  field.className = "field";
  field.dataset.param = parameter.name;
  field.dataset.for = endpoint.name;
  field.dataset.required = String(parameter.required);
  const id = `${endpoint.name}-${parameter.name}`.replace(/[^A-Za-z0-9_-]/g, "-");
  const label = document.createElement("label");
  label.htmlFor = id;
  label.innerHTML = `${escape(parameter.name)}${parameter.required ? "" : " <small>(optional)</small>"}`;
  let control;
  if (parameter.values.length) {
    control = document.createElement("select");
    control.append(...parameter.values.map((v) => new Option(v, v, false, v === parameter.default)));
  } else {
    control = document.createElement("input");
    control.autocomplete = "off";
    control.placeholder = parameter.example;
    if (parameter.name === "project") {
      control.setAttribute("list", `projects-${endpoint.stream}`);
      control.dataset.stream = endpoint.stream;
    } else if (parameter.name === "function_id") {
      control.setAttribute("list", "functions");
    }
  }
  control.id = id;
  control.name = parameter.name;
  const note = Object.assign(document.createElement("span"), { className: "field-note", textContent: parameter.meaning });
  const error = Object.assign(document.createElement("span"), { className: "field-error" });
  error.setAttribute("role", "alert");
  field.append(label, control, note, error);
  return field;
}

/** The endpoint picker and every parameter field, from the module's endpoint descriptions. */
async function buildForm() {
  endpoints = await ask({ type: "endpoints" });
  $("#endpoint").replaceChildren(...endpoints.map((e) => new Option(e.name, e.name)));
  const lists = ["projects-edge_logs", "projects-function_edge_logs", "functions"].map((id) => Object.assign(document.createElement("datalist"), { id }));
  $("#parameters").replaceChildren(...lists, ...endpoints.flatMap((e) => e.parameters.map((p) => parameterField(e, p))));
  showFieldsFor($("#endpoint").value);
}

function updateNowText() {
  $("#now-text").textContent = $("#real-clock").checked
    ? "the real clock: windows are counted back from this moment"
    : newestMs === null
      ? "the newest entry's time, so old downloads still show data"
      : `the newest entry: ${new Date(newestMs).toISOString()}`;
}

function clearErrors() {
  for (const field of document.querySelectorAll(".field")) {
    field.classList.remove("invalid");
    const slot = field.querySelector(".field-error");
    if (slot) slot.textContent = "";
  }
  $("#form-error").hidden = true;
}

/** Puts an error next to the control of the parameter it names, in plain words. */
function showError(error) {
  // The module names the parameter an error is about.
  const field = error.parameter && activeFields().find((f) => f.dataset.param === error.parameter);
  const plain = error.problem ?? error.message;
  if (field) {
    field.classList.add("invalid");
    field.querySelector(".field-error").textContent = plain;
    field.querySelector("input, select")?.focus();
  } else {
    $("#form-error").hidden = false;
    $("#form-error").textContent = error.message;
  }
}

$("#endpoint").addEventListener("change", (e) => showFieldsFor(e.target.value));
$("#real-clock").addEventListener("change", updateNowText);

$("#query-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  clearErrors();
  const endpoint = $("#endpoint").value;
  const params = {};
  for (const field of activeFields()) {
    const control = field.querySelector("input, select");
    if (control.value !== "") params[field.dataset.param] = control.value;
  }
  const nowMs = $("#real-clock").checked ? Date.now() : newestMs ?? Date.now();
  $("#run").disabled = true;
  try {
    const { rows, warning, tookMs } = await ask({ type: "query", endpoint, params, nowMs });
    showResult(endpoint, rows, tookMs);
    // The module's note on a call that is valid but likely not what was meant (an empty range, one past the retention).
    $("#result-warning").hidden = !warning;
    $("#result-warning").textContent = warning ? `Note: ${warning}.` : "";
  } catch (error) {
    $("#answer").hidden = true; // a stale result next to an error would mislead
    showError(error);
  } finally {
    $("#run").disabled = false;
  }
});

// ---- results -------------------------------------------------------------------

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

/** A cell as people read it; `decimals`: the places every number of its column shows. */
function displayValue(column, value, decimals = 0) {
  if (value === null || value === undefined) return "–";
  if (column === "timestamp" && typeof value === "number") return new Date(value / 1000).toISOString().replace(".000Z", "Z");
  // Bucket times some endpoints give as text are UTC, as the others' are.
  if (column === "timestamp" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(value)) return `${value}Z`;
  if (typeof value === "number") return value.toLocaleString(undefined, { minimumFractionDigits: decimals, maximumFractionDigits: Math.max(decimals, 0) });
  if (typeof value === "object") return JSON.stringify(value);
  return value;
}

function showResult(endpoint, rows, tookMs) {
  lastRows = rows;
  $("#answer").hidden = false;
  $("#result-meta").textContent = `${endpoint}: ${rows.length} row${rows.length === 1 ? "" : "s"} in ${tookMs.toFixed(1)} ms`;
  drawChart(endpoint, rows);
  if (endpoint === "logs.all") {
    showLogs(rows);
    $("#table").replaceChildren();
  } else {
    $("#logs").replaceChildren();
    showTable(rows);
  }
}

function showTable(rows) {
  const table = $("#table");
  table.replaceChildren();
  if (rows.length === 0) {
    table.innerHTML = "<caption>No rows: nothing matched in this window.</caption>";
    return;
  }
  const columns = Object.keys(rows[0]);
  // A column with any fraction shows two places in every row, so its numbers line up.
  const decimals = Object.fromEntries(columns.map((c) => [c, rows.some((r) => typeof r[c] === "number" && !Number.isInteger(r[c])) ? 2 : 0]));
  let sortColumn = null;
  let ascending = true;
  const render = () => {
    const sorted = sortColumn === null ? rows : [...rows].sort((a, b) => {
      const x = a[sortColumn] ?? -Infinity;
      const y = b[sortColumn] ?? -Infinity;
      return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
    });
    const head = `<thead><tr>${columns.map((c) => `<th scope="col" tabindex="0" data-column="${c}"${c === sortColumn ? ` aria-sort="${ascending ? "ascending" : "descending"}"` : ""}>${c.replaceAll("_", " ")}</th>`).join("")}</tr></thead>`;
    const body = sorted.map((r) => `<tr>${columns.map((c) => `<td>${escape(displayValue(c, r[c], decimals[c]))}</td>`).join("")}</tr>`).join("");
    table.innerHTML = `${head}<tbody>${body}</tbody>`;
  };
  const sortBy = (column) => {
    if (!column) return;
    ascending = column === sortColumn ? !ascending : true;
    sortColumn = column;
    render();
    table.querySelector(`th[data-column="${column}"]`)?.focus();
  };
  table.onclick = (e) => sortBy(e.target.closest("th")?.dataset.column);
  table.onkeydown = (e) => {
    if (e.key !== "Enter" && e.key !== " ") return;
    e.preventDefault();
    sortBy(e.target.closest("th")?.dataset.column);
  };
  render();
}

/** Characters of an entry's message shown in its one-line summary. */
const SUMMARY_CHARS = 300;
/** Characters of a long string shown in the metadata tree before "show all". */
const SHOWN_CHARS = 2000;

/** `text`, cut to `limit` characters with an ellipsis. */
function clipped(text, limit) {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/**
 * `text` in a span of class `kind`: past `SHOWN_CHARS`, its start and a
 * button that shows it all (`longStrings` keeps it).
 */
function shown(text, kind, longStrings) {
  if (text.length <= SHOWN_CHARS) return `<span class="${kind}">${escape(text)}</span>`;
  longStrings.push(text);
  const more = (text.length - SHOWN_CHARS).toLocaleString("en-US");
  return `<span class="${kind}">${escape(text.slice(0, SHOWN_CHARS))}…</span> <button type="button" class="show-all" data-long="${longStrings.length - 1}">show all (${more} more characters)</button>`;
}

/**
 * The metadata as a tree of nested lists; objects and arrays fold. A string
 * longer than `SHOWN_CHARS` shows its start (`shown`): one entry of a log
 * can be megabytes.
 */
function tree(value, longStrings) {
  if (value === null || typeof value !== "object") {
    const kind = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
    return shown(JSON.stringify(value), kind, longStrings);
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const items = entries.map(([k, v]) => {
    const nested = v !== null && typeof v === "object";
    const label = `<span class="key">${escape(k)}</span>: `;
    return nested ? `<li><details open><summary>${label}${Array.isArray(v) ? `[${v.length}]` : "{…}"}</summary>${tree(v, longStrings)}</details></li>` : `<li>${label}${tree(v, longStrings)}</li>`;
  });
  return `<ul class="tree">${items.join("")}</ul>`;
}

/**
 * The entries as a list of one-line summaries. An entry's id and metadata
 * are drawn when it is first opened, so a list of large entries opens at once.
 */
function showLogs(rows) {
  const list = $("#logs");
  if (rows.length === 0) {
    list.innerHTML = "<p>No entries in this window.</p>";
    return;
  }
  list.innerHTML = rows
    .map((r, i) => `<details data-row="${i}"><summary>${escape(displayValue("timestamp", r.timestamp))} · ${escape(clipped(r.event_message ?? "", SUMMARY_CHARS))}</summary></details>`)
    .join("");
  const longStrings = [];
  for (const item of list.children) {
    item.addEventListener("toggle", () => {
      if (!item.open || item.dataset.drawn) return;
      item.dataset.drawn = "true";
      const r = rows[Number(item.dataset.row)];
      const message = r.event_message ?? "";
      const fullMessage = message.length > SUMMARY_CHARS ? `<p class="message">${shown(message, "str", longStrings)}</p>` : "";
      item.insertAdjacentHTML("beforeend", `${fullMessage}<p class="hint">id ${escape(r.id)}</p>${tree(r.metadata, longStrings)}`);
    });
  }
  list.onclick = (e) => {
    const button = e.target.closest("button.show-all");
    if (!button) return;
    button.previousElementSibling.textContent = longStrings[Number(button.dataset.long)];
    button.remove();
  };
}

const SERIES = {
  "functions.invocation-stats": [
    ["count", "#3b6fe0", "y"], ["error_count", "#c0392b", "y"], ["p95_execution_time", "#e67e22", "ms"], ["p99_execution_time", "#8e44ad", "ms"],
  ],
  "usage.api-counts": [
    ["total_rest_requests", "#3b6fe0", "y"], ["total_storage_requests", "#16a085", "y"], ["total_auth_requests", "#e67e22", "y"], ["total_realtime_requests", "#8e44ad", "y"],
  ],
};

/**
 * Endpoints leave out the buckets in which nothing happened. Charted as they
 * are, a line would run straight across such a gap, so each missing bucket
 * (the smallest step between rows is the bucket) gets its series' empty value:
 * 0 for counts, a gap (null) for times.
 */
function withEmptyBuckets(x, columns) {
  let step = Infinity;
  for (let i = 1; i < x.length; i++) if (x[i] > x[i - 1]) step = Math.min(step, x[i] - x[i - 1]);
  const span = x.length > 1 ? (x[x.length - 1] - x[0]) / step : 0;
  if (!Number.isFinite(span) || span > 10_000) return [x, ...columns.map(([values]) => values)];
  const filledX = [];
  const filled = columns.map(() => []);
  for (let i = 0; i < x.length; i++) {
    for (let t = filledX.length ? filledX[filledX.length - 1] + step : x[i]; t < x[i] - step / 2; t += step) {
      filledX.push(t);
      columns.forEach(([, empty], c) => filled[c].push(empty));
    }
    filledX.push(x[i]);
    columns.forEach(([values], c) => filled[c].push(values[i]));
  }
  return [filledX, ...filled];
}

function drawChart(endpoint, rows) {
  chart?.destroy();
  chart = null;
  $("#chart").replaceChildren();
  const series = SERIES[endpoint];
  if (!series || rows.length === 0) return;
  const seconds = rows.map((r) => (typeof r.timestamp === "number" ? r.timestamp / 1e6 : Date.parse(`${r.timestamp}Z`) / 1000));
  const data = withEmptyBuckets(seconds, series.map(([field, , scale]) => [rows.map((r) => r[field]), scale === "y" ? 0 : null]));
  const hasMs = series.some(([, , scale]) => scale === "ms");
  // The chart's box is not laid out while empty: it takes its section's width.
  const room = $("#answer").clientWidth - 24;
  const options = {
    width: Math.max(240, Math.min(1040, room > 0 ? room : 1040)),
    height: 280,
    scales: { x: { time: true } },
    series: [{}, ...series.map(([label, stroke, scale]) => ({ label, stroke, scale, width: 2, points: { show: rows.length < 60 } }))],
    axes: [{}, { scale: "y", label: "count" }, ...(hasMs ? [{ scale: "ms", side: 1, label: "ms", grid: { show: false } }] : [])],
  };
  chart = new uPlot(options, data, $("#chart"));
}

$("#copy").addEventListener("click", async () => {
  const text = JSON.stringify({ result: lastRows }, null, 2);
  try {
    await navigator.clipboard.writeText(text);
    $("#copy").textContent = "Copied";
  } catch {
    // Clipboard refused (permissions): select the JSON in a prompt instead.
    window.prompt("Copy the result:", text);
  }
  setTimeout(() => ($("#copy").textContent = "Copy as JSON"), 1500);
});

await buildForm();
if ("serviceWorker" in navigator && location.protocol.startsWith("http")) {
  navigator.serviceWorker.register("./sw.js").catch(() => {});
}
window.logEndpointsPage = { ready: true };
