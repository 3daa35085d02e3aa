import CLazyLibraries

/// A library memo-peer loads only in the commands that use it (CLazyLibraries): every other
/// command starts without mapping it and what it pulls in. A command that needs one calls
/// `load()` before its first use, so that a library that is missing (removed after memo-peer
/// was installed: the package depends on all of them) is a clear error, not an abort.
public enum LazyLibrary: Sendable, CaseIterable {
  case dbus, dnsSD, avahiClient, systemd, microhttpd

  /// Debian's package of the library, for the error's hint.
  public var package: String {
    switch self {
    case .dbus: "libdbus-1-3"
    case .dnsSD: "libavahi-compat-libdnssd1"
    case .avahiClient: "libavahi-client3"
    case .systemd: "libsystemd0"
    case .microhttpd: "libmicrohttpd12"
    }
  }

  /// The file it is loaded by (`libmicrohttpd.so.12`).
  public var soname: String { String(cString: memo_lazy_soname(library)) }

  /// Loads it (once; later calls return at once).
  public func load() throws(LazyLibraryError) {
    var error = [CChar](repeating: 0, count: 512)
    guard memo_lazy_load(library, &error, error.count) == 1 else {
      let reason = error.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
      throw LazyLibraryError(library: self, reason: reason)
    }
  }

  private var library: memo_lazy_library {
    switch self {
    case .dbus: MEMO_LAZY_DBUS
    case .dnsSD: MEMO_LAZY_DNS_SD
    case .avahiClient: MEMO_LAZY_AVAHI_CLIENT
    case .systemd: MEMO_LAZY_SYSTEMD
    case .microhttpd: MEMO_LAZY_MICROHTTPD
    }
  }
}

/// A library that could not be loaded: which, and the loader's reason.
public struct LazyLibraryError: Error, Sendable, Equatable {
  public let library: LazyLibrary
  /// dlopen's message (`libmicrohttpd.so.12: cannot open shared object file: …`), or the
  /// function the library lacks.
  public let reason: String

  /// `libmicrohttpd.so.12 cannot be loaded (…)`, for messages.
  public var message: String { "\(library.soname) cannot be loaded (\(reason))" }

  /// What to do about it.
  public var hint: String { "install the package \(library.package) (memo-peer's package depends on it)" }
}
