import MemoCore
import MemoSystem

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
  /// Who may hold a connection, for both addresses together, and its deadlines' watchdog.
  let gate: ConnectionGate
  private let watchdog: ConnectionWatchdog

  /// Listens on `addresses` at `port` (nil: the default port or one of the next nine; 0: any
  /// free port) and serves `api` there.
  ///
  /// - Parameters:
  ///   - onSignIn: called with the next one-time sign-in URL each time a browser has signed in.
  ///   - sessionIdleSeconds: how long a session lives without use (`WebSessions`).
  ///   - isLocked: whether the node is locked now, asked on each request that needs a session.
  public init(
    addresses: [LoopbackAddress], port: UInt16?, api: any WebAPI, logger: Logger,
    onSignIn: @escaping @Sendable (String) -> Void = { _ in },
    sessionIdleSeconds: Double = WebSessions.defaultIdleSeconds,
    connectionLimits: ConnectionGate.Limits = .init(), isLocked: @escaping @Sendable () -> Bool = { false },
    longestWait: Double = 25
  ) throws {
    Self.raiseDescriptorLimit()
    let (sockets, bound, notes) = try Self.listen(addresses, port: port)
    let origins = WebOrigins(port: bound, addresses: sockets.map(\.address))
    let sessions: WebSessions
    do { sessions = try WebSessions(port: bound, idleSeconds: sessionIdleSeconds) } catch {
      for socket in sockets { close(socket.fd) }
      throw MemoPeerError(.crypto, "the system's random generator failed", diagnostics: "\(error)")
    }
    let frontDoor = WebFrontDoor(
      origins: origins, sessions: sessions, api: api, logger: logger, serverUser: geteuid(),
      onSignIn: { token in onSignIn(origins.signInURL(token: token)) }, isLocked: isLocked)
    // The first look: a server that starts with the node locked keeps the sessions it
    // signs in then (they see the memo list locked), until an unlock and a lock.
    sessions.observeLock(isLocked)
    let gate = ConnectionGate(owner: geteuid(), limits: connectionLimits)
    var daemons: [MicroHTTPDaemon] = []
    do {
      for (index, socket) in sockets.enumerated() {
        do {
          daemons.append(
            try MicroHTTPDaemon(
              socket: socket.fd, frontDoor: frontDoor, gate: gate, limits: .init(), longestWait: longestWait))
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
    self.gate = gate
    watchdog = ConnectionWatchdog(gate: gate, logger: logger) { [daemons] in
      let now = monotonicSeconds()
      for daemon in daemons { daemon.wakeWaiters(now: now, look: .deadlines) }
    }
  }

  /// The one-time URL that signs a browser in now.
  public var signInURL: String { origins.signInURL(token: sessions.token) }

  /// Every address's base URL: `http://127.0.0.1:8426`, `http://[::1]:8426`.
  public var baseURLs: [String] { origins.addresses.map { "http://" + $0.authority(port: origins.port) } }

  /// Answers the status calls waiting for a change whose wait is over: every one past its
  /// longest wait; with `everyone` (a lock or an unlock) all of them; and, when `mark` is
  /// given (something was written in the store's folder), every one that saw another mark
  /// than the one it reads (none when it reads nil: a store that does not open now proves
  /// no change). The owner calls it at least once a second; `mark` (it reads the store) is
  /// read only while calls wait, and outside the waiters' lock, so no request waits for the
  /// store to be read.
  public func wakeWaiters(everyone: Bool = false, mark: (() -> String?)?) {
    guard waiting > 0 else { return }
    let look: MarkLook = everyone ? .everyone : mark?().map(MarkLook.mark) ?? .deadlines
    let now = monotonicSeconds()
    for daemon in daemons { daemon.wakeWaiters(now: now, look: look) }
  }

  /// How many status calls wait for a change now.
  public var waiting: Int { daemons.reduce(0) { $0 + $1.waiting } }

  /// Ends every connection and session; the port is free afterwards. Idempotent.
  public func stop() {
    for daemon in daemons { daemon.stop() }
    watchdog.stop()
  }

  /// Raises the soft limit on open descriptors to the hard one (at most 65,536): refused
  /// connections are accepted before they are closed, and a full descriptor table would make
  /// libmicrohttpd stop accepting, leaving new connections in the kernel's queue.
  static func raiseDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    let wanted = min(limit.rlim_max, 65_536)
    guard limit.rlim_cur < wanted else { return }
    limit.rlim_cur = wanted
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
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
