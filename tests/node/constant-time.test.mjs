// Keys are compared in constant time: under callgrind (which counts instructions,
// so the result is exact and repeatable) a wrong key costs the same whether it
// differs from a configured key at its first byte, its middle or its last.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";

const KEY = "second-secret-key-000000000000002"; // one of the example's three keys
const TIMES = "5000";

function instructions(presented) {
  const run = spawnSync(
    "valgrind",
    ["--tool=callgrind", "--callgrind-out-file=/dev/null", "target/release/key_compare", presented, TIMES],
    { encoding: "utf8" },
  );
  assert.equal(run.status, 0, run.stderr);
  const collected = /Collected : (\d+)/.exec(run.stderr);
  assert.ok(collected, `no instruction count in: ${run.stderr}`);
  return { count: Number(collected[1]), accepted: Number(run.stdout.trim()) };
}

test("a wrong key costs the same instructions wherever it differs", () => {
  execFileSync("cargo", ["build", "--quiet", "--release", "-p", "log-endpoints-tools", "--bin", "key_compare"], { stdio: "inherit" });
  const flip = (i) => KEY.slice(0, i) + (KEY[i] === "X" ? "Y" : "X") + KEY.slice(i + 1);
  const right = instructions(KEY);
  assert.equal(right.accepted, Number(TIMES), "the right key is accepted");
  const wrong = [0, 1, 16, KEY.length - 2, KEY.length - 1].map((i) => instructions(flip(i)));
  for (const w of wrong) assert.equal(w.accepted, 0, "a wrong key is refused");
  const counts = new Set(wrong.map((w) => w.count));
  assert.equal(counts.size, 1, `instruction counts differ with the position of the wrong byte: ${[...counts]}`);
  // Sanity check that the measurement can see a difference at all: a key of another length costs differently.
  assert.notEqual(instructions(KEY + "0").count, wrong[0].count);
});
