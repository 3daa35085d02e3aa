import MemoCore
import XCTest

final class ProtectionTests: XCTestCase {
  func testClassCodesRoundTripAndUnknownCodesAreRefused() {
    for protection in ProtectionClass.allCases {
      XCTAssertEqual(ProtectionClass(code: protection.code), protection)
    }
    XCTAssertNil(ProtectionClass(code: 3))
    XCTAssertEqual(ProtectionClass(rawValue: "after-first-unlock"), .afterFirstUnlock)
  }

  func testLockStateFollowsClassAndKeyring() {
    XCTAssertEqual(LockState.of(protection: .none, keyInKeyring: false, unlockedSinceBoot: false), .unprotected)
    XCTAssertEqual(LockState.of(protection: .complete, keyInKeyring: true, unlockedSinceBoot: true), .unlocked)
    XCTAssertEqual(
      LockState.of(protection: .afterFirstUnlock, keyInKeyring: false, unlockedSinceBoot: false),
      .locked(unlockedSinceBoot: false))
    XCTAssertEqual(
      LockState.of(protection: .complete, keyInKeyring: false, unlockedSinceBoot: true),
      .locked(unlockedSinceBoot: true))
    XCTAssertTrue(LockState.unprotected.canReadContent)
    XCTAssertTrue(LockState.unlocked.canReadContent)
    XCTAssertFalse(LockState.locked(unlockedSinceBoot: true).canReadContent)
    XCTAssertFalse(LockState.locked(unlockedSinceBoot: false).unlockedSinceBoot)
    XCTAssertEqual(LockState.locked(unlockedSinceBoot: true).name, "locked")
  }

  func testEveryProtectedChangeAsksForTheCurrentPassphrase() throws {
    for current in ProtectionClass.allCases {
      for target in ProtectionClass.allCases {
        for change in [false, true] where !(change && target == .none) {
          let plan = try ProtectionPlan.make(from: current, to: target, changePassphrase: change)
          if plan.action != .nothing && current.isProtected {
            XCTAssertTrue(plan.needsCurrentPassphrase, "\(current) → \(target)")
          }
          if target.isProtected && (!current.isProtected || change) {
            XCTAssertTrue(plan.needsNewPassphrase, "\(current) → \(target), change \(change)")
          }
        }
      }
    }
  }

  func testPlansForEachTransition() throws {
    XCTAssertEqual(
      try ProtectionPlan.make(from: .none, to: .complete, changePassphrase: false),
      ProtectionPlan(action: .wrap, needsCurrentPassphrase: false, needsNewPassphrase: true))
    XCTAssertEqual(
      try ProtectionPlan.make(from: .complete, to: .none, changePassphrase: false),
      ProtectionPlan(action: .unwrap, needsCurrentPassphrase: true, needsNewPassphrase: false))
    XCTAssertEqual(
      try ProtectionPlan.make(from: .complete, to: .afterFirstUnlock, changePassphrase: false),
      ProtectionPlan(action: .rewrap, needsCurrentPassphrase: true, needsNewPassphrase: false))
    XCTAssertEqual(
      try ProtectionPlan.make(from: .complete, to: .complete, changePassphrase: true),
      ProtectionPlan(action: .rewrap, needsCurrentPassphrase: true, needsNewPassphrase: true))
    XCTAssertEqual(
      try ProtectionPlan.make(from: .complete, to: .complete, changePassphrase: false, settingsChange: true).action,
      .rewrap)
    XCTAssertEqual(try ProtectionPlan.make(from: .complete, to: .complete, changePassphrase: false).action, .nothing)
    XCTAssertEqual(try ProtectionPlan.make(from: .none, to: .none, changePassphrase: false).action, .nothing)
    XCTAssertThrowsError(try ProtectionPlan.make(from: .complete, to: .none, changePassphrase: true)) {
      XCTAssertEqual(($0 as? MemoPeerError)?.code, .usage)
    }
  }

  func testLockedHasItsOwnExitStatus() {
    XCTAssertEqual(MemoPeerError(.locked, "x").exitStatus, 18)
    XCTAssertEqual(MemoPeerError(.notProtected, "x").exitStatus, 5)
    let statuses = MemoPeerError.Code.allCases.map { MemoPeerError($0, "x").exitStatus }
    XCTAssertFalse(statuses.contains(0))
  }
}
