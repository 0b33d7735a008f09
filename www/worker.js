// The edge worker (wrangler's `main`): the front and the two Durable Object
// classes, each in its own file under edge/. The rules they follow are the
// wasm module's (src/); these files carry requests and bytes between objects.
import { Front, handlers } from "./edge/front.js";

export { ShardObject } from "./edge/shard.js";
export { DirectoryObject } from "./edge/directory.js";

export default handlers(new Front());
