// SealWorker where the package starts no threads of its own (browsers, Deno,
// Workers): the name exists, so that importing it is not an error, and using
// it says what to do instead.
export class SealWorker {
  constructor() {
    throw new Error(
      "SealWorker is the Node entry's (node:worker_threads); elsewhere, hand takeSealJobs() to LogEndpoints.sealBlocks in a worker of your own and give its answer to installSealed (the package's page does it with a second Web Worker)",
    );
  }
}
