// Test-only: decode ROS 2 CDR messages read from a bag as the Foxglove app decodes them,
// for the tests that hold a bag's messages to several independent decoders.
//
// @foxglove/rosmsg parses each channel's `ros2msg` schema text and
// @foxglove/rosmsg2-serialization's MessageReader decodes the CDR: Foxglove's own code,
// nothing here but the plumbing. The Python side reads the MCAP's raw records (schema text,
// message bytes) and pipes them in.
//
// In (stdin, one JSON object a line): {"schema": "<.msg text>", "data": "<base64 CDR>"}
// Out (stdout, one a line): the decoded message; byte arrays as {"base64": "..."}, 64-bit
// integers as strings, other typed arrays as lists. {"error": "..."} for what failed.
"use strict";
const readline = require("readline");
const { parse } = require("@foxglove/rosmsg");
const { MessageReader } = require("@foxglove/rosmsg2-serialization");

const readers = new Map(); // schema text -> MessageReader

function plain(_k, v) {
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Uint8Array || v instanceof Int8Array) {
    return { base64: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") };
  }
  if (ArrayBuffer.isView(v)) return Array.from(v);
  return v;
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  try {
    const { schema, data } = JSON.parse(line);
    let reader = readers.get(schema);
    if (reader === undefined) {
      reader = new MessageReader(parse(schema, { ros2: true }));
      readers.set(schema, reader);
    }
    const msg = reader.readMessage(Buffer.from(data, "base64"));
    process.stdout.write(JSON.stringify(msg, plain) + "\n");
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: String(err) }) + "\n");
  }
});
