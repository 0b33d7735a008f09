// The wasm build and the native build give identical answers on random logs: the
// native example prints random batches, queries and its answers; the package
// (the wasm build, through its JS API) must ingest and answer exactly the same.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { LogEndpoints } from "log-endpoints";

const CASES = 60;

test(`wasm and native agree on ${CASES} random logs and query sets`, () => {
  const cases = JSON.parse(
    execFileSync("cargo", ["run", "--quiet", "-p", "log-endpoints-tools", "--bin", "random_cases", "--", String(CASES), "20261122"], {
      maxBuffer: 1 << 30,
      encoding: "utf8",
    }),
  );
  assert.equal(cases.length, CASES);
  let compared = 0;
  let errors = 0;
  for (const [n, c] of cases.entries()) {
    const svc = new LogEndpoints({ apiKeys: ["k"] });
    for (const b of c.batches) {
      const report = svc.ingest(b.stream, b.ndjson);
      assert.equal(report.accepted, b.accepted, `case ${n} ${b.stream}: accepted`);
      assert.deepEqual(report.rejected.map((r) => [r.index, r.reason]), b.rejected, `case ${n} ${b.stream}: rejections`);
    }
    for (const q of c.queries) {
      svc.setNow(q.nowUs / 1000);
      let got;
      try {
        got = { body: svc.queryRaw(q.endpoint, new URLSearchParams(q.params), "k").body };
      } catch (e) {
        got = { status: e.status, code: e.code, message: e.message };
        errors++;
      }
      assert.deepEqual(got, q.answer, `case ${n}: ${q.endpoint} ${JSON.stringify(q.params)}`);
      compared++;
    }
    svc.free();
  }
  assert.ok(compared > 300, `only ${compared} queries compared`);
  assert.ok(errors > 0 && errors < compared, "both answers and errors are compared");
});
