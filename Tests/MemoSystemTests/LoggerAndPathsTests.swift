import MemoCore
import MemoSystem
import XCTest

/// `@unchecked Sendable`: every access to `storage` holds `lock`.
final class CapturingSink: LogSink, @unchecked Sendable {
  private let lock = NSLock()
  private var storage: [String] = []
  var lines: [String] { lock.withLock { storage } }
  func write(level: LogLevel, subsystem: String, message: String) {
    lock.withLock { storage.append("\(level.name) \(subsystem): \(message)") }
  }
}

final class LoggerTests: XCTestCase {
  func testInterpolationsArePrivateUnlessMarkedPublic() {
    let sink = CapturingSink()
    let logger = Logger(subsystem: "t", minimumLevel: .debug, sink: sink)
    let title = "Diary: my secret"
    logger.info("saved \(title) in \(42, privacy: .public) ms")
    XCTAssertEqual(sink.lines, ["info t: saved <private> in 42 ms"])
  }

  func testErrorsAreLoggedByTypeAndCodeOnly() {
    struct LeakyError: Error, CustomStringConvertible { var description: String { "body was: SECRET" } }
    let sink = CapturingSink()
    let logger = Logger(subsystem: "t", minimumLevel: .debug, sink: sink)
    logger.error(LeakyError(), while: "saving")
    logger.error(MemoPeerError(.integrity, "memo x failed"), while: "opening")
    XCTAssertEqual(sink.lines.count, 2)
    XCTAssertFalse(sink.lines[0].contains("SECRET"))
    XCTAssertTrue(sink.lines[0].contains("LeakyError"))
    XCTAssertEqual(sink.lines[1], "error t: opening: MemoPeerError(integrity)")
  }

  func testDisabledAndLevelFiltering() {
    let sink = CapturingSink()
    Logger(subsystem: "t", minimumLevel: nil, sink: sink).error(MemoPeerError(.io, "x"), while: "x")
    Logger(subsystem: "t", minimumLevel: .warning, sink: sink).info("dropped")
    XCTAssertEqual(sink.lines, [])
    XCTAssertFalse(Logger.disabled.isEnabled(.error))
  }
}

final class NodePathsTests: XCTestCase {
  func testMemoPeerHomeHoldsEverything() throws {
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "/srv/node-a/", "HOME": "/root"])
    XCTAssertEqual(paths.databasePath, "/srv/node-a/data/memos.sqlite")
    XCTAssertEqual(paths.deviceKeyPath, "/srv/node-a/keys/device.key")
    XCTAssertNotEqual(paths.dataDirectory, paths.keyDirectory)
  }

  func testXDGDirectoriesKeepKeysOutOfTheDataDirectory() throws {
    let paths = try NodePaths.resolve(environment: ["HOME": "/home/ana", "XDG_DATA_HOME": "/data"])
    XCTAssertEqual(paths.dataDirectory, "/data/memo-peer")
    XCTAssertEqual(paths.keyDirectory, "/home/ana/.local/state/memo-peer/keys")
    XCTAssertFalse(paths.keyDirectory.hasPrefix(paths.dataDirectory))
  }

  func testRelativeOrMissingHomesAreUsageErrors() {
    XCTAssertThrowsError(try NodePaths.resolve(environment: ["MEMO_PEER_HOME": "relative"]))
    XCTAssertThrowsError(try NodePaths.resolve(environment: [:])) {
      XCTAssertEqual(($0 as? MemoPeerError)?.exitStatus, 2)
    }
  }
}
