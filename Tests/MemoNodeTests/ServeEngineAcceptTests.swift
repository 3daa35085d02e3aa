import Foundation
import MemoCore
import MemoStore
import MemoTestSupport
import XCTest

@testable import MemoNode

/// Accepting an invitation is an event (issue 39), with two real `ServeEngine`s joined by an
/// `InMemoryNetwork` (no socket, TLS or mDNS) and their live link up: a person accepts a
/// notebook that already holds memos, with the store as the CLI and the page open it, and
/// the accepting engine wakes (its folder watch) and syncs, so the memos arrive with
/// nobody asking for a sync. An accept stores no revision: an engine that looked only at
/// the change feed slept through it.
final class ServeEngineAcceptTests: XCTestCase {
  let clock: @Sendable () -> Timestamp = { Timestamp(Date().timeIntervalSince1970 * 1000) }

  func testAnAcceptedNotebookArrivesOverTheLiveLinkWithoutASync() async throws {
    let (a, b) = try trustingPair()
    for node in [a, b] {
      let gate = try node.gate
      for scope in [ConsentScope.localNetwork, .backgroundSync] {
        try gate.record(.granted, scope: scope, method: .command, note: nil, now: 1)
      }
    }
    let network = InMemoryNetwork()
    let writes = try NodeWrites([a, b])
    let stops = [StopFlag(), StopFlag()]
    var runs: [Task<Void, Never>] = []
    for (node, stop) in zip([a, b], stops) {
      let engine = try engine(for: node, network: network)
      runs.append(Task { try? await engine.run(until: stop) })
    }
    defer { for stop in stops { stop.set() } }
    let linked = try await writes.until(seconds: 30) {
      [a, b].allSatisfy { (ServeStatus.read($0.paths)?.livePeers?.count ?? 0) == 1 }
    }
    XCTAssertTrue(linked, "both engines have their live link up")

    // a shares a new notebook with b, then writes in it: that revision's push carries the
    // share to b (an invitation), and none of the notebook's records, which b does not hold.
    let sharer = try a.open()
    let garden = try sharer.createNotebook(named: "garden", now: clock())
    XCTAssertTrue(try sharer.share(garden.id, with: b.id, as: .member, now: clock()))
    let memo = try sharer.create(MemoDraft(title: "in the garden", body: "made on a"), now: clock(), in: garden.id)
    let invited = try await writes.until(seconds: 30) { try !b.open().invitations().isEmpty }
    XCTAssertTrue(invited, "b is invited by live sync")
    XCTAssertFalse(try holds(b, memo.id), "b holds none of the notebook before it accepts")

    // A person accepts on b; nobody asks for a sync.
    _ = try b.open().acceptInvitation(garden.id.rawValue, now: clock())
    let arrived = try await writes.until(seconds: 10) { try self.holds(b, memo.id) }
    XCTAssertTrue(arrived, "the accepted notebook's memo is on b, brought by the live link")

    for stop in stops { stop.set() }
    for run in runs { await run.value }
  }

  /// A real engine for `node`, its channels over `network`.
  func engine(for node: TestNode, network: InMemoryNetwork) throws -> ServeEngine {
    let gate = try node.gate
    let identity = node.identity
    return try ServeEngine(
      paths: node.paths, gate: gate, identity: { identity }, port: 0, interfaces: [], logger: .disabled,
      report: { _ in },
      collaborators: ServeEngine.Collaborators(
        clock: clock, keys: node.keys, channels: InMemoryChannels(network: network, gate: gate, clock: clock),
        lockState: { .unprotected }, advertiser: InMemoryAdvertiser()))
  }

  func holds(_ node: TestNode, _ memo: MemoID) throws -> Bool {
    try node.open(.background).allHeadRows().contains { $0.id == memo }
  }

}
