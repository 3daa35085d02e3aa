import Foundation
import MemoApp
import MemoCore
import XCTest

/// `list` and `list --json` write times as bytes (`TimeText.appendLocal`, `appendISO`);
/// they are the strings `TimeText.local` and `iso` make, in every zone.
final class TimeTextTests: XCTestCase {
  func testTimesAsBytesAreTheStrings() {
    var generator = SystemRandomNumberGenerator()
    var samples: [Timestamp] = [
      0, 1, 999, 1000, 1_700_000_000_000, 1_700_000_000_007, 1_700_000_000_070, 253_402_300_799_999,
      253_402_300_800_000, -1, -1000, -86_400_001, -30_610_224_000_000, 4_102_444_800_000,
    ]
    for _ in 0..<2000 {
      samples.append(Timestamp.random(in: -3_000_000_000_000...5_000_000_000_000, using: &generator))
    }
    let saved = getenv("TZ").map { String(cString: $0) }
    defer {
      if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
      tzset()
    }
    // Zones with daylight saving, half and quarter hours, and local mean time before 1900.
    for zone in ["UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kathmandu", "Australia/Lord_Howe", "right/UTC"] {
      setenv("TZ", zone, 1)
      tzset()
      for timestamp in samples {
        var local: [UInt8] = [0x41]
        TimeText.appendLocal(timestamp, to: &local)
        XCTAssertEqual(String(decoding: local, as: UTF8.self), "A" + TimeText.local(timestamp), "\(zone) \(timestamp)")
        var iso: [UInt8] = []
        TimeText.appendISO(timestamp, to: &iso)
        XCTAssertEqual(String(decoding: iso, as: UTF8.self), TimeText.iso(timestamp), "\(timestamp)")
      }
    }
  }
}
