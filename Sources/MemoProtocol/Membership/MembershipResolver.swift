import MemoCore

extension MembershipLog {
  /// The log's meaning (docs/PROTOCOL.md, "Notebook membership log", the merge rule).
  /// Computed from the ops each time it is read (at most 4,096 of them): a store keeps the
  /// value between inserts.
  public var state: MembershipState {
    var state = MembershipResolver(entries: entries).resolve()
    state.heads = heads
    return state
  }
}

/// Decides which ops of a log count, and what they add up to: the rules of section 4 of
/// docs/design/sync-v3.md.
///
/// - An op (other than a genesis) counts only when its author is a member in the state of
///   its causal past, computed from the ops of that past that count ("authority").
/// - An op by A is void when an unshare of A that counts is concurrent with it, unless the
///   op is itself an unshare of that unshare's author: two members that remove each other
///   at once are both removed ("removal wins").
/// - A device is in when a share of it (or its genesis) that counts has every counting
///   unshare of it in its past; of several such shares the latest decide its role, the
///   lesser role if they disagree.
/// - A key's generation is exactly one more than the highest before it, and it is sealed to
///   members of its past only; a grant gives a member of its past keys of its past.
///
/// Removal wins makes an op's validity depend on unshares concurrent with it, which depend
/// on their own pasts: this is solved as a fixed point. Start with no unshare voiding
/// anything; decide every op in causal order; the unshares that count then void what is
/// concurrent with them in the next round; repeat until the set of counting unshares no
/// longer changes. Races of removals can make the rounds cycle (A removes B, B removes C,
/// C removes A, all at once): then every unshare that counted in some round of the cycle
/// removes its device and voids that device's concurrent ops (removal wins again). Every
/// step depends only on the set of ops, never on the order they arrived in.
struct MembershipResolver {
  let entries: [MembershipLog.Entry]
  /// The geneses and shares naming each device, and the unshares of it.
  private var sharesOf: [DeviceID: [Int]] = [:]
  private var unsharesOf: [DeviceID: [Int]] = [:]
  private var unshares: [Int] = []
  private var keyOps: [Int] = []
  /// The key ids every key op of the log names, and whether the log has a legacy genesis:
  /// a grant may give keys of a notebook from before version 3 (ids that no key op names).
  private var loggedKeyIDs: Set<[UInt8]> = []
  private var hasLegacyGenesis = false

  init(entries: [MembershipLog.Entry]) {
    self.entries = entries
    for (position, entry) in entries.enumerated() {
      switch entry.op.body {
      case .create(let nonce):
        sharesOf[entry.author, default: []].append(position)
        if nonce.isEmpty { hasLegacyGenesis = true }
      case .share(let device, _): sharesOf[device, default: []].append(position)
      case .unshare(let device, _):
        unsharesOf[device, default: []].append(position)
        unshares.append(position)
      case .key(_, let keyID, _):
        keyOps.append(position)
        loggedKeyIDs.insert(keyID)
      case .grant, .rename, .retiredPurge: break
      }
    }
  }

  /// Which unshares void concurrent ops of their device, and which remove it even if they
  /// do not count themselves (only after a cycle: see the type's comment).
  private struct Removals {
    var voiding: Set<Int> = []
    var forced: Set<Int> = []
  }

  func resolve() -> MembershipState {
    var removals = Removals()
    var history: [Set<Int>] = [[]]
    var round = evaluate(removals)
    // Each round either settles, repeats an earlier set (a cycle) or is new. Histories
    // settle in two or three rounds; the cap bounds the cost of a log made to keep changing,
    // which then resolves as a cycle over every round seen.
    for _ in 0..<Self.maximumRounds {
      let counting = Set(unshares.filter { round.valid[$0] })
      if counting == removals.voiding { return state(round, removals) }
      if let start = history.firstIndex(of: counting) {
        return settleCycle(history[start...].reduce(into: counting) { $0.formUnion($1) })
      }
      history.append(counting)
      removals.voiding = counting
      round = evaluate(removals)
    }
    return settleCycle(history.reduce(into: Set<Int>()) { $0.formUnion($1) })
  }

