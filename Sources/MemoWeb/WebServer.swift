import MemoCore

#if canImport(Glibc)
  import Glibc
#endif

/// The running web server: one libmicrohttpd daemon per loopback address, all on one port,
/// behind one front door. Stopping it ends every connection and every session.
public final class WebServer: Sendable {
  /// The port tried first when none is given, then the next ones (as Jupyter does).
  public static let defaultPort: UInt16 = 8426
  static let defaultPortAttempts: UInt16 = 10

  public let origins: WebOrigins
  public let sessions: WebSessions
  /// Things the person should know, such as a missing ::1.
  public let notes: [String]
  private let daemons: [MicroHTTPDaemon]

  /// Listens on `addresses` at `port` (nil: the default port or one of the next nine; 0: any
  /// free port) and serves `api` there.
  ///
  /// - Parameter onSignIn: called with the next one-time sign-in URL each time a browser
  ///   has signed in.
  public init(
    addresses: [LoopbackAddress], port: UInt16?, api: any WebAPI, logger: Logger,
    onSignIn: @escaping @Sendable (String) -> Void = { _ in }
  ) throws {
    let (sockets, bound, notes) = try Self.listen(addresses, port: port)
    let origins = WebOrigins(port: bound, addresses: sockets.map(\.address))
    let sessions: WebSessions
    do { sessions = try WebSessions(port: bound) } catch {
      for socket in sockets { close(socket.fd) }
      throw MemoPeerError(.crypto, "the system's random generator failed", diagnostics: "\(error)")
    }
    let frontDoor = WebFrontDoor(
      origins: origins, sessions: sessions, api: api, logger: logger,
      onSignIn: { token in onSignIn(origins.signInURL(token: token)) })
    var daemons: [MicroHTTPDaemon] = []
    do {
      for (index, socket) in sockets.enumerated() {
        do {
          daemons.append(try MicroHTTPDaemon(socket: socket.fd, frontDoor: frontDoor, limits: .init()))
        } catch {
          for later in sockets[(index + 1)...] { close(later.fd) }
          throw error
        }
      }
    } catch {
      for daemon in daemons { daemon.stop() }
      throw error
    }
    self.origins = origins
    self.sessions = sessions
    self.notes = notes
    self.daemons = daemons
  }

  /// The one-time URL that signs a browser in now.
  public var signInURL: String { origins.signInURL(token: sessions.token) }

  /// Every address's base URL: `http://127.0.0.1:8426`, `http://[::1]:8426`.
  public var baseURLs: [String] { origins.addresses.map { "http://" + $0.authority(port: origins.port) } }

  /// Ends every connection and session; the port is free afterwards. Idempotent.
  public func stop() {
    for daemon in daemons { daemon.stop() }
  }

  deinit { stop() }

  /// Listening sockets for `addresses` on one port. A port chosen here (not given) is
  /// chosen again when the second address has it taken.
  static func listen(_ addresses: [LoopbackAddress], port: UInt16?) throws -> (
    sockets: [(address: LoopbackAddress, fd: Int32)], port: UInt16, notes: [String]
  ) {
    let candidates: [UInt16] =
      port.map { [$0] } ?? (0..<defaultPortAttempts).map { defaultPort &+ $0 }
    let chosenHere = port == nil || port == 0
    var lastFailure: ListenFailure?
    for candidate in candidates {
      for _ in 0..<(candidate == 0 ? 5 : 1) {
        var sockets: [(address: LoopbackAddress, fd: Int32)] = []
        var notes: [String] = []
        var bound = candidate
        do throws(ListenFailure) {
          for address in addresses {
            do {
              let listening = try LoopbackListener.listen(address, port: bound)
              bound = listening.port
              sockets.append((address, listening.fd))
            } catch let failure where failure.isUnavailable && addresses.count > 1 {
              notes.append("this machine has no \(address.rawValue); listening on the other loopback address only")
            }
          }
          guard !sockets.isEmpty else { throw ListenFailure(address: addresses[0], port: bound, code: EADDRNOTAVAIL) }
          return (sockets, bound, notes)
        } catch {
          for socket in sockets { close(socket.fd) }
          lastFailure = error
          guard chosenHere, error.code == EADDRINUSE else { throw error.error }
        }
      }
    }
    throw (lastFailure?.error)
      ?? MemoPeerError(.io, "no free port for the web server", hint: "choose one with --port, or --port 0")
  }
}
