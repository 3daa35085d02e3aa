import MemoCore

/// One notebook's membership log: the set of signed ops every device of the notebook holds,
/// relays included (docs/design/sync-v3.md, section 4). Pure: the store persists the ops
/// (`ops`, in causal order) and feeds them back with `insert` at start; the sync session
/// feeds what a peer sent and answers a peer's heads with `missing(peerHeads:)`.
///
/// `insert` admits an op only when it is well formed, signed by its author's valid key and
/// all its parents are already here, so the log is always causally closed and every op's
/// past is known. Whether an admitted op *counts* is `state`'s business: a pure function of
/// the set of ops, the same whatever order they arrived in.
public struct MembershipLog: Sendable {
  public let notebook: NotebookID
  let verifier: any OpVerifier
  /// Whether a device may sign a legacy genesis (one without a nonce) of this notebook:
  /// in a store, a device that was a member of it in this device's version-2 tables. The
  /// store sets it before taking a peer's ops (it may depend on what is in the log by then).
  public var isLegacyMember: @Sendable (DeviceID) -> Bool

  /// The admitted ops in the order they arrived (a causal order: parents first).
  private(set) var entries: [Entry] = []
  private var index: [OpID: Int] = [:]
  /// Positions of the ops no other op names as a parent.
  private var headPositions: Set<Int> = []
  /// Ops per author, for the per-author limit.
  private var authorCounts: [DeviceID: Int] = [:]

  /// An admitted op with what the log derived from it once.
  struct Entry: Sendable {
    let op: NotebookOp
    let id: OpID
    let author: DeviceID
    let parents: [Int]
    /// Longest path from a genesis: orders ops causally the same on every device.
    let depth: Int
    /// Every op in this one's causal past, as a bit set over `entries`' positions.
    let ancestors: [UInt64]
    let size: Int

    func has(ancestor position: Int) -> Bool {
      let word = position >> 6
      return word < ancestors.count && ancestors[word] & (1 << UInt64(position & 63)) != 0
    }
  }

  /// Why an op was not admitted. `missingParents` is the one a correct peer causes (it sent
  /// ops out of order, or the frame was cut): the op comes again after its parents.
  public enum Refusal: Error, Equatable, Sendable {
    case malformed(NotebookOpError)
    case wrongNotebook(NotebookID)
    /// The author's key is not a usable Ed25519 point (small order, not on the curve).
    case invalidAuthorKey
    case badSignature
    case missingParents([OpID])
    /// The notebook already holds `MembershipLimits.opsPerNotebook` ops.
    case full
    /// A genesis whose notebook id is not its author's derivation from its nonce.
    case genesisNotDerived
    /// A legacy genesis (no nonce) from a device that was not a member here in version 2.
    case legacyGenesisNotAllowed
    /// SHA-256 failed in the library: nothing is wrong with the op.
    case cryptography
    /// Its author has no genesis and no share as a member in the op's causal past, so the op
    /// can never count (`authorMayAct`): a store refuses it rather than keep it.
    case notAMember
    /// Its author already has `MembershipLimits.opsPerAuthor` ops in this log.
    case authorFull
  }

  public enum Outcome: Equatable, Sendable {
    case added(OpID)
    /// The same op (same id) was already here: nothing changed.
    case alreadyKnown(OpID)
  }

  public init(
    notebook: NotebookID, verifier: any OpVerifier,
    isLegacyMember: @escaping @Sendable (DeviceID) -> Bool = { _ in false }
  ) {
    self.notebook = notebook
    self.verifier = verifier
    self.isLegacyMember = isLegacyMember
  }

  public var count: Int { entries.count }
  public func contains(_ id: OpID) -> Bool { index[id] != nil }
  public func op(_ id: OpID) -> NotebookOp? { index[id].map { entries[$0].op } }

  /// Every op, parents before children (the order a store writes them back in).
  public var ops: [NotebookOp] { entries.map(\.op) }

  /// The ops nothing here names as a parent, sorted: what this device tells a peer it has.
  public var heads: [OpID] {
    headPositions.map { entries[$0].id }.sorted()
  }

  /// Decodes and admits one op from the wire.
  @discardableResult
  public mutating func insert(bytes: [UInt8]) throws(Refusal) -> Outcome {
    let op: NotebookOp
    do { op = try NotebookOp.decode(bytes) } catch { throw .malformed(error) }
    return try insert(op)
  }

  /// Admits `op` when it is well formed, of this notebook, signed by a valid key, its
  /// parents known and there is room; a replay is `.alreadyKnown` and changes nothing.
  @discardableResult
  public mutating func insert(_ op: NotebookOp) throws(Refusal) -> Outcome {
    let bytes = op.encoded
    // Built ops go through the decoder too, so what this log holds is what peers can read.
    do { _ = try NotebookOp.decode(bytes) } catch { throw .malformed(error) }
    guard let digest = verifier.sha256(bytes), let id = OpID(bytes: digest) else { throw .cryptography }
    if index[id] != nil { return .alreadyKnown(id) }
    guard op.notebook == notebook else { throw .wrongNotebook(op.notebook) }
    // The cheap refusals before the signature: an op that comes too early costs a lookup.
    let missing = op.parents.filter { index[$0] == nil }
    guard missing.isEmpty else { throw .missingParents(missing) }
    guard entries.count < MembershipLimits.opsPerNotebook else { throw .full }
    guard verifier.isValidPublicKey(op.author) else { throw .invalidAuthorKey }
    guard verifier.verify(op.signature, message: op.signedMessage, publicKey: op.author) else { throw .badSignature }
    guard let author = verifier.device(of: op.author) else { throw .cryptography }
    guard authorCounts[author, default: 0] < MembershipLimits.opsPerAuthor else { throw .authorFull }
    if case .create(let nonce) = op.body {
      if nonce.isEmpty {
        guard isLegacyMember(author) else { throw .legacyGenesisNotAllowed }
      } else {
        guard verifier.notebookID(creator: author, nonce: nonce) == notebook else { throw .genesisNotDerived }
      }
    }
    admit(op, id: id, author: author, size: bytes.count)
    return .added(id)
  }

