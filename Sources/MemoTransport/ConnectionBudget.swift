/// Who gets a connection slot on a listening node (docs/PROTOCOL.md, "Strangers"): pure, so
/// the server's policy is tested without sockets.
///
/// Every new connection is unauthenticated until its handshake proves a key the node
/// accepts. Unauthenticated connections have a budget of their own: at most `perSource`
/// from one address and `unauthenticated` in all, and when either is full the oldest such
/// connection is dropped to make room (a stranger that keeps reconnecting only churns its
/// own slots). A connection joins the authenticated pool — `authenticated` slots, which
/// strangers can never take — only after its key was verified; when that pool is full the
/// new connection is closed, never an established one.
public struct ConnectionBudget: Sendable {
  public struct Limits: Sendable, Equatable {
    /// Unauthenticated connections from one address at once.
    public var perSource: Int
    /// Unauthenticated connections at once, from everyone.
    public var unauthenticated: Int
    /// Authenticated connections at once.
    public var authenticated: Int

    public init(perSource: Int = 4, unauthenticated: Int = 32, authenticated: Int = 32) {
      self.perSource = perSource
      self.unauthenticated = unauthenticated
      self.authenticated = authenticated
    }
  }

  public let limits: Limits
  /// Unauthenticated connections in arrival order: (id, source address).
  private var pending: [(id: Int, source: String)] = []
  private var established: Set<Int> = []
  private var nextID = 0

  public init(limits: Limits = Limits()) { self.limits = limits }

  public var pendingCount: Int { pending.count }
  public var authenticatedCount: Int { established.count }

  /// A new connection from `source`: its id, and the ids of the unauthenticated connections
  /// to drop for it (the oldest of its source when that is full, else the oldest of all when
  /// the budget is).
  public mutating func arrive(from source: String) -> (id: Int, drop: [Int]) {
    nextID += 1
    var drop: [Int] = []
    let fromSource = pending.filter { $0.source == source }
    if fromSource.count >= limits.perSource, let oldest = fromSource.first {
      drop.append(oldest.id)
    } else if pending.count >= limits.unauthenticated, let oldest = pending.first {
      drop.append(oldest.id)
    }
    pending.removeAll { drop.contains($0.id) }
    pending.append((nextID, source))
    return (nextID, drop)
  }

  /// The connection's key was verified: true when it got an authenticated slot (it leaves
  /// the unauthenticated budget either way; false: close it).
  public mutating func authenticate(_ id: Int) -> Bool {
    guard let index = pending.firstIndex(where: { $0.id == id }) else { return false }
    pending.remove(at: index)
    guard established.count < limits.authenticated else { return false }
    established.insert(id)
    return true
  }

  /// The connection ended (or was dropped): its slot is free.
  public mutating func leave(_ id: Int) {
    pending.removeAll { $0.id == id }
    established.remove(id)
  }

  /// Whether `id` is still waiting for its handshake.
  public func isPending(_ id: Int) -> Bool { pending.contains { $0.id == id } }
}
