import MemoSystem

/// A D-Bus failure, typed: the error's name says what happened (`…DBus.Error.ServiceUnknown`:
/// nobody owns the name; `…Avahi.TimeoutError`: the daemon found no answer in time), exactly
/// as the bus or the service named it. The detail (the bus's message) is for `--debug`
/// diagnostics only, never shown.
public struct BusError: Error, Equatable, Sendable {
  public let name: String
  public let detail: String

  public init(name: String, detail: String = "") {
    self.name = name
    self.detail = detail
  }

  /// libdbus could not build a message (out of memory, or an argument it refused).
  public static let encoding = BusError(name: "memo-peer.Error.Encoding")
  /// The connection to the bus was closed or lost.
  public static let disconnected = BusError(name: "org.freedesktop.DBus.Error.Disconnected")
  /// Nothing answered within the caller's time limit.
  public static let timedOut = BusError(name: "memo-peer.Error.TimedOut")
  /// The name of `libraryMissing`'s errors.
  public static let libraryMissingName = "memo-peer.Error.LibraryMissing"

  /// libdbus itself could not be loaded (the detail says why and what to install).
  static func libraryMissing(_ error: LazyLibraryError) -> BusError {
    BusError(name: libraryMissingName, detail: error.message + "; " + error.hint)
  }

  /// The method does not exist (an older service without the interface asked for).
  public var isUnknownMethod: Bool {
    name == "org.freedesktop.DBus.Error.UnknownMethod" || name == "org.freedesktop.DBus.Error.UnknownInterface"
  }
}
