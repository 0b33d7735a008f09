// Every bad input of tests/bad_inputs.json through the wasm package's JS API: the
// answer the case expects, an Error with status and code, a refused batch that
// changed nothing; and docs/errors.md's table is what these answers are.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { cases, run, table, readmeSection } from "../../scripts/bad-inputs-table.mjs";

test(`each of the ${cases.length} bad inputs gets its documented answer through the JS API`, () => {
  for (const c of cases) {
    const got = run(c);
    const e = c.expect;
    if (e.status === 200) {
      assert.equal(got.status, 200, `${c.what}: ${got.error?.message}`);
      assert.equal(Boolean(got.warning), Boolean(e.warning), `${c.what}: warning ${got.warning}`);
      if (e.warning) assert.ok(got.warning.includes(e.warning), `${c.what}: ${got.warning}`);
    } else if (e.status) {
      assert.ok(got.error instanceof Error, `${c.what}: expected an Error, got ${JSON.stringify(got)}`);
      assert.equal(got.error.status, e.status, c.what);
      assert.equal(got.error.code, e.code, c.what);
      if (e.message) assert.ok(got.error.message.includes(e.message), `${c.what}: ${got.error.message}`);
      assert.ok(!/panicked|RuntimeError|wasm-function|at .*\.js:\d+/.test(got.error.message), `${c.what}: ${got.error.message}`);
      if (c.ingest) assert.equal(got.unchanged, true, `${c.what}: the refused batch changed the store`);
    } else {
      assert.equal(got.report.accepted, e.accepted, c.what);
      assert.equal(got.report.rejected[0].index, e.rejected[0], c.what);
      assert.ok(got.report.rejected[0].reason.includes(e.rejected[1]), `${c.what}: ${got.report.rejected[0].reason}`);
    }
  }
});

test("the table of bad inputs (docs/errors.md) is what the code answers", () => {
  const readme = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
  assert.equal(readmeSection(readme), table(), "docs/errors.md is out of step: run node scripts/bad-inputs-table.mjs --write");
});
