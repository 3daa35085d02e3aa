import Foundation
import MemoCore
import MemoWeb
import XCTest

@testable import MemoCLI

/// Every remedy as each reader words it: the command line names the command to run, the page
/// never names one (it words what to do on the page, or says nothing).
final class RemedyWordingTests: XCTestCase {
  /// One remedy of every kind, with facts in it; `testTheSamplesCoverEveryRemedy` keeps it whole.
  static let samples: [Remedy] = [
    .listMemos(includingTrash: false), .listMemos(includingTrash: true), .typeMoreOfID, .listTrash(days: 30),
    .showHistory(memo: "a1b2c3d4"), .settleHeldDeletes, .listOutbox, .listInbox, .dropInboxEntry("a1b2c3d4"),
    .listConflicts, .resolveConflict(memo: "a1b2c3d4"), .listNotebooks, .showNotebook(nil), .showNotebook("family"),
    .listInvitations, .newNotebook(example: "family"), .renameNotebook, .moveNotebookMemos(from: "family"),
    .replaceNotebook("family"), .copyToNewMemo, .deleteMemo("a1b2c3d4"), .listTrusted, .unlock(device: nil),
    .unlock(device: "bee"), .relock, .protectKey, .retryPassphrase, .debugLog, .grantConsent(nil),
    .grantConsent(.localNetwork), .grantConsent(.allServiceTypes), .grantConsent(.backgroundSync),
    .askOrGrantConsent(.localNetwork), .askOrGrantConsent(.allServiceTypes), .recordConsentAgain, .sync, .syncAgain,
    .syncWithMember, .keepDeleted(device: nil), .keepDeleted(device: "bee"), .pairAgain(device: nil),
    .pairAgain(device: "bee"), .trustAgain, .pairWithName, .pairOnOtherDevice, .checkPeerVisible(device: "bee"),
    .runDoctor(device: nil), .runDoctor(device: "bee"), .checkStore, .moveMemosToNewNode, .restoreFromExport,
    .exportArchive,
  ]

  func testTheSamplesCoverEveryRemedy() {
    XCTAssertEqual(Set(Self.samples.map(\.code)), Set(Remedy.Code.allCases))
  }

  func testTheCommandLineNamesTheCommandToRun() {
    for remedy in Self.samples {
      let words = CLIRemedyText.words(remedy)
      XCTAssertTrue(words.contains("`memo-peer "), "\(remedy): \(words)")
    }
    XCTAssertEqual(CLIRemedyText.words(.unlock(device: "bee")), "run `memo-peer unlock` on bee, then sync again")
    XCTAssertEqual(
      CLIRemedyText.words(.resolveConflict(memo: "a1b2c3d4")),
      "`memo-peer conflicts resolve a1b2c3d4 --keep A|B|both` settles it")
  }

  func testThePageNeverShowsAShellCommand() {
    var worded = 0
    for remedy in Self.samples {
      guard let words = PageRemedyText.words(remedy) else { continue }
      worded += 1
      for shell in ["`", "memo-peer ", "--", "$ "] {
        XCTAssertFalse(words.contains(shell), "\(remedy) on the page: \(words)")
      }
    }
    XCTAssertGreaterThan(worded, 10, "the page words what it can do itself")
    XCTAssertEqual(PageRemedyText.words(.unlock(device: nil)), "unlock it with the passphrase on the page")
    XCTAssertNil(PageRemedyText.words(.protectKey), "only a shell protects the key")
  }

  /// The hint joins the error's own words and the remedy's, for each reader; a remedy only a
  /// shell can follow leaves the page's hint as the error's own words, and its code out.
  func testAnErrorsHintAndJSONForEachReader() throws {
    let error = MemoPeerError(
      .keyMissing, "the device key is missing", hint: "restore the key file from this device",
      remedy: .moveMemosToNewNode)
    XCTAssertEqual(
      CLIRemedyText.hint(error),
      "restore the key file from this device; move the memos to a new node with `memo-peer export` and `memo-peer import`"
    )
    XCTAssertEqual(error.hint(wording: PageRemedyText.words), "restore the key file from this device")
    let page = HTTPResponse.error(error)
    let body =
      try XCTUnwrap(
        try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any])["error"] as? [String: Any]
    XCTAssertEqual(body?["hint"] as? String, "restore the key file from this device")
    XCTAssertNil(body?["remedy"])
    let locked = HTTPResponse.error(MemoPeerError(.locked, "this node is locked", remedy: .unlock(device: nil)))
    let lockedBody =
      try XCTUnwrap(
        try JSONSerialization.jsonObject(with: Data(locked.body)) as? [String: Any])["error"] as? [String: Any]
    XCTAssertEqual(lockedBody?["hint"] as? String, "unlock it with the passphrase on the page")
    XCTAssertEqual(lockedBody?["remedy"] as? String, "unlock")
  }
}

extension RemedyWordingTests {
  /// docs/CLI.md lists every remedy's stable name, as `--json` errors carry it.
  func testCLIDocumentsEveryRemedyCode() throws {
    let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("docs/CLI.md")
    let text = try String(contentsOf: doc, encoding: .utf8)
    for code in Remedy.Code.allCases {
      XCTAssertTrue(text.contains("`\(code.rawValue)`"), "docs/CLI.md lacks \(code.rawValue)")
    }
  }
}
