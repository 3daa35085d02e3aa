import MemoCore
import XCTest

/// The fair history rule (issue 38): one author cannot evict another's history of a memo,
/// the device's own revisions and the last revision before each change of author stay, and
/// whatever the authors do the kept set stays within three times the limit.
final class HistoryRetentionTests: XCTestCase {
  typealias Entry = HistoryRetention.Entry<String>

  /// Entries with ids 1, 2, … and revision numbers equal to their ids, by `authors` in order.
  func entries(_ authors: [String?]) -> [Entry] {
    authors.enumerated().map { Entry(id: Int64($0.offset + 1), revision: Int64($0.offset + 1), author: $0.element) }
  }

  func keptAuthors(_ all: [Entry], limit: Int, own: String?) -> [String?] {
    let keep = HistoryRetention.kept(all, limit: limit, own: own)
    return all.filter { keep.contains($0.id) }.map(\.author)
  }

  func testOneAuthorKeepsItsNewestRevisions() {
    let all = entries(Array(repeating: "owner", count: 12))
    XCTAssertEqual(HistoryRetention.kept(all, limit: 5, own: "owner"), Set(8...12))
    XCTAssertEqual(HistoryRetention.kept(all, limit: 5, own: nil), Set(8...12))
    XCTAssertEqual(HistoryRetention.dropped(all, limit: 5, own: nil), Array(1...7))
    XCTAssertEqual(HistoryRetention.kept(Array(all.prefix(4)), limit: 5, own: nil), Set(1...4), "under the limit")
  }

  func testAMemberFloodingKeepsEveryRevisionOfTheOwner() {
    let all = entries(Array(repeating: "owner", count: 5) + Array(repeating: "member", count: 120))
    for own: String? in ["owner", nil, "someone else"] {
      let kept = keptAuthors(all, limit: 100, own: own)
      XCTAssertEqual(kept.filter { $0 == "owner" }.count, 5, "own: \(own ?? "none")")
      XCTAssertEqual(kept.filter { $0 == "member" }.count, 95, "the flood keeps what is left")
      XCTAssertEqual(kept.count, 100)
    }
  }

  func testTheSharesGoRoundByRoundNewestFirst() {
    // a has 6, b 2, c 1: a limit of 5 keeps each author's newest, then a's and b's second.
    let all = entries(["a", "a", "a", "b", "a", "a", "c", "b", "a"])
    let keep = HistoryRetention.kept(all, limit: 5, own: nil)
    // Boundaries: 3 (a→b), 4 (b→a), 6 (a→c), 7 (c→b), 8 (b→a); shares: 9, 8, 7 then 6, 4.
    XCTAssertEqual(keep, [3, 4, 6, 7, 8, 9])
  }

  func testTheLastRevisionBeforeEachChangeOfAuthorIsKept() {
    // The owner's 3 before the member's flood, and the member's 6 before the owner's 7.
    let all = entries(["owner", "owner", "owner", "member", "member", "member", "owner", "owner", "owner", "owner"])
    let keep = HistoryRetention.kept(all, limit: 2, own: nil)
    XCTAssertTrue(keep.isSuperset(of: [3, 6]), "\(keep.sorted())")
    XCTAssertEqual(keep, [3, 6, 10], "the boundaries, then each author's newest")
  }

  func testTheDevicesOwnRevisionsStayWhoeverFloods() {
    let all = entries(Array(repeating: "me", count: 8) + Array(repeating: "member", count: 40))
    let keep = HistoryRetention.kept(all, limit: 8, own: "me")
    XCTAssertTrue(keep.isSuperset(of: Set(1...8)), "\(keep.sorted())")
    XCTAssertEqual(keep.count, 12, "8 of this device, the member's 4 newest (its share of what is left)")
  }

  func testAlternatingAuthorsStayBounded() {
    let flood = (0..<1_000).map { $0 % 2 == 0 ? "x" : "y" }
    let all = entries(Array(repeating: "owner", count: 3) + flood)
    let keep = HistoryRetention.kept(all, limit: 10, own: "me")
    XCTAssertLessThanOrEqual(keep.count, 30)
    XCTAssertTrue(keep.isSuperset(of: [1, 2, 3]), "the owner's share: \(keep.sorted())")
    // Three colluding authors and this device's own edits between them: still three times the limit.
    let mixed = entries((0..<900).map { ["x", "y", "z", "me"][$0 % 4] })
    XCTAssertLessThanOrEqual(HistoryRetention.kept(mixed, limit: 10, own: "me").count, 30)
  }

  func testUnsignedRevisionsCountAsOneAuthor() {
    let all = entries([nil, nil, nil] + Array(repeating: "member", count: 30))
    let kept = keptAuthors(all, limit: 6, own: nil)
    XCTAssertEqual(kept.filter { $0 == nil }.count, 3)
    XCTAssertEqual(kept.count, 6)
  }

  func testTheResultDependsOnTheEntriesNotOnTheirOrder() {
    var all = entries((0..<300).map { ["a", "b", "c", nil][($0 * 7 + $0 / 5) % 4] })
    // Two revisions share a number (a conflict): the id orders them.
    all[10].revision = all[11].revision
    let keep = HistoryRetention.kept(all, limit: 20, own: "c")
    XCTAssertLessThanOrEqual(keep.count, 60)
    for reordered in [
      all.reversed(), Array(all[150...] + all[..<150]), all.sorted { $0.author ?? "" < $1.author ?? "" },
    ] {
      XCTAssertEqual(HistoryRetention.kept(reordered, limit: 20, own: "c"), keep)
    }
  }

  func testALimitOfZeroKeepsNothing() {
    let all = entries(["me", "a", "b", "me"])
    XCTAssertEqual(HistoryRetention.kept(all, limit: 0, own: "me"), [])
    XCTAssertEqual(HistoryRetention.kept(all, limit: -3, own: "me"), [])
    XCTAssertEqual(HistoryRetention.kept([Entry](), limit: 4, own: "me"), [])
  }

  func testTheHeaviestAuthorPaysFirst() {
    XCTAssertEqual(HistoryRetention.heaviest(["owner": 10, "member": 500, "me": 40]), "member")
    XCTAssertEqual(HistoryRetention.heaviest(["b": 7, "a": 7]), "a", "ties: the smaller key")
    XCTAssertNil(HistoryRetention.heaviest(["a": 0] as [String: Int64]))
    XCTAssertNil(HistoryRetention.heaviest([String: Int64]()))
  }
}
