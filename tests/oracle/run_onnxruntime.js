// Runs an ONNX model with onnxruntime-node (CPU) on token ids from a .npy file and writes the
// first output as a float32 .npy: an oracle independent of our importer and executor. A float16
// output (the fp16 form's logits; onnxruntime-node hands it over as its uint16 bit patterns) is
// widened to float32 exactly.
//   node run_onnxruntime.js MODEL.onnx IDS.npy OUT.npy [NAME=VALUES.npy ...]
// IDS.npy feeds the first input; NAME=VALUES.npy feeds the input NAME (attention_mask,
// position_ids: int64 or int32 .npy, fed as int64; a KV cache, past_key_values.*: float32 .npy,
// fed as float32, an empty one of past length 0 included).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const data = buf.subarray(start + headerLen);
  if (descr === '<i8') return { shape, data: new BigInt64Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)) };
  if (descr === '<i4') return { shape, data: BigInt64Array.from(new Int32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)), BigInt) };
  if (descr === '<f4') return { shape, float: true, data: new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)) };
  throw new Error(`${path}: unsupported dtype ${descr}`);
}

function writeNpyFloat32(path, shape, values) {
  let dict = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const unpadded = 10 + dict.length + 1;
  dict += ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(dict.length, 8);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(dict, 'latin1'), Buffer.from(values.buffer, values.byteOffset, values.byteLength)]));
}

// IEEE 754 binary16 bit patterns -> float32 values (exact: every half is a float).
function halfBitsToFloat32(bits) {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i], sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    if (exp === 0) out[i] = sign * frac * 2 ** -24;
    else if (exp === 31) out[i] = frac ? NaN : sign * Infinity;
    else out[i] = sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  return out;
}

async function main() {
  const [model, idsPath, outPath, ...extra] = process.argv.slice(2);
  const ids = readNpy(idsPath);
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled' });
  const feeds = { [session.inputNames[0]]: new ort.Tensor('int64', ids.data, ids.shape) };
  for (const arg of extra) {
    const eq = arg.indexOf('=');
    if (eq < 1) throw new Error(`${arg}: expected NAME=VALUES.npy`);
    const name = arg.slice(0, eq), values = readNpy(arg.slice(eq + 1));
    if (!session.inputNames.includes(name)) throw new Error(`${model}: no input named ${name}`);
    feeds[name] = new ort.Tensor(values.float ? 'float32' : 'int64', values.data, values.shape);
  }
  const result = await session.run(feeds);
  const out = result[session.outputNames[0]];
  let values = out.data;
  if (out.type === 'float16') values = halfBitsToFloat32(values);
  else if (out.type !== 'float32') throw new Error(`${model}: output ${session.outputNames[0]} is ${out.type}, not float32 or float16`);
  writeNpyFloat32(outPath, out.dims, values);
}

main().catch(e => { console.error(`run_onnxruntime: ${e.message}`); process.exit(1); });