  /// Rounds before a log that has not settled is resolved as a cycle.
  static let maximumRounds = 32

  private func settleCycle(_ unshares: Set<Int>) -> MembershipState {
    let removals = Removals(voiding: unshares, forced: unshares)
    return state(evaluate(removals), removals)
  }

  // MARK: - One round

  /// What one round has decided so far: which ops count, and per device the unshares of
  /// it that remove it (those that count, and forced ones), as bit sets over positions.
  private struct Round {
    var valid: [Bool]
    var removing: [DeviceID: [UInt64]] = [:]
  }

  /// Every op decided in arrival order, which is causal: an op's past is decided before it.
  private func evaluate(_ removals: Removals) -> Round {
    var round = Round(valid: [Bool](repeating: false, count: entries.count))
    let words = entries.count / 64 + 1
    for position in entries.indices {
      round.valid[position] = counts(position, round, removals)
      if case .unshare(let device, _) = entries[position].op.body,
        round.valid[position] || removals.forced.contains(position)
      {
        round.removing[device, default: [UInt64](repeating: 0, count: words)][position >> 6] |=
          1 << UInt64(position & 63)
      }
    }
    return round
  }

  private func counts(_ position: Int, _ round: Round, _ removals: Removals) -> Bool {
    let entry = entries[position]
    if isVoidedByRemoval(position, removals) { return false }
    if case .create = entry.op.body { return true }  // its id was checked on insert
    let past = { (other: Int) in entry.has(ancestor: other) }
    let valid = round.valid
    guard role(of: entry.author, before: entry, round) == .member else { return false }
    switch entry.op.body {
    case .create, .share, .unshare, .retiredPurge:
      return true
    case .key(let generation, _, let sealed):
      let highest = keyOps.filter { past($0) && valid[$0] }.compactMap(generation(of:)).max() ?? 0
      guard highest < UInt64.max, generation == highest + 1 else { return false }
      return sealed.allSatisfy { role(of: $0.device, before: entry, round) == .member }
    case .grant(let device, let keys):
      guard role(of: device, before: entry, round) == .member else { return false }
      let known = keyIDs(within: past, valid)
      // A key of the log only once the grant has seen it; in a notebook from before
      // version 3 also a key from then, which no key op names (its id is not derived).
      return keys.allSatisfy {
        known.contains($0.keyID) || (hasLegacyGenesis && !loggedKeyIDs.contains($0.keyID))
      }
    case .rename(let keyID, _):
      return keyIDs(within: past, valid).contains(keyID)
    }
  }

  private func isVoidedByRemoval(_ position: Int, _ removals: Removals) -> Bool {
    let entry = entries[position]
    for unshare in unsharesOf[entry.author] ?? [] where removals.voiding.contains(unshare) {
      guard areConcurrent(unshare, position) else { continue }
      // An unshare of the remover survives: mutual removal removes both.
      if case .unshare(let device, _) = entry.op.body, device == entries[unshare].author { continue }
      return true
    }
    return false
  }

  private func areConcurrent(_ a: Int, _ b: Int) -> Bool {
    a != b && !entries[a].has(ancestor: b) && !entries[b].has(ancestor: a)
  }

  /// `device`'s role in the state of `op`'s causal past, or of the whole log (nil).
  ///
  /// Shares are taken latest first: one in the past of a share already found to admit is
  /// not among the latest and needs no check; any other admits when every removal of the
  /// device in the past is in the share's own past (bit sets, word by word). In the usual
  /// history the first share checked admits and covers the rest.
  private func role(of device: DeviceID, before op: MembershipLog.Entry?, _ round: Round) -> NotebookOp.Role? {
    let removing = round.removing[device] ?? []
    var covered = [UInt64](repeating: 0, count: entries.count / 64 + 1)
    var role: NotebookOp.Role?
    for share in (sharesOf[device] ?? []).reversed() where round.valid[share] {
      if let op, !op.has(ancestor: share) { continue }
      if covered[share >> 6] & (1 << UInt64(share & 63)) != 0 { continue }
      let ancestors = entries[share].ancestors
      var seesEveryRemoval = true
      for word in removing.indices {
        let inPast = op.map { word < $0.ancestors.count ? $0.ancestors[word] : 0 } ?? ~0
        let seen = word < ancestors.count ? ancestors[word] : 0
        if removing[word] & inPast & ~seen != 0 {
          seesEveryRemoval = false
          break
        }
      }
      guard seesEveryRemoval else { continue }
      role = min(role ?? .member, grantedRole(of: share))
      for (word, bits) in ancestors.enumerated() { covered[word] |= bits }
    }
    return role
  }

