import FoundationEssentials
import MemoCore
import MemoProtocol
import MemoSystem
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What the server tells its owner (who logs it): never a peer's bytes.
public enum ServerEvent: Sendable {
  case accepted(DeviceID, address: String)
  /// A connection ended before or during the handshake, or broke the protocol.
  case refused(TransportError, address: String)
}

/// Accepts TCP connections, runs the TLS handshake on each under the connection limits,
/// and hands authenticated connections to `handler`, each on its own thread. Who gets a slot
/// is `ConnectionBudget`'s rule (docs/PROTOCOL.md, "Strangers"): a connection is
/// unauthenticated until its handshake proved an accepted key, and unauthenticated ones have
/// their own small budget (4 per source address, 32 in all, the oldest dropped for a newer
/// one, `preAuthSeconds` to finish the handshake), so strangers can neither take the slots
/// of trusted devices nor hold them. The accept loop never waits on a handshake: each runs on
/// the connection's own thread. A bad client only ever costs its own connection. Nothing here
/// runs on Swift's cooperative pool.
public final class TLSServer: Sendable {
  public let port: UInt16
  public let budgetLimits: ConnectionBudget.Limits
  /// Time an unauthenticated connection has to complete its handshake.
  public let preAuthSeconds: Double
  private let listenFD: Int32
  private let wakePipe: (read: Int32, write: Int32)
  private let context: TLSContext
  private let limits: ConnectionLimits
  private let accepts: @Sendable (DeviceID) -> Bool
  private let handler: @Sendable (TLSConnection) -> Void
  private let events: @Sendable (ServerEvent) -> Void
  private let state: Mutex<State>

  private struct State {
    var budget: ConnectionBudget
    /// Every live connection, unauthenticated or not, by its budget id.
    var live: [Int: TLSConnection] = [:]
    var stopped = false
    /// Times the accept loop waited because no descriptor was free.
    var shortageWaits = 0
  }

  /// The default pre-authentication deadline: a handshake takes milliseconds on a LAN.
  public static let defaultPreAuthSeconds = 2.0

