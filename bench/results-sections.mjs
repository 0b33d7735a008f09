// The sections of bench/results.md that a script other than bench.mjs
// measures: each script replaces its own section (found by its heading), and
// bench.mjs keeps them all when it rewrites the rest of the file. And the
// commit every script says it measured.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** The commit measured (`git describe --always --dirty`), or "an unknown commit" outside a git checkout. */
export function measuredCommit() {
  try {
    const root = path.dirname(new URL(import.meta.url).pathname);
    return execFileSync("git", ["describe", "--always", "--dirty"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "an unknown commit";
  }
}

export const EDGE_INGEST = "## Edge ingest (issue 22)";
export const ONE_PROJECT = "## One project's busy day (issue 23)";
const OWN_SECTIONS = [EDGE_INGEST, ONE_PROJECT];

/** Where the section of `text` under `heading` starts and ends (up to the next heading of its level). */
function sectionOf(text, heading) {
  // At a line's start: the "\n" put before the text makes its first line one too.
  const start = `\n${text}`.indexOf(`\n${heading}\n`);
  if (start < 0) return undefined;
  const next = text.indexOf("\n## ", start + heading.length);
  return { start, end: next < 0 ? text.length : next + 1 };
}

/** `file` with its section under `lines[0]` (a heading) replaced by `lines`, or added at its end. */
export function writeSection(file, lines) {
  const current = existsSync(file) ? readFileSync(file, "utf8") : "";
  const section = `${lines.join("\n").trimEnd()}\n`;
  const at = sectionOf(current, lines[0]);
  const next = at
    ? `${current.slice(0, at.start)}${section}${at.end < current.length ? `\n${current.slice(at.end)}` : ""}`
    : `${current.trim() ? `${current.trimEnd()}\n\n` : ""}${section}`;
  writeFileSync(file, next);
}

/** The other scripts' sections of `file`, in the order they are listed, for bench.mjs to keep. */
export function keptSections(file) {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8");
  return OWN_SECTIONS.map((heading) => sectionOf(text, heading))
    .filter((at) => at !== undefined)
    .map(({ start, end }) => text.slice(start, end).trimEnd());
}
