import MemoApp
import MemoCore
import MemoProtocol
import MemoStore
import XCTest

@testable import MemoNode

/// The sync, conflict and consent use cases up to the network: what is checked before a
/// sync starts, in which order for each caller, and what its outcome asks of a person.
final class SyncUseCaseTests: XCTestCase {
  static let desk = TrustedPeer(
    deviceID: DeviceID(String(repeating: "A", count: 52))!, name: "desk", discoveryKey: nil, source: .command,
    added: 1)

  func testThePageAsksForConsentBeforeItLooksForSomeoneToSyncWith() throws {
    let node = try AppFixture()
    let hint = "press Sync on the page"
    XCTAssertThrowsError(try node.app().sync.prepare(peer: nil, timeout: 1, consent: .required(hint: hint))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .consentRequired)
      XCTAssertEqual(($0 as? MemoPeerError)?.hint, hint)
    }
    XCTAssertThrowsError(try node.app().sync.prepare(peer: nil, timeout: 1, consent: .ask(NobodyToAsk()))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound, "the command line: nobody to sync with")
    }
    guard case .recorded = try node.app().consent.decide(.granted, scope: .localNetwork, method: .web) else {
      return XCTFail("a grant is recorded")
    }
    XCTAssertThrowsError(try node.app().sync.prepare(peer: nil, timeout: 1, consent: .required(hint: hint))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.message, SyncUseCases.nobodyToSync.message)
    }
  }

  func testASyncAsksThePersonAndRecordsTheAnswer() throws {
    let node = try AppFixture()
    try node.app().trustStore.update { try $0.trust(Self.desk) }
    let no = ScriptedPrompt(answers: ["no"])
    XCTAssertThrowsError(try node.app().sync.prepare(peer: "desk", timeout: 1, consent: .ask(no))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .policyDenied)
    }
    XCTAssertEqual(no.questions.count, 1)
    XCTAssertTrue(no.questions[0].hasSuffix("Allow / Don't Allow? "))
    XCTAssertEqual(try node.app().consent.overview().state(.localNetwork).name, "denied")

    _ = try node.app().consent.decide(.granted, scope: .localNetwork, method: .command)
    let asked = ScriptedPrompt(answers: [])
    let prepared = try node.app().sync.prepare(peer: "desk", timeout: 1, consent: .ask(asked))
    XCTAssertEqual(prepared.peers.map(\.name), ["desk"])
    XCTAssertTrue(asked.questions.isEmpty, "a decision on record is not asked again")
    XCTAssertThrowsError(try node.app().sync.prepare(peer: "laptop", timeout: 1, consent: .ask(asked))) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .notFound)
    }
  }

  func testALockedNodeSyncsNothing() throws {
    let node = try AppFixture()
    try node.app().trustStore.update { try $0.trust(Self.desk) }
    try node.protect()
    try node.keys.lock()
    for consent in [SyncConsent.ask(NobodyToAsk()), .required(hint: "")] {
      XCTAssertThrowsError(try node.app().sync.prepare(peer: nil, timeout: 1, consent: consent)) {
        XCTAssertEqual(($0 as? MemoPeerError)?.code, .locked)
      }
    }
  }

  func testTheOutcomeNamesWhatNeedsAPerson() {
    var held = SyncSession.Report()
    held.received = SyncMessage.Outcome(applied: 0, conflicts: 0, heldDeletes: 12, liveMemos: 20)
    let laptop = TrustedPeer(
      deviceID: DeviceID(String(repeating: "B", count: 51) + "A")!, name: "laptop", discoveryKey: nil, source: .command,
      added: 1)
    let away = MemoPeerError(.connection, "desk was not found")
    let heldOutcome = SyncOutcome(results: [
      PeerSync.PeerResult(peer: Self.desk, report: nil, error: away),
      PeerSync.PeerResult(peer: laptop, report: held, error: nil),
    ])
    XCTAssertEqual(heldOutcome.problem?.code, .syncHeld, "held deletes come first")
    XCTAssertTrue(heldOutcome.problem?.hint?.contains("--peer laptop --allow-deletes") ?? false)
    let failed = SyncOutcome(results: [
      PeerSync.PeerResult(peer: Self.desk, report: nil, error: away),
      PeerSync.PeerResult(peer: laptop, report: SyncSession.Report(), error: nil),
    ])
    XCTAssertEqual(failed.problem?.message, "1 of 2 devices could not be synced; first: desk was not found")
    XCTAssertNil(SyncOutcome(results: [PeerSync.PeerResult(peer: laptop, report: SyncSession.Report())]).problem)
    XCTAssertNil(failed.lockError)
    XCTAssertEqual(SyncOutcome(results: [], interruptedByLock: true).lockError?.code, .locked)
    let json = SyncJSON(heldOutcome.results, wording: { _ in nil })
    XCTAssertEqual(json.peers.map(\.status), ["connection", "held"])
  }

  func testADeviceNeverSyncedHasEverythingPending() throws {
    let node = try AppFixture()
    try node.memo("one")
    try node.memo("two")
    try node.app().trustStore.update { try $0.trust(Self.desk) }
    let rows = try node.app().sync.peers()
    XCTAssertEqual(rows.map(\.peer.name), ["desk"])
    XCTAssertEqual(rows.first?.pending, 2)
    XCTAssertNil(rows.first?.synced)
    XCTAssertEqual(PeersJSON(rows).peers.first?.deviceID, Self.desk.deviceID.compact)
  }

  func testConflictChoicesAndARevokeOfNothing() throws {
    XCTAssertEqual(ConflictUseCases.choice("a"), .a)
    XCTAssertEqual(ConflictUseCases.choice("BOTH"), .both)
    XCTAssertNil(ConflictUseCases.choice("C"))
    let node = try AppFixture()
    XCTAssertEqual(try node.app().conflicts.list().count, 0)
    guard case .notGranted(.localNetwork) = try node.app().consent.decide(.revoked, scope: .localNetwork, method: .web)
    else { return XCTFail("nothing to revoke") }
    XCTAssertTrue(try node.app().consent.overview().records.isEmpty, "nothing recorded")
  }
}

