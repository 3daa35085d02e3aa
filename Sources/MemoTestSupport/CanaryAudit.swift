import Foundation
import MemoSystem

/// Unique strings planted in memos (and a passphrase) so that a test can search every place
/// memo-peer might leak them: outputs, logs, files, process arguments, network captures.
///
/// Each canary is random per run, so finding one can only mean memo-peer put it there.
public struct Canaries: Sendable {
  /// What a canary stands for.
  public enum Kind: String, Sendable, CaseIterable {
    /// Title, body and tag of a memo not marked private.
    case publicTitle, publicBody, publicTag
    /// Title, body and tag of a private memo.
    case privateTitle, privateBody, privateTag
    /// The node's passphrase, and an export archive's.
    case passphrase, archivePassphrase
  }

  public let values: [Kind: String]

  public init() {
    let run = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
    var values: [Kind: String] = [:]
    for kind in Kind.allCases {
      // Tags must be lowercase letters and digits; the rest keeps the same shape.
      values[kind] = "cnry\(kind.rawValue.lowercased())\(run)"
    }
    self.values = values
  }

  public subscript(kind: Kind) -> String { values[kind]! }

  /// The canaries found in `data`, except the ones `allowed` there.
  public func found(in data: Data, allowing allowed: Set<Kind> = []) -> [Kind] {
    Kind.allCases.filter { !allowed.contains($0) && data.range(of: Data(values[$0]!.utf8)) != nil }
  }

  public func found(in text: String, allowing allowed: Set<Kind> = []) -> [Kind] {
    found(in: Data(text.utf8), allowing: allowed)
  }
}

/// Where canaries may end up on this machine, read raw.
public enum LeakScanner {
  /// Every regular file under `root` (not following symbolic links, skipping files larger
  /// than `limit`), with the canaries each holds. With `modifiedSince` (seconds since 1970),
  /// only the files written since then are read: a leak by the commands audited is a write
  /// during the audit, and a shared /tmp holds gigabytes written before it (a build tree),
  /// whose reading made the audit the slowest test of `make check`.
  public static func scanFiles(
    under root: String, for canaries: Canaries, limit: Int = 64 << 20, modifiedSince: Int? = nil
  ) -> [(path: String, kinds: [Canaries.Kind])] {
    var findings: [(String, [Canaries.Kind])] = []
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    while let name = enumerator.nextObject() as? String {
      let path = root + "/" + name
      var info = stat()
      guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) <= limit else { continue }
      // Both stamps: a file whose mtime was set back still has its ctime moved by the write.
      if let modifiedSince, max(info.st_mtim.tv_sec, info.st_ctim.tv_sec) < modifiedSince { continue }
      guard let data = FileManager.default.contents(atPath: path) else { continue }
      let kinds = canaries.found(in: data)
      if !kinds.isEmpty { findings.append((path, kinds)) }
    }
    return findings
  }

  /// `/proc/PID/cmdline` and `/proc/PID/environ` of every process, with the canaries found.
  public static func scanProcesses(for canaries: Canaries) -> [(path: String, kinds: [Canaries.Kind])] {
    var findings: [(String, [Canaries.Kind])] = []
    let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
    for pid in pids {
      for file in ["cmdline", "environ"] {
        let path = "/proc/\(pid)/\(file)"
        guard let data = readAll(path) else { continue }
        let kinds = canaries.found(in: data)
        if !kinds.isEmpty { findings.append((path, kinds)) }
      }
    }
    return findings
  }

  /// Reads a file to its end with read(2): /proc files report a size of 0, so readers that
  /// trust the size see nothing.
  public static func readAll(_ path: String) -> Data? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }  // gone or not ours: nothing to audit
    defer { close(fd) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while data.count < 16 << 20 {
      // A failed read (a process that ended meanwhile) ends the file: what was read is audited.
      let count =
        (try? System.call("read") { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }) ?? 0
      if count <= 0 { break }
      data.append(contentsOf: buffer[0..<count])
    }
    return data
  }

  /// How many processes' /proc entries could be read (to show the scan saw something).
  public static func readableProcessCount() -> Int {
    let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
    return pids.filter { !(readAll("/proc/\($0)/environ") ?? Data()).isEmpty }.count
  }
}
