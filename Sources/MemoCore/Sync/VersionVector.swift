/// One revision's identity: the replica that made it and that replica's sequence number
/// for it. Sequence numbers count every revision a replica makes, across all its memos,
/// so "everything replica R made up to n" is one number per replica.
public struct Dot: Hashable, Sendable, CustomStringConvertible {
  public var origin: ReplicaID
  public var seq: UInt64

  public init(origin: ReplicaID, seq: UInt64) {
    self.origin = origin
    self.seq = seq
  }

  public var description: String { "\(origin.short):\(seq)" }
}

/// A version vector: for each replica, the highest of its sequence numbers a revision
/// (or a replica's knowledge) includes. Concurrency is decided by comparing vectors,
/// never by wall-clock time, so a wrong clock on one laptop cannot overwrite an edit.
public struct VersionVector: Equatable, Hashable, Sendable {
  public private(set) var entries: [ReplicaID: UInt64]

  public init(_ entries: [ReplicaID: UInt64] = [:]) {
    self.entries = entries.filter { $0.value > 0 }
  }

  public subscript(origin: ReplicaID) -> UInt64 { entries[origin] ?? 0 }

  /// Whether the dot is part of what this vector has seen.
  public func contains(_ dot: Dot) -> Bool { self[dot.origin] >= dot.seq }

  /// Whether this vector has seen everything `other` has (self ≥ other, entry by entry).
  public func covers(_ other: VersionVector) -> Bool {
    other.entries.allSatisfy { self[$0.key] >= $0.value }
  }

  /// Entry-by-entry maximum.
  public mutating func merge(_ other: VersionVector) {
    for (origin, seq) in other.entries where seq > self[origin] { entries[origin] = seq }
  }

  public func merging(_ other: VersionVector) -> VersionVector {
    var copy = self
    copy.merge(other)
    return copy
  }

  /// Records one more revision of `dot.origin`.
  public mutating func add(_ dot: Dot) {
    if dot.seq > self[dot.origin] { entries[dot.origin] = dot.seq }
  }

  /// How two revisions of one memo relate.
  public enum Order: Equatable, Sendable {
    case equal, before, after, concurrent
  }

  /// `.before`: self happened before other (other has seen self).
  public func compare(_ other: VersionVector) -> Order {
    let selfCovers = covers(other)
    let otherCovers = other.covers(self)
    switch (selfCovers, otherCovers) {
    case (true, true): return .equal
    case (true, false): return .after
    case (false, true): return .before
    case (false, false): return .concurrent
    }
  }

  /// The entries keyed by their text, as JSON carries a knowledge or a clock (checked back
  /// into a vector by `SyncRules.checkedVector`).
  public var textEntries: [String: UInt64] {
    Dictionary(uniqueKeysWithValues: entries.map { ($0.key.rawValue, $0.value) })
  }

  /// The entries in a stable order (by origin), for encoding.
  public var sorted: [(origin: ReplicaID, seq: UInt64)] {
    entries.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
  }
}

extension VersionVector {
  /// The stored and wire form: u32 count, then (u32-length origin, u64 seq) by origin.
  public func encoded() -> [UInt8] {
    var bytes: [UInt8] = []
    encode(into: &bytes)
    return bytes
  }

  /// `encoded()` appended to `bytes`: a clock of one or two replicas (the usual) is written
  /// without sorting a copy of the dictionary.
  public func encode(into bytes: inout [UInt8]) {
    bytes.reserveCapacity(bytes.count + 4 + entries.count * 44)
    Self.append(UInt64(entries.count), size: 4, to: &bytes)
    func write(_ origin: ReplicaID, _ seq: UInt64) {
      Self.append(UInt64(origin.rawValue.utf8.count), size: 4, to: &bytes)
      bytes.append(contentsOf: origin.rawValue.utf8)
      Self.append(seq, size: 8, to: &bytes)
    }
    if entries.count == 1, let (origin, seq) = entries.first {
      write(origin, seq)
    } else {
      for (origin, seq) in entries.sorted(by: { $0.key < $1.key }) { write(origin, seq) }
    }
  }

  /// `value`'s low `size` bytes, big-endian.
  private static func append(_ value: UInt64, size: Int, to bytes: inout [UInt8]) {
    for shift in stride(from: (size - 1) * 8, through: 0, by: -8) {
      bytes.append(UInt8(truncatingIfNeeded: value >> shift))
    }
  }

  /// Nil for bytes that are not an encoded vector (or name something that is not a
  /// replica id).
  public init?(encoded bytes: [UInt8]) {
    var reader = ByteReader(bytes)
    guard let count = reader.u32(), count <= 4096 else { return nil }
    var entries: [ReplicaID: UInt64] = [:]
    for _ in 0..<count {
      guard let text = reader.string(), let origin = ReplicaID(text), let seq = reader.u64() else { return nil }
      entries[origin] = seq
    }
    guard reader.isAtEnd else { return nil }
    self.init(entries)
  }
}
