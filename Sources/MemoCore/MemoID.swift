import FoundationEssentials

/// A memo's identity: a random UUID, written lowercase. Identity never depends on
/// content, so two devices can create memos without coordinating.
public struct MemoID: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The canonical lowercase 36-character form.
  public let rawValue: String

  public init() { rawValue = UUID().uuidString.lowercased() }

  /// Accepts a full UUID in any case; returns nil for anything else.
  public init?(_ text: String) {
    guard let uuid = UUID(uuidString: text) else { return nil }
    rawValue = uuid.uuidString.lowercased()
  }

  /// Accepts only the canonical form this program writes (36 lowercase hex digits and
  /// dashes in UUID layout), without Foundation's parser: reading 100,000 ids from the
  /// store must be cheap.
  public init?(canonical text: String) {
    var text = text
    text.makeContiguousUTF8()  // a no-op for native strings: the check below reads the bytes in place
    guard text.utf8.withContiguousStorageIfAvailable(Self.isCanonical) == true else { return nil }
    rawValue = text
  }

  /// `init(canonical:)` from bytes read in place (a row of the store): the string is made
  /// only for a valid id.
  public init?(canonicalUTF8 bytes: UnsafeBufferPointer<UInt8>) {
    guard Self.isCanonical(bytes) else { return nil }
    rawValue = String(decoding: bytes, as: UTF8.self)
  }

  /// 8-4-4-4-12 lowercase hex digits.
  private static func isCanonical(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard bytes.count == 36 else { return false }
    for index in 0..<36 {
      let byte = bytes[index]
      let isDashPosition = index == 8 || index == 13 || index == 18 || index == 23
      let ok = isDashPosition ? byte == 0x2D : (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
      if !ok { return false }
    }
    return true
  }

  public var description: String { rawValue }
  /// The short form shown in lists; `IDPrefix` accepts it back.
  public var short: String { String(rawValue.prefix(8)) }

  public static func < (lhs: MemoID, rhs: MemoID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A user-typed id prefix, as git accepts abbreviated hashes. Validated so it can be used
/// in a GLOB pattern without escaping.
public struct IDPrefix: Sendable, Equatable {
  public let rawValue: String
  /// The shortest prefix that opens a memo (as git asks for 4): completions may look up
  /// shorter ones, commands may not act on them.
  public static let minimumToResolve = 4

  /// Lowercases and checks the text: 1–36 characters of hex digits and dashes.
  public init(_ text: String) throws {
    let lowered = text.lowercased()
    let allowed = lowered.utf8.allSatisfy { byte in
      (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || byte == 0x2D
    }
    guard !lowered.isEmpty, lowered.utf8.count <= 36, allowed else {
      throw MemoPeerError(
        .usage, "that is not a memo id (ids are not echoed back, in case text was typed by mistake)",
        hint: "ids are hex digits and dashes", remedy: .listMemos(includingTrash: false))
    }
    rawValue = lowered
  }
}