  /// Admits an op this device checked before (read back from its own store): decoded and
  /// causally placed, its signature not verified again.
  @discardableResult
  public mutating func restore(bytes: [UInt8]) throws(Refusal) -> Outcome {
    let op: NotebookOp
    do { op = try NotebookOp.decode(bytes) } catch { throw .malformed(error) }
    guard let digest = verifier.sha256(bytes), let id = OpID(bytes: digest),
      let author = verifier.device(of: op.author)
    else { throw .cryptography }
    if index[id] != nil { return .alreadyKnown(id) }
    guard op.notebook == notebook else { throw .wrongNotebook(op.notebook) }
    let missing = op.parents.filter { index[$0] == nil }
    guard missing.isEmpty else { throw .missingParents(missing) }
    admit(op, id: id, author: author, size: bytes.count)
    return .added(id)
  }

  /// Whether `op`'s author could ever count: it made a genesis, or a share of it as a
  /// member is in the op's causal past (whose ops must all be here). An op for which this
  /// is false is void whatever else arrives (authority is judged in its own past), so every
  /// honest device may refuse it alike: a relay or a stranger cannot fill a log with ops
  /// that count for nothing.
  public func authorMayAct(_ op: NotebookOp) -> Bool {
    if case .create = op.body { return true }
    guard let author = verifier.device(of: op.author) else { return false }
    var past = [UInt64](repeating: 0, count: entries.count / 64 + 1)
    for parent in op.parents {
      guard let position = index[parent] else { return false }
      past[position >> 6] |= 1 << UInt64(position & 63)
      for (word, bits) in entries[position].ancestors.enumerated() { past[word] |= bits }
    }
    for (position, entry) in entries.enumerated() where past[position >> 6] & (1 << UInt64(position & 63)) != 0 {
      switch entry.op.body {
      case .create where entry.author == author: return true
      case .share(let device, .member) where device == author: return true
      default: continue
      }
    }
    return false
  }

  /// Ops of `author` in this log (every kind, counting or not).
  public func count(by author: DeviceID) -> Int { authorCounts[author] ?? 0 }

  private mutating func admit(_ op: NotebookOp, id: OpID, author: DeviceID, size: Int) {
    let position = entries.count
    let parents = op.parents.compactMap { index[$0] }
    var ancestors = [UInt64](repeating: 0, count: position / 64 + 1)
    for parent in parents {
      for (word, bits) in entries[parent].ancestors.enumerated() { ancestors[word] |= bits }
      ancestors[parent >> 6] |= 1 << UInt64(parent & 63)
      headPositions.remove(parent)
    }
    let depth = (parents.map { entries[$0].depth }.max() ?? -1) + 1
    entries.append(
      Entry(op: op, id: id, author: author, parents: parents, depth: depth, ancestors: ancestors, size: size))
    headPositions.insert(position)
    index[id] = position
    authorCounts[author, default: 0] += 1
  }

  /// Positions in a causal order that is the same on every device holding the same ops:
  /// by depth, then by id.
  var canonicalOrder: [Int] {
    entries.indices.sorted { (entries[$0].depth, entries[$0].id) < (entries[$1].depth, entries[$1].id) }
  }

  /// What a peer whose heads are `peerHeads` lacks, for one `sync-ops` answer: every op
  /// outside the causal past of the heads this log knows (heads it does not know are ops
  /// the peer has and this device lacks: they say nothing of what the peer lacks), in
  /// causal order, stopping before `maximumOps` ops or `maximumBytes` bytes (each op
  /// counted with a 4-byte length). `complete` is false when the bounds cut it: the peer
  /// asks again with its new heads, and since the ops are in causal order it can admit
  /// every one it got.
  public func missing(
    peerHeads: [OpID], maximumOps: Int = MembershipLimits.opsPerFrame,
    maximumBytes: Int = SyncOps.maximumBytes
  ) -> (ops: [NotebookOp], complete: Bool) {
    var known = [UInt64](repeating: 0, count: entries.count / 64 + 1)
    for head in peerHeads {
      guard let position = index[head] else { continue }
      known[position >> 6] |= 1 << UInt64(position & 63)
      for (word, bits) in entries[position].ancestors.enumerated() { known[word] |= bits }
    }
    var ops: [NotebookOp] = []
    var bytes = 0
    for position in canonicalOrder where known[position >> 6] & (1 << UInt64(position & 63)) == 0 {
      let size = entries[position].size + 4
      guard ops.count < maximumOps, bytes + size <= maximumBytes else { return (ops, false) }
      ops.append(entries[position].op)
      bytes += size
    }
    return (ops, true)
  }
}
