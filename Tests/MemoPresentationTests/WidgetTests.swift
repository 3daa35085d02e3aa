import Foundation
import MemoCore
import MemoPresentation
import XCTest

final class RedactionPolicyTests: XCTestCase {
  let states: [LockState] = [
    .unprotected, .unlocked, .locked(unlockedSinceBoot: true), .locked(unlockedSinceBoot: false),
  ]

  func testEveryCombination() {
    for state in states {
      for isPrivate in [false, true] {
        for show in [false, true] {
          for protection in WidgetSettings.Protection.allCases {
            let settings = WidgetSettings(showPrivateWhenLocked: show, protection: protection)
            for field in WidgetMemoField.allCases {
              let reason = RedactionPolicy.reason(
                for: field, isPrivate: isPrivate, lockState: state, settings: settings)
              XCTAssertEqual(
                reason, expected(field, isPrivate, state, settings),
                "\(field) private=\(isPrivate) \(state) show=\(show) \(protection)")
            }
          }
        }
      }
    }
  }

  /// The rule, written out independently of the implementation.
  private func expected(_ field: WidgetMemoField, _ isPrivate: Bool, _ state: LockState, _ settings: WidgetSettings)
    -> RedactionReason?
  {
    if settings.protection == .complete, state == .locked(unlockedSinceBoot: false) { return .placeholder }
    if isPrivate && !settings.showPrivateWhenLocked { return .private }
    let locked = state == .locked(unlockedSinceBoot: true) || state == .locked(unlockedSinceBoot: false)
    if locked && (field == .tags || isPrivate) { return .locked }
    return nil
  }

  func testIssueScenarios() {
    let defaults = WidgetSettings()
    // A private memo shows a placeholder while locked, and its title while unlocked.
    XCTAssertEqual(
      RedactionPolicy.reason(
        for: .title, isPrivate: true, lockState: .locked(unlockedSinceBoot: true), settings: defaults), .locked)
    XCTAssertNil(RedactionPolicy.reason(for: .title, isPrivate: true, lockState: .unlocked, settings: defaults))
    // … or always, with show-private-when-locked=false.
    let never = WidgetSettings(showPrivateWhenLocked: false)
    XCTAssertEqual(
      RedactionPolicy.reason(for: .title, isPrivate: true, lockState: .unlocked, settings: never), .private)
    XCTAssertEqual(
      RedactionPolicy.reason(for: .title, isPrivate: true, lockState: .unprotected, settings: never), .private)
    // A non-private title stays visible while locked; with widget.protection=complete not
    // before the first unlock after boot.
    XCTAssertNil(
      RedactionPolicy.reason(
        for: .title, isPrivate: false, lockState: .locked(unlockedSinceBoot: false), settings: defaults))
    let complete = WidgetSettings(protection: .complete)
    XCTAssertEqual(
      RedactionPolicy.reason(
        for: .title, isPrivate: false, lockState: .locked(unlockedSinceBoot: false), settings: complete),
      .placeholder)
    XCTAssertNil(
      RedactionPolicy.reason(
        for: .title, isPrivate: false, lockState: .locked(unlockedSinceBoot: true), settings: complete))
  }
}

final class WidgetRendererTests: XCTestCase {
  let id = MemoID("3f2a0000-0000-4000-8000-000000000001")!

  func model(
    _ state: LockState, isPrivate: Bool = false, title: String? = "Groceries", tags: [String]? = ["home"],
    settings: WidgetSettings = WidgetSettings(), peers: Int = 2, outbox: Int = 3
  ) -> WidgetModel {
    let memo = WidgetMemo(id: id, isPrivate: isPrivate, isPinned: true, title: title, tags: tags, updated: 0)
    return WidgetModel(
      WidgetInput(lockState: state, memo: memo, peersOnline: peers, outboxWaiting: outbox, settings: settings))
  }

  func testPlainAndI3blocks() {
    let open = model(.unlocked)
    XCTAssertEqual(WidgetRenderer.plain(open), "Groceries · 2 online · 3 waiting\n")
    XCTAssertEqual(WidgetRenderer.i3blocks(open), "Groceries · 2 online · 3 waiting\nGroceries\n")
    let locked = model(.locked(unlockedSinceBoot: true), isPrivate: true, title: nil, tags: nil)
    XCTAssertEqual(WidgetRenderer.i3blocks(locked), "locked · 2 online · 3 waiting\nlocked\n#E5C07B\n")
    let none = WidgetModel(
      WidgetInput(lockState: .unprotected, memo: nil, peersOnline: 0, outboxWaiting: 0, settings: WidgetSettings()))
    XCTAssertEqual(WidgetRenderer.plain(none), "no memos · 0 online · 0 waiting\n")
  }

  func testTheCountOfPeersConnectedLiveIsShownWhenThereIsOne() throws {
    let memo = WidgetMemo(id: id, isPrivate: false, isPinned: true, title: "Groceries", tags: [], updated: 0)
    let live = WidgetModel(
      WidgetInput(
        lockState: .unlocked, memo: memo, peersOnline: 3, outboxWaiting: 0, peersLive: 2, settings: WidgetSettings()))
    XCTAssertEqual(WidgetRenderer.plain(live), "Groceries · 3 online (2 live) · 0 waiting\n")
    XCTAssertTrue(WidgetRenderer.tooltip(live).contains("connected live: 2"), WidgetRenderer.tooltip(live))
    let json = try XCTUnwrap(
      JSONSerialization.jsonObject(with: JSONEncoder().encode(WidgetRenderer.waybar(live))) as? [String: Any])
    let fields = try XCTUnwrap(json["fields"] as? [String: Any])
    XCTAssertEqual((fields["peers_live"] as? [String: Any])?["value"] as? Int, 2)
  }

