import Synchronization

/// Who may hold one of the server's connections, and for how long (docs/WEB.md,
/// "Connections"). libmicrohttpd's own limits count connections per address, and on loopback
/// every local user shares 127.0.0.1 (or picks any other 127/8 address as its source), so a
/// second local user could fill them all. The gate counts what tells users apart: the user
/// id the kernel records for the client's socket (NETLINK_SOCK_DIAG, as `ss -e` shows it).
///
/// - The user who runs the server (whose browser holds the session cookie) may use every
///   place; other users together never take the last `reservedForOwner` places, each other
///   user (and every connection whose user cannot be told, as one) at most `perOtherUser`.
/// - No address holds more than `perAddress`, below the total.
/// - A connection must deliver each request's whole head within `headSeconds` of being
///   accepted or of its previous answer (silence or not: one header line every few seconds
///   does not keep it), and finish a request within `requestSeconds`; else it is shut down.
/// - A refused connection is answered 503 (with the policy's headers, when the client still
///   reads) and closed at once, never left waiting.
///
/// The gate decides; `MicroHTTPDaemon` carries the decisions out. Pure apart from its lock:
/// unit-tested with made-up users, addresses and times.
public final class ConnectionGate: Sendable {
  public struct Limits: Sendable {
    /// Connections at once, over both loopback addresses.
    public var total = 128
    /// Places other users can never take.
    public var reservedForOwner = 64
    /// Connections of one other user (or of all whose user is unknown, together).
    public var perOtherUser = 8
    /// Connections from one address (below `total`).
    public var perAddress = 64
    /// Seconds from accept, or from the previous answer, to a complete request head.
    public var headSeconds = 10.0
    /// Seconds from a complete head to the end of its answer.
    public var requestSeconds = 60.0

    public init() {}
  }

  /// Why a connection was refused (for the debug log: counts, never addresses).
  enum Refusal: String, Sendable, Equatable {
    case total = "all places are taken"
    case otherUsers = "the places for other users are taken"
    case user = "this user holds its share"
    case address = "this address holds its share"
  }

  /// What a connection is doing, for its deadline.
  enum Phase: Sendable, Equatable {
    case awaitingHead
    case inRequest
  }

  struct Entry: Sendable {
    let user: UInt32?
    let address: String
    let fd: Int32
    var phase: Phase
    var since: Double
    /// Shut down by the watchdog already (so it is not shut down twice).
    var ended = false
  }

  private struct State {
    var entries: [UInt64: Entry] = [:]
    var next: UInt64 = 1
    /// Refusals since `takeRefusals`, by reason: logged as counts, a few times a minute at
    /// most, never one line per connection.
    var refused: [Refusal: Int] = [:]
  }

  let limits: Limits
  /// The server's own user.
  let owner: UInt32
  private let state = Mutex(State())

  init(owner: UInt32, limits: Limits = Limits()) {
    self.owner = owner
    self.limits = limits
  }

  /// Admits or refuses a connection just accepted. `user`: the client socket's user, nil
  /// when the kernel could not say. Returns the entry's number, or why not.
  func admit(user: UInt32?, address: String, fd: Int32, now: Double) -> Result<UInt64, RefusalError> {
    state.withLock { state -> Result<UInt64, RefusalError> in
      let verdict = Self.verdict(state, user: user, address: address, owner: owner, limits: limits)
      if case .failure(let refusal) = verdict {
        state.refused[refusal.reason, default: 0] += 1
        return .failure(refusal)
      }
      let id = state.next
      state.next += 1
      state.entries[id] = Entry(user: user, address: address, fd: fd, phase: .awaitingHead, since: now)
      return .success(id)
    }
  }

  private static func verdict(_ state: State, user: UInt32?, address: String, owner: UInt32, limits: Limits)
    -> Result<Void, RefusalError>
  {
    let entries = state.entries.values
    guard entries.count < limits.total else { return .failure(RefusalError(.total)) }
    guard entries.filter({ $0.address == address }).count < limits.perAddress else {
      return .failure(RefusalError(.address))
    }
    if user != owner {
      let others = entries.filter { $0.user != owner }
      guard others.count < limits.total - limits.reservedForOwner else {
        return .failure(RefusalError(.otherUsers))
      }
      guard others.filter({ $0.user == user }).count < limits.perOtherUser else {
        return .failure(RefusalError(.user))
      }
    }
    return .success(())
  }

  /// The refusals counted since the last call, and resets them.
  func takeRefusals() -> [Refusal: Int] {
    state.withLock { state in
      defer { state.refused = [:] }
      return state.refused
    }
  }

  /// A request's head has arrived: its deadline is now the request's.
  func headArrived(_ id: UInt64, now: Double) { set(id, .inRequest, now) }

  /// A request was answered: the next head's deadline starts.
  func requestFinished(_ id: UInt64, now: Double) { set(id, .awaitingHead, now) }

  private func set(_ id: UInt64, _ phase: Phase, _ now: Double) {
    state.withLock { state in
      guard state.entries[id] != nil else { return }
      state.entries[id]?.phase = phase
      state.entries[id]?.since = now
    }
  }

  /// The Unix user of connection `id`'s client socket, as told when it was admitted; nil
  /// when the kernel could not say, or the connection is not held.
  func user(of id: UInt64) -> UInt32? { state.withLock { $0.entries[id]?.user } }

  /// libmicrohttpd closed the connection (before it closes the descriptor).
  func closed(_ id: UInt64) { _ = state.withLock { $0.entries.removeValue(forKey: id) } }

  /// The connections past their deadline, marked ended, and `end` called for each while the
  /// lock is held, so no descriptor can be closed (and reused) by libmicrohttpd meanwhile.
  func endOverdue(now: Double, _ end: (Int32) -> Void) -> Int {
    state.withLock { state in
      var count = 0
      for (id, entry) in state.entries where !entry.ended {
        guard now > deadline(of: entry) else { continue }
        state.entries[id]?.ended = true
        end(entry.fd)
        count += 1
      }
      return count
    }
  }

  /// When the first connection held falls past its deadline (nil when none is held, or all
  /// are ended already): the watchdog sleeps until then, not on a fixed short period.
  /// A deadline only moves later for a connection held; a new one's is `headSeconds` away.
  func nextDeadline() -> Double? {
    state.withLock { state in
      state.entries.values.lazy.filter { !$0.ended }.map(self.deadline(of:)).min()
    }
  }

  /// When `entry` falls past its deadline: its head's or its request's time after `since`.
  private func deadline(of entry: Entry) -> Double {
    entry.since + (entry.phase == .awaitingHead ? limits.headSeconds : limits.requestSeconds)
  }

  /// Connections held now (for tests and the debug log).
  var count: Int { state.withLock { $0.entries.count } }

  struct RefusalError: Error, Equatable {
    let reason: Refusal
    init(_ reason: Refusal) { self.reason = reason }
  }
}
