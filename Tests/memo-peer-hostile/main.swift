import Foundation
import MemoCore
import MemoCrypto
import MemoNode
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoTransport
import MemoVault

#if canImport(Glibc)
  import Glibc
#endif

// A misbehaving device for the lab tests (issue 13), built with the tests and never
// installed: not product code, and nothing in memo-peer can reach it.
//
//   memo-peer-hostile ask HOST PORT CASE [ARGUMENT...]
//       connects to a running `serve` as the device of MEMO_PEER_HOME (a trusted device),
//       sends CASE and prints one JSON line: {"case": CASE, "answer": "refused REASON" |
//       "acknowledged" | "closed" | "pong", "held_deletes": N, "quarantined": N,
//       "applied": N, "arguments": [...] (when it took any)}
//       CASE: pending, knowledge-range, knowledge-wide, knowledge-poison, revision-max,
//       own-origin, future-clock, mass-delete, ping (no arguments); and issue 38's, each
//       with exactly its arguments:
//         purge-other NOTEBOOK MEMO   a purge signed by this device naming NOTEBOOK (one it
//                                     is a member of) and MEMO (a memo in another one)
//         squat REPLICA               a legacy binding of another device's REPLICA to this
//                                     device's key, and a record under it
//         flood-edits MEMO COUNT      COUNT signed edits of MEMO (at most 1,000), one a batch
//         flood-new COUNT             COUNT new memos (at most 10,000), 10 a batch, in one sync
//   memo-peer-hostile flood HOST PORT IDLE SLOW SECONDS
//       a stranger: keeps IDLE TCP connections open that never speak TLS and SLOW TLS
//       handshakes that trickle a ClientHello a byte at a time, reconnecting whatever the
//       server closes, for SECONDS (at most 300); prints {"opened": N, "closed_by_server": N}

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("memo-peer-hostile: \(message)\n".utf8))
  exit(2)
}

func printJSON(_ object: [String: Any]) {
  guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
  print(String(decoding: data, as: UTF8.self))
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3, let port = UInt16(arguments[2]) else {
  fail("usage: ask HOST PORT CASE [ARGUMENT...] | flood HOST PORT IDLE SLOW SECONDS")
}
let host = arguments[1]

switch arguments[0] {
case "ask":
  guard arguments.count >= 4 else { fail("ask needs a CASE") }
  do {
    try HostileCase.validate(arguments[3], Array(arguments.dropFirst(4)))
  } catch {
    fail("\(error)")
  }
  do {
    let paths = try NodePaths.resolve(environment: ProcessInfo.processInfo.environment)
    let identity = try NodeIdentity.load(paths: paths)
    let client = TLSClient(context: try TLSContext(identity: identity.device, role: .client))
    let channel = try client.connect(host: host, port: port, deadline: .after(seconds: 10), accepts: { _ in true })
    _ = try PeerSession.greet(channel, identity: identity, before: .after(seconds: 10))
    // The notebook this device shares with the daemon, when it shares one (the cases that
    // send batches need it: version 2 seals them per notebook).
    let store = try MemoStore.open(paths: paths, use: .background)
    // It signs as itself: a member of the notebook in the daemon's log, so what it sends
    // passes the authorship checks and reaches the checks under test.
    let author = TestAuthor(key: try Ed25519.SigningKey(seed: try NodeSecrets(paths: paths).identitySeed()))
    let notebook = channel.peer.flatMap {
      try? ScriptedSyncPeer.Notebook.shared(by: store, with: $0, author: author)
    }
    printJSON(
      try HostileCase.run(arguments[3], arguments: Array(arguments.dropFirst(4)), over: channel, notebook: notebook))
    channel.close()
  } catch {
    fail("\(error)")
  }
case "flood":
  guard arguments.count == 6, let idle = Int(arguments[3]), let slow = Int(arguments[4]),
    let seconds = Double(arguments[5]), (0...1000).contains(idle), (0...1000).contains(slow),
    (1...300).contains(seconds)
  else { fail("flood needs IDLE SLOW SECONDS (at most 1000, 1000, 300)") }
  printJSON(Flood(host: host, port: port).run(idle: idle, slow: slow, seconds: seconds))
default:
  fail("unknown mode \(arguments[0])")
}
