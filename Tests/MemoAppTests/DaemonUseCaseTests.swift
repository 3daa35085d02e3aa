import Foundation
import MemoApp
import MemoCore
import MemoNode
import Synchronization
import XCTest

/// The daemon as `serve` builds and stops it, without consent (so it touches no network).
final class DaemonUseCaseTests: XCTestCase {
  func testAnInterfaceThatIsNotThereIsAUsageErrorNamingThoseThatAre() throws {
    let node = try AppFixture()
    XCTAssertThrowsError(
      try node.app().daemon.prepare(
        DaemonOptions(interfaces: ["no-such-if0"]), controls: DaemonControls(), report: { _ in },
        notifier: SilentServiceNotifier())
    ) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .usage)
      XCTAssertTrue(($0 as? MemoPeerError)?.hint?.contains("lo") ?? false)
    }
  }

  func testWithoutConsentItWaitsSaysSoAndStopsWhenAsked() throws {
    let node = try AppFixture()
    let lines = Mutex<[String]>([])
    let saidWaiting = DispatchSemaphore(value: 0)
    let controls = DaemonControls()
    let daemon = try node.app().daemon.prepare(
      DaemonOptions(), controls: controls,
      report: { line in
        lines.withLock { $0.append(line) }
        if line.hasPrefix("waiting (local-network consent") { saidWaiting.signal() }
      },
      notifier: SilentServiceNotifier())
    let finished = DispatchSemaphore(value: 0)
    let failure = Mutex<(any Error)?>(nil)
    Thread.detachNewThread {
      do { try daemon.run() } catch { failure.withLock { $0 = error } }
      finished.signal()
    }
    // The timeout bounds a failing run, never a passing one.
    let waiting = saidWaiting.wait(timeout: .now() + 5) == .success
    XCTAssertTrue(waiting, "it says what it waits for: \(lines.withLock { $0 })")
    controls.stop()
    XCTAssertEqual(finished.wait(timeout: .now() + 10), .success, "stop() ends run()")
    XCTAssertNil(failure.withLock { $0 })
    XCTAssertEqual(ServeStatus.read(node.paths)?.state, .stopped)
  }
}