  /// `maximumConnections`: authenticated connections at once (the pairing window takes 1).
  public init(
    port: UInt16, loopbackOnly: Bool = false, context: TLSContext, limits: ConnectionLimits = ConnectionLimits(),
    maximumConnections: Int = 32, budget: ConnectionBudget.Limits = ConnectionBudget.Limits(),
    preAuthSeconds: Double = TLSServer.defaultPreAuthSeconds,
    accepts: @escaping @Sendable (DeviceID) -> Bool, events: @escaping @Sendable (ServerEvent) -> Void,
    handler: @escaping @Sendable (TLSConnection) -> Void
  ) throws {
    let (fd, actual) = try Sockets.listen(port: port, loopbackOnly: loopbackOnly)
    var pipeFDs: [Int32] = [0, 0]
    do throws(SystemError) {
      try System.call("pipe") { pipe(&pipeFDs) }
    } catch {
      close(fd)
      throw TransportError(.library, error.description)
    }
    for end in pipeFDs { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // cannot fail on a descriptor just made
    listenFD = fd
    wakePipe = (pipeFDs[0], pipeFDs[1])
    self.port = actual
    self.context = context
    self.limits = limits
    var budget = budget
    budget.authenticated = maximumConnections
    budgetLimits = budget
    self.preAuthSeconds = min(preAuthSeconds, limits.handshakeSeconds)
    state = Mutex(State(budget: ConnectionBudget(limits: budget)))
    self.accepts = accepts
    self.events = events
    self.handler = handler
    // The thread keeps the server (and so the descriptors) alive until the loop has ended.
    do throws(SystemError) {
      try SystemThread.start(name: "mp.accept") { [self] in acceptLoop() }
    } catch {
      throw TransportError(.library, "cannot start the accept thread: \(error.description)")
    }
  }

  deinit {
    close(listenFD)
    close(wakePipe.read)
    close(wakePipe.write)
  }

  /// Stops accepting and closes every live connection. Does not wait: once it returns the
  /// port refuses new connections (shutdown(2) of a listening socket ends the listen at
  /// once on Linux), and the accept thread ends by itself.
  public func stop() {
    let wasStopped = state.withLock { state in
      defer { state.stopped = true }
      return state.stopped
    }
    guard !wasStopped else { return }
    Glibc.shutdown(listenFD, Int32(SHUT_RDWR))
    var byte: UInt8 = 1
    _ = write(wakePipe.write, &byte, 1)
    closeConnections { _ in true }
  }

  /// Closes the live connections whose peer matches (e.g. a device just removed from the
  /// trust store). Connections still in their handshake are checked there instead.
  public func closeConnections(where matches: (DeviceID?) -> Bool) {
    let doomed = state.withLock { $0.live.values.filter { matches($0.peer) } }
    for connection in doomed { connection.interrupt() }
  }

  /// Times the accept loop waited for a free descriptor (EMFILE and kin): about ten a
  /// second while the process is out of them, never a spin.
  public var shortageWaits: Int { state.withLock { $0.shortageWaits } }

  /// Live connections: (unauthenticated, authenticated).
  public var connectionCounts: (unauthenticated: Int, authenticated: Int) {
    state.withLock { ($0.budget.pendingCount, $0.budget.authenticatedCount) }
  }

  private func acceptLoop() {
    var descriptors = [
      pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
      pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
    ]
    var short = false
    while true {
      // Retried on EINTR; any other failure of the wait ends the loop, as a stop does.
      let polled = (try? System.call("poll") { poll(&descriptors, 2, -1) }) != nil
      if descriptors[1].revents != 0 || !polled || state.withLock({ $0.stopped }) { break }
      let client: Int32
      do throws(SystemError) {
        client = try System.call("accept") { accept(listenFD, nil, nil) }
      } catch {
        // The client gave up before it was accepted: nothing to do. No descriptor or memory
        // free: the connection stays in the backlog and poll reports it again at once, so
        // retrying now would spin a core until one frees; wait a tenth of a second (or for
        // a stop) instead, and say so once per shortage.
        guard error.errno.isResourceShortage else { continue }
        if !short {
          short = true
          events(
            .refused(
              TransportError(
                .tooManyConnections, "no descriptor free for a new connection (\(error.errno)); waiting for one"),
              address: ""))
        }
        state.withLock { $0.shortageWaits += 1 }
        var wake = [pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
        if (try? System.call("poll") { poll(&wake, 1, 100) }) == nil || wake[0].revents != 0 { break }
        continue
      }
      short = false
      _ = fcntl(client, F_SETFD, FD_CLOEXEC)
      // Frames are small and answered at once: Nagle's algorithm would hold each back for
      // the peer's delayed ACK (40 ms) on every round trip of a sync.
      var noDelay: Int32 = 1
      setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
      let address = Sockets.peerAddress(client)
      let connection: TLSConnection
      do throws(TransportError) {
        connection = try TLSConnection(
          fd: client, context: context, limits: limits, remoteAddress: address, accepts: accepts)
      } catch {
        events(.refused(error, address: address))
        continue
      }
      // Admitted (making room for it) and registered in one step, so a `stop()` in between
      // cannot miss it.
      let (admitted, dropped) = state.withLock { state -> (Int?, [TLSConnection]) in
        guard !state.stopped else { return (nil, []) }
        let (id, drop) = state.budget.arrive(from: address)
        let dropped = drop.compactMap { state.live.removeValue(forKey: $0) }
        state.live[id] = connection
        return (id, dropped)
      }
      for old in dropped {
        old.interrupt()
        events(
          .refused(
            TransportError(.tooManyConnections, "the oldest unauthenticated connection, dropped for a newer one"),
            address: old.remoteAddress))
      }
      guard let id = admitted else { continue }
      do {
        try SystemThread.start(name: "mp.connection") { [self] in serve(connection, id: id) }
      } catch {
        // No thread for it (a process limit): the connection is refused, not left waiting.
        state.withLock { state in
          state.budget.leave(id)
          if state.live[id] === connection { state.live[id] = nil }
        }
        connection.close()
      }
    }
  }

  private func serve(_ connection: TLSConnection, id: Int) {
    defer {
      state.withLock { state in
        state.budget.leave(id)
        if state.live[id] === connection { state.live[id] = nil }
      }
    }
    do {
      try connection.handshake(deadline: .after(seconds: preAuthSeconds))
    } catch {
      // A connection dropped for a newer one was reported when it was dropped.
      if error.kind != .interrupted { events(.refused(error, address: connection.remoteAddress)) }
      return
    }
    // Only now does it count against the authenticated pool.
    let admitted = state.withLock { $0.budget.authenticate(id) }
    guard admitted, let peer = connection.peer else {
      if !admitted {
        events(
          .refused(
            TransportError(.tooManyConnections, "over the cap of \(budgetLimits.authenticated)"),
            address: connection.remoteAddress))
      }
      return
    }
    events(.accepted(peer, address: connection.remoteAddress))
    handler(connection)
  }
}
