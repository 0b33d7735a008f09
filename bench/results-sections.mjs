// The sections of bench/results.md that a script other than bench.mjs
// measures: each script replaces its own section (found by its heading), and
// bench.mjs keeps them all when it rewrites the rest of the file.
import { existsSync, readFileSync, writeFileSync } from "node:fs";

export const EDGE_INGEST = "## Edge ingest (issue 22)";
export const ONE_PROJECT = "## One project's busy day (issue 23)";
const OWN_SECTIONS = [EDGE_INGEST, ONE_PROJECT];

/** The section of `text` under `heading`, up to the next heading of its level. */
function sectionOf(text, heading) {
  const start = text.indexOf(`${heading}\n`);
  if (start < 0) return undefined;
  const end = text.indexOf("\n## ", start + heading.length);
  return text.slice(start, end < 0 ? text.length : end + 1).trimEnd();
}

/** `file` with its section under `lines[0]` (a heading) replaced by `lines`, or added at its end. */
export function writeSection(file, lines) {
  const [heading] = lines;
  const current = existsSync(file) ? readFileSync(file, "utf8") : "";
  const old = sectionOf(current, heading);
  const section = lines.join("\n").trimEnd();
  const next = old === undefined ? `${current.trimEnd()}\n\n${section}\n` : current.replace(old, () => section);
  writeFileSync(file, next.endsWith("\n") ? next : `${next}\n`);
}

/** The other scripts' sections of `file`, in the order they are listed, for bench.mjs to keep. */
export function keptSections(file) {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, "utf8");
  return OWN_SECTIONS.map((heading) => sectionOf(text, heading)).filter((s) => s !== undefined);
}
