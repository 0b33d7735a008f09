// HTTP carrying shared by the objects: requests handed to the core as it
// reads them, its answers sent as they are, bodies read within a limit.
import { bodyDecoding, bodyTooLarge, corsHeaders, isServiceError, unavailable, unreadableBody } from "./engine.js";

const CORS_HEADERS = corsHeaders();

/** The answer to a CORS preflight. */
export function preflight() {
  return new Response(null, { status: 204, headers: CORS_HEADERS });
}

/** A response with CORS headers added. */
export function withCors(response) {
  const out = new Response(response.body, response);
  for (const [k, v] of CORS_HEADERS) out.headers.set(k, v);
  return out;
}

/** The core's `{ status, headers, body }` as a Response. */
export function respond({ status, headers, body }) {
  const out = new Headers(headers);
  out.set("Content-Type", "application/json; charset=utf-8");
  return new Response(body, { status, headers: out });
}

/** An error as its answer: the core's own, or, for anything else, `unavailable`. */
export function errorResponse(error, context) {
  const e = isServiceError(error) ? error : unavailable(`${context} (${error?.message ?? error})`);
  return respond(e);
}

/** What the core reads of a request (`HttpRequest`): the key headers, the query string, an ingest's source and idempotency headers, a POST body. */
export function requestParts(request, url, body) {
  return {
    method: request.method,
    path: url.pathname,
    query: url.search,
    apiKey: request.headers.get("X-API-KEY"),
    authorization: request.headers.get("Authorization"),
    source: request.headers.get("X-Source"),
    collection: request.headers.get("X-Collection"),
    contentType: request.headers.get("Content-Type"),
    idempotencyKey: request.headers.get("Idempotency-Key"),
    body,
  };
}

/**
 * The body as bytes, decompressed as `Content-Encoding` says, refusing more
 * than `limit` bytes (413). The core decides the encodings it takes and the errors.
 */
export async function readBody(request, limit) {
  const declared = Number(request.headers.get("Content-Length") ?? NaN);
  if (declared > limit) throw bodyTooLarge(limit, declared);
  if (!request.body) return new Uint8Array(0);
  const decoding = bodyDecoding(request.headers.get("Content-Encoding"));
  // A plain body of a declared length within the limit is read whole, at once.
  if (!decoding && Number.isFinite(declared)) return new Uint8Array(await request.arrayBuffer());
  const stream = decoding ? request.body.pipeThrough(new DecompressionStream(decoding)) : request.body;
  let total = 0;
  const counted = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        total += chunk.byteLength;
        if (total > limit) throw bodyTooLarge(limit);
        controller.enqueue(chunk);
      },
    }),
  );
  try {
    return new Uint8Array(await new Response(counted).arrayBuffer());
  } catch (e) {
    if (isServiceError(e)) throw e;
    throw unreadableBody(e.message);
  }
}
