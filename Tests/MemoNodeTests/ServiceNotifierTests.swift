import Foundation
import MemoCore
import MemoStore
import MemoSystem
import MemoTestSupport
import MemoVault
import XCTest

@testable import MemoNode

/// The engine's calls to its `ServiceNotifier`, without a network: a node without consent
/// waits, which is a ready state; a locked node says so; a trust reload is bracketed.
final class ServiceNotifierTests: XCTestCase {
  func testEngineReportsWaitingLockedReloadAndStopping() async throws {
    let home = NSTemporaryDirectory() + "memo-peer-notifier-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: home) }
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": home])
    let notifier = RecordingServiceNotifier()
    let reload = ReloadRequest()
    let locked = LockedFlag()
    let engine = try ServeEngine(
      paths: paths, gate: try ConsentGate(paths: paths), identity: { try NodeIdentity.load(paths: paths) }, port: 0,
      interfaces: [], logger: .disabled, report: { _ in }, notifier: notifier, reloadRequest: reload,
      collaborators: ServeEngine.Collaborators(
        clock: { Timestamp(Date().timeIntervalSince1970 * 1000) }, keys: DeviceKeys(paths: paths),
        lockState: { locked.value ? .locked(unlockedSinceBoot: true) : .unprotected }))
    await engine.step()
    XCTAssertEqual(notifier.take(), [.status("waiting: local-network consent"), .ready])
    await engine.step()
    XCTAssertEqual(notifier.take(), [], "nothing changed, nothing said")
    locked.value = true
    await engine.step()
    XCTAssertEqual(notifier.take(), [.status("waiting: \(ServeEngine.waitingForUnlock)")], "said once")
    locked.value = false
    await engine.step()
    XCTAssertEqual(notifier.take(), [.status("waiting: local-network consent")])
    reload.set()
    await engine.step()
    XCTAssertEqual(notifier.take(), [.reloading, .ready], "ready once, then again only after a reload")
    let stop = StopFlag()
    stop.set()
    try await engine.run(until: stop)
    XCTAssertEqual(notifier.take(), [.stopping])
  }

  /// The first start writes the discovery key file: that is not a rotation. Only a key
  /// replaced while the daemon runs (a revocation) is followed, and said once.
  func testTheFirstStartIsNotARotationAndARotationIsFollowedOnce() async throws {
    let home = NSTemporaryDirectory() + "memo-peer-rotation-\(UUID().uuidString)"
    defer { try? FileManager.default.removeItem(atPath: home) }
    let paths = try NodePaths.resolve(environment: ["MEMO_PEER_HOME": home])
    let log = CapturingLog()
    let engine = try ServeEngine(
      paths: paths, gate: try ConsentGate(paths: paths), identity: { try NodeIdentity.load(paths: paths) }, port: 0,
      interfaces: [], logger: Logger(subsystem: "serve", minimumLevel: .debug, sink: log), report: { _ in },
      notifier: RecordingServiceNotifier(), reloadRequest: ReloadRequest(),
      collaborators: ServeEngine.Collaborators(
        clock: { Timestamp(Date().timeIntervalSince1970 * 1000) }, keys: DeviceKeys(paths: paths),
        lockState: { .unprotected }))
    let rotated = "discovery key rotated: advertising under the new one"
    await engine.step()
    await engine.step()
    XCTAssertFalse(log.lines.contains(rotated), "\(log.lines)")
    try NodeSecrets(paths: paths).rotateDiscoveryKey()
    await engine.step()
    await engine.step()
    XCTAssertEqual(log.lines.filter { $0 == rotated }.count, 1, "\(log.lines)")
  }

  func testStatusTextIsOneLine() {
    XCTAssertEqual(SystemdNotifier.oneLine("a\nb\u{7}c"), "a b c")
  }
}

/// Set by the test between steps, read by the engine during them. `@unchecked Sendable`:
/// every access to `locked` holds `lock`.
private final class LockedFlag: @unchecked Sendable {
  private let lock = NSLock()
  private var locked = false
  var value: Bool {
    get { lock.withLock { locked } }
    set { lock.withLock { locked = newValue } }
  }
}
