// The edge worker (wrangler's `main`): the front and the three Durable Object
// classes (ingest partitions, directory partitions, shards), each in its own
// file under edge/. The rules they follow are the
// wasm module's (src/); these files carry requests and bytes between objects.
import { Front, handlers } from "./edge/front.js";

export { IngestObject } from "./edge/ingest.js";
export { DirectoryObject } from "./edge/directory.js";
export { ShardObject } from "./edge/shard.js";

export default handlers(new Front());
