// The worker the end-to-end tests run: the product's front and objects, with
// test hooks added by subclassing (they never ship in www/). Each hook is a
// request header, passed from the front to the shards it asks:
// - X-Test-Now-Ms: the clock of this request (front and shards);
// - X-Test-Trap: the shard's engine traps while answering a query;
// - X-Test-Fail-Storage: a shard's storage write throws (the shard named, or *);
// - X-Test-Corrupt-Snapshot: on a shard's maintenance path, flips one byte of its stored snapshot.
// The cron acts as of its scheduled time, whatever FIXED_NOW_MS says.
import { Front, handlers } from "../../www/edge/front.js";
import { ShardObject as ProductShard } from "../../www/edge/shard.js";

export { DirectoryObject } from "../../www/edge/directory.js";

const HOOKS = ["X-Test-Now-Ms", "X-Test-Trap", "X-Test-Fail-Storage", "X-Test-Corrupt-Snapshot"];

function requestClock(request) {
  const ms = request.headers.get("X-Test-Now-Ms");
  return ms === null ? null : Number(ms);
}

class TestFront extends Front {
  requestNowMs(request) {
    return requestClock(request);
  }

  shardHeaders(request) {
    const headers = {};
    for (const name of HOOKS) {
      const value = request.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    return headers;
  }

  scheduledNowMs(controller) {
    return controller.scheduledTime;
  }
}

export class ShardObject extends ProductShard {
  requestNowMs(request) {
    return requestClock(request);
  }

  beforeQuery(request) {
    if (request.headers.get("X-Test-Trap") === "1") throw new WebAssembly.RuntimeError("unreachable (simulated by X-Test-Trap)");
  }

  store(stream, body, newestUs, request) {
    const fail = request.headers.get("X-Test-Fail-Storage");
    if (fail !== null && (fail === "*" || fail === request.headers.get("X-Shard"))) {
      throw new Error("storage write failed (simulated by X-Test-Fail-Storage)");
    }
    return super.store(stream, body, newestUs, request);
  }

  async maintain(request) {
    if (request.headers.get("X-Test-Corrupt-Snapshot") !== "1") return super.maintain(request);
    // Flips one byte of the stored snapshot, as a damaged disk would.
    const first = this.sql.exec("SELECT body FROM snapshot_parts WHERE part = 0").toArray()[0];
    if (first) {
      const body = new Uint8Array(first.body);
      body[body.length >> 1] ^= 0x40;
      this.sql.exec("UPDATE snapshot_parts SET body = ? WHERE part = 0", body.buffer);
    }
    return Response.json({ corrupted: Boolean(first) });
  }
}

export default handlers(new TestFront());
