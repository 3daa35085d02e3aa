import MemoCore
import MemoCrypto
import MemoProtocol
import XCTest

@testable import MemoNode

final class AdvertisementIdentityTests: XCTestCase {
  func testTwoPeriodsShareNoInstanceNameOrTag() throws {
    let identity = AdvertisementIdentity(key: try SecureBytes.random(count: 32), rotationSeconds: 900)
    let first = try identity.plan(at: 1_800_000_000_000)
    let second = try identity.plan(at: 1_800_000_000_000 + 900_000)
    XCTAssertEqual(second.period, first.period + 1)
    XCTAssertNotEqual(first.instanceName, second.instanceName)
    XCTAssertNotEqual(first.tag, second.tag)
    XCTAssertFalse(first.instanceName.contains(first.tag.prefix(8)), "the name does not reveal the tag")
    XCTAssertEqual(first.txt, ["v": "1", "tag": first.tag])
    XCTAssertEqual(first.validUntil, Advertisement.periodEnd(at: 1_800_000_000_000, rotationSeconds: 900))
    // Stable within a period.
    XCTAssertEqual(try identity.plan(at: 1_800_000_000_000 + 1), first)
  }

  func testOnlyTheKeyHolderRecognisesTheTag() throws {
    let key = try SecureBytes.random(count: 32)
    let mine = AdvertisementIdentity(key: key, rotationSeconds: 900)
    let paired = AdvertisementIdentity(
      key: SecureBytes(copying: Array(key.withUnsafeBytes { Array($0) })), rotationSeconds: 900)
    let stranger = AdvertisementIdentity(key: try SecureBytes.random(count: 32), rotationSeconds: 900)
    let now: Timestamp = 1_800_000_000_000
    let tag = try mine.plan(at: now).tag
    XCTAssertTrue(paired.recognizes(tag: tag, at: now))
    XCTAssertTrue(paired.recognizes(tag: tag, at: now + 900_000), "a neighbouring period still matches")
    XCTAssertFalse(paired.recognizes(tag: tag, at: now + 3 * 900_000))
    XCTAssertFalse(stranger.recognizes(tag: tag, at: now))
  }

  func testTheOwnTagCacheAnswersAsTheIdentityDoes() throws {
    let mine = AdvertisementIdentity(key: try SecureBytes.random(count: 32), rotationSeconds: 900)
    let now: Timestamp = 1_800_000_000_000
    let tag = try mine.plan(at: now).tag
    XCTAssertEqual(try mine.tag(period: mine.plan(at: now).period), tag)
    let prepared = OwnTagCache(mine)
    prepared.prepare(at: now)
    let cold = OwnTagCache(mine)
    for cache in [prepared, cold] {
      XCTAssertTrue(cache.recognizes(tag, at: now))
      XCTAssertTrue(cache.recognizes(tag, at: now + 900_000), "a neighbouring period still matches")
      XCTAssertFalse(cache.recognizes(tag, at: now + 3 * 900_000), "nor later, once it has rotated away")
      XCTAssertFalse(cache.recognizes("0123456789abcdef", at: now))
    }
  }
}
