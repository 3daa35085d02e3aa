import MemoCore

/// Severity of a log line.
public enum LogLevel: Int, Comparable, Sendable {
  case debug, info, warning, error
  public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
  public var name: String {
    switch self {
    case .debug: "debug"
    case .info: "info"
    case .warning: "warning"
    case .error: "error"
    }
  }
}

/// Whether an interpolated value may appear in a log line.
public enum LogPrivacy: Sendable {
  /// Safe to log: counts, durations, schema versions, error codes.
  case `public`
  /// Redacted to `<private>`. The default for every interpolation.
  case `private`
}

/// A log message whose interpolations are redacted unless marked `privacy: .public`, so a
/// memo title slipped into a log call by mistake comes out as `<private>`.
public struct LogMessage: ExpressibleByStringInterpolation, Sendable {
  public let rendered: String

  public init(stringLiteral value: String) { rendered = value }
  public init(stringInterpolation: Interpolation) { rendered = stringInterpolation.text }

  public struct Interpolation: StringInterpolationProtocol {
    var text = ""
    public init(literalCapacity: Int, interpolationCount: Int) {
      text.reserveCapacity(literalCapacity + interpolationCount * 9)
    }
    public mutating func appendLiteral(_ literal: String) { text += literal }
    /// Private by default: the value is not even converted to text.
    public mutating func appendInterpolation<T>(_ value: T) { text += "<private>" }
    public mutating func appendInterpolation<T>(_ value: T, privacy: LogPrivacy) {
      text += privacy == .public ? String(describing: value) : "<private>"
    }
  }
}

/// Where log lines go. Libraries never choose this; the program does.
public protocol LogSink: Sendable {
  func write(level: LogLevel, subsystem: String, message: String)
}

/// A small logger passed into libraries (they never make their own).
///
/// Release builds are silent unless `--debug` raises the level; errors are logged by type
/// and code, never by their description, because descriptions of foreign errors may carry
/// user data.
public struct Logger: Sendable {
  public let subsystem: String
  public let minimumLevel: LogLevel?
  private let sink: (any LogSink)?

  /// A logger that drops everything.
  public static let disabled = Logger(subsystem: "memo-peer", minimumLevel: nil, sink: nil)

  public init(subsystem: String, minimumLevel: LogLevel?, sink: (any LogSink)?) {
    self.subsystem = subsystem
    self.minimumLevel = minimumLevel
    self.sink = sink
  }

  /// The same sink and level under another subsystem name.
  public func scoped(_ subsystem: String) -> Logger {
    Logger(subsystem: subsystem, minimumLevel: minimumLevel, sink: sink)
  }

  public func isEnabled(_ level: LogLevel) -> Bool {
    guard let minimumLevel, sink != nil else { return false }
    return level >= minimumLevel
  }

  public func log(_ level: LogLevel, _ message: @autoclosure () -> LogMessage) {
    guard isEnabled(level), let sink else { return }
    sink.write(level: level, subsystem: subsystem, message: message().rendered)
  }

  public func debug(_ message: @autoclosure () -> LogMessage) { log(.debug, message()) }
  public func info(_ message: @autoclosure () -> LogMessage) { log(.info, message()) }
  public func warning(_ message: @autoclosure () -> LogMessage) { log(.warning, message()) }

  /// Logs an error by its type and stable code only.
  public func error(_ error: any Error, while action: StaticString) {
    guard isEnabled(.error), let sink else { return }
    sink.write(level: .error, subsystem: subsystem, message: "\(action): \(Self.describeType(of: error))")
  }

  /// `MemoPeerError(code)` for our errors, the type name for anything else.
  public static func describeType(of error: any Error) -> String {
    if let error = error as? MemoPeerError { return "MemoPeerError(\(error.code.rawValue))" }
    return String(reflecting: type(of: error))
  }
}