  private func grantedRole(of position: Int) -> NotebookOp.Role {
    if case .share(_, let role) = entries[position].op.body { return role }
    return .member  // a genesis: its author is the first member
  }

  private func generation(of position: Int) -> UInt64? {
    if case .key(let generation, _, _) = entries[position].op.body { return generation }
    return nil
  }

  private func keyIDs(within: (Int) -> Bool, _ valid: [Bool]) -> Set<[UInt8]> {
    Set(
      keyOps.filter { within($0) && valid[$0] }.compactMap { position -> [UInt8]? in
        if case .key(_, let keyID, _) = entries[position].op.body { return keyID }
        return nil
      })
  }

  // MARK: - The result

  private func state(_ round: Round, _ removals: Removals) -> MembershipState {
    var state = MembershipState()
    let valid = round.valid
    let devices = Set(sharesOf.keys).union(unsharesOf.keys)
    for device in devices {
      if let role = role(of: device, before: nil, round) {
        state.members[device] = role
      } else if let cut = cut(of: device, valid, removals) {
        state.cuts[device] = cut
      }
    }
    let order = entries.indices.sorted { (entries[$0].depth, entries[$0].id) < (entries[$1].depth, entries[$1].id) }
    var renames: [Int] = []
    for position in order {
      let entry = entries[position]
      guard valid[position] else {
        state.void.insert(entry.id)
        continue
      }
      switch entry.op.body {
      case .create: state.creators.insert(entry.author)
      case .share, .unshare: break
      case .key(let generation, let keyID, let sealed):
        state.keys.append(
          MembershipState.KeyGeneration(
            op: entry.id, author: entry.author, generation: generation, keyID: keyID,
            sealed: Dictionary(sealed.map { ($0.device, $0.sealed) }, uniquingKeysWith: { first, _ in first })))
      case .grant(let device, let keys):
        state.grants.append(MembershipState.Grant(op: entry.id, device: device, keys: keys))
      case .rename: renames.append(position)
      case .retiredPurge: break
      }
    }
    state.keys.sort { ($0.generation, $0.op) < ($1.generation, $1.op) }
    let latest = renames.filter { rename in !renames.contains { entries[$0].has(ancestor: rename) } }
    if let winner = latest.min(by: { entries[$0].id < entries[$1].id }),
      case .rename(let keyID, let sealedName) = entries[winner].op.body
    {
      state.name = MembershipState.Rename(op: entries[winner].id, keyID: keyID, sealedName: sealedName)
    }
    return state
  }

  /// A removed device's cut: of the unshares removing it now (those no counting share of
  /// it has seen), per replica the lowest sequence; a replica must be in every one of them.
  private func cut(of device: DeviceID, _ valid: [Bool], _ removals: Removals) -> [ReplicaID: UInt64]? {
    let removed = (unsharesOf[device] ?? []).filter { valid[$0] || removals.forced.contains($0) }
    guard !removed.isEmpty else { return nil }
    let shares = (sharesOf[device] ?? []).filter { valid[$0] }
    let current = removed.filter { unshare in !shares.contains { entries[$0].has(ancestor: unshare) } }
    var combined: [ReplicaID: UInt64]?
    for unshare in current.isEmpty ? removed : current {
      guard case .unshare(_, let list) = entries[unshare].op.body else { continue }
      let cut = Dictionary(list.map { ($0.replica, $0.sequence) }, uniquingKeysWith: min)
      guard let previous = combined else {
        combined = cut
        continue
      }
      var next: [ReplicaID: UInt64] = [:]
      for (replica, sequence) in previous {
        if let other = cut[replica] { next[replica] = min(sequence, other) }
      }
      combined = next
    }
    return combined ?? [:]
  }
}
