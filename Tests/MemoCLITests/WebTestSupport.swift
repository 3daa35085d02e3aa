import Foundation
import MemoCore
import MemoNode
import MemoStore
import MemoSystem
import MemoTestSupport
import XCTest

/// A node prepared for the web page's tests: memos full of canaries (one private), a
/// conflict between two versions of a memo, and an inbox entry from a trusted device.
struct WebFixtures {
  let canaries = Canaries()
  /// More unique strings, for the texts the browser test types and the prepared memos.
  let extra: [String: String]
  let publicID: String
  let privateID: String
  let conflictMemo: String
  let bidiID: String
  /// The notebook the other device shared with this one (an invitation).
  let invitedID: String
  static let invitedNotebook = "Recipes"
  /// "Invoice ‮fdp.exe" with U+202E: unisolated, it reads reversed and drags the text after it along.
  static let bidiTitle = "Invoice \u{202E}fdp.exe"

  init(_ cli: CLIProcess) throws {
    let run = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
    var extra: [String: String] = [:]
    for name in [
      "newtitle", "newbody", "editedbody", "inboxtitle", "inboxbody", "conflicta", "conflictb", "unsaved",
      "unsavedidle", "bidibody",
    ] {
      extra[name] = "cnryweb\(name)\(run)"
    }
    self.extra = extra
    let c = canaries
    publicID = try cli.new("Milk and eggs \(c[.publicBody])\n", ["--title", c[.publicTitle], "--tag", c[.publicTag]])
    privateID = try cli.new(
      "The door code is \(c[.privateBody])\n", ["--title", c[.privateTitle], "--tag", c[.privateTag], "--private"])
    conflictMemo = try cli.new("Shopping list\n")
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": cli.home + "/node"])
    let other = try CLIProcess()
    let mine = try MemoStore.open(paths: paths)
    let theirs = try MemoStore.open(paths: try NodePaths.resolve(environment: ["MEMO_PEER_HOME": other.home + "/node"]))
    try Self.pull(from: mine, into: theirs)
    let id = try XCTUnwrap(MemoID(conflictMemo))
    try theirs.update(id, MemoChange(body: "Shopping list\n\(extra["conflictb"]!)\n"), now: 5)
    try mine.update(id, MemoChange(body: "Shopping list\n\(extra["conflicta"]!)\n"), now: 5)
    try Self.pull(from: theirs, into: mine)
    // A household's memos besides the canaries, so the screenshots look like a real list.
    _ = try cli.new("Call Sam about the leaking tap under the sink.\n", ["--title", "Plumber", "--tag", "house"])
    _ = try cli.new("Network: HomeNet-Guest\n", ["--title", "Wi-Fi for guests", "--tag", "home", "--private"])
    _ = try cli.new("Milk, eggs, bread, coffee\n", ["--title", "Groceries", "--tag", "home"])
    // A title another device wrote, with a right-to-left override in it (as if synced: the
    // command line would take it too, but this is how such a title usually arrives).
    bidiID =
      try mine.create(
        MemoDraft(title: Self.bidiTitle, body: "Quarterly numbers \(extra["bidibody"]!)\n"), now: Self.now - 60_000
      ).id.rawValue
    // A notebook the other device shares with this one: an invitation until a person
    // accepts it (on the page's Devices view, in the browser test).
    let recipes = try theirs.createNotebook(named: Self.invitedNotebook, now: 6)
    try theirs.share(recipes.id, with: try mine.deviceID(), as: .member, now: 6)
    _ = try runSync(
      mine, as: try mine.deviceID(), with: SyncAnswerSide(paths: theirs.paths, device: try theirs.deviceID())
    )
    .report()
    invitedID = recipes.id.rawValue
    let sender = DeviceID(bytes: Array(repeating: 7, count: 32))!
    _ = try mine.receiveDelivery(
      id: Self.inboxEntry, from: sender,
      memo: .init(
        title: extra["inboxtitle"]!, body: extra["inboxbody"]!, tags: ["from-desk"], isPrivate: false,
        sent: Self.now - 3_600_000),
      size: 100, policy: .ask, limits: .init(), now: Self.now - 3_000_000)
  }

