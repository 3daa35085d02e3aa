/// A person a use case may ask: the CLI's terminal. A use case asks only through this, so it
/// runs the same with no one there (a script: `canAsk` is false) and in tests. The page asks
/// in its own way (a click) before it calls, and never passes one.
public protocol Prompt {
  /// Whether someone can answer now (the CLI: stdin is a terminal).
  var canAsk: Bool { get }
  /// Shows `question` and returns the answer line.
  func ask(_ question: String) throws -> String
}

/// Nobody to ask: for callers that never prompt (the daemon, tests).
public struct NobodyToAsk: Prompt {
  public init() {}
  public var canAsk: Bool { false }
  public func ask(_ question: String) throws -> String { "" }
}