  func testADaemonThatWaitsIsShownPausedAndTheTooltipSaysWhy() {
    var input = WidgetInput(
      lockState: .unprotected, memo: nil, peersOnline: 0, outboxWaiting: 0, settings: WidgetSettings())
    XCTAssertFalse(WidgetRenderer.plain(WidgetModel(input)).contains("paused"))
    input.daemonWaitingFor = "this network (eth0, gateway 10.0.0.1) to be allowed: it is not one a person allowed"
    let paused = WidgetModel(input)
    XCTAssertEqual(WidgetRenderer.plain(paused), "no memos · 0 online · 0 waiting · paused\n")
    XCTAssertTrue(
      WidgetRenderer.tooltip(paused).contains("paused: the daemon waits for this network (eth0, gateway 10.0.0.1)"),
      WidgetRenderer.tooltip(paused))
    XCTAssertEqual(WidgetRenderer.classes(paused), ["unprotected", "paused"])
  }

  func testWaybarJSONSaysWhyEachFieldIsRedactedAndNeverCarriesItsValue() throws {
    // The I/O layer could read the title (unlocked earlier), but the policy withholds it.
    let hidden = model(
      .unlocked, isPrivate: true, title: "Secret plan", tags: ["x"],
      settings: WidgetSettings(showPrivateWhenLocked: false))
    let object = WidgetRenderer.waybar(hidden)
    let data = try JSONEncoder().encode(object)
    let text = String(decoding: data, as: UTF8.self)
    XCTAssertFalse(text.contains("Secret plan"), text)
    let json = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    let fields = try XCTUnwrap(json["fields"] as? [String: Any])
    let title = try XCTUnwrap(fields["title"] as? [String: Any])
    XCTAssertTrue(title["value"] is NSNull)
    XCTAssertEqual(title["redacted"] as? String, "private")
    XCTAssertEqual((fields["peers_online"] as? [String: Any])?["value"] as? Int, 2)
    XCTAssertTrue((fields["peers_online"] as? [String: Any])?["redacted"] is NSNull)
    XCTAssertEqual((fields["outbox_waiting"] as? [String: Any])?["value"] as? Int, 3)
    XCTAssertEqual(json["class"] as? [String], ["unlocked", "redacted"])
    XCTAssertEqual(json["alt"] as? String, "unlocked")
    XCTAssertEqual(json["text"] as? String, "private memo · 2 online · 3 waiting")
    XCTAssertNotNil(json["tooltip"] as? String)
  }

  func testPlaceholderHidesEvenWhichMemoIsShownButNotTheCounts() throws {
    let model = model(.locked(unlockedSinceBoot: false), settings: WidgetSettings(protection: .complete))
    XCTAssertEqual(model.title.redacted, .placeholder)
    XCTAssertEqual(model.tags.redacted, .placeholder)
    XCTAssertNil(model.memoID)
    XCTAssertEqual(model.peersOnline, 2)
    XCTAssertEqual(model.outboxWaiting, 3)
    let text = String(decoding: try JSONEncoder().encode(WidgetRenderer.waybar(model)), as: UTF8.self)
    XCTAssertFalse(text.contains("Groceries"))
    XCTAssertFalse(text.contains(id.rawValue))
    XCTAssertFalse(WidgetRenderer.tooltip(model).contains("pinned"))
  }

  func testUnreadableValueIsReportedLockedEvenIfThePolicyWouldShowIt() {
    let model = model(.unlocked, title: nil)
    XCTAssertEqual(model.title.redacted, .locked)
  }

  func testMarkupIsEscapedForWaybarAndLongTitlesShortened() {
    let object = WidgetRenderer.waybar(model(.unprotected, title: "Fish & <chips>"))
    XCTAssertTrue(object.text.hasPrefix("Fish &amp; &lt;chips&gt;"), object.text)
    let long = model(.unprotected, title: String(repeating: "x", count: 100))
    XCTAssertEqual(WidgetRenderer.titleText(long).count, WidgetRenderer.maxTitleCharacters)
  }
  /// A title or tag from a peer may hold a bidirectional override (a valid title cannot hold
  /// a control character, but an old store or a hostile peer may still bring one): the bar,
  /// the tooltip and i3blocks' lines show it escaped, and it cannot add a line to i3blocks.
  func testTitlesAndTagsFromPeersReachTheBarEscaped() {
    let hostile = model(.unprotected, title: "pay \u{202E}321\nnow\u{1B}[8m", tags: ["a\u{2066}b"])
    let i3 = WidgetRenderer.i3blocks(hostile)
    XCTAssertEqual(i3.filter { $0 == "\n" }.count, 2, i3)
    for text in [WidgetRenderer.plain(hostile), i3, WidgetRenderer.tooltip(hostile)] {
      XCTAssertFalse(
        text.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x1B || $0.value == 0x2066 }, text)
    }
    XCTAssertTrue(WidgetRenderer.plain(hostile).hasPrefix(#"pay \u{202e}321\x0anow\x1b[8m [escaped]"#))
    XCTAssertTrue(WidgetRenderer.tooltip(hostile).contains(#"#a\u{2066}b [escaped]"#))
    XCTAssertEqual(WidgetRenderer.waybar(hostile).fields.title.value, "pay \u{202E}321\nnow\u{1B}[8m")
  }
}
