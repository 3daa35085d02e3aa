/// When an address a trusted device is dialled at without DNS-SD may be dialled again.
/// A wrong or stale address (a stranger took it, the device moved) costs one refused
/// handshake or one failed connect per step, the steps doubling from `firstPause` to
/// `longestPause`; a success forgets it. Pure: the caller says what time it is.
public struct AddressBackoff: Sendable, Equatable {
  public static let firstPause: Duration = .seconds(1)
  public static let longestPause: Duration = .seconds(60)
  /// Addresses tracked at most; past this the one allowed soonest is forgotten.
  public static let maximumTracked = 128

  private struct Failures: Sendable, Equatable {
    var count: Int
    var notBefore: MonotonicInstant
  }

  private var failures: [PeerAddress: Failures] = [:]

  public init() {}

  /// Whether `address` may be dialled at `now`.
  public func mayDial(_ address: PeerAddress, at now: MonotonicInstant) -> Bool {
    failures[address].map { now >= $0.notBefore } ?? true
  }

  /// How many dials of `address` failed in a row.
  public func failureCount(_ address: PeerAddress) -> Int { failures[address]?.count ?? 0 }

  /// A dial of `address` failed at `now`: the next waits twice as long as the last.
  public mutating func failed(_ address: PeerAddress, at now: MonotonicInstant) {
    let count = (failures[address]?.count ?? 0) + 1
    let pause = min(Self.firstPause * (1 << min(count - 1, 16)), Self.longestPause)
    failures[address] = Failures(count: count, notBefore: now + pause)
    if failures.count > Self.maximumTracked, let soonest = failures.min(by: { $0.value.notBefore < $1.value.notBefore })
    {
      failures[soonest.key] = nil
    }
  }

  public mutating func succeeded(_ address: PeerAddress) { failures[address] = nil }
}