/// A person who gives these answers, in order, and the questions they were asked.
final class ScriptedPrompt: Prompt {
  var answers: [String]
  var questions: [String] = []
  init(answers: [String]) { self.answers = answers }
  var canAsk: Bool { true }
  func ask(_ question: String) throws -> String {
    questions.append(question)
    return answers.isEmpty ? "" : answers.removeFirst()
  }
}

/// The offer of background sync after a sync a person ran on a terminal.
final class BackgroundSyncOfferTests: XCTestCase {
  func testAskedOnceWithTheUsageDescriptionAndRecordedAsShown() throws {
    let node = try AppFixture()
    let consent = node.app().consent
    XCTAssertNil(try consent.offerBackgroundSync(prompt: NobodyToAsk()), "nobody at a terminal: not asked")
    XCTAssertEqual(try consent.overview().state(.backgroundSync), .undetermined)

    let person = ScriptedPrompt(answers: ["y"])
    let record = try XCTUnwrap(try consent.offerBackgroundSync(prompt: person))
    XCTAssertEqual(record.decision, .granted)
    XCTAssertEqual(record.method, .prompt)
    XCTAssertEqual(person.questions.count, 1)
    let manifest = try consent.gate().manifest
    XCTAssertTrue(person.questions[0].contains(manifest.usageDescription), person.questions[0])
    XCTAssertTrue(person.questions[0].hasPrefix("Keep this device in sync in the background?"))
    XCTAssertEqual(record.usageText, ConsentUseCases.backgroundSyncQuestion(manifest), "the text shown is on record")
    XCTAssertTrue(try consent.overview().state(.backgroundSync).isGranted)

    XCTAssertNil(try consent.offerBackgroundSync(prompt: person), "asked once")
    XCTAssertEqual(person.questions.count, 1)
  }

  func testANoIsRecordedAndNotAskedAgainNorAfterARevoke() throws {
    let node = try AppFixture()
    let consent = node.app().consent
    let person = ScriptedPrompt(answers: ["no", "y"])
    XCTAssertEqual(try consent.offerBackgroundSync(prompt: person)?.decision, .denied)
    XCTAssertNil(try consent.offerBackgroundSync(prompt: person), "a no stands")
    XCTAssertFalse(try consent.overview().state(.backgroundSync).isGranted)

    let other = try AppFixture()
    _ = try other.app().consent.decide(.granted, scope: .backgroundSync, method: .command)
    _ = try other.app().consent.decide(.revoked, scope: .backgroundSync, method: .command)
    XCTAssertNil(try other.app().consent.offerBackgroundSync(prompt: person), "a revoke stands")
    XCTAssertEqual(person.questions.count, 1)
  }
}
