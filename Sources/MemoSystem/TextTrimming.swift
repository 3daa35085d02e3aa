/// Trimming without full Foundation (FoundationEssentials has no `trimmingCharacters(in:)`,
/// and the binary leaves out full Foundation and its ICU data: README, "Working on it").
extension StringProtocol {
  /// The text without leading and trailing blanks: tabs and Unicode space separators (what
  /// Foundation's `.whitespaces` holds), never line breaks.
  public func trimmingBlanks() -> String {
    trimming { $0 == "\t" || $0.unicodeScalars.allSatisfy { $0.properties.generalCategory == .spaceSeparator } }
  }

  /// The text without leading and trailing characters of `characters`.
  public func trimming(_ characters: Set<Character>) -> String { trimming { characters.contains($0) } }

  /// The text without leading and trailing characters that `drop` picks.
  public func trimming(where drop: (Character) -> Bool) -> String {
    guard let first = firstIndex(where: { !drop($0) }), let last = lastIndex(where: { !drop($0) }) else { return "" }
    return String(self[first...last])
  }
}
