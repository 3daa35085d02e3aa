/// SplitMix64: a small seedable generator, the same on every platform, so that a model
/// test's run repeats exactly from its seed.
public struct SeededRandom: RandomNumberGenerator, Sendable {
  public var state: UInt64

  public init(state: UInt64) { self.state = state }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in 0..<bound.
  public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

  /// True with probability `chance`.
  public mutating func chance(_ chance: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < chance }

  public mutating func shuffle<T>(_ items: inout [T]) {
    guard items.count > 1 else { return }
    for index in stride(from: items.count - 1, to: 0, by: -1) { items.swapAt(index, below(index + 1)) }
  }
}
