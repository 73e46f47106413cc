// Writes tests/data/approval.msg: an Outlook message with the parts a reader gets wrong —
// a quoted reply under the answer, To and Cc recipients (the ACL), and an attachment.
// Outlook's format is a Compound File (MS-CFB) of MAPI properties (MS-OXMSG); SheetJS's
// `cfb` writes the container. Regenerate:
//   cd /tmp && npm install cfb@1.2.2 && NODE_PATH=/tmp/node_modules node <repo>/tests/data/make_msg.js
const CFB = require("cfb");
const path = require("path");

const STRING = 0x001f, INT32 = 0x0003, TIME = 0x0040, BINARY = 0x0102;

function hex(n) { return n.toString(16).toUpperCase().padStart(4, "0"); }

// props: [id, type, value]; returns the properties stream and the substg streams
function storage(props, headerBytes) {
  const segments = [Buffer.alloc(headerBytes)];
  const streams = {};
  for (const [id, type, value] of props) {
    const seg = Buffer.alloc(16);
    seg.writeUInt32LE(((id << 16) | type) >>> 0, 0);
    seg.writeUInt32LE(0x6, 4); // readable, writable
    if (type === STRING || type === BINARY) {
      const data = type === STRING ? Buffer.from(value, "utf16le") : value;
      seg.writeUInt32LE(type === STRING ? data.length + 2 : data.length, 8); // + the terminator
      streams[`__substg1.0_${hex(id)}${hex(type)}`] = data;
    } else if (type === INT32) {
      seg.writeUInt32LE(value, 8);
    } else if (type === TIME) {
      const ft = (BigInt(Date.parse(value)) + 11644473600000n) * 10000n;
      seg.writeBigUInt64LE(ft, 8);
    }
    segments.push(seg);
  }
  streams["__properties_version1.0"] = Buffer.concat(segments);
  return streams;
}

const root = storage([
  [0x001a, STRING, "IPM.Note"],
  [0x0037, STRING, "Re: Moorhen terms"],
  [0x1000, STRING,
    "Approved: we sign the Moorhen terms at 48 million euros on Friday.\r\n\r\n" +
    "Dana\r\n\r\n" +
    "On Mon, 2 Nov 2026 at 09:12, Alice Chen <alice@fernhill.example> wrote:\r\n" +
    "> Can we sign at 45 million?\r\n> Alice\r\n"],
  [0x0c1a, STRING, "Dana Reyes"],
  [0x0c1f, STRING, "dana@fernhill.example"],
  [0x5d01, STRING, "dana@fernhill.example"],
  [0x0039, TIME, "2026-11-03T10:15:00Z"],
  [0x007d, STRING, "Message-ID: <terms-2@fernhill.example>\r\n" +
    "In-Reply-To: <terms-1@fernhill.example>\r\nReferences: <terms-1@fernhill.example>\r\n"],
], 32);
const header = root["__properties_version1.0"];
header.writeUInt32LE(2, 8);   // next recipient id
header.writeUInt32LE(1, 12);  // next attachment id
header.writeUInt32LE(2, 16);  // recipients
header.writeUInt32LE(1, 20);  // attachments

const recipients = [
  ["Alice Chen", "alice@fernhill.example", 1],  // To
  ["Carol", "carol@fernhill.example", 2],       // Cc
].map(([name, address, kind]) => storage([
  [0x3001, STRING, name], [0x3003, STRING, address], [0x39fe, STRING, address],
  [0x0c15, INT32, kind],
], 8));
const attachment = storage([
  [0x3707, STRING, "signing-checklist.txt"],
  [0x3704, STRING, "SIGNIN~1.TXT"],
  [0x370e, STRING, "text/plain"],
  [0x3705, INT32, 1],
  [0x3701, BINARY, Buffer.from("Signing checklist: the Moorhen board consent form goes to Carol.\n")],
], 8);

const cfb = CFB.utils.cfb_new();
const add = (prefix, streams) => {
  for (const [name, data] of Object.entries(streams)) CFB.utils.cfb_add(cfb, `${prefix}/${name}`, data);
};
add("", root);
recipients.forEach((r, i) => add(`/__recip_version1.0_#${i.toString(16).padStart(8, "0")}`, r));
add("/__attach_version1.0_#00000000", attachment);
add("/__nameid_version1.0", {  // no named properties: an empty GUID, entry and string table
  "__substg1.0_00020102": Buffer.alloc(16), "__substg1.0_00030102": Buffer.alloc(8),
  "__substg1.0_00040102": Buffer.alloc(8),
});
CFB.utils.cfb_del(cfb, "/\u0001Sh33tJ5");
require("fs").writeFileSync(path.join(__dirname, "approval.msg"), CFB.write(cfb, { type: "buffer" }));
