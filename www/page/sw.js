// Offline support: the page's own files are cached on first load and served
// from the cache afterwards. Nothing else is ever fetched.
const CACHE = "log-endpoints-page-v4";
const FILES = [
  "./", "./index.html", "./app.js", "./ingest-worker.js", "./seal-worker.js", "./style.css",
  "./vendor/uPlot.esm.js", "./vendor/uPlot.min.css",
  "./pkg/web.js", "./pkg/seal-worker-node-only.js", "./pkg/log_endpoints.js", "./pkg/log_endpoints_bg.wasm",
];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k)))).then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  if (event.request.method !== "GET" || new URL(event.request.url).origin !== location.origin) return;
  // Network first (so a rebuilt page is picked up), the cache when offline.
  event.respondWith(
    fetch(event.request)
      .then((response) => {
        const copy = response.clone();
        caches.open(CACHE).then((cache) => cache.put(event.request, copy));
        return response;
      })
      .catch(() => caches.match(event.request, { ignoreSearch: true })),
  );
});
