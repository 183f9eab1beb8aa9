#!/usr/bin/env node
// Ask a Kafka broker for ApiVersions and Metadata over the wire protocol, with no dependencies.
// Prints {"brokers":[{nodeId,host,port}],"clusterId","controllerId","metadataVersion"} and exits 0
// when the broker lists at least one broker (itself); exits 1 otherwise.
//
// usage: node deploy/local/kafka-probe.mjs [host:port] [--timeout ms]
import net from 'node:net';
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';

const API_METADATA = 3;
const API_VERSIONS = 18;

function parseArgs(argv) {
  let address = '127.0.0.1:9092';
  let timeoutMs = 5000;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--timeout') timeoutMs = Number(argv[++i]);
    else address = argv[i];
  }
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)), timeoutMs };
}

function request(apiKey, apiVersion, correlationId, body) {
  const clientId = Buffer.from('rag-kafka-probe');
  const header = Buffer.alloc(10);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  const payload = Buffer.concat([header, clientId, body]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length, 0);
  return Buffer.concat([size, payload]);
}

class Reader {
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }
  int8() {
    return this.buf.readInt8((this.pos += 1) - 1);
  }
  int16() {
    return this.buf.readInt16BE((this.pos += 2) - 2);
  }
  int32() {
    return this.buf.readInt32BE((this.pos += 4) - 4);
  }
  string() {
    const len = this.int16();
    if (len < 0) return null;
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len;
    return s;
  }
}

/** One connection; send() resolves with the response body (after the correlation id). */
function connect(host, port, timeoutMs) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    let pending = null;
    let chunks = Buffer.alloc(0);
    socket.on('data', (data) => {
      chunks = Buffer.concat([chunks, data]);
      if (chunks.length >= 4 && chunks.length >= 4 + chunks.readInt32BE(0) && pending) {
        const frame = chunks.subarray(4, 4 + chunks.readInt32BE(0));
        chunks = chunks.subarray(4 + frame.length);
        const p = pending;
        pending = null;
        p.resolve(frame);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      if (pending) pending.reject(err);
      else reject(err);
    });
    socket.on('close', () => pending?.reject(new Error('connection closed by the broker')));
    socket.on('connect', () =>
      resolve({
        send(buf) {
          return new Promise((res, rej) => {
            pending = { resolve: res, reject: rej };
            socket.write(buf);
          });
        },
        close() {
          clearTimeout(timer);
          socket.destroy();
        },
      }),
    );
  });
}

export async function probeKafka(host, port, timeoutMs = 5000) {
  const conn = await connect(host, port, timeoutMs);
  try {
    // ApiVersions v0: every broker version answers it.
    const av = new Reader(await conn.send(request(API_VERSIONS, 0, 1, Buffer.alloc(0))));
    av.int32(); // correlation id
    const avError = av.int16();
    if (avError !== 0) throw new Error(`ApiVersions error code ${avError}`);
    let range = null;
    for (let n = av.int32(); n > 0; n--) {
      const key = av.int16();
      const min = av.int16();
      const max = av.int16();
      if (key === API_METADATA) range = { min, max };
    }
    if (!range) throw new Error('broker does not offer the Metadata API');
    // Non-flexible Metadata versions 1..8 are the ones encoded here.
    const version = Math.min(8, range.max);
    if (version < range.min || version < 1) throw new Error(`no usable Metadata version in ${range.min}..${range.max}`);
    const parts = [Buffer.from([0, 0, 0, 0])]; // topics: empty array = no topic details
    if (version >= 4) parts.push(Buffer.from([0])); // allow_auto_topic_creation=false
    if (version >= 8) parts.push(Buffer.from([0, 0])); // include_*_authorized_operations=false
    const md = new Reader(await conn.send(request(API_METADATA, version, 2, Buffer.concat(parts))));
    md.int32(); // correlation id
    if (version >= 3) md.int32(); // throttle_time_ms
    const brokers = [];
    for (let n = md.int32(); n > 0; n--) {
      const nodeId = md.int32();
      const host = md.string();
      const port = md.int32();
      md.string(); // rack
      brokers.push({ nodeId, host, port });
    }
    const clusterId = version >= 2 ? md.string() : null;
    const controllerId = md.int32();
    return { brokers, clusterId, controllerId, metadataVersion: version };
  } finally {
    conn.close();
  }
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(resolvePath(process.argv[1])).href;
if (isMain) {
  const { host, port, timeoutMs } = parseArgs(process.argv.slice(2));
  probeKafka(host, port, timeoutMs).then(
    (result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`);
      process.exit(result.brokers.length > 0 && result.controllerId >= 0 ? 0 : 1);
    },
    (err) => {
      process.stderr.write(`kafka-probe: ${err.message}\n`);
      process.exit(1);
    },
  );
}
