// A supervisor's signing key on this device, and the signed commands made with it (docs/floor.md).
//
// The key is an Ed25519 key pair made by WebCrypto with extractable = false: the private key can sign but can
// never be read out, not by this script and not by the server. It is kept in this browser's IndexedDB (a
// CryptoKey survives there as an object, still not extractable), one per dashboard user. Its public key is
// shown for enrolment at the tables (`tablectl sign --add-to ... --public-key HEX`).
//
// canonicalJSON is the JS twin of the Python signer (controller/mqtt/auth.py canonical(): json.dumps(d,
// sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()); tests/test_floor_web_keys.py checks
// them byte for byte in Debian's chromium. Only what both sides write the same way is accepted: integers
// within 2^53, strings without lone surrogates.
"use strict";

const KEY_DB = "floor-signing-keys";
const KEY_STORE = "keys";

function compareCodePoints(a, b) {  // Python orders str keys by code point; JS's default sort by UTF-16 unit
  const x = Array.from(a), y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function canonicalJSON(value) {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error("canonical JSON: only integers within 2^53");
    return String(value);
  }
  if (typeof value === "string") {
    if (!value.isWellFormed()) throw new Error("canonical JSON: a string with a lone surrogate");
    return JSON.stringify(value);  // escapes exactly what Python's json escapes with ensure_ascii=False
  }
  if (Array.isArray(value)) return "[" + value.map(canonicalJSON).join(",") + "]";
  if (typeof value === "object") {
    const keys = Object.keys(value).sort(compareCodePoints);
    return "{" + keys.map((k) => canonicalJSON(k) + ":" + canonicalJSON(value[k])).join(",") + "}";
  }
  throw new Error("canonical JSON: cannot write " + typeof value);
}

function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

function keyDatabase() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(KEY_DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(KEY_STORE, {keyPath: "user"});
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function keyStore(mode, action) {
  const db = await keyDatabase();
  try {
    return await new Promise((resolve, reject) => {
      const req = action(db.transaction(KEY_STORE, mode).objectStore(KEY_STORE));
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
  } finally {
    db.close();
  }
}

// {user, publicKey (hex), privateKey (CryptoKey), created} or undefined
function loadSigningKey(user) {
  return keyStore("readonly", (s) => s.get(user));
}

async function makeSigningKey(user) {
  const pair = await crypto.subtle.generateKey({name: "Ed25519"}, false, ["sign", "verify"]);
  const publicKey = hex(await crypto.subtle.exportKey("raw", pair.publicKey));
  const entry = {user: user, publicKey: publicKey, privateKey: pair.privateKey, created: new Date().toISOString()};
  await keyStore("readwrite", (s) => s.put(entry));
  return entry;
}

// A signed supervisor command (docs/mqtt.md "Signed commands"): the same fields and canonical bytes as
// controller/mqtt/signed_command.py build_command. site and table name the one table it is for (signed: another
// table refuses it). ts is this device's clock: the table accepts +-30 s.
async function signCommand(key, role, action, args, site, table) {
  const random = (n) => hex(crypto.getRandomValues(new Uint8Array(n)));
  const cmd = {request_id: "web-" + random(6), user: key.user, role: role, action: action, args: args,
               site: site, table: table, ts: Math.floor(Date.now() / 1000), nonce: random(16)};
  const signed = {action: cmd.action, args: cmd.args, nonce: cmd.nonce, role: cmd.role, site: cmd.site,
                  table: cmd.table, ts: cmd.ts, user: cmd.user};
  const bytes = new TextEncoder().encode(canonicalJSON(signed));
  cmd.sig = hex(await crypto.subtle.sign({name: "Ed25519"}, key.privateKey, bytes));
  return cmd;
}
