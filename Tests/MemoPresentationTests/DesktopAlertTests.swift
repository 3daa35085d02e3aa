import MemoCore
import XCTest

@testable import MemoPresentation

/// What the desktop hears about, and how much of a memo a notification may show.
final class DesktopAlertTests: XCTestCase {
  let d1 = DeviceID(bytes: Array(repeating: 1, count: 32))!
  let d2 = DeviceID(bytes: Array(repeating: 2, count: 32))!

  func testOnlyWhatIsNewIsNews() {
    let id = MemoID()
    let before = AlertSnapshot(inbox: ["e1": d1], conflicted: [id], heldDeletes: [d1: 3])
    XCTAssertEqual(before.alerts(since: before), [])
    let after = AlertSnapshot(
      inbox: ["e1": d1, "e2": d2], conflicted: [id, MemoID(), MemoID()], heldDeletes: [d1: 3, d2: 5])
    XCTAssertEqual(
      after.alerts(since: before),
      [.arrived(entry: "e2", sender: d2), .conflicts(count: 2), .heldDeletes(sender: d2, count: 5)])
    XCTAssertEqual(before.alerts(since: after), [], "what went away is not news")
    let more = AlertSnapshot(inbox: [:], conflicted: [], heldDeletes: [d1: 4])
    XCTAssertEqual(more.alerts(since: before), [.heldDeletes(sender: d1, count: 4)])
  }

  func testARevocationAPeerPassedOnIsNewsOnceAndNamesBothDevicesEscaped() {
    let revoked = AlertSnapshot.RevokedDevice(revoker: d1, revokedName: "x<\u{1B}>")
    let before = AlertSnapshot()
    let after = AlertSnapshot(revocations: ["r1": revoked])
    XCTAssertEqual(after.alerts(since: before), [.revoked(by: d1, name: "x<\u{1B}>")])
    XCTAssertEqual(after.alerts(since: after), [])
    let notice = DesktopNoticeRules.notice(
      for: .revoked(by: d1, name: "x<\u{1B}>"), senderName: "laptop-b", memo: nil, lockState: .unprotected,
      settings: WidgetSettings())
    XCTAssertEqual(notice.summary, "memo-peer: x< > revoked")
    XCTAssertEqual(notice.body, "laptop-b revoked x&lt; &gt;; this device no longer trusts it.\nmemo-peer trust list")
    XCTAssertEqual(notice.openCommand, ["memo-peer", "trust", "list"])
  }

  func testArrivalsAreRedactedWhileLockedForPrivateMemosAndBeforeTheFirstUnlock() {
    let arrival = DesktopAlert.arrived(entry: "0123456789", sender: d1)
    let memo = DesktopNoticeRules.ArrivedMemo(title: "Plans <&>", isPrivate: false)
    let shown = DesktopNoticeRules.notice(
      for: arrival, senderName: "desk", memo: memo, lockState: .unprotected, settings: WidgetSettings())
    XCTAssertEqual(shown.summary, "A memo from desk")
    XCTAssertEqual(shown.body, "Plans &lt;&amp;&gt;\nmemo-peer inbox accept 01234567")
    XCTAssertEqual(shown.openCommand, ["memo-peer", "inbox"])
    let redacted = "A memo arrived from desk\nmemo-peer inbox accept 01234567"
    let cases: [(DesktopNoticeRules.ArrivedMemo?, LockState, WidgetSettings)] = [
      (DesktopNoticeRules.ArrivedMemo(title: "Plans", isPrivate: true), .unprotected, WidgetSettings()),
      (nil, .locked(unlockedSinceBoot: true), WidgetSettings()),
      (memo, .unlocked, WidgetSettings(showPrivateWhenLocked: true, protection: .none)),
    ]
    for (index, (memo, lockState, settings)) in cases.enumerated() {
      let notice = DesktopNoticeRules.notice(
        for: arrival, senderName: "desk", memo: memo, lockState: lockState, settings: settings)
      if index < 2 {
        XCTAssertEqual(notice.body, redacted, "case \(index)")
        XCTAssertEqual(notice.summary, "memo-peer", "case \(index): no title anywhere")
      } else {
        XCTAssertEqual(notice.body, "Plans &lt;&amp;&gt;\nmemo-peer inbox accept 01234567")
      }
    }
    let placeholder = DesktopNoticeRules.notice(
      for: arrival, senderName: "desk", memo: memo, lockState: .locked(unlockedSinceBoot: false),
      settings: WidgetSettings(protection: .complete))
    XCTAssertEqual(placeholder.body, redacted, "protection complete before the first unlock: a placeholder")
  }

  func testNamesCannotFormatOrForgeANotice() {
    let notice = DesktopNoticeRules.notice(
      for: .heldDeletes(sender: d1, count: 7), senderName: "<b>evil</b>\u{1B}[2J\nline", memo: nil,
      lockState: .unprotected, settings: WidgetSettings())
    XCTAssertFalse(notice.body.contains("<b>"))
    XCTAssertFalse(notice.body.contains("\u{1B}"))
    XCTAssertTrue(notice.body.hasPrefix("&lt;b&gt;evil&lt;/b&gt; [2J line would delete 7 memos"), notice.body)
    let conflicts = DesktopNoticeRules.notice(
      for: .conflicts(count: 1), senderName: "", memo: nil, lockState: .unprotected, settings: WidgetSettings())
    XCTAssertEqual(conflicts.summary, "memo-peer: 1 memo in conflict")
    XCTAssertEqual(conflicts.openCommand, ["memo-peer", "conflicts"])
  }
}
