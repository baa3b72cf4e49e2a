// Test-only Foxglove WebSocket client, driven by test/test_foxglove.py over stdin/stdout
// (one JSON object a line each way).
//
// Everything protocol- and message-shaped is Foxglove's own code: FoxgloveClient from
// @foxglove/ws-protocol connects, lists the advertised channels, subscribes and parses
// what arrives; @foxglove/rosmsg parses each channel's `ros2msg` schema text and
// @foxglove/rosmsg2-serialization's MessageReader decodes its CDR, as the Foxglove app
// does for a ROS 2 channel. The one thing written here is the playback control request
// and the playback state (binary opcodes 3 and 5 of the foxglove.sdk.v1 subprotocol),
// which ws-protocol 0.8.0 predates: their layout is the SDK's
// (rust/foxglove/src/protocol/common/{client/playback_control_request,server/playback_state}.rs).
//
// In:  {"op": "subscribe", "topics": [...]}
//      {"op": "playback", "command": "play"|"pause", "speed": 1.0, "seek": ns|null, "id": "..."}
//      {"op": "close"}
// Out: {"ev": "open"} {"ev": "serverInfo", ...} {"ev": "advertise", "channel": {...}}
//      {"ev": "message", "topic", "timestamp", "msg"}  (uint8 arrays > 64 bytes become
//      {"sha256", "length"}) {"ev": "time", "t"} {"ev": "state", ...} {"ev": "error", "text"}
//      {"ev": "rejected", "text"}  (what FoxgloveClient itself refused: the playback state)
"use strict";
const crypto = require("crypto");
const readline = require("readline");
const WebSocket = require("ws");
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");

const SUBPROTOCOL = "foxglove.sdk.v1"; // what foxglove-sdk's server accepts
const PLAYBACK_CONTROL_REQUEST = 3;
const PLAYBACK_STATE = 5;

function out(obj) {
  process.stdout.write(
    JSON.stringify(obj, (_k, v) => {
      if (typeof v === "bigint") return v.toString();
      if (v instanceof Uint8Array || v instanceof Int8Array) {
        if (v.length <= 64) return Array.from(v);
        const h = crypto.createHash("sha256");
        h.update(Buffer.from(v.buffer, v.byteOffset, v.byteLength));
        return { sha256: h.digest("hex"), length: v.length };
      }
      if (ArrayBuffer.isView(v)) return Array.from(v);
      return v;
    }) + "\n",
  );
}

const ws = new WebSocket(process.argv[2], [SUBPROTOCOL]);
const client = new FoxgloveClient({ ws });
const channels = new Map(); // channel id -> channel
const readers = new Map(); // channel id -> MessageReader
const subscriptions = new Map(); // subscription id -> channel

client.on("open", () => out({ ev: "open" }));
client.on("close", () => {
  out({ ev: "close" });
  process.exit(0);
});
client.on("error", (err) => {
  // 0.8.0 reports the playback state opcode as unknown and drops that message, as it does
  // in Lichtblick: reported as "rejected" for the tests to see, and decoded below instead
  if (/opcode in binary message: 5\b/.test(String(err))) out({ ev: "rejected", text: String(err) });
  else out({ ev: "error", text: String(err) });
});
client.on("serverInfo", (info) => out({ ev: "serverInfo", info }));
client.on("advertise", (chans) => {
  for (const ch of chans) {
    channels.set(ch.id, ch);
    out({ ev: "advertise", channel: ch });
  }
});
client.on("time", (t) => out({ ev: "time", t: t.timestamp }));
client.on("message", (m) => {
  const ch = subscriptions.get(m.subscriptionId);
  let reader = readers.get(ch.id);
  if (reader === undefined) {
    reader = new MessageReader(parse(ch.schema, { ros2: true }));
    readers.set(ch.id, reader);
  }
  let msg;
  try {
    msg = reader.readMessage(m.data);
  } catch (err) {
    out({ ev: "error", text: `decoding ${ch.topic}: ${err}` });
    return;
  }
  out({ ev: "message", topic: ch.topic, timestamp: m.timestamp, msg });
});

ws.on("message", (data, isBinary) => {
  if (!isBinary) return;
  // FoxgloveClient sets binaryType "arraybuffer"
  const buf = data instanceof ArrayBuffer ? Buffer.from(data) : Buffer.concat([].concat(data));
  if (buf.readUInt8(0) !== PLAYBACK_STATE) return;
  const idLen = buf.readUInt32LE(1 + 1 + 8 + 4 + 1);
  out({
    ev: "state",
    status: ["playing", "paused", "buffering", "ended"][buf.readUInt8(1)],
    current_time: buf.readBigUInt64LE(2),
    speed: buf.readFloatLE(10),
    did_seek: buf.readUInt8(14) !== 0,
    request_id: buf.subarray(19, 19 + idLen).toString("utf8"),
  });
});

function playbackControl({ command, speed, seek, id }) {
  const idBytes = Buffer.from(id, "utf8");
  const buf = Buffer.alloc(1 + 1 + 4 + 1 + 8 + 4 + idBytes.length);
  let o = buf.writeUInt8(PLAYBACK_CONTROL_REQUEST, 0);
  o = buf.writeUInt8(command === "pause" ? 1 : 0, o);
  o = buf.writeFloatLE(speed, o);
  o = buf.writeUInt8(seek == null ? 0 : 1, o);
  o = buf.writeBigUInt64LE(BigInt(seek == null ? 0 : seek), o); // seek: a string (ns exceed 2^53)
  o = buf.writeUInt32LE(idBytes.length, o);
  idBytes.copy(buf, o);
  ws.send(buf);
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const cmd = JSON.parse(line);
  if (cmd.op === "subscribe") {
    for (const topic of cmd.topics) {
      for (const ch of channels.values()) {
        if (ch.topic === topic) subscriptions.set(client.subscribe(ch.id), ch);
      }
    }
  } else if (cmd.op === "playback") {
    playbackControl(cmd);
  } else if (cmd.op === "close") {
    client.close();
  }
});
