import MemoSystem

/// The port `serve` last listened on (`state/listen-port`: the number in ASCII and a
/// newline). A daemon started without `--port` tries it first, so the devices that remember
/// where they reached this one (a network that filters multicast DNS) find it there again
/// after a restart or a reboot.
enum ListenPortFile {
  static func path(_ paths: NodePaths) -> String { paths.stateDirectory + "/listen-port" }

  /// The port recorded, or nil: none, unreadable, or not a port from 1 to 65535.
  static func read(_ paths: NodePaths) -> UInt16? {
    guard let bytes = try? PrivateFiles.read(path(paths), limit: 16) else { return nil }
    let text = String(decoding: bytes.last == 0x0A ? bytes.dropLast() : bytes[...], as: UTF8.self)
    guard let port = UInt16(text), port != 0 else { return nil }
    return port
  }

  /// Records `port`; a failure only costs the next start its old port.
  static func write(_ port: UInt16, _ paths: NodePaths) {
    guard read(paths) != port else { return }
    try? PrivateFiles.writeAtomically(Array("\(port)\n".utf8), to: path(paths))
  }
}
