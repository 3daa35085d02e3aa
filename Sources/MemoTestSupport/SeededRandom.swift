import Foundation

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

/// The seeds a model test runs: `PREFIX_SEED` replays one; `PREFIX_RUNS` sets the count of
/// that test; `MEMO_PEER_MODEL_RUNS` sets it for every model test: `small` for the counts
/// `make check` runs (each chosen so its test still reaches every case it asserts it
/// reached), or a number of runs. Unset, the `full` count: plain `swift test` and `make
/// model` run at full strength. Read here only, never by the code under test.
public enum ModelSeeds {
  public struct BadSetting: Error, CustomStringConvertible {
    public let description: String
  }

  public static func seeds(_ prefix: String, full: Int, small: Int) throws -> [UInt64] {
    let environment = ProcessInfo.processInfo.environment
    if let seed = environment[prefix + "_SEED"] {
      guard let seed = UInt64(seed) else { throw BadSetting(description: "\(prefix)_SEED=\(seed) is not a seed") }
      return [seed]
    }
    let runs: Int
    if let count = environment[prefix + "_RUNS"] {
      guard let count = Int(count), count > 0 else {
        throw BadSetting(description: "\(prefix)_RUNS=\(count) is not a count")
      }
      runs = count
    } else if let tier = environment["MEMO_PEER_MODEL_RUNS"] {
      guard let count = tier == "small" ? small : Int(tier), count > 0 else {
        throw BadSetting(description: "MEMO_PEER_MODEL_RUNS=\(tier): `small` or a number of runs")
      }
      runs = count
    } else {
      runs = full
    }
    return Array(1...UInt64(runs))
  }
}
