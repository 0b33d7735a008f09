// The load test's second process: autocannon against one base URL, cycling
// through the paths given (one per project), printing autocannon's result as
// JSON. Usage: node load-client.mjs '{"base", "paths", "key", "amount", "connections"}'
import autocannon from "autocannon";

const { base, paths, key, amount, connections } = JSON.parse(process.argv[2]);
const result = await autocannon({
  url: base,
  connections,
  amount,
  timeout: 30,
  requests: paths.map((path) => ({ method: "GET", path, headers: { "X-API-KEY": key } })),
});
process.stdout.write(JSON.stringify(result));
