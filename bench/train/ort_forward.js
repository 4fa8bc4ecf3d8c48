// Times onnxruntime-node's CPU forward of an ONNX export on token ids from a .npy file:
//   node ort_forward.js MODEL.onnx IDS.npy RUNS THREADS
// Prints one line per run, "run i: S s" (wall time of session.run), after one untimed warm-up run.
// Session: CPU provider, all graph optimisations (onnxruntime's default), intra-op threads THREADS.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', '..', 'tests', 'oracle', 'node_modules', 'onnxruntime-node'));

function readIds(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const headerLen = buf[6] === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = buf[6] === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  if (!/'descr':\s*'<i8'/.test(header)) throw new Error(`${file}: ids must be int64`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const data = buf.subarray(start + headerLen);
  return { shape, data: new BigInt64Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)) };
}

async function main() {
  const [model, idsPath, runs, threads] = process.argv.slice(2);
  const ids = readIds(idsPath);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
  });
  const feeds = { [session.inputNames[0]]: new ort.Tensor('int64', ids.data, ids.shape) };
  await session.run(feeds); // warm-up
  for (let i = 0; i < Number(runs); ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    const t1 = process.hrtime.bigint();
    console.log(`run ${i}: ${Number(t1 - t0) / 1e9} s`);
  }
}

main().catch(e => { console.error(`ort_forward: ${e.message}`); process.exit(1); });