  static var now: Timestamp { Timestamp(Date().timeIntervalSince1970 * 1000) }

  /// The prepared inbox entry's id.
  static let inboxEntry = "6a1f3c2e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"

  /// Pulls everything `sink` lacks from `source`, as a sync does (without a network).
  static func pull(from source: MemoStore, into sink: MemoStore) throws { try pullForTest(from: source, into: sink) }

  /// Every canary and extra string, by name.
  var allCanaries: [String: String] {
    var all = extra
    for kind in Canaries.Kind.allCases { all[kind.rawValue] = canaries[kind] }
    return all
  }

  /// What the browser test needs to know (docs of Tests/browser/web_page_test.py).
  func json() throws -> Data {
    let c = canaries
    var values: [String: Any] = [
      "public_id": publicID, "public_title": c[.publicTitle], "public_body": c[.publicBody],
      "public_body_word": c[.publicBody], "public_tag": c[.publicTag], "private_title": c[.privateTitle],
      "private_body": c[.privateBody], "private_tag": c[.privateTag],
      "new_title": extra["newtitle"]!, "new_body": "Bring \(extra["newbody"]!) tomorrow",
      "edited_body": "Bring \(extra["editedbody"]!) on Friday", "edited_word": extra["editedbody"]!,
      "inbox_title": extra["inboxtitle"]!, "inbox_body": extra["inboxbody"]!,
      "conflict_body_a": extra["conflicta"]!, "conflict_body_b": extra["conflictb"]!,
      "unsaved": extra["unsaved"]!, "unsaved_idle": extra["unsavedidle"]!, "bidi_id": bidiID,
      "bidi_title": Self.bidiTitle, "bidi_body": extra["bidibody"]!, "invited_id": invitedID,
      "invited_name": Self.invitedNotebook,
    ]
    values["canaries"] = allCanaries.merging(["passphrase": c[.passphrase]]) { $1 }
    return try JSONSerialization.data(withJSONObject: values, options: [.sortedKeys])
  }
}

/// `memo-peer web` running in the background in a test's node, and curl to talk to it.
final class WebServerProcess {
  let cli: CLIProcess
  let process: Process
  let out: String
  let err: String
  /// The one-time link printed first.
  let link: String
  let port: UInt16
  let cookies: String

  init(_ cli: CLIProcess, arguments: [String] = ["--port", "0"], extraEnvironment: [String: String] = [:]) throws {
    self.cli = cli
    out = cli.home + "/web-\(UUID().uuidString).out"
    err = cli.home + "/web-\(UUID().uuidString).err"
    cookies = cli.home + "/cookies-\(UUID().uuidString)"
    _ = FileManager.default.createFile(atPath: out, contents: nil)
    _ = FileManager.default.createFile(atPath: err, contents: nil)
    process = Process()
    process.executableURL = URL(fileURLWithPath: CLIProcess.binary)
    process.arguments = ["--debug", "web"] + arguments
    process.environment = cli.environment.merging(extraEnvironment) { $1 }
    process.standardOutput = FileHandle(forWritingAtPath: out)
    process.standardError = FileHandle(forWritingAtPath: err)
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let (outPath, started) = (out, process)
    var printed: String?
    _ = AuditScenario.waitUntil(seconds: 20) {
      printed = (try? String(contentsOfFile: outPath, encoding: .utf8))?.split(separator: "\n").first.map(String.init)
      return printed != nil || !started.isRunning
    }
    guard let printed, let components = URLComponents(string: printed), let port = components.port else {
      started.terminate()
      started.waitUntilExit()
      throw WebTestError("memo-peer web printed no link: \((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
    }
    link = printed
    self.port = UInt16(port)
  }

  deinit { stop() }

  var base: String { "http://127.0.0.1:\(port)" }
  var origin: String { base }
  var stderr: String { (try? String(contentsOfFile: err, encoding: .utf8)) ?? "" }
  var stdout: String { (try? String(contentsOfFile: out, encoding: .utf8)) ?? "" }

  /// SIGTERM, then the exit status.
  @discardableResult
  func stop() -> Int32 {
    if process.isRunning {
      kill(process.processIdentifier, SIGTERM)
      process.waitUntilExit()
    }
    return process.terminationStatus
  }

  /// `Cookie: NAME=VALUE` of the jar's session (for requests that set their own Host, which
  /// curl would otherwise match cookies against).
  var cookieHeader: String {
    let jar = (try? String(contentsOfFile: cookies, encoding: .utf8)) ?? ""
    let fields = jar.split(separator: "\n").last { $0.contains("memo_peer_session") }?.split(separator: "\t") ?? []
    return fields.count >= 7 ? "Cookie: \(fields[5])=\(fields[6])" : "Cookie: none=none"
  }

  /// Signs curl's cookie jar in with the first link, or `link`.
  func signIn(with link: String? = nil) throws {
    let response = try curl(["-c", cookies, link ?? self.link])
    guard response.status == 303 else { throw WebTestError("sign-in answered \(response.status)") }
  }

  /// The one-time links printed so far (the first, then one after each sign-in).
  var links: [String] { stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("http://") } }

  /// Sends `bytes` on a connection of its own to 127.0.0.1 and reads until the server closes
  /// it, or 5 s pass: what came back, and whether the server closed the connection.
  func raw(_ bytes: [UInt8]) -> (text: String, closed: Bool) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return ("", false) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else { return ("", false) }
    var sent = 0
    while sent < bytes.count {
      let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
      if count <= 0 { break }
      sent += count
    }
    var received: [UInt8] = []
    let deadline = Date().addingTimeInterval(5)
    var closed = false
    while Date() < deadline {
      var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, 100) > 0 else { continue }
      var chunk = [UInt8](repeating: 0, count: 65536)
      let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count <= 0 {
        closed = true
        break
      }
      received += chunk[0..<count]
    }
    return (String(decoding: received, as: UTF8.self), closed)
  }

  struct Response {
    let status: Int
    let headers: [String: String]
    let body: Data
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers[name.lowercased()] }
  }

  /// Runs curl with `arguments` (URL included) and the headers and body it got.
  func curl(_ arguments: [String], stdin: [UInt8]? = nil) throws -> Response {
    let headersFile = cli.home + "/headers-\(UUID().uuidString)"
    let bodyFile = cli.home + "/body-\(UUID().uuidString)"
    defer {
      unlink(headersFile)
      unlink(bodyFile)
    }
    let result = try cli.run(
      executable: "/usr/bin/curl",
      ["-s", "-m", "20", "-D", headersFile, "-o", bodyFile, "-w", "%{http_code}"] + arguments, stdin: stdin)
    var headers: [String: String] = [:]
    for line in ((try? String(contentsOfFile: headersFile, encoding: .utf8)) ?? "").split(separator: "\r\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return Response(
      status: Int(result.stdout) ?? 0, headers: headers,
      body: FileManager.default.contents(atPath: bodyFile) ?? Data())
  }

  /// A signed-in request: `method path` with an optional JSON body, from the page's origin.
  func api(_ method: String, _ path: String, json body: Any? = nil) throws -> Response {
    var arguments = ["-b", cookies, "-X", method, "-H", "Origin: \(origin)"]
    if let body {
      arguments += [
        "-H", "Content-Type: application/json", "--data-binary",
        String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self),
      ]
    }
    return try curl(arguments + [base + path])
  }
}

struct WebTestError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
